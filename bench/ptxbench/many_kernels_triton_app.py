"""A Triton program of distinct kernels (the corpus of tools/triton_corpus: vector add, softmax, four tl.dot
matmuls, layer norm, flash attention, row sums, atomics), each launched once and checked against NumPy.

Run two ways by bench/ptxbench/many_kernels.py, each in a fresh process:

    python many_kernels_triton_app.py ptxjit     Triton compiles for sm_80, ptxjit translates and runs
    python many_kernels_triton_app.py interp     TRITON_INTERPRET=1 (Triton's interpreter: no compile step)

Prints one line `RESULT{json}`: seconds to import, per kernel (to its first result), the whole program,
and the kernels whose results did not match.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MODE = sys.argv[1] if len(sys.argv) > 1 else "ptxjit"
ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
if MODE == "interp":
    os.environ["TRITON_INTERPRET"] = "1"
# this folder holds the harness's own triton.py, which must not shadow the triton package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

T_START = time.perf_counter()
import numpy as np  # noqa: E402
import triton.language as tl  # noqa: E402

from tools.triton_corpus import generate as gen  # noqa: E402
from tools.triton_corpus import record as rec  # noqa: E402

if MODE == "ptxjit":
    import ptxjit.triton as pt
else:
    from ptxbench.triton_arrays import InterpArray
T_IMPORT = time.perf_counter() - T_START


def run_case(case: dict) -> tuple[bool, str]:
    scalars = {n: v for n, _, v in case["args"] if v is not None}
    types = {n: t for n, t, _ in case["args"]}
    arrays, refs = rec.BUILDERS[case["name"]](scalars, np.random.default_rng(1234))
    names = [n for n in case["kernel"].arg_names if n not in case["constexprs"]]
    kw = {**case["constexprs"], "num_warps": case["num_warps"], "num_stages": case["num_stages"]}
    if MODE == "ptxjit":
        args = [pt.reinterpret(arrays[n], "bf16") if types[n] == "*bf16" else arrays[n]
                if types[n].startswith("*") else scalars[n] for n in names]
        pt.jit(case["kernel"], arch=80)[tuple(case["grid"])](*args, **kw)
    else:
        args = [InterpArray(arrays[n], tl.bfloat16 if types[n] == "*bf16" else None)
                if types[n].startswith("*") else scalars[n] for n in names]
        case["kernel"][tuple(case["grid"])](*args, **case["constexprs"])
    return rec.compare(arrays, refs)


def main() -> None:
    per_kernel: dict[str, float] = {}
    bad: dict[str, str] = {}
    t_program = time.perf_counter()
    for case in gen.CASES:
        t0 = time.perf_counter()
        ok, why = run_case(case)
        per_kernel[case["name"]] = time.perf_counter() - t0
        if not ok:
            bad[case["name"]] = why
    program_s = time.perf_counter() - t_program
    print("RESULT" + json.dumps({"mode": MODE, "import_s": T_IMPORT, "program_s": program_s,
                                 "total_s": time.perf_counter() - T_START, "kernels": len(per_kernel),
                                 "per_kernel_s": per_kernel, "mismatches": bad}), flush=True)


if __name__ == "__main__":
    main()
