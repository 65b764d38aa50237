#!/usr/bin/env python3
"""Regenerate src/ptxjit/cudart/abi_tables.py from CUDA 13's runtime headers: the cudaError_t numbers
(driver_types.h, `enum cudaError`), the names of the runtime API's functions (cuda_runtime_api.h) and the
layouts of `struct cudaDeviceProp`, `struct cudaFuncAttributes` and
`struct cudaPointerAttributes` (driver_types.h) as C declarations.

These are facts of the ABI a program is compiled against: ptxjit's libcudart.so.13 must answer with the same
numbers, export the same names and fill cudaDeviceProp at the offsets the program reads.

Usage: python scripts/gen_cudart_abi.py [path/to/cuda/include]   (default: $CUDA_HOME/include, /usr/local/cuda)
Tests never run this; they read the committed table.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "ptxjit" / "cudart" / "abi_tables.py"


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_errors(text: str) -> dict[str, int]:
    m = re.search(r"enum\s+__device_builtin__\s+cudaError\s*\{(.*?)\}", text, flags=re.S)
    if m is None:
        raise SystemExit("enum cudaError not found")
    out: dict[str, int] = {}
    for item in m.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = item.partition("=")
        out[name.strip()] = int(value.strip(), 0)
    return out


def parse_functions(text: str) -> list[str]:
    names = re.findall(r"CUDARTAPI\s+(cuda\w+)\s*\(", text)
    return sorted(dict.fromkeys(names))


def parse_per_thread(raw: str) -> dict[str, str]:
    """The per-thread default stream variants (--default-stream per-thread): name -> its _ptds/_ptsz name."""
    found = re.findall(r"#define\s+(cuda\w+)\s+__CUDART_API_PT(DS|SZ)\((\w+)\)", raw)
    return {name: f"{api}_pt{kind.lower()}" for name, kind, api in found}


def parse_struct(text: str, tag: str) -> str:
    m = re.search(r"struct\s+__device_builtin__\s+" + tag + r"\s*\{(.*?)\};", text, flags=re.S)
    if m is None:
        raise SystemExit(f"struct {tag} not found")
    fields = []
    for decl in m.group(1).split(";"):
        decl = " ".join(decl.split())
        if decl:
            fields.append("    " + decl.replace("cudaUUID_t", "ptxjit_cuda_uuid") + ";")
    return "\n".join(fields)


def main() -> None:
    default = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    inc = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    types = strip_comments((inc / "driver_types.h").read_text())
    api_raw = (inc / "cuda_runtime_api.h").read_text()
    api = strip_comments(api_raw)
    per_thread = parse_per_thread(api_raw)
    version = int(re.search(r"#define\s+CUDART_VERSION\s+(\d+)", api).group(1))
    errors = parse_errors(types)
    functions = parse_functions(api)
    prop = parse_struct(types, "cudaDeviceProp")
    func_attrs = parse_struct(types, "cudaFuncAttributes")
    pointer_attrs = parse_struct(types, "cudaPointerAttributes").replace("enum cudaMemoryType", "int")
    lines = ['"""The CUDA runtime API\'s C ABI numbers and function names, generated from CUDA\'s runtime headers',
             f'(CUDART_VERSION {version}) by scripts/gen_cudart_abi.py: do not edit by hand."""', "",
             f"CUDART_VERSION = {version}", "", "CUDA_ERROR: dict[str, int] = {"]
    lines += [f"    {k!r}: {v}," for k, v in errors.items()]
    lines += ["}", "", "# every function cuda_runtime_api.h declares", "RUNTIME_FUNCTIONS: list[str] = ["]
    lines += [f"    {n!r}," for n in functions]
    lines += ["]", "", "# the per-thread default stream variant of each function that has one (nvcc --default-stream "
              "per-thread)", "PER_THREAD: dict[str, str] = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in sorted(per_thread.items())]
    lines += ["}", "", "# the fields of struct cudaDeviceProp, in order, as C declarations",
              'DEVICE_PROP_FIELDS = """\\', prop, '"""', "",
              "# the fields of struct cudaFuncAttributes", 'FUNC_ATTRIBUTES_FIELDS = """\\', func_attrs, '"""', "",
              "# the fields of struct cudaPointerAttributes (its enum as the int it is)",
              'POINTER_ATTRIBUTES_FIELDS = """\\', pointer_attrs, '"""', ""]
    OUT.write_text("\n".join(lines))
    print(f"{OUT}: {len(errors)} error codes, {len(functions)} functions, {len(per_thread)} per-thread variants")


if __name__ == "__main__":
    main()
