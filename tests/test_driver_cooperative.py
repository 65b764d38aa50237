"""cuLaunchCooperativeKernel through libcuda.so.1's C ABI, with the raw parameters of a kernel that takes an .f64
and reads through a pointer it loads from memory (numba's doc example of a heat equation with grid.sync is
such a kernel): the double reaches the kernel as its value, not as its bits read as an integer, and the
loaded pointer (which no launch range covers) runs without the bounds checks, as a plain cuLaunchKernel of
the same kernel does, instead of being refused as an illegal address."""

from __future__ import annotations

from tests.driver_util import run_on_driver

PTX = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry scale(.param .u64 table, .param .u64 out, .param .f64 k)
{
    .reg .u32 %r<3>;
    .reg .u64 %rd<8>;
    .reg .f64 %fd<4>;
    ld.param.u64 %rd1, [table];
    ld.param.u64 %rd2, [out];
    ld.param.f64 %fd1, [k];
    ld.global.u64 %rd3, [%rd1];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, 8;
    add.u64 %rd5, %rd3, %rd4;
    ld.global.f64 %fd2, [%rd5];
    mul.f64 %fd3, %fd2, %fd1;
    add.u64 %rd6, %rd2, %rd4;
    st.global.f64 [%rd6], %fd3;
    ret;
}
"""

PROGRAM = r"""
import ctypes, struct, sys
lib = ctypes.CDLL("libcuda.so.1")
ptx = sys.argv[1].encode() + b"\0"
def ok(r, what):
    assert r == 0, (what, r)
ok(lib.cuInit(0), "init")
dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
ok(lib.cuDeviceGet(ctypes.byref(dev), 0), "device")
ok(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ok(lib.cuCtxSetCurrent(ctx), "current")
ok(lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "load")
ok(lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"scale"), "function")
n = 32
table, src, out = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
for p, size in ((table, 8), (src, 8 * n), (out, 8 * n)):
    ok(lib.cuMemAlloc_v2(ctypes.byref(p), size), "alloc")
host = (ctypes.c_double * n)(*range(n))
ok(lib.cuMemcpyHtoD_v2(src, host, 8 * n), "src")
ok(lib.cuMemcpyHtoD_v2(table, ctypes.byref(src), 8), "table")
k = ctypes.c_double(0.25)
params = (ctypes.c_void_p * 3)(ctypes.addressof(table), ctypes.addressof(out), ctypes.addressof(k))
results = []
for coop in (False, True):
    ok(lib.cuMemsetD8_v2(out, 0, 8 * n), "clear")
    if coop:
        r = lib.cuLaunchCooperativeKernel(fn, 1, 1, 1, n, 1, 1, 0, None, params)
    else:
        r = lib.cuLaunchKernel(fn, 1, 1, 1, n, 1, 1, 0, None, params, None)
    r2 = lib.cuCtxSynchronize()
    got = (ctypes.c_double * n)()
    ok(lib.cuMemcpyDtoH_v2(got, out, 8 * n), "back")
    results.append((r, r2, list(got) == [0.25 * i for i in range(n)]))
print(results)
"""


def test_cooperative_launch_raw_parameters(tmp_path):
    r, log = run_on_driver(PROGRAM, tmp_path, PTX)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "[(0, 0, True), (0, 0, True)]", r.stdout + r.stderr + log
    assert "runs without memory-safety checks" in log or "run without memory-safety checks" in log, log


OCCUPANCY = r"""
import ctypes, sys
lib = ctypes.CDLL("libcuda.so.1")
ptx = sys.argv[1].encode() + b"\0"
assert lib.cuInit(0) == 0
dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert lib.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
assert lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)) == 0
assert lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"scale") == 0
for block, smem in ((128, 0), (32, 0), (1024, 0), (96, 0), (128, 114 * 1024), (256, 60 * 1024)):
    n = ctypes.c_int(-1)
    r = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), fn, block, ctypes.c_size_t(smem))
    print(block, smem, r, n.value)
"""


def test_occupancy_is_cudas_for_sm90(tmp_path):
    """cuOccupancyMaxActiveBlocksPerMultiprocessor answers as CUDA's occupancy calculator does for an H100
    (2048 threads, 32 blocks and 228 KB of shared memory per SM, 1 KB of it reserved per block; registers
    aside): two blocks with 114 KB of dynamic shared memory each need 230 KB, so one fits."""
    r, log = run_on_driver(OCCUPANCY, tmp_path, PTX)
    assert r.returncode == 0, r.stdout + r.stderr + log
    got = {tuple(map(int, line.split()[:2])): tuple(map(int, line.split()[2:])) for line in r.stdout.splitlines()}
    assert got == {(128, 0): (0, 16), (32, 0): (0, 32), (1024, 0): (0, 2), (96, 0): (0, 21),
                   (128, 114 * 1024): (0, 1), (256, 60 * 1024): (0, 3)}, got
