"""Byte layouts of the state spaces: kernel parameters, module globals, shared and local memory."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np

from ptxjit.errors import PTXValidationError
from ptxjit.frontend import ir

# Sizes refused at load with a PTXValidationError rather than failing as a MemoryError (or worse) when
# the buffers are allocated.  ptxas accepts larger .global arrays (the GPU fails at module load);
# the local and parameter limits are CUDA's.
MAX_GLOBALS_BYTES = 1 << 31  # module-scope .global + .const, one host buffer
MAX_LOCAL_BYTES = 512 * 1024  # local memory per thread
MAX_PARAM_BYTES = 32764  # kernel parameters (CUDA 12.1+)


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
        if off > MAX_PARAM_BYTES:
            raise PTXValidationError(p.pos, f"parameters take more than {MAX_PARAM_BYTES} bytes (CUDA's limit "
                                     f"for a kernel's parameters) at '{p.name}'")
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
        if off > MAX_GLOBALS_BYTES:
            raise PTXValidationError(v.pos, f"module-scope .global/.const variables exceed {MAX_GLOBALS_BYTES >> 30} "
                                     f"GiB at '{v.name}' ({v.size} bytes): ptxjit keeps them in one host buffer")
    lay.size = align_up(max(off, 16), 16)
    return lay


def _f16_bits(x: float) -> bytes:
    with np.errstate(over="ignore", invalid="ignore"):  # beyond the f16 range: inf, as a cvt would
        return np.float16(x).tobytes()


def _bf16_bits(x: float) -> bytes:
    with np.errstate(over="ignore", invalid="ignore"):
        b = int(np.float32(x).view(np.uint32))
    if math.isnan(x):
        return (0x7FC0).to_bytes(2, "little")
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).to_bytes(2, "little")  # round to nearest even


def _element(typ: str, size: int, x) -> bytes:
    """One initializer element.  Integers are reduced to the element width; a decimal float in a bit
    type is converted to an integer (toward zero; inf/nan give 0) since the parser already turned
    0f/0d literals for bit types into their bit patterns."""
    if isinstance(x, float):
        if typ in ("f32", "tf32"):
            with np.errstate(over="ignore", invalid="ignore"):
                return np.float32(x).tobytes()
        if typ == "f64":
            return struct.pack("<d", x)
        if typ == "f16":
            return _f16_bits(x)
        if typ == "bf16":
            return _bf16_bits(x)
        x = int(x) if math.isfinite(x) else 0
    return (int(x) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def encode_initializer(v: ir.VarDecl, resolve_addr) -> bytes:
    """Bytes of a variable's initializer; `resolve_addr(name)` gives the address of a symbol.

    A vector variable's elements are its lanes (the parser flattens `{…}` per lane)."""
    out = bytearray()
    size = ir.type_size(v.type)
    for x in v.init or ():
        if isinstance(x, ir.Sym):
            x = resolve_addr(x.name) + x.offset
        out += _element(v.type, size, x)
    return bytes(out)


# The shared memory CUDA reserves per CTA for its system software on sm_8x/sm_90
# (cudaDevAttrReservedSharedMemoryPerBlock), which %reserved_smem_offset_* describe: cooperative groups
# keep the barriers and the exchange words of tiles wider than a warp there (<cooperative_groups/
# details/memory.h> expects at least 288 bytes at %reserved_smem_offset_1).  ptxjit backs it with
# memory only in kernels that read one of those registers, as a region after the static variables
# (before the dynamic ones); the worker loop zeroes it when a CTA starts.  Its two slots
# (%reserved_smem_offset_0 and _1) split it in halves.
RESERVED_SMEM_BYTES = 1024
RESERVED_SMEM_SLOT = 512
RESERVED_SMEM_PREFIX = "%reserved_smem_offset_"


@dataclass
class SharedLayout:
    offsets: dict[str, int]
    static_size: int
    dynamic_offset: int
    reserved: int = -1  # offset of the reserved region (RESERVED_SMEM_BYTES), -1: none
    user_end: int = -1  # where the kernel's own static variables end, with a reserved region

    @property
    def reserved_bytes(self) -> int:
        return RESERVED_SMEM_BYTES if self.reserved >= 0 else 0

    @property
    def user_static_size(self) -> int:
        """The static shared bytes the kernel declares (what ptxas reports), without the reserved region."""
        return self.user_end if self.reserved >= 0 else self.static_size


def reads_reserved_smem(fns: list[ir.Function]) -> bool:
    """Does an instruction of `fns` read one of the %reserved_smem_offset_* registers?"""
    return any(isinstance(x, ir.Reg) and x.name.startswith(RESERVED_SMEM_PREFIX)
               for f in fns for ins in f.instructions for x in ins.operands)


def shared_layout(module: ir.Module, fn: ir.Function) -> SharedLayout:
    """Module-scope shared variables first (same offsets in every function), then fn's own, then the
    reserved region where the kernel (or a function it may call) reads %reserved_smem_offset_*."""
    off = 0
    offsets: dict[str, int] = {}
    dyn_align = 16
    extern = []
    decls = [v for v in module.globals if v.space == "shared"]
    fns = [f for f in module.functions.values() if f is fn or not f.is_entry]
    for f in fns:
        decls += [v for v in f.vars if v.space == "shared"]
    for v in decls:
        if v.linkage == "extern" or (v.dims and v.dims[-1] is None):
            extern.append(v)
            dyn_align = max(dyn_align, v.alignment)
            continue
        off = align_up(off, max(v.alignment, 1))
        offsets[v.name] = off
        off += v.size
    reserved, user_end = -1, off
    if reads_reserved_smem(fns):
        reserved = align_up(off, 16)
        off = reserved + RESERVED_SMEM_BYTES
    dyn = align_up(off, dyn_align)
    for v in extern:
        offsets[v.name] = dyn
    return SharedLayout(offsets, off, dyn, reserved, user_end)


def local_size(fn: ir.Function) -> int:
    """A thread's .local bytes: the stride between threads' slices, a multiple of the largest alignment a
    variable asks for (the runtime aligns the first slice to BASE_ALIGN), so `.align 256` holds in every
    thread's slice."""
    off = 0
    most = 16
    for v in fn.vars:
        if v.space == "local":
            off = align_up(off, v.alignment) + v.size
            most = max(most, v.alignment)
            if off > MAX_LOCAL_BYTES:
                raise PTXValidationError(v.pos, f"'{fn.name}' declares more than {MAX_LOCAL_BYTES // 1024} KB "
                                         f"of .local memory per thread (CUDA's limit) at '{v.name}'")
    return align_up(off, most)
