/* The Triton corpus's atomics kernel (tools/triton_corpus/kernels.py `atomics`) as a C programmer writes it
   with OpenMP: per program of `block` elements, its sum added atomically to total[0], then every element
   atomically added to wsum[bins[i]] (float: a compare-and-swap loop, as x86 has no float atomic add) and 1
   to hist[bins[i]], with acq_rel ordering as Triton's atom.global.gpu.acq_rel.  The bench's reference for
   what the same atomics cost on this CPU (bench/ptxbench/triton.py). */
#include <stdatomic.h>
#include <string.h>

static void atomic_add_f32(float *p, float v)
{
    _Atomic unsigned *q = (_Atomic unsigned *)p;
    unsigned old = atomic_load_explicit(q, memory_order_relaxed);
    for (;;) {
        float f;
        unsigned nu;
        memcpy(&f, &old, 4);
        f += v;
        memcpy(&nu, &f, 4);
        if (atomic_compare_exchange_weak_explicit(q, &old, nu, memory_order_acq_rel, memory_order_relaxed)) return;
    }
}

void triton_atomics(const float *x, const int *bins, float *total, float *wsum, int *hist, int n, int block)
{
    int programs = (n + block - 1) / block;
#pragma omp parallel for schedule(static)
    for (int p = 0; p < programs; ++p) {
        int lo = p * block, hi = lo + block < n ? lo + block : n;
        float s = 0.0f;
        for (int i = lo; i < hi; ++i) s += x[i];
        atomic_add_f32(total, s);
        for (int i = lo; i < hi; ++i) {
            atomic_add_f32(&wsum[bins[i]], x[i]);
            atomic_fetch_add_explicit((_Atomic int *)&hist[bins[i]], 1, memory_order_acq_rel);
        }
    }
}
