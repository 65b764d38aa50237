"""Translation time vs program size: parse, validate+preprocess, summary, lowering to LLVM IR, LLVM.

Generates kernels of N instructions (arithmetic, loads/stores, compares, forward branches, a loop) and
reports per stage the time per instruction and the fitted exponent of time ~ N^k (k = 1: linear).

    python bench/translate_scaling.py [--sizes 1000,10000,100000] [--out bench/results/translate_scaling.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

from ptxjit.frontend.parser import parse
from ptxjit.jit.engine import optimize_to_object
from ptxjit.lower.layout import globals_layout
from ptxjit.lower.module import ModuleCodegen
from ptxjit.lower.validate import validate
from ptxjit.passes.preprocess import preprocess
from ptxjit.passes.summary import summarize
from ptxjit.util import gc_paused


def generate(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines = [".version 8.0", ".target sm_80", ".address_size 64", "",
             ".visible .entry big(.param .u64 p_in, .param .u64 p_out, .param .u32 p_n)", "{",
             "    .reg .pred %p<8>;", "    .reg .b32 %r<64>;", "    .reg .f32 %f<64>;", "    .reg .b64 %rd<16>;",
             "    ld.param.u64 %rd1, [p_in];", "    ld.param.u64 %rd2, [p_out];", "    ld.param.u32 %r0, [p_n];",
             "    mov.u32 %r1, %tid.x;", "    mul.wide.u32 %rd3, %r1, 4;", "    add.s64 %rd4, %rd1, %rd3;",
             "    add.s64 %rd5, %rd2, %rd3;", "    ld.global.f32 %f1, [%rd4];"]
    count = 8
    label = 0
    while count < n:
        k = rng.randrange(10)
        a, b, c = (rng.randrange(2, 60) for _ in range(3))
        if k < 3:
            lines.append(f"    add.s32 %r{a}, %r{b}, %r{c};")
        elif k < 5:
            lines.append(f"    fma.rn.f32 %f{a}, %f{b}, %f{c}, %f{a};")
        elif k == 5:
            lines.append(f"    mad.lo.s32 %r{a}, %r{b}, {rng.randrange(1, 99)}, %r{c};")
        elif k == 6:
            lines.append(f"    ld.global.f32 %f{a}, [%rd4+{4 * rng.randrange(64)}];")
        elif k == 7:
            lines.append(f"    st.global.f32 [%rd5+{4 * rng.randrange(64)}], %f{a};")
        else:
            label += 1
            lines.append(f"    setp.lt.s32 %p{a % 8}, %r{b}, %r{c};")
            lines.append(f"    @%p{a % 8} bra $L{label};")
            lines.append(f"    xor.b32 %r{a}, %r{a}, %r{b};")
            lines.append(f"$L{label}:")
            count += 2
        count += 1
    lines += ["    st.global.f32 [%rd5], %f1;", "    ret;", "}", ""]
    return "\n".join(lines)


def measure(n: int) -> dict:
    with gc_paused():  # as ptxjit.Module does
        return _measure(n)


def _measure(n: int) -> dict:
    text = generate(n)
    t = {}
    t0 = time.perf_counter()
    mod = parse(text, f"gen{n}.ptx")
    t["parse"] = time.perf_counter() - t0
    fn = mod.functions["big"]
    t0 = time.perf_counter()
    validate(mod)
    preprocess(fn)
    t["preprocess"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    summarize(fn)
    t["summary"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ir_text = str(ModuleCodegen(mod, fn, globals_layout(mod), (256, 1, 1)).build())
    t["lowering"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    optimize_to_object(ir_text, opt_level=2)
    t["llvm"] = time.perf_counter() - t0
    return {"instructions": len(fn.instructions), "seconds": t}


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--out", default="bench/results/translate_scaling.json")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [measure(n) for n in sizes]
    stages = list(rows[0]["seconds"])
    report = {"rows": rows, "exponent": {}, "us_per_instruction": {}}
    print(f"{'instructions':>12} " + " ".join(f"{s:>12}" for s in stages) + "   (µs per instruction)")
    for r in rows:
        n = r["instructions"]
        print(f"{n:>12} " + " ".join(f"{r['seconds'][s] / n * 1e6:>12.2f}" for s in stages))
    xs = [r["instructions"] for r in rows]
    for s in stages:
        k = fit_exponent(xs, [r["seconds"][s] for r in rows])
        report["exponent"][s] = round(k, 3)
        report["us_per_instruction"][s] = [round(r["seconds"][s] / r["instructions"] * 1e6, 3) for r in rows]
    print("fitted exponent k in time ~ N^k: " + ", ".join(f"{s} {report['exponent'][s]:.2f}" for s in stages))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
