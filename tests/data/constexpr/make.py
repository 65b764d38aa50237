"""Regenerate constexpr.ptx and the values ptxas gives its constant expressions (expected.json).

Needs ptxas and cuobjdump (CUDA 13; `pip install nvidia-cuda-cuobjdump` gives the latter):
    python tests/data/constexpr/make.py [--cuobjdump PATH]
The expected values are read from the cubin ptxas builds: the initial data of the `.global` arrays
(`.nv.global.init`), so the tests check ptxjit against ptxas, never against itself.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# integer expressions, each also used as an instruction operand (mov.u64)
INT_EXPRS = [
    "(1<<4)+3", "0<192", "~0", "(7 % 3)*-5", "0xffffffffffffffff >> 60", "-8 >> 1",
    "1 << -1", "1 << 64", "1 << 63 >> 70", "-1 >> 70", "-9223372036854775807-1 / -1", "-7 / 2",
    "-7 % 2", "7 % -2", "-7 >> 1", "~0 >> 1", "0x8000000000000000 / -1", "3 - 5U > 0",
    "(.s64)(~0) >> 1", "(.u64)-8 >> 1", "-(5U) > 0", "!0 - 2 < 0", "(1 && 1) - 2 < 0",
    "(3 == 3) - 2 < 0", "18446744073709551615 >> 1", "9223372036854775808 >> 62",
    "-(1 << 63) >> 62", "(-8 & -1) >> 1", "(7 % 2) - 2 < 0", "(-8 | 1) >> 1", "(-8 ^ 0) >> 1",
    "(1 ? -8 : 2) >> 1", "(1 ? -8 : 2U) >> 1", "0 ? 1 : 2 ? 3 : 4", "1.5 * 3.0 > 4.4",
    "1.0 == 1.0", "2.0 <= 1.5", "2 * WARP_SZ", "WARP_SZ - 1", "!0 + !5 + (2 && 0) + (0 || 4)",
    "(-1 < 1) + (-1 < 1U) + (-1 >= 1U)", "0x7fffffffffffffff + 1 < 0", "1 < 2 == 1",
    "5 - -5", "+ 5", "0b101 * 010", "1 + 2 * 3 - 4 / 2 % 3", "1 | 2 ^ 3 & 6", "(6 & 3) != 0",
    "0x12345678 * 0x9abcdef0", "-0x12345678 * 0x9abcdef0U", "0xffffffff + 1 == 1 << 32",
]
# floating-point expressions (.f64 initializers and mov.f64 operands)
FLOAT_EXPRS = ["1.5*2.0", "1.0/3.0", "-(1.5)", "0.1 + 0.2", "1e300 * 1e300", "-0.0", "0.0 - 0.0",
               "2.5 - 10.0 / 4.0 * 3.0", "1.0 / 3.0 * 3.0"]


def ptx() -> str:
    lines = [".version 8.0", ".target sm_90", ".address_size 64", ""]
    lines.append(f".global .u64 ints[{len(INT_EXPRS)}] = {{{', '.join(INT_EXPRS)}}};")
    lines.append(f".global .f64 floats[{len(FLOAT_EXPRS)}] = {{{', '.join(FLOAT_EXPRS)}}};")
    lines += ["", "// out[i] = the i-th expression as an instruction operand (ints, then floats)",
              ".visible .entry operands(.param .u64 out)", "{", "    .reg .b64 %rd<3>;",
              "    .reg .f64 %fd<2>;", "    ld.param.u64 %rd1, [out];"]
    for i, e in enumerate(INT_EXPRS):
        lines += [f"    mov.u64 %rd2, {e};", f"    st.global.u64 [%rd1+{8 * i}], %rd2;"]
    for i, e in enumerate(FLOAT_EXPRS):
        lines += [f"    mov.f64 %fd1, {e};", f"    st.global.f64 [%rd1+{8 * (len(INT_EXPRS) + i)}], %fd1;"]
    lines += ["    ret;", "}", ""]
    return "\n".join(lines)


def global_init(cubin: Path, cuobjdump: str) -> dict[str, bytes]:
    """The initial bytes of each initialized .global variable, by name."""
    text = subprocess.run([cuobjdump, "-elf", str(cubin)], check=True, capture_output=True, text=True).stdout
    words = re.search(r"^\.nv\.global\.init\n((?:0x[0-9a-f]+\s*)+)", text, re.M).group(1).split()
    data = b"".join(struct.pack("<I", int(w, 16)) for w in words)
    out = {}
    for m in re.finditer(r"^\s*0x[0-9a-f]+\s+(0x[0-9a-f]+|0)\s+(0x[0-9a-f]+)\s+OBJECT.*\s(\w+)$", text, re.M):
        off, size = int(m.group(1), 16), int(m.group(2), 16)
        out[m.group(3)] = data[off:off + size]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cuobjdump", default="cuobjdump")
    a = ap.parse_args()
    src = ptx()
    (HERE / "constexpr.ptx").write_text(src)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "c.cubin"
        subprocess.run(["ptxas", "-arch=sm_90", str(HERE / "constexpr.ptx"), "-o", str(cubin)], check=True)
        init = global_init(cubin, a.cuobjdump)
    ints = list(struct.unpack(f"<{len(INT_EXPRS)}Q", init["ints"]))
    floats = [f"{b:#018x}" for b in struct.unpack(f"<{len(FLOAT_EXPRS)}Q", init["floats"])]
    (HERE / "expected.json").write_text(json.dumps(
        {"source": "ptxas (CUDA 13) -arch=sm_90, the .nv.global.init data of constexpr.ptx",
         "ints": [{"expr": e, "u64": f"{v:#018x}"} for e, v in zip(INT_EXPRS, ints, strict=True)],
         "floats": [{"expr": e, "f64_bits": b} for e, b in zip(FLOAT_EXPRS, floats, strict=True)]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
