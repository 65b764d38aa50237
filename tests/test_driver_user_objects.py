"""User objects and cuGraphInstantiateWithParams through libcuda.so.1's C ABI (cuda.core's GraphBuilder.complete
uses both: numba-cuda's cudadrv.test_cuda_driver graph builder test): the destructor runs once, when the last
reference (the caller's, a graph's, an executable graph's) goes, and bad counts and flags are refused."""

from __future__ import annotations

from tests.driver_util import run_on_driver

PROGRAM = r"""
import ctypes
lib = ctypes.CDLL("libcuda.so.1")
V = ctypes.c_void_p
def ok(r, what):
    assert r == 0, (what, r)
ok(lib.cuInit(0), "init")
dev, ctx = ctypes.c_int(), V()
ok(lib.cuDeviceGet(ctypes.byref(dev), 0), "device")
ok(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ok(lib.cuCtxSetCurrent(ctx), "current")
destroyed = []
DESTROY = ctypes.CFUNCTYPE(None, V)(lambda p: destroyed.append(p))
lib.cuUserObjectCreate.argtypes = [ctypes.POINTER(V), V, ctypes.CFUNCTYPE(None, V), ctypes.c_uint, ctypes.c_uint]
obj = V()
bad_flags = lib.cuUserObjectCreate(ctypes.byref(obj), V(0x1234), DESTROY, 1, 0)
bad_count = lib.cuUserObjectCreate(ctypes.byref(obj), V(0x1234), DESTROY, 0, 1)
ok(lib.cuUserObjectCreate(ctypes.byref(obj), V(0x1234), DESTROY, 1, 1), "create")
graph, ex = V(), V()
ok(lib.cuGraphCreate(ctypes.byref(graph), 0), "graph")
ok(lib.cuGraphRetainUserObject(graph, obj, 1, 1), "move the caller's reference into the graph")

class Params(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("hUploadStream", V), ("hErrNode_out", V), ("result_out", ctypes.c_int)]
params = Params(0, None, V(1), 7)
ok(lib.cuGraphInstantiateWithParams(ctypes.byref(ex), graph, ctypes.byref(params)), "instantiate")
ok(lib.cuGraphDestroy(graph), "graph destroy")
after_graph = list(destroyed)  # the executable graph still holds a reference
ok(lib.cuGraphLaunch(ex, None), "launch")
ok(lib.cuCtxSynchronize(), "sync")
ok(lib.cuGraphExecDestroy(ex), "exec destroy")
after_exec = list(destroyed)
obj2 = V()
ok(lib.cuUserObjectCreate(ctypes.byref(obj2), V(0x5678), DESTROY, 2, 1), "create 2")
ok(lib.cuUserObjectRetain(obj2, 1), "retain")
over = lib.cuUserObjectRelease(obj2, 4)
ok(lib.cuUserObjectRelease(obj2, 3), "release")
gone = lib.cuUserObjectRelease(obj2, 1)
print(bad_flags, bad_count, params.result_out, params.hErrNode_out, after_graph, after_exec, over, destroyed, gone)
"""


def test_user_objects_and_instantiate_with_params(tmp_path):
    r, log = run_on_driver(PROGRAM, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # INVALID_VALUE (1) for flags 0 and a zero refcount; SUCCESS with no error node; the destructor not after the
    # graph's destruction but after the executable graph's; an over-release refused; the second object's
    # destructor once its last reference goes, after which its handle is dead (INVALID_HANDLE, 400)
    assert r.stdout.split(" ", 5)[:5] == ["1", "1", "0", "None", "[]"], r.stdout
    assert r.stdout.strip().endswith("[4660] 1 [4660, 22136] 400"), r.stdout
