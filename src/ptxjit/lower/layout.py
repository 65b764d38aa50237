"""Byte layouts of the state spaces: kernel parameters, module globals, shared and local memory."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ptxjit.errors import PTXValidationError
from ptxjit.frontend import ir


def align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a if a > 1 else x


@dataclass
class ParamLayout:
    offsets: list[int]
    size: int
    align: int


def param_layout(params: list[ir.VarDecl]) -> ParamLayout:
    off = 0
    offsets = []
    max_align = 8
    for p in params:
        a = p.alignment
        off = align_up(off, a)
        offsets.append(off)
        off += max(p.size, p.elem_size)
        max_align = max(max_align, a)
    return ParamLayout(offsets, align_up(off, 8), max_align)


@dataclass
class GlobalsLayout:
    """Module-scope .global and .const variables live in one buffer owned by the Module."""

    offsets: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (space, offset)
    size: int = 0
    inits: list[tuple[ir.VarDecl, int]] = field(default_factory=list)


def globals_layout(module: ir.Module) -> GlobalsLayout:
    lay = GlobalsLayout()
    off = 0
    for v in module.globals:
        if v.space not in ("global", "const"):
            continue
        if v.linkage == "extern":
            raise PTXValidationError(v.pos, f"extern variable '{v.name}' is not defined in this module")
        off = align_up(off, max(v.alignment, 1))
        lay.offsets[v.name] = (v.space, off)
        if v.init is not None:
            lay.inits.append((v, off))
        off += max(v.size, 0)
    lay.size = align_up(max(off, 16), 16)
    return lay


def encode_initializer(v: ir.VarDecl, resolve_addr) -> bytes:
    """Bytes of a variable's initializer; `resolve_addr(name)` gives the address of a symbol."""
    fmt = {
        "b8": "B", "u8": "B", "s8": "b", "b16": "H", "u16": "H", "s16": "h", "f16": "e",
        "b32": "I", "u32": "I", "s32": "i", "f32": "f", "b64": "Q", "u64": "Q", "s64": "q", "f64": "d",
        "bf16": "H", "f16x2": "I", "bf16x2": "I", "pred": "B",
    }[v.type]
    out = bytearray()
    size = ir.type_size(v.type)
    for x in v.init or ():
        if isinstance(x, ir.Sym):
            x = resolve_addr(x.name) + x.offset
        if fmt in "fde":
            out += struct.pack("<" + fmt, float(x))
        else:
            out += (int(x) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return bytes(out)


@dataclass
class SharedLayout:
    offsets: dict[str, int]
    static_size: int
    dynamic_offset: int


def shared_layout(module: ir.Module, fn: ir.Function) -> SharedLayout:
    """Module-scope shared variables first (same offsets in every function), then fn's own."""
    off = 0
    offsets: dict[str, int] = {}
    dyn_align = 16
    extern = []
    decls = [v for v in module.globals if v.space == "shared"]
    for f in module.functions.values():
        decls += [v for v in f.vars if v.space == "shared" and (f is fn or not f.is_entry)]
    for v in decls:
        if v.linkage == "extern" or (v.dims and v.dims[-1] is None):
            extern.append(v)
            dyn_align = max(dyn_align, v.alignment)
            continue
        off = align_up(off, max(v.alignment, 1))
        offsets[v.name] = off
        off += v.size
    dyn = align_up(off, dyn_align)
    for v in extern:
        offsets[v.name] = dyn
    return SharedLayout(offsets, off, dyn)


def local_size(fn: ir.Function) -> int:
    off = 0
    for v in fn.vars:
        if v.space == "local":
            off = align_up(off, v.alignment) + v.size
    return align_up(off, 16)
