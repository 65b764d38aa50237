"""The benchmark kernels (the classic suite here, framework-style layers in layers.py) and the harness's
correctness check."""

from __future__ import annotations

import numpy as np

from ptxbench.case import Case, D, F, I, P, _nothing, cdiv, f32, fresh, i32, ocl_simple, prepare, ptr, run_once  # noqa: F401
from ptxbench.layers import LAYERS


# -------------------------------------------------------------------------------------- vadd
def _vadd_make(n, rng):
    return {"a": rng.random(n, dtype=np.float32), "b": rng.random(n, dtype=np.float32),
            "c": np.zeros(n, np.float32)}


def _vadd_ptx(k, d, n):
    args = (d["a"], d["b"], d["c"], n)
    return lambda: k(cdiv(n, 256), 256, args)


def _vadd_native(peer, d, n):
    fn = peer.function("vadd", [P, P, P, I])
    a, b, c = ptr(d["a"]), ptr(d["b"]), ptr(d["c"])
    return lambda: fn(a, b, c, n)


def _vadd_numpy(d, n):
    return lambda: np.add(d["a"], d["b"], out=d["c"])


VADD = Case(
    "vadd", "memory", "c = a + b (float32)", {"tiny": 10007, "quick": 1 << 24, "full": 1 << 25},
    _vadd_make, lambda d: {"c": d["a"] + d["b"]}, ["c"], {"c": (0, 0)},
    _vadd_ptx, _vadd_native,
    lambda peer, d, n: ocl_simple(peer, d, "vadd", ["a", "b", "c", i32(n)], (cdiv(n, 256) * 256,), (256,), ["c"]),
    _vadd_numpy, bytes_moved=lambda n: 12 * n, flops=lambda n: n)


# ------------------------------------------------------------------------------------- saxpy
SAXPY_A = 2.5


def _saxpy_make(n, rng):
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32)}


def _saxpy_ref(d):
    return {"y": (SAXPY_A * d["x"].astype(np.float64) + d["y"]).astype(np.float32)}


def _saxpy_ptx(k, d, n):
    args = (n, SAXPY_A, d["x"], d["y"])
    return lambda: k(cdiv(n, 256), 256, args)


def _saxpy_native(peer, d, n):
    fn = peer.function("saxpy", [I, F, P, P])
    x, y = ptr(d["x"]), ptr(d["y"])
    return lambda: fn(n, SAXPY_A, x, y)


def _saxpy_numpy(d, n):
    x, y = d["x"], d["y"]
    a = f32(SAXPY_A)
    tmp = np.empty_like(x)

    def run():
        np.multiply(x, a, out=tmp)
        np.add(tmp, y, out=y)
    return run


SAXPY = Case(
    "saxpy", "memory", "y = a*x + y (float32, in place)", {"tiny": 10007, "quick": 1 << 24, "full": 1 << 25},
    _saxpy_make, _saxpy_ref, ["y"], {"y": (1e-6, 1e-7)},
    _saxpy_ptx, _saxpy_native,
    lambda peer, d, n: ocl_simple(peer, d, "saxpy", [i32(n), f32(SAXPY_A), "x", "y"], (cdiv(n, 256) * 256,),
                                  (256,), ["y"]),
    _saxpy_numpy, bytes_moved=lambda n: 12 * n, flops=lambda n: 2 * n)


# --------------------------------------------------------------------------------------- dot
def _dot_blocks(n):
    return min(256, cdiv(n, 256))


def _dot_make(n, rng):
    return {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32),
            "partial": np.zeros(_dot_blocks(n), np.float32), "result": np.zeros(1, np.float32)}


def _dot_ref(d):
    return {"result": np.array([np.dot(d["x"].astype(np.float64), d["y"])], np.float64)}


def _dot_ptx(k, d, n):
    nb = _dot_blocks(n)
    part, res = d["partial"], d["result"]
    args = (d["x"], d["y"], part, n)

    def run():
        k(nb, 256, args)
        res[0] = part.sum()
    return run


def _dot_native(peer, d, n):
    fn = peer.function("dot", [P, P, I], F)
    x, y, res = ptr(d["x"]), ptr(d["y"]), d["result"]

    def run():
        res[0] = fn(x, y, n)
    return run


def _dot_ocl(peer, d, n):
    nb = _dot_blocks(n)
    part_buf = peer.buffer(d["partial"])
    k = peer.kernel("dot", "dot_product")
    bufs = [peer.buffer(d["x"]), peer.buffer(d["y"]), part_buf]  # referenced by run(): must stay alive
    k.set_args(*bufs, i32(n))
    part, res = d["partial"], d["result"]

    def run():
        assert bufs
        peer.launch(k, (nb * 256,), (256,))
        peer.fetch(part, part_buf)
        res[0] = part.sum()
    return run, _nothing


def _dot_numpy(d, n):
    x, y, res = d["x"], d["y"], d["result"]

    def run():
        res[0] = np.dot(x, y)
    return run


DOT = Case(
    "dot", "memory", "sum(x*y) (float32; per-block partial sums, added on the host)",
    {"tiny": 10007, "quick": 1 << 24, "full": 1 << 25},
    _dot_make, _dot_ref, ["result"], {"result": (1e-3, 0.0)},
    _dot_ptx, _dot_native, _dot_ocl, _dot_numpy, bytes_moved=lambda n: 8 * n, flops=lambda n: 2 * n)


# ------------------------------------------------------------------------------------- sgemm
def _sgemm_make(n, rng):
    return {"A": rng.random((n, n), dtype=np.float32), "B": rng.random((n, n), dtype=np.float32),
            "C": np.zeros((n, n), np.float32)}


def _sgemm_ptx(k, d, n):
    args = (d["A"], d["B"], d["C"], n)
    return lambda: k((n // 16, n // 16), (16, 16), args)


def _sgemm_native(peer, d, n):
    fn = peer.function("sgemm", [P, P, P, I])
    a, b, c = ptr(d["A"]), ptr(d["B"]), ptr(d["C"])
    return lambda: fn(a, b, c, n)


def _sgemm_numpy(d, n):
    return lambda: np.matmul(d["A"], d["B"], out=d["C"])


SGEMM = Case(
    "sgemm", "compute", "C = A @ B, 16x16 shared-memory tiles (float32)", {"tiny": 64, "quick": 512, "full": 1024},
    _sgemm_make, lambda d: {"C": d["A"].astype(np.float64) @ d["B"]}, ["C"], {"C": (1e-4, 1e-5)},
    _sgemm_ptx, _sgemm_native,
    lambda peer, d, n: ocl_simple(peer, d, "sgemm", ["A", "B", "C", i32(n)], (n, n), (16, 16), ["C"]),
    _sgemm_numpy, flops=lambda n: 2 * n ** 3, label=lambda n: f"{n}x{n}")


# ------------------------------------------------------------------------------------ jacobi
def _jacobi_make(n, rng):
    a = rng.random((n, n), dtype=np.float32)
    return {"inp": a, "out": a.copy()}


def _jacobi_ref(d):
    a = d["inp"]  # float32, the kernels' order of operations
    out = a.copy()
    out[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    return {"out": out}


def _jacobi_ptx(k, d, n):
    args = (d["inp"], d["out"], n)
    return lambda: k((cdiv(n, 32), cdiv(n, 8)), (32, 8), args)


def _jacobi_native(peer, d, n):
    fn = peer.function("jacobi", [P, P, I])
    a, b = ptr(d["inp"]), ptr(d["out"])
    return lambda: fn(a, b, n)


JACOBI = Case(
    "jacobi", "memory", "one 5-point Jacobi sweep of an n x n grid (float32)",
    {"tiny": 70, "quick": 4096, "full": 8192},
    _jacobi_make, _jacobi_ref, ["out"], {"out": (1e-6, 1e-7)},
    _jacobi_ptx, _jacobi_native,
    lambda peer, d, n: ocl_simple(peer, d, "jacobi", ["inp", "out", i32(n)], (cdiv(n, 32) * 32, cdiv(n, 8) * 8),
                                  (32, 8), ["out"]),
    bytes_moved=lambda n: 8 * n * n, flops=lambda n: 4 * n * n, label=lambda n: f"{n}x{n}")


# --------------------------------------------------------------------------------- histogram
def _hist_blocks(n):
    return min(1024, cdiv(n, 256))


def _hist_make(n, rng):
    # a skewed distribution (low bins far more frequent), as in real data
    u = rng.random(n, dtype=np.float32)
    data = (u * u * 256.0).astype(np.uint8)
    return {"data": data, "hist": np.zeros(256, np.uint32)}


def _hist_ptx(k, d, n):
    h = d["hist"]
    args = (d["data"], h, n)
    nb = _hist_blocks(n)

    def run():
        h.fill(0)
        k(nb, 256, args)
    return run


def _hist_native(peer, d, n):
    fn = peer.function("histogram", [P, P, I])
    a, h = ptr(d["data"]), ptr(d["hist"])
    return lambda: fn(a, h, n)


def _hist_ocl(peer, d, n):
    nb = _hist_blocks(n)

    def zero(bufs):
        peer.cl.enqueue_fill_buffer(peer.queue, bufs["hist"], np.uint32(0), 0, 256 * 4)
    return ocl_simple(peer, d, "histogram", ["data", "hist", i32(n)], (nb * 256,), (256,), ["hist"], before=zero)


def _hist_numpy(d, n):
    data, h = d["data"], d["hist"]

    def run():
        h[:] = np.bincount(data, minlength=256)
    return run


HISTOGRAM = Case(
    "histogram", "atomics", "256-bin histogram of bytes (shared + global atomics)",
    {"tiny": 10007, "quick": 1 << 25, "full": 1 << 27},
    _hist_make, lambda d: {"hist": np.bincount(d["data"], minlength=256).astype(np.uint32)}, ["hist"], {},
    _hist_ptx, _hist_native, _hist_ocl, _hist_numpy, bytes_moved=lambda n: n)


# --------------------------------------------------------------------------------- transpose
def _tr_make(n, rng):
    return {"inp": rng.random((n, n), dtype=np.float32), "out": np.zeros((n, n), np.float32)}


def _tr_ptx(k, d, n):
    args = (d["inp"], d["out"], n)
    return lambda: k((n // 32, n // 32), (32, 8), args)


def _tr_native(peer, d, n):
    fn = peer.function("transpose", [P, P, I])
    a, b = ptr(d["inp"]), ptr(d["out"])
    return lambda: fn(a, b, n)


def _tr_numpy(d, n):
    a, out = d["inp"], d["out"]

    def run():
        out[...] = a.T
    return run


TRANSPOSE = Case(
    "transpose", "memory", "out = in^T through a padded 32x33 shared tile (float32)",
    {"tiny": 64, "quick": 4096, "full": 8192},
    _tr_make, lambda d: {"out": d["inp"].T.copy()}, ["out"], {},
    _tr_ptx, _tr_native,
    lambda peer, d, n: ocl_simple(peer, d, "transpose", ["inp", "out", i32(n)], (n, n // 4), (32, 8), ["out"]),
    _tr_numpy, bytes_moved=lambda n: 8 * n * n, label=lambda n: f"{n}x{n}")


# ------------------------------------------------------------------------------------- nbody
NBODY_EPS2 = 0.01


def _nbody_make(n, rng):
    pos = rng.random((n, 4), dtype=np.float32)
    pos[:, 3] = 0.5 + 0.5 * pos[:, 3]
    return {"pos": pos, "acc": np.zeros((n, 4), np.float32)}


def _nbody_ref(d):
    p = d["pos"].astype(np.float64)
    n = len(p)
    acc = np.full((n, 4), np.nan)  # NaN: not checked; a sample of at most 1024 bodies is
    rows = np.arange(0, n, max(1, n // 1024))
    for s in range(0, len(rows), 128):
        r = rows[s:s + 128]
        dp = p[None, :, :3] - p[r, None, :3]
        r2 = (dp * dp).sum(-1) + NBODY_EPS2
        w = p[None, :, 3] / (r2 * np.sqrt(r2))
        acc[r, :3] = (dp * w[..., None]).sum(1)
        acc[r, 3] = 0.0
    return {"acc": acc}


def _nbody_ptx(k, d, n):
    args = (d["pos"], d["acc"], n, NBODY_EPS2)
    return lambda: k(n // 256, 256, args)


def _nbody_native(peer, d, n):
    fn = peer.function("nbody", [P, P, I, F])
    a, b = ptr(d["pos"]), ptr(d["acc"])
    return lambda: fn(a, b, n, NBODY_EPS2)


NBODY = Case(
    "nbody", "compute", "all-pairs gravitational accelerations, rsqrt (float32)",
    {"tiny": 512, "quick": 4096, "full": 16384},
    _nbody_make, _nbody_ref, ["acc"], {"acc": (1e-3, 1e-4)},
    _nbody_ptx, _nbody_native,
    lambda peer, d, n: ocl_simple(peer, d, "nbody", ["pos", "acc", i32(n), f32(NBODY_EPS2)], (n,), (256,), ["acc"]),
    flops=lambda n: 20 * n * n)


# ------------------------------------------------------------------------------ blackscholes
BS_R, BS_V = 0.02, 0.30


def _bs_make(n, rng):
    return {"S": rng.uniform(5.0, 30.0, n).astype(np.float32), "X": rng.uniform(1.0, 100.0, n).astype(np.float32),
            "T": rng.uniform(0.25, 10.0, n).astype(np.float32),
            "call": np.zeros(n, np.float32), "put": np.zeros(n, np.float32)}


def _bs_ref(d):
    S, X, T = (d[k].astype(np.float64) for k in "SXT")

    def cnd(x):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(x))
        c = 0.39894228040143267793994605993438 * np.exp(-0.5 * x * x) * (
            k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))))
        return np.where(x > 0, 1.0 - c, c)

    sq = np.sqrt(T)
    d1 = (np.log(S / X) + (BS_R + 0.5 * BS_V * BS_V) * T) / (BS_V * sq)
    d2 = d1 - BS_V * sq
    c1, c2 = cnd(d1), cnd(d2)
    e = np.exp(-BS_R * T)
    return {"call": S * c1 - X * e * c2, "put": X * e * (1.0 - c2) - S * (1.0 - c1)}


def _bs_ptx(k, d, n):
    args = (d["call"], d["put"], d["S"], d["X"], d["T"], BS_R, BS_V, n)
    return lambda: k(cdiv(n, 128), 128, args)


def _bs_native(peer, d, n):
    fn = peer.function("blackscholes", [P, P, P, P, P, F, F, I])
    a = [ptr(d[k]) for k in ("call", "put", "S", "X", "T")]
    return lambda: fn(*a, BS_R, BS_V, n)


BLACKSCHOLES = Case(
    "blackscholes", "compute", "European call/put prices: expf, logf, sqrtf, CND polynomial (float32)",
    {"tiny": 10007, "quick": 1 << 21, "full": 1 << 24},
    _bs_make, _bs_ref, ["call", "put"], {"call": (1e-4, 1e-5), "put": (1e-4, 1e-5)},
    _bs_ptx, _bs_native,
    lambda peer, d, n: ocl_simple(peer, d, "blackscholes", ["call", "put", "S", "X", "T", f32(BS_R), f32(BS_V),
                                                            i32(n)], (cdiv(n, 128) * 128,), (128,), ["call", "put"]),
    flops=lambda n: 60 * n)


# ----------------------------------------------------------------------------------- bitonic
def _bit_make(n, rng):
    return {"src": rng.integers(0, 2 ** 32, n, dtype=np.uint32), "dst": np.zeros(n, np.uint32)}


def _bit_ptx(k, d, n):
    args = (d["src"], d["dst"])
    return lambda: k(n // 1024, 512, args)


def _bit_native(peer, d, n):
    fn = peer.function("bitonic", [P, P, I])
    a, b = ptr(d["src"]), ptr(d["dst"])
    return lambda: fn(a, b, n // 1024)


BITONIC = Case(
    "bitonic", "sync", "bitonic sort of 1024-key segments in shared memory (55 barriers per block)",
    {"tiny": 4096, "quick": 1 << 20, "full": 1 << 22},
    _bit_make, lambda d: {"dst": np.sort(d["src"].reshape(-1, 1024), axis=1).ravel()}, ["dst"], {},
    _bit_ptx, _bit_native,
    lambda peer, d, n: ocl_simple(peer, d, "bitonic", ["src", "dst"], (n // 2,), (512,), ["dst"]))


# -------------------------------------------------------------------------------------- scan
def _scan_make(n, rng):
    return {"inp": rng.integers(0, 10, n, dtype=np.int32), "out": np.zeros(n, np.int32)}


def _scan_ptx(k, d, n):
    args = (d["inp"], d["out"])
    return lambda: k(n // 512, 512, args)


def _scan_native(peer, d, n):
    fn = peer.function("scan", [P, P, I])
    a, b = ptr(d["inp"]), ptr(d["out"])
    return lambda: fn(a, b, n // 512)


SCAN = Case(
    "scan", "sync", "inclusive scan of 512-int blocks (CUDA: warp shuffles; OpenCL: local memory)",
    {"tiny": 4096, "quick": 1 << 22, "full": 1 << 24},
    _scan_make, lambda d: {"out": np.cumsum(d["inp"].reshape(-1, 512), axis=1, dtype=np.int32).ravel()}, ["out"], {},
    _scan_ptx, _scan_native,
    lambda peer, d, n: ocl_simple(peer, d, "scan", ["inp", "out"], (n,), (512,), ["out"]))


CASES: dict[str, Case] = {c.name: c for c in (VADD, SAXPY, DOT, SGEMM, JACOBI, HISTOGRAM, TRANSPOSE, NBODY,
                                               BLACKSCHOLES, BITONIC, SCAN, *LAYERS)}
MEMORY_BOUND = [c.name for c in CASES.values() if c.kind == "memory"]


def check_case(name: str, peers: dict, size: int | str = "tiny", seed: int = 0) -> dict[str, list[str] | str]:
    """The harness's correctness check: run `name` once on every peer in `peers` ({peer name: peer
    object or None for NumPy}) and compare with the float64 reference.  Returns {peer: problems}
    (an empty list when the results agree), or {peer: "unavailable: ..."}."""
    from ptxbench.peers import PeerUnavailable

    case = CASES[name]
    n = case.sizes[size] if isinstance(size, str) else size
    inputs = case.make(n, np.random.default_rng(seed))
    expected = case.reference(inputs)
    result: dict[str, list[str] | str] = {}
    for pname, peer in peers.items():
        if pname == "numpy" and case.numpy is None:
            continue
        try:
            got = run_once(case, pname, peer, inputs, n)
        except PeerUnavailable as e:
            result[pname] = f"unavailable: {e}"
            continue
        except Exception as e:  # noqa: BLE001 - a failing peer is a result, not a crash
            result[pname] = [f"{type(e).__name__}: {e}"]
            continue
        result[pname] = case.check(got, expected)
    return result
