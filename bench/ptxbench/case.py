"""What a benchmark case is (inputs, a float64/NumPy reference, the tolerance, how each peer runs it), and
the plumbing every case shares.  Every peer works on its own copy of the inputs; `prepare` returns `run`
(what is timed) and `fetch` (brings the outputs back into the copy, for the check; a no-op except for
OpenCL)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

P, I, F, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_double
i32, f32 = np.int32, np.float32


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def _nothing() -> None:
    return None


@dataclass
class Case:
    name: str
    kind: str  # memory | compute | atomics | sync
    what: str
    sizes: dict[str, int]  # tiny / quick / full
    make: Callable  # (size, rng) -> dict of inputs and (zeroed) outputs
    reference: Callable  # (inputs) -> dict of expected outputs
    outputs: list[str]
    tol: dict[str, tuple[float, float]]  # output -> (rtol, atol as a fraction of max |expected|)
    ptxjit: Callable  # (kernel, d, size) -> run
    native: Callable  # (peer, d, size) -> run
    opencl: Callable  # (peer, d, size) -> (run, fetch)
    numpy: Callable | None = None  # (d, size) -> run
    bytes_moved: Callable | None = None  # size -> bytes a memory-bound kernel must move
    flops: Callable | None = None
    label: Callable = field(default=lambda n: f"n={n}")

    def check(self, got: dict, expected: dict) -> list[str]:
        """Compare outputs with the reference; returns the problems found (empty when equal)."""
        problems = []
        for out in self.outputs:
            g = np.asarray(got[out])
            e = np.asarray(expected[out])
            if g.shape != e.shape:
                problems.append(f"{out}: shape {g.shape} != {e.shape}")
                continue
            rtol, atol_frac = self.tol.get(out, (0.0, 0.0))
            if rtol == 0 and atol_frac == 0:
                bad = np.count_nonzero(g != e)
                if bad:
                    problems.append(f"{out}: {bad} of {g.size} elements differ")
                continue
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            checked = ~np.isnan(e64)  # a reference may leave elements unchecked (NaN)
            atol = atol_frac * float(np.max(np.abs(e64[checked]))) if checked.any() else 0.0
            ok = np.isclose(g64, e64, rtol=rtol, atol=atol) | ~checked
            if not ok.all():
                idx = np.flatnonzero(~ok.ravel())[0]
                problems.append(f"{out}: {np.count_nonzero(~ok)} of {g.size} elements outside rtol={rtol} "
                                f"atol={atol:.3g} (first at {idx}: got {g64.ravel()[idx]!r}, "
                                f"expected {e64.ravel()[idx]!r})")
        return problems


def fresh(d: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def prepare(case: Case, peer_name: str, peer, d: dict, size: int):
    """(run, fetch) for one peer on its private copy `d` of the inputs."""
    if peer_name == "ptxjit" or peer_name.startswith("ptxjit_"):  # ptxjit and its variants (peers.PTXJIT_VARIANTS)
        return case.ptxjit(peer.kernel(case.name), d, size), _nothing
    if peer_name == "native_c":
        fn = case.native(peer, d, size)  # holds raw addresses only: keep the arrays alive with it

        def run() -> None:
            fn()
        run.state = d
        return run, _nothing
    if peer_name == "pocl":
        return case.opencl(peer, d, size)
    if peer_name == "numpy":
        return case.numpy(d, size), _nothing
    raise ValueError(peer_name)


def run_once(case: Case, peer_name: str, peer, inputs: dict, size: int) -> dict:
    """Run one peer once on a fresh copy of the inputs and return its outputs."""
    d = fresh(inputs)
    run, fetch = prepare(case, peer_name, peer, d, size)
    run()
    fetch()
    return {k: d[k] for k in case.outputs}


def ocl_simple(peer, d: dict, kernel: str, args: list, gsize: tuple, lsize: tuple | None, outs: list[str],
               before: Callable | None = None):
    """OpenCL plumbing: arrays in `args` (given by name as str) become buffers."""
    k = peer.kernel(kernel)
    bufs = {}
    real = []
    for a in args:
        if isinstance(a, str):
            bufs[a] = peer.buffer(d[a])
            real.append(bufs[a])
        else:
            real.append(a)
    k.set_args(*real)

    def run() -> None:
        if before is not None:
            before(bufs)
        peer.launch(k, gsize, lsize)

    def fetch() -> None:
        for o in outs:
            peer.fetch(d[o], bufs[o])

    return run, fetch
