#!/usr/bin/env python3
"""Regenerate src/ptxjit/driver/abi_tables.py from CUDA 13's cuda.h: the numbers of the driver API's C ABI
(CUresult codes, device/function/pointer attributes, limits, JIT options) and the names of its entry points.

These are facts of the ABI a program is compiled against, not code: ptxjit's libcuda.so.1 must answer with
the same numbers and export the same symbols (a program linked with -lcuda resolves `cuMemAlloc_v2`, one
built with per-thread default streams `cuMemcpyHtoD_v2_ptds`).

Usage: python scripts/gen_driver_abi.py [path/to/cuda.h]   (default: $CUDA_HOME/include/cuda.h, /usr/local/cuda)
Tests never run this; they read the committed table (and check it against cuda-python's enums where installed).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ENUMS = {  # C enum tag -> table name
    "cudaError_enum": "CURESULT",
    "CUdevice_attribute_enum": "DEVICE_ATTRIBUTE",
    "CUfunction_attribute_enum": "FUNCTION_ATTRIBUTE",
    "CUpointer_attribute_enum": "POINTER_ATTRIBUTE",
    "CUlimit_enum": "LIMIT",
    "CUjit_option_enum": "JIT_OPTION",
    "CUjitInputType_enum": "JIT_INPUT_TYPE",
}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_enum(text: str, tag: str) -> dict[str, int]:
    m = re.search(r"typedef\s+enum\s+" + re.escape(tag) + r"\s*\{(.*?)\}", text, flags=re.S)
    if m is None:
        raise SystemExit(f"enum {tag} not found")
    out: dict[str, int] = {}
    nxt = 0
    for item in m.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = (s.strip() for s in item.partition("="))
        if value:
            value = value.rstrip("uUlL")
            nxt = out[value] if value in out else int(value, 0)
        out[name] = nxt
        nxt += 1
    return out


def entry_points(raw: str, text: str) -> tuple[list[str], dict[str, str]]:
    """Every exported name: the declared functions, the versions the header's #defines map them to, and the
    per-thread default stream variants (`_ptds`, `_ptsz`)."""
    declared = set(re.findall(r"CUresult\s+CUDAAPI\s+(cu\w+)\s*\(", text))
    aliases: dict[str, str] = {}
    names = set(declared)
    for name, target in re.findall(r"#define\s+(cu\w+)\s+(\S+)", raw):
        m = re.fullmatch(r"__CUDA_API_PT(DS|SZ)\((cu\w+)\)", target)
        if m:
            base = m.group(2)
            names |= {base, f"{base}_pt{m.group(1).lower()}"}
            aliases[name] = base
        elif re.fullmatch(r"cu\w+", target):
            names.add(target)
            aliases[name] = target
    return sorted(names), dict(sorted(aliases.items()))


def main() -> None:
    default = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include" / "cuda.h"
    header = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    raw = header.read_text()
    text = strip_comments(raw)
    version = int(re.search(r"#define\s+CUDA_VERSION\s+(\d+)", raw).group(1))
    lines = ['"""The CUDA driver API\'s C ABI numbers and entry-point names, generated from cuda.h',
             f"(CUDA_VERSION {version}) by scripts/gen_driver_abi.py: do not edit by hand.\"\"\"", "",
             f"CUDA_VERSION = {version}", ""]
    for tag, table in ENUMS.items():
        values = parse_enum(text, tag)
        lines.append(f"{table}: dict[str, int] = {{")
        lines += [f"    {name!r}: {value}," for name, value in values.items()]
        lines += ["}", ""]
    names, aliases = entry_points(raw, text)
    lines.append("# the header's #define NAME VERSIONED: what a program compiled against it calls")
    lines.append("ALIASES: dict[str, str] = {")
    lines += [f"    {a!r}: {b!r}," for a, b in aliases.items()]
    lines += ["}", "", "ENTRY_POINTS: tuple[str, ...] = ("]
    lines += [f"    {n!r}," for n in names]
    lines += [")", ""]
    out = Path(__file__).resolve().parent.parent / "src" / "ptxjit" / "driver" / "abi_tables.py"
    out.write_text("\n".join(lines))
    print(f"{out}: {len(names)} entry points")


if __name__ == "__main__":
    main()
