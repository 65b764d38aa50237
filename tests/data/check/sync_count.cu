// synccheck: a named barrier expecting 64 threads, executed by the 96 threads of the block
extern "C" __global__ void sync_count(float* data) {
    int t = threadIdx.x;
    data[t] += 1.0f;
    asm volatile("bar.sync 1, 64;");  // BUG: barrier count mismatch
    data[t] += 2.0f;
}
