"""Write probes.ptx (one kernel per approximate instruction, each applying it to 60 immediates) and,
from ptxas's SASS, expected.json: what the GPU computes for each immediate once ptxas folded it.

Usage (regen.sh): python3 make_probes.py && python3 make_probes.py --expect > expected.json
(needs ptxas on PATH and nvdisasm: the nvidia-cuda-nvdisasm wheel, Triton's copy, or NVDISASM=...).
Unary kernels store op(imm_i) at out[i]: expected[kernel][i] is the folded f32 bits, or null where the
SASS evaluates the instruction at run time (MUFU: the unit model applies).  Division kernels store
a / imm_i for a loaded a: expected[kernel][i] lists the FMUL immediates applied to a, in order.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

OPS = ["rcp.approx.f32", "rcp.approx.ftz.f32", "sqrt.approx.f32", "sqrt.approx.ftz.f32", "rsqrt.approx.f32",
       "rsqrt.approx.ftz.f32", "ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32", "lg2.approx.ftz.f32",
       "sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32",
       "div.full.f32", "div.full.ftz.f32", "div.approx.f32", "div.approx.ftz.f32"]
# the same through a register set by `mov` (ptxas propagates the constant, then folds)
VIA_MOV = ["rcp.approx.f32", "sin.approx.f32", "div.full.f32", "div.approx.ftz.f32"]


def constants() -> list[int]:
    rng = np.random.default_rng(1)
    c = [*rng.integers(0x3F800000, 0x40800000, 24), *rng.integers(0x00800000, 0x7F000000, 16),
         *rng.integers(0x80800000, 0xFF000000, 8), *rng.integers(1, 0x00800000, 4),
         0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x3F800000, 0x7F000000, 0x00400000]
    return [int(v) for v in c]


def kernel_name(op: str, via_mov: bool = False) -> str:
    return "k_" + op.replace(".", "_") + ("_mov" if via_mov else "")


def write_ptx(path: str) -> None:
    out = [".version 8.4\n.target sm_90\n.address_size 64\n"]
    for op, via_mov in [(op, False) for op in OPS] + [(op, True) for op in VIA_MOV]:
        nregs = len(constants()) + 4
        out.append(f".visible .entry {kernel_name(op, via_mov)}(.param .u64 pa)\n{{\n .reg .b32 %r<{nregs}>;"
                   " .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [pa];\n ld.global.f32 %r1, [%rd1];\n")
        for i, c in enumerate(constants()):
            arg = f"0f{c:08X}"
            if via_mov:
                out.append(f" mov.b32 %r{i + 3}, {arg};\n")
                arg = f"%r{i + 3}"
            src = f"%r1, {arg}" if op.startswith("div") else arg
            out.append(f" {op} %r2, {src};\n st.global.f32 [%rd1+{4 * i + 4}], %r2;\n")
        out.append(" ret;\n}\n")
    with open(path, "w") as f:
        f.write("".join(out))


def expect(path: str) -> dict:
    nvdisasm = os.environ.get("NVDISASM", "nvdisasm")
    with tempfile.TemporaryDirectory() as d:
        cubin = os.path.join(d, "p.cubin")
        subprocess.run(["ptxas", "-arch=sm_90", path, "-o", cubin], check=True)
        sass = subprocess.run([nvdisasm, "-c", "-hex", cubin], check=True, capture_output=True, text=True).stdout
    code: dict[str, list[tuple[str, int]]] = {}
    kernel = None
    for line in sass.splitlines():
        m = re.match(r"^\.text\.(\w+):", line)
        if m:
            kernel = m.group(1)
            code[kernel] = []
            continue
        m = re.match(r"^\s+/\*[0-9a-f]{4}\*/\s+(.*?)\s*;\s+/\* (0x[0-9a-f]{16}) \*/", line)
        if m and kernel:
            code[kernel].append((m.group(1).replace(".reuse", ""), int(m.group(2), 16)))
    result = {}
    for op, via_mov in [(op, False) for op in OPS] + [(op, True) for op in VIA_MOV]:
        prog = code[kernel_name(op, via_mov)]
        vals: list = [None] * len(constants())
        for j, (text, _) in enumerate(prog):
            m = re.match(r"STG\.E desc\[UR\d+\]\[R\d+\.64(?:\+(0x[0-9a-f]+))?\], (R\d+|RZ)$", text)
            if not m or m.group(1) is None:
                continue
            i = int(m.group(1), 16) // 4 - 1
            vals[i] = _chain(prog[:j], m.group(2)) if op.startswith("div") else _const(prog[:j], m.group(2))
        result[kernel_name(op, via_mov)] = vals
    return result


def _def(prog: list, reg: str) -> tuple[str, int] | None:
    return next(((t, e) for t, e in reversed(prog) if re.match(rf"^\S+ {reg}\b", t)), None)


def _const(prog: list, reg: str) -> int | None:
    """The constant a register holds (HFMA2.MMA / MOV / IMAD.MOV immediates), None if computed."""
    if reg == "RZ":
        return 0
    d = _def(prog, reg)
    if d is None:
        return None
    text, enc = d
    if text.startswith("HFMA2.MMA"):
        return enc >> 32
    m = re.match(r"^(?:MOV|IMAD\.MOV\.U32) \S+, (?:RZ, RZ, )?(-?0x[0-9a-f]+|RZ)$", text)
    if m:
        return 0 if m.group(1) == "RZ" else int(m.group(1), 16) & 0xFFFFFFFF
    return None


def _chain(prog: list, reg: str) -> list[str] | None:
    """FMUL immediates applied to the loaded value, first to last; None if anything else computes it."""
    muls = []
    while True:
        d = _def(prog, reg)
        if d and d[0].startswith("LDG"):
            return muls[::-1]
        m = d and re.match(r"^FMUL(?:\.FTZ)? \S+, (R\d+), ([^,]+)$", d[0])
        if not m or re.match(r"^-?(R\d+|RZ)$", m.group(2)):
            return None
        muls.append(f"0x{d[1] >> 32:08x}")
        reg = m.group(1)
        prog = prog[:prog.index(d)]


if __name__ == "__main__":
    if "--expect" in sys.argv:
        json.dump(expect("probes.ptx"), sys.stdout, indent=0)
        print()
    else:
        write_ptx("probes.ptx")
