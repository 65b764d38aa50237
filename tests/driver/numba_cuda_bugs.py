"""A numba-cuda program on numba-cuda's real CUDA target with two bugs compute-sanitizer finds: a shared-memory
race and a write one element past the end of an array (NUMBA_BOUNDSCHECK off, as by default).  Prints what the
launches returned; tests/test_driver_check.py runs it under `ptxjit exec --check memcheck,racecheck`."""
import numpy as np
from numba import cuda


@cuda.jit
def shared_race(out):
    slot = cuda.shared.array(1, np.int32)
    slot[0] = cuda.threadIdx.x  # every thread writes the one word, no barrier before thread 0 reads it
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = slot[0]


@cuda.jit
def shift_right(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i + 1] = a[i]  # the last thread writes out[a.size]: one past the end


shared_race[2, 64](cuda.device_array(2, np.int32))
cuda.synchronize()
print("shared_race done")
try:
    shift_right[1, 128](cuda.to_device(np.arange(100, dtype=np.float32)), cuda.device_array(100, np.float32))
    cuda.synchronize()
    print("shift_right done")
except Exception as exc:  # noqa: BLE001 - the launch's CUDA error, whichever binding raises it
    print("shift_right failed:", exc)
