"""Run in a subprocess by the harness, with empty cache directories: the cold cost of getting the
SGEMM kernel running.  `cold.py ptxjit N`: new ptxjit.Module + first launch (translation included);
`cold.py pocl N`: cl.Program(...).build(), and build + first launch (pocl compiles the work-group
function for the launch's local size at the first enqueue).  Prints one JSON object."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def main() -> None:
    which, n = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(0)
    A = rng.random((n, n), dtype=np.float32)
    B = rng.random((n, n), dtype=np.float32)
    C = np.zeros((n, n), np.float32)
    out = {"n": n}
    if which == "ptxjit":
        import ptxjit

        t0 = time.perf_counter()
        mod = ptxjit.Module.from_file(KERNELS / "ptx" / "sgemm.ptx")
        t1 = time.perf_counter()
        mod.get_function("sgemm")((n // 16, n // 16), (16, 16), (A, B, C, n))
        t2 = time.perf_counter()
        out.update(load_s=t1 - t0, first_launch_s=t2 - t0)
    else:
        import pyopencl as cl

        plat = [p for p in cl.get_platforms() if "portable" in p.name.lower() or "pocl" in p.name.lower()]
        ctx = cl.Context(plat[0].get_devices(device_type=cl.device_type.CPU)[:1])
        queue = cl.CommandQueue(ctx)
        mf = cl.mem_flags
        bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for a in (A, B, C)]
        src = (KERNELS / "sgemm.cl").read_text()
        t0 = time.perf_counter()
        prg = cl.Program(ctx, src).build()
        t1 = time.perf_counter()
        k = cl.Kernel(prg, "sgemm")
        k.set_args(*bufs, np.int32(n))
        cl.enqueue_nd_range_kernel(queue, k, (n, n), (16, 16))
        queue.finish()
        t2 = time.perf_counter()
        cl.enqueue_copy(queue, C, bufs[2])
        out.update(build_s=t1 - t0, first_launch_s=t2 - t0)
    out["ok"] = bool(np.allclose(C, A.astype(np.float64) @ B, rtol=1e-4))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
