"""Compile the corpus kernels (kernels.py) with Triton for sm_80 and sm_90, without a GPU, and write
tests/data/triton/<case>.<arch>.ptx plus <case>.<arch>.json (entry, launch shape, parameters).

    TRITON_DEFAULT_FP_FUSION=1 .venv/bin/python -m tools.triton_corpus.generate [--out DIR] [case ...]

The scalar argument values and the launch grid are fixed here: Triton specializes integer arguments
that are multiples of 16 (tt.divisibility) as its runtime would for these values, and every pointer
as 16-byte aligned, so a replay must pass the same scalars (record.py reads them from the JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, stated (silences its warning)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from tools.triton_corpus import kernels as K  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "triton"
ARCHS = {"sm80": 80, "sm90": 90}
# PTX ISA version the PTX declares (Triton's ptx_version option): by default Triton takes the newest its
# bundled ptxas knows (8.8 for sm_80, 9.4 via ptxas-blackwell for sm_90), which a GPU driver older than
# CUDA 13.x refuses to load; 8.4 (CUDA 12.4) is what Triton itself emits on a CUDA 12.4 installation
PTX_VERSION = 84


def _mm(name, dtype, out, acc, prec, M, N, Kd, BM, BN, BK, warps=4, stages=3):
    return {
        "name": name, "kernel": K.matmul,
        "args": [("a_ptr", "*" + dtype, None), ("b_ptr", "*" + dtype, None), ("c_ptr", "*" + out, None),
                 ("M", "i32", M), ("N", "i32", N), ("K", "i32", Kd),
                 ("stride_am", "i32", Kd), ("stride_bk", "i32", N), ("stride_cm", "i32", N)],
        "constexprs": {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": 8, "ACC_TYPE": acc,
                       "INPUT_PRECISION": prec},
        "grid": [((M + BM - 1) // BM) * ((N + BN - 1) // BN), 1, 1], "num_warps": warps, "num_stages": stages,
    }


CASES = [
    {"name": "vector_add", "kernel": K.vector_add,
     "args": [("x_ptr", "*fp32", None), ("y_ptr", "*fp32", None), ("out_ptr", "*fp32", None), ("n", "i32", 1000)],
     "constexprs": {"BLOCK": 256}, "grid": [4, 1, 1], "num_warps": 4, "num_stages": 3},
    {"name": "softmax", "kernel": K.softmax,
     "args": [("out_ptr", "*fp32", None), ("in_ptr", "*fp32", None), ("in_row_stride", "i32", 128),
              ("out_row_stride", "i32", 128), ("n_cols", "i32", 100)],
     "constexprs": {"BLOCK": 128}, "grid": [48, 1, 1], "num_warps": 4, "num_stages": 3},
    _mm("matmul_fp16", "fp16", "fp16", tl.float32, "ieee", 128, 128, 64, 64, 64, 32),
    _mm("matmul_bf16", "bf16", "fp32", tl.float32, "ieee", 128, 64, 64, 64, 64, 32),
    _mm("matmul_tf32", "fp32", "fp32", tl.float32, "tf32", 64, 128, 80, 64, 64, 32),
    _mm("matmul_int8", "i8", "i32", tl.int32, "ieee", 128, 128, 96, 64, 64, 32),
    {"name": "layer_norm", "kernel": K.layer_norm_fwd,
     "args": [("x_ptr", "*fp32", None), ("y_ptr", "*fp32", None), ("w_ptr", "*fp32", None),
              ("b_ptr", "*fp32", None), ("mean_ptr", "*fp32", None), ("rstd_ptr", "*fp32", None),
              ("stride", "i32", 200), ("N", "i32", 200), ("eps", "fp32", 1e-5)],
     "constexprs": {"BLOCK": 128}, "grid": [32, 1, 1], "num_warps": 4, "num_stages": 3},
    {"name": "attention", "kernel": K.attention_fwd,
     "args": [("q_ptr", "*fp16", None), ("k_ptr", "*fp16", None), ("v_ptr", "*fp16", None),
              ("o_ptr", "*fp16", None), ("sm_scale", "fp32", 0.125), ("seq_len", "i32", 128),
              ("stride_h", "i32", 128 * 64), ("stride_s", "i32", 64)],
     "constexprs": {"BLOCK_M": 64, "BLOCK_N": 32, "HEAD_DIM": 64}, "grid": [2, 2, 1], "num_warps": 4,
     "num_stages": 2},
    {"name": "row_sum", "kernel": K.row_sum,
     "args": [("x_ptr", "*fp32", None), ("out_ptr", "*fp32", None), ("n_rows", "i32", 64),
              ("n_cols", "i32", 300), ("stride", "i32", 300)],
     "constexprs": {"BLOCK_R": 8, "BLOCK_C": 128}, "grid": [8, 1, 1], "num_warps": 4, "num_stages": 3},
    {"name": "atomics", "kernel": K.atomics,
     "args": [("x_ptr", "*fp32", None), ("bins_ptr", "*i32", None), ("total_ptr", "*fp32", None),
              ("wsum_ptr", "*fp32", None), ("hist_ptr", "*i32", None), ("n", "i32", 3000)],
     "constexprs": {"BLOCK": 512}, "grid": [6, 1, 1], "num_warps": 4, "num_stages": 3},
]

_HIDDEN = [("global_scratch", "Triton's global scratch memory: global_scratch_size bytes per program "
                              "(grid * num_ctas * size in all; Triton passes NULL when the size is 0)"),
           ("profile_scratch", "Triton's profiler scratch memory: profile_scratch_size bytes per program "
                               "(NULL when 0, i.e. when no instrumentation/proton is active)")]


def _json_value(v):
    if isinstance(v, tl.dtype):
        return f"tl.{v.name}" if hasattr(v, "name") else str(v)
    return v


def entry_params(ptx: str, entry: str) -> list[dict]:
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    if m is None:
        raise ValueError(f"no .entry {entry} in the PTX")
    out = []
    for line in m.group(1).split(","):
        line = line.strip()
        if not line:
            continue
        pm = re.match(r"\.param\s+\.(\w+)\s*(.*?)\s*(\S+)$", line)
        out.append({"ptx_name": pm.group(3), "ptx_type": pm.group(1), "ptx_decl": line})
    return out


def compile_case(case: dict, arch: str) -> tuple[str, dict]:
    fn = case["kernel"]
    sig, attrs = {}, {}
    values = {n: v for n, _, v in case["args"]}
    for i, name in enumerate(fn.arg_names):
        if name in case["constexprs"]:
            sig[name] = "constexpr"
            continue
        ty = next(t for n, t, _ in case["args"] if n == name)
        sig[name] = ty
        v = values[name]
        if ty.startswith("*") or (ty.startswith("i") and v % 16 == 0):
            attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fn=fn, signature=sig, constexprs=case["constexprs"], attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", ARCHS[arch], 32),
                       options={"num_warps": case["num_warps"], "num_stages": case["num_stages"],
                                "ptx_version": PTX_VERSION})
    ptx = k.asm["ptx"]
    md = k.metadata
    params = entry_params(ptx, md.name)
    user = [(n, t, v) for n, t, v in case["args"]]
    hidden = len(params) - len(user)
    if hidden != len(_HIDDEN):
        raise RuntimeError(f"{case['name']}.{arch}: {len(params)} .entry params for {len(user)} user params")
    grid = case["grid"]
    nprog = grid[0] * grid[1] * grid[2] * md.num_ctas
    for p, (n, t, v) in zip(params, user, strict=False):
        p.update({"name": n, "kind": "pointer" if t.startswith("*") else "scalar", "triton_type": t})
        if v is not None:
            p["value"] = v
    for p, (n, what) in zip(params[len(user):], _HIDDEN, strict=True):
        per = md.global_scratch_size if n == "global_scratch" else md.profile_scratch_size
        align = md.global_scratch_align if n == "global_scratch" else md.profile_scratch_align
        p.update({"name": n, "kind": "hidden", "what": what, "bytes_per_program": per, "align": align,
                  "bytes": per * nprog, "triton_passes_null": per == 0})
    meta = {
        "case": case["name"], "arch": arch, "entry": md.name, "target": f"sm_{ARCHS[arch]}",
        "triton_version": triton.__version__,
        "ptx_version": PTX_VERSION, "num_warps": md.num_warps, "num_stages": md.num_stages,
        "num_ctas": md.num_ctas, "shared": md.shared, "block": [32 * md.num_warps, 1, 1], "grid": grid,
        "constexprs": {k2: _json_value(v) for k2, v in case["constexprs"].items()},
        "signature": {n: t for n, t in sig.items()},
        "divisibility_16": [fn.arg_names[i[0]] for i in attrs],
        "global_scratch_size": md.global_scratch_size, "global_scratch_align": md.global_scratch_align,
        "profile_scratch_size": md.profile_scratch_size, "profile_scratch_align": md.profile_scratch_align,
        "tmem_size": getattr(md, "tmem_size", 0), "launch_cooperative_grid": md.launch_cooperative_grid,
        "launch_pdl": md.launch_pdl, "params": params,
    }
    return ptx, meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if a.cases and case["name"] not in a.cases:
            continue
        for arch in ARCHS:
            ptx, meta = compile_case(case, arch)
            (a.out / f"{case['name']}.{arch}.ptx").write_text(ptx)
            (a.out / f"{case['name']}.{arch}.json").write_text(json.dumps(meta, indent=1) + "\n")
            print(f"{case['name']}.{arch}: {meta['entry']} warps={meta['num_warps']} shared={meta['shared']} "
                  f"scratch={meta['global_scratch_size']}/{meta['profile_scratch_size']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
