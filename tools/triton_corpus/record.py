"""Launch every corpus kernel (tests/data/triton/<case>.<arch>.ptx) through ptxjit, on fixed NumPy
inputs, and say per case whether ptxjit ran it and matched a NumPy reference.

    .venv/bin/python -m tools.triton_corpus.record [case ...]

With the GPU-golden launch recorder on PYTHONPATH every launch is also recorded (each labeled
`<case>.<arch>` by the local `case` below), even the ones ptxjit refuses:

    PYTHONPATH=/work/shared/gpu-golden/tools/hook PTXJIT_RECORD_DIR=/tmp/rec_triton \
        PTXJIT_RECORD_TAG=golden-triton .venv/bin/python -m tools.triton_corpus.record

Array parameters are separate NumPy arrays (no views into a shared buffer), outputs start as a
sentinel, accumulators (atomics) as zero, and Triton's hidden scratch pointers get zero-filled uint8
arrays of at least 16 bytes.  Never stops at a failing case.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import zlib
from pathlib import Path

import numpy as np

os.environ.setdefault("PTXJIT_TIMEOUT", "300")  # a runaway launch ends as a KernelTimeout, not a hang

import ptxjit  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "triton"
SENTINEL_F = -7776.0  # exact in fp16, bf16 and fp32
SENTINEL_I = 0x7EADBEEF


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (round to nearest even), as uint16."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def _bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _tf32(x: np.ndarray) -> np.ndarray:
    """What mma/wgmma .tf32 read from fp32 registers: the low 13 mantissa bits ignored."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _fill(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.full(shape, SENTINEL_F if dtype.kind == "f" else SENTINEL_I, dtype=dtype)


# ---------------------------------------------------------------- per-case inputs and references
# build(s, rng) -> (arrays by parameter name, outputs: {name: (reference, atol, rtol)})

def _vector_add(s, rng):
    n = s["n"]
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    return {"x_ptr": x, "y_ptr": y, "out_ptr": _fill(n, np.float32)}, {"out_ptr": (x + y, 0.0, 0.0)}


def _softmax(s, rng):
    rows, cols, stride = 48, s["n_cols"], s["in_row_stride"]
    x = (rng.standard_normal((rows, stride), dtype=np.float32) * 3).astype(np.float32)
    out = _fill((rows, s["out_row_stride"]), np.float32)
    ref = out.copy()
    e = np.exp(x[:, :cols].astype(np.float64) - x[:, :cols].max(axis=1, keepdims=True))
    ref[:, :cols] = e / e.sum(axis=1, keepdims=True)
    return {"out_ptr": out, "in_ptr": x}, {"out_ptr": (ref, 1e-6, 1e-4)}


def _matmul(kind):
    def build(s, rng):
        M, N, K = s["M"], s["N"], s["K"]
        if kind == "fp16":
            a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
            b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
            ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
            c, tol = _fill((M, N), np.float16), (1e-2, 1e-2)
        elif kind == "bf16":
            a = _bf16_bits(rng.uniform(-1, 1, (M, K)).astype(np.float32))
            b = _bf16_bits(rng.uniform(-1, 1, (K, N)).astype(np.float32))
            ref = _bf16_value(a).astype(np.float64) @ _bf16_value(b).astype(np.float64)
            c, tol = _fill((M, N), np.float32), (1e-4, 1e-4)
        elif kind == "tf32":
            a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
            b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
            ref = _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)
            c, tol = _fill((M, N), np.float32), (2e-3, 1e-3)
        else:  # int8
            a = rng.integers(-128, 128, (M, K), dtype=np.int8)
            b = rng.integers(-128, 128, (K, N), dtype=np.int8)
            ref = a.astype(np.int32) @ b.astype(np.int32)
            c, tol = _fill((M, N), np.int32), (0.0, 0.0)
        return {"a_ptr": a, "b_ptr": b, "c_ptr": c}, {"c_ptr": (ref, *tol)}
    return build


def _layer_norm(s, rng):
    rows, N = 32, s["N"]
    x = (rng.standard_normal((rows, s["stride"]), dtype=np.float32) * 2 + 0.5).astype(np.float32)
    w = rng.uniform(0.5, 1.5, N).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, N).astype(np.float32)
    xd = x[:, :N].astype(np.float64)
    mean = xd.mean(axis=1)
    rstd = 1 / np.sqrt(xd.var(axis=1) + s["eps"])
    y = _fill((rows, s["stride"]), np.float32)
    yref = y.copy()
    yref[:, :N] = (xd - mean[:, None]) * rstd[:, None] * w + b
    return ({"x_ptr": x, "y_ptr": y, "w_ptr": w, "b_ptr": b, "mean_ptr": _fill(rows, np.float32),
             "rstd_ptr": _fill(rows, np.float32)},
            {"y_ptr": (yref, 1e-4, 1e-4), "mean_ptr": (mean, 1e-5, 1e-5), "rstd_ptr": (rstd, 1e-5, 1e-4)})


def _attention(s, rng):
    heads, seq, d = 2, s["seq_len"], s["stride_s"]
    q, k, v = (rng.uniform(-1, 1, (heads, seq, d)).astype(np.float16) for _ in range(3))
    qf, kf, vf = (t.astype(np.float64) for t in (q, k, v))
    sc = qf @ kf.transpose(0, 2, 1) * s["sm_scale"]
    p = np.exp(sc - sc.max(axis=-1, keepdims=True))
    ref = ((p / p.sum(axis=-1, keepdims=True)) @ vf).astype(np.float16)
    return ({"q_ptr": q, "k_ptr": k, "v_ptr": v, "o_ptr": _fill((heads, seq, d), np.float16)},
            {"o_ptr": (ref, 5e-3, 1e-2)})


def _row_sum(s, rng):
    x = rng.standard_normal((s["n_rows"], s["stride"]), dtype=np.float32)
    ref = x[:, :s["n_cols"]].astype(np.float64).sum(axis=1)
    return {"x_ptr": x, "out_ptr": _fill(s["n_rows"], np.float32)}, {"out_ptr": (ref, 1e-4, 1e-5)}


def _atomics(s, rng):
    n, nbins = s["n"], 37
    x = rng.uniform(-1, 1, n).astype(np.float32)
    bins = rng.integers(0, nbins, n, dtype=np.int32)
    wsum = np.zeros(nbins, np.float64)
    np.add.at(wsum, bins, x.astype(np.float64))
    hist = np.bincount(bins, minlength=nbins).astype(np.int32)
    return ({"x_ptr": x, "bins_ptr": bins, "total_ptr": np.zeros(1, np.float32),
             "wsum_ptr": np.zeros(nbins, np.float32), "hist_ptr": np.zeros(nbins, np.int32)},
            {"total_ptr": (np.array([x.astype(np.float64).sum()]), 1e-3, 1e-5), "wsum_ptr": (wsum, 1e-4, 1e-5),
             "hist_ptr": (hist, 0.0, 0.0)})


BUILDERS = {"vector_add": _vector_add, "softmax": _softmax, "matmul_fp16": _matmul("fp16"),
            "matmul_bf16": _matmul("bf16"), "matmul_tf32": _matmul("tf32"), "matmul_int8": _matmul("int8"),
            "layer_norm": _layer_norm, "attention": _attention, "row_sum": _row_sum, "atomics": _atomics}


def build_args(meta: dict, arrays: dict) -> list:
    """The launch's argument list in .entry order: user parameters, then Triton's hidden pointers."""
    args = []
    for p in meta["params"]:
        if p["kind"] == "pointer":
            args.append(arrays[p["name"]])
        elif p["kind"] == "scalar":
            t = p["triton_type"]
            args.append(np.float32(p["value"]) if t == "fp32" else
                        np.int64(p["value"]) if t == "i64" else np.int32(p["value"]))
        else:  # hidden scratch: zero-filled, at least 16 bytes
            args.append(np.zeros(max(16, p["bytes"]), np.uint8))
    return args


def compare(arrays: dict, refs: dict) -> tuple[bool, str]:
    worst, ok = [], True
    for pname, (ref, atol, rtol) in refs.items():
        got = arrays[pname]
        if got.dtype == np.uint16:
            got = _bf16_value(got)
        g, r = got.astype(np.float64).reshape(-1), np.asarray(ref, np.float64).reshape(-1)
        err = np.abs(g - r)
        bad = ~(err <= atol + rtol * np.abs(r))
        bad |= np.isnan(g) != np.isnan(r)
        if bad.any():
            ok = False
            i = int(np.argmax(np.where(np.isnan(err), np.inf, err)))
            worst.append(f"{pname}: {int(bad.sum())}/{bad.size} off, e.g. [{i}] got {g[i]:.6g} want {r[i]:.6g}")
    return ok, "; ".join(worst)


RECORDING = bool(os.environ.get("PTXJIT_RECORD_DIR"))


def _load_unvalidated(ptx: str, name: str) -> ptxjit.Module:
    """ptxjit.Module(ptx) with ptxjit.api's validation pass switched off for this one load (record-only
    fallback for PTX that ptxjit refuses at load: the recorder needs a Kernel to wrap)."""
    import ptxjit.api as api

    saved = api.validate
    api.validate = lambda m: None
    try:
        return ptxjit.Module(ptx, name)
    finally:
        api.validate = saved


def _first_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:240]


def run_one(name: str, arch: str) -> str:
    meta = json.loads((DATA / f"{name}.{arch}.json").read_text())
    ptx = (DATA / f"{name}.{arch}.ptx").read_text()
    case = {"name": f"{name}.{arch}"}  # the recorder labels the launch from this local
    scalars = {p["name"]: p["value"] for p in meta["params"] if p["kind"] == "scalar"}
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays, refs = BUILDERS[name](scalars, rng)
    args = build_args(meta, arrays)
    try:
        kernel = ptxjit.Module(ptx, f"{case['name']}.ptx").get_function(meta["entry"])
    except Exception as e:
        refusal = f"refused at load: {_first_line(e)}"
        if not RECORDING:
            return refusal
        # so the launch is still recorded: load without the validation pass, then launch; the
        # translation refuses the same instruction at launch, before anything runs
        try:
            kernel = _load_unvalidated(ptx, f"{case['name']}.ptx").get_function(meta["entry"])
        except Exception as e2:
            return f"{refusal} | not recorded, unvalidated load failed too: {_first_line(e2)}"
        try:
            kernel(tuple(meta["grid"]), tuple(meta["block"]), args, shared_mem=meta["shared"])
        except Exception as e2:
            return f"{refusal} | recorded (unvalidated load; launch: {_first_line(e2)[:80]})"
        return f"{refusal} | recorded, and the unvalidated load RAN: {compare(arrays, refs)}"
    try:
        kernel(tuple(meta["grid"]), tuple(meta["block"]), args, shared_mem=meta["shared"])
    except Exception as e:
        return f"refused/failed at launch: {_first_line(e)}"
    ok, why = compare(arrays, refs)
    return "ran+matches" if ok else f"ran+differs: {why}"


def main(argv: list[str] | None = None) -> int:
    only = set(argv if argv is not None else sys.argv[1:])
    for name in BUILDERS:
        if only and name not in only:
            continue
        for arch in ("sm80", "sm90"):
            try:
                status = run_one(name, arch)
            except Exception as e:  # a bug here, not in ptxjit: say so and go on
                status = f"record.py error: {_first_line(e)}"
                traceback.print_exc()
            print(f"{name}.{arch}: {status}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
