"""A numba-cuda program on numba-cuda's real CUDA target (not its simulator): device arrays, a shared-memory
reduction with atomics, a device function, a stream.  Checks each result against NumPy; prints OK."""
import numpy as np
from numba import cuda, float32


@cuda.jit(device=True)
def scaled(x, s):
    return x * s


@cuda.jit
def axpb(a, b, out, s):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = scaled(a[i], s) + b[i]


@cuda.jit
def block_sum(x, total):
    buf = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = 64
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(total, 0, buf[0])


n = 10000
rng = np.random.default_rng(7)
a = rng.random(n, dtype=np.float32)
b = rng.random(n, dtype=np.float32)
stream = cuda.stream()
da, db = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
out = cuda.device_array_like(a, stream=stream)
axpb[(n + 127) // 128, 128, stream](da, db, out, np.float32(3.0))
res = out.copy_to_host(stream=stream)
stream.synchronize()
assert np.allclose(res, 3 * a + b, rtol=1e-6), "axpb"
total = cuda.to_device(np.zeros(1, np.float32))
block_sum[(n + 127) // 128, 128](da, total)
assert np.isclose(total.copy_to_host()[0], a.sum(dtype=np.float64), rtol=1e-4), "block_sum"
dev = cuda.get_current_device()
print("numba-cuda OK", dev.name, dev.compute_capability)
