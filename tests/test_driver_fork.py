"""fork after cuInit, through libcuda.so.1's C ABI: as on CUDA, the child cannot use the driver (every call but
cuDriverGetVersion returns CUDA_ERROR_NOT_INITIALIZED, which numba turns into "CUDA initialized before forking");
the parent goes on working, and a process forked before any cuInit initializes on its own."""

from __future__ import annotations

import os

import pytest

from tests.driver_util import run_on_driver

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

PROGRAM = r"""
import ctypes, os, sys
lib = ctypes.CDLL("libcuda.so.1")
n, v = ctypes.c_int(), ctypes.c_int()

def child(calls):
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if calls() else 1)
        except BaseException:
            os._exit(2)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

# forked before any cuInit: the child's driver is its own and initializes
fresh = child(lambda: lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value == 1)
assert lib.cuInit(0) == 0
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert lib.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and lib.cuCtxSetCurrent(ctx) == 0
ptr = ctypes.c_uint64()
assert lib.cuMemAlloc_v2(ctypes.byref(ptr), 64) == 0
# forked after cuInit: every call fails with CUDA_ERROR_NOT_INITIALIZED (3), the version query still answers
forked = child(lambda: (lib.cuDeviceGetCount(ctypes.byref(n)), lib.cuInit(0), lib.cuCtxGetCurrent(ctypes.byref(ctx)),
                        lib.cuMemAlloc_v2(ctypes.byref(ptr), 64), lib.cuDriverGetVersion(ctypes.byref(v)))
               == (3, 3, 3, 3, 0) and v.value == 13000)
# the parent is unaffected
ok = lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and lib.cuMemFree_v2(ptr) == 0 and lib.cuCtxSynchronize() == 0
print("fresh", fresh, "forked", forked, "parent", ok)
"""


def test_fork_after_init(tmp_path):
    r, log = run_on_driver(PROGRAM, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["fresh", "0", "forked", "0", "parent", "True"], r.stdout + r.stderr
    assert log.count("forked after cuInit") == 1, log
