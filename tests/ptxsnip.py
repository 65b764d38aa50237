"""Build tiny PTX kernels from an instruction body, for the per-instruction unit tests.

`snippet_kernel(body, params)` wraps PTX instructions in a complete `.entry` so that tests can
state only what they exercise.  Registers are declared generously: %r<64> (b32), %rd<64> (b64),
%f<64> (f32), %fd<64> (f64), %h<64> (b16), %hh<64> (b32, for f16x2/bf16x2), %p<16> (pred).
"""

from __future__ import annotations

HEADER = """.version 8.0
.target sm_80
.address_size 64
"""

REGS = """    .reg .pred %p<16>;
    .reg .b16 %h<64>;
    .reg .b32 %r<64>;
    .reg .b32 %hh<64>;
    .reg .b64 %rd<64>;
    .reg .f32 %f<64>;
    .reg .f64 %fd<64>;
"""


def snippet_kernel(body: str, params: list[tuple[str, str]], name: str = "k", extra_decls: str = "") -> str:
    """Return PTX text for `.visible .entry name(params) { regs; body; ret; }`.

    params: list of (ptx_type, param_name), e.g. [("u64", "out"), ("u32", "n")].
    Inside the body refer to them as [out], [n] with ld.param.
    """
    plist = ",\n".join(f"    .param .{t} {n}" for t, n in params)
    return f"{HEADER}\n{extra_decls}\n.visible .entry {name}(\n{plist}\n)\n{{\n{REGS}\n{body}\n    ret;\n}}\n"
