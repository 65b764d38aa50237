"""cp.async.bulk.tensor and cp.reduce.async.bulk.tensor (TMA, PTX ISA §9.7.9.25.5) in tile mode, with
ptxjit's own tensor maps (im2col mode: tma_im2col.py).

A CUDA program makes a tensor map with the driver's cuTensorMapEncodeTiled and passes it to the kernel as a
128-byte `__grid_constant__ const CUtensorMap` parameter; the kernel gives its address to the instruction.  The
driver's encoding is opaque, and there is no driver here: `encode_tensor_map(array, box_dim, ...)` makes the
128 bytes for a NumPy array (pass the TensorMap where the CUtensorMap goes).  Its layout, little endian:

    0   u64  the tensor's host address            12  u8  rank (1..5)      14  u8  swizzle (0 none, 1 32B,
    8   u32  magic "PJTM"                          13  u8  element bytes              2 64B, 3 128B)
    15  u8   element type (DTYPES: reductions combine elements as that type)
    16  u32  boxDim[5]      36  u32  elementStrides[5]      56  u64  globalDim[5]      96  u64  globalStrides[4]

Dimensions are innermost first, as in CUDA; globalStrides[d] is the byte stride of dimension d + 1.  The copy
runs at issue, element by element: box element (i0, i1, ...) is tensor element (c0 + i0 * e0, c1 + i1 * e1, ...)
(c: the instruction's coordinates, e: elementStrides; ceil(boxDim / e) elements per dimension), laid out densely
in shared memory, innermost first.  Loads fill elements outside the tensor with zeros and count the whole box
as transaction bytes on the mbarrier; stores and reductions skip them (a reduction combines like
cp.reduce.async.bulk into global memory: async_copy.py's combiners; one the element type does not take traps).
The swizzle modes permute the 16-byte units of each 128-byte shared line: unit bits 4.. of the shared offset are
XORed with bits 7.. (1, 2 or 3 bits for 32B, 64B, 128B), the CUTLASS Swizzle<B, 4, 3> pattern.  The map's global
range was checked against the array when it was encoded, so the global side needs no bounds check; the shared
side is checked like every shared access.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np
from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.types import I1, I8, I32, I64, PTR, const_int

MAGIC = 0x4D544A50  # "PJTM" little endian
OFF_ADDR, OFF_MAGIC, OFF_RANK, OFF_ESIZE, OFF_SWIZZLE, OFF_DTYPE = 0, 8, 12, 13, 14, 15
OFF_BOX, OFF_ESTRIDE, OFF_DIM, OFF_STRIDE = 16, 36, 56, 96
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # bytes -> code
# element types (CUtensorMapDataType's integer and float ones): name -> (code, bytes); reductions need them
DTYPES = {"u8": (1, 1), "u16": (2, 2), "u32": (3, 4), "s32": (4, 4), "u64": (5, 8), "s64": (6, 8), "f16": (7, 2),
          "f32": (8, 4), "f64": (9, 8), "bf16": (10, 2)}
_NUMPY_DTYPES = {"uint8": "u8", "int8": "u8", "uint16": "u16", "int16": "u16", "uint32": "u32", "int32": "s32",
                 "uint64": "u64", "int64": "s64", "float16": "f16", "float32": "f32", "float64": "f64"}
# cp.reduce.async.bulk.tensor: the element types each operation takes (and/or/xor on the bits)
RED_TYPES = {"add": "u32 s32 u64 f32 f64 f16 bf16", "min": "u32 s32 u64 s64 f16 bf16",
             "max": "u32 s32 u64 s64 f16 bf16", "inc": "u32", "dec": "u32", "and": "u32 s32 u64 s64",
             "or": "u32 s32 u64 s64", "xor": "u32 s32 u64 s64"}


class TensorMap(ctypes.Structure):
    """The 128 bytes of a ptxjit tensor map; keeps the array it describes alive."""

    _fields_ = [("raw", ctypes.c_uint8 * 128)]

    def __repr__(self) -> str:
        raw = bytes(self.raw)
        rank = raw[OFF_RANK]
        box = np.frombuffer(raw, "<u4", rank, OFF_BOX).tolist()
        dims = np.frombuffer(raw, "<u8", rank, OFF_DIM).tolist()
        return f"TensorMap(dims={dims}, box_dim={box}, element_bytes={raw[OFF_ESIZE]})"


def encode_tensor_map(array: np.ndarray, box_dim: Sequence[int], element_strides: Sequence[int] | None = None,
                      swizzle: int = 0, dtype: str | None = None) -> TensorMap:
    """A tiled tensor map of `array` (cuTensorMapEncodeTiled): its dimensions and strides are the array's,
    innermost first; `box_dim` and `element_strides` are innermost first too; `swizzle` in bytes (0, 32, 64,
    128); `dtype` the element type (u8 u16 u32 s32 u64 s64 f16 f32 f64 bf16; default: the array's, which
    only reductions use: "bf16" for a uint16 array of bfloat16 bits).  Raises ValueError where the driver
    would refuse (CUDA_ERROR_INVALID_VALUE)."""
    a = np.asarray(array)
    rank = a.ndim
    if not 1 <= rank <= 5:
        raise ValueError(f"encode_tensor_map: the array has {rank} dimensions; a tensor map has 1 to 5")
    esize = a.itemsize
    if dtype is None:
        dtype = _NUMPY_DTYPES.get(a.dtype.name)
        if dtype is None:
            raise ValueError(f"encode_tensor_map: no tensor map element type for {a.dtype}; pass dtype=")
    if dtype not in DTYPES or DTYPES[dtype][1] != esize:
        raise ValueError(f"encode_tensor_map: dtype {dtype!r} does not fit the array's {esize}-byte elements "
                         f"(one of {', '.join(DTYPES)})")
    dims = list(a.shape[::-1])
    strides = list(a.strides[::-1])
    box = [int(x) for x in box_dim]
    es = [1] * rank if element_strides is None else [int(x) for x in element_strides]
    if len(box) != rank or len(es) != rank:
        raise ValueError(f"encode_tensor_map: box_dim and element_strides need {rank} entries (innermost first)")
    if a.ctypes.data % 16:
        raise ValueError("encode_tensor_map: the array's address must be a multiple of 16")
    if strides[0] != esize:
        raise ValueError("encode_tensor_map: the innermost dimension must be contiguous")
    if any(s <= 0 or s % 16 for s in strides[1:]):
        raise ValueError(f"encode_tensor_map: strides {strides[1:]} (outer dimensions, bytes) must be positive "
                         "multiples of 16")
    if any(not 1 <= d <= 1 << 32 for d in dims):
        raise ValueError(f"encode_tensor_map: dimensions {dims} must be 1 .. 2**32")
    if any(not 1 <= b <= 256 for b in box) or box[0] * esize % 16:
        raise ValueError(f"encode_tensor_map: box_dim {box} must be 1 .. 256, the innermost a multiple of 16 bytes")
    if any(not 1 <= e <= 8 for e in es):
        raise ValueError(f"encode_tensor_map: element_strides {es} must be 1 .. 8")
    if swizzle not in SWIZZLES:
        raise ValueError(f"encode_tensor_map: swizzle {swizzle} (bytes) must be 0, 32, 64 or 128")
    if swizzle and box[0] * esize > swizzle:
        raise ValueError(f"encode_tensor_map: the innermost box dimension ({box[0] * esize} bytes) exceeds "
                         f"the {swizzle}-byte swizzle span")
    raw = bytearray(128)
    raw[OFF_ADDR:OFF_ADDR + 8] = a.ctypes.data.to_bytes(8, "little")
    raw[OFF_MAGIC:OFF_MAGIC + 4] = MAGIC.to_bytes(4, "little")
    raw[OFF_RANK], raw[OFF_ESIZE], raw[OFF_SWIZZLE] = rank, esize, SWIZZLES[swizzle]
    raw[OFF_DTYPE] = DTYPES[dtype][0]
    for d in range(rank):
        raw[OFF_BOX + 4 * d:OFF_BOX + 4 * d + 4] = box[d].to_bytes(4, "little")
        raw[OFF_ESTRIDE + 4 * d:OFF_ESTRIDE + 4 * d + 4] = es[d].to_bytes(4, "little")
        raw[OFF_DIM + 8 * d:OFF_DIM + 8 * d + 8] = dims[d].to_bytes(8, "little")
        if d:
            raw[OFF_STRIDE + 8 * (d - 1):OFF_STRIDE + 8 * d] = strides[d].to_bytes(8, "little")
    m = TensorMap.from_buffer_copy(bytes(raw))
    m._array = a  # type: ignore[attr-defined]  # the map holds the array's address: keep it alive
    return m


def _field(lw: FnLowering, m: ll.Value, off: int, t: ll.IntType) -> ll.Value:
    b = lw.b
    v = b.load(lw.typed_ptr(b.gep(m, [const_int(I64, off)]), t), align=1)
    return b.zext(v, I64) if t.width < 64 else v


def lower_tensor(lw: FnLowering, ins: Instr, complete_tx, combiner) -> None:
    """cp{.reduce}.async.bulk.tensor.Nd.{shared::cluster.global | global.shared::cta}.tile...: the load, the
    store or the reduction of one box (module docstring).  `complete_tx(mbar_operand, bytes)` counts a load's
    bytes on its mbarrier; `combiner(op, type)` gives a reduction's (builder, old, value) -> new on bits."""
    b = lw.b
    if ins.has("im2col") and not ins.has("prefetch"):  # im2col loads: tma_im2col.py
        from ptxjit.lower.rules.tma_im2col import lower_im2col

        lower_im2col(lw, ins, complete_tx)
        return
    if any(m.startswith("im2col") or m.startswith("tile::") for m in ins.mods) or ins.has("prefetch"):
        raise lw.unsupported("only the tile mode of cp.async.bulk.tensor (load, store, reduce, prefetch) is supported")
    rank = int(next(m for m in ins.mods if m in ("1d", "2d", "3d", "4d", "5d"))[0])
    store = next(x for x in ins.mods if x in ("global", "shared::cluster", "shared::cta")) == "global"  # dst
    tensor_op = ins.operands[0 if store else 1]
    shared_op = ins.operands[1 if store else 0]
    if not (isinstance(tensor_op, ir.Vec) and len(tensor_op.items) == 2 and isinstance(tensor_op.items[0], ir.Addr)
            and isinstance(tensor_op.items[1], ir.Vec) and len(tensor_op.items[1].items) == rank):
        raise lw.unsupported(f"expected a tensor operand [tensorMap, {{{rank} coordinates}}]")
    m = lw.address(tensor_op.items[0], "")
    coords = [b.sext(lw.read(c, "s32"), I64) for c in tensor_op.items[1].items]
    dst = lw.address(shared_op, "shared")
    okp = _map_readable(lw, m)
    if okp is None:
        _copy_box(lw, ins, rank, store, m, coords, shared_op, dst, complete_tx, combiner)
        return
    then = lw.llfn.append_basic_block("tma_map_ok")
    cont = lw.llfn.append_basic_block("tma_after")
    b.cbranch(okp, then, cont)
    b.position_at_end(then)
    _copy_box(lw, ins, rank, store, m, coords, shared_op, dst, complete_tx, combiner)
    b.branch(cont)
    b.position_at_end(cont)


def _map_readable(lw: FnLowering, m: ll.Value) -> ll.Value | None:
    """Bounds-checked launches: are the map's 128 bytes inside the parameter buffer (a __grid_constant__
    parameter) or an argument array?  A fault is recorded where not.  None: unchecked."""
    if not lw.bounds.enabled:
        return None
    b = lw.b
    with b.goto_entry_block():
        pb = lw.param_base()
    size = lw.cg.kparam_size
    off = b.sub(b.ptrtoint(m, I64), b.ptrtoint(pb, I64))
    ok = b.icmp_unsigned("<", off, const_int(I64, max(size - 127, 0)))
    chk = lw.bounds.ok(ir.Addr(None, 0), "", m, 128)
    if chk is None:
        return ok
    in_arrays, where, kind = chk
    ok = b.or_(ok, in_arrays)
    lw.bounds._record_fault(ok, where, kind)
    return ok


def shared_window(lw: FnLowering, dst: ll.Value, nbytes: ll.Value, swz: ll.Value):
    """(bytes to check, shared base, dst's offset in it, swizzle mask) of a box of `nbytes` copied to
    shared `dst`: swizzled offsets stay inside their 128-byte line, so the lines the box covers."""
    b = lw.b
    one = const_int(I64, 1)
    span = b.select(b.icmp_unsigned("==", swz, const_int(I64, 0)), nbytes,
                    b.and_(b.add(nbytes, const_int(I64, 127)), const_int(I64, ~127)))
    sh_base = lw.shared_ptr()
    sh_off = b.sub(b.ptrtoint(dst, I64), b.ptrtoint(sh_base, I64))
    return span, sh_base, sh_off, b.shl(b.sub(b.shl(one, swz), one), const_int(I64, 4))


def _copy_box(lw: FnLowering, ins: Instr, rank: int, store: bool, m: ll.Value, coords: list, shared_op: ir.Addr,
              dst: ll.Value, complete_tx, combiner) -> None:
    b = lw.b
    # a map ptxjit did not make (a CUtensorMap from elsewhere, garbage) or of another rank, or a reduction
    # its element type does not take: stop the thread
    good = b.and_(b.icmp_unsigned("==", _field(lw, m, OFF_MAGIC, I32), const_int(I64, MAGIC)),
                  b.icmp_unsigned("==", _field(lw, m, OFF_RANK, I8), const_int(I64, rank)))
    red = None
    if ins.has("reduce"):
        op = next(x for x in ins.mods if x in RED_TYPES)
        red = [(t, DTYPES[t][0], DTYPES[t][1]) for t in RED_TYPES[op].split()]
        dtype = _field(lw, m, OFF_DTYPE, I8)
        fits = const_int(I1, 0)
        for _t, code, _n in red:
            fits = b.or_(fits, b.icmp_unsigned("==", dtype, const_int(I64, code)))
        good = b.and_(good, fits)
    with b.if_then(b.not_(good), likely=False):
        lw.trap(abi.ERR_TRAP)
        b.position_at_end(lw.llfn.append_basic_block("unreachable_after_trap"))
    base = b.inttoptr(_field(lw, m, OFF_ADDR, I64), PTR)
    esize = _field(lw, m, OFF_ESIZE, I8)
    swz = _field(lw, m, OFF_SWIZZLE, I8)
    one = const_int(I64, 1)
    counts, estr, dims, strides = [], [], [], []
    total = one
    for d in range(rank):
        box = _field(lw, m, OFF_BOX + 4 * d, I32)
        e = _field(lw, m, OFF_ESTRIDE + 4 * d, I32)
        n = b.udiv(b.add(box, b.sub(e, one)), e)  # ceil(box / e)
        counts.append(n)
        estr.append(e)
        dims.append(_field(lw, m, OFF_DIM + 8 * d, I64))
        strides.append(esize if d == 0 else _field(lw, m, OFF_STRIDE + 8 * (d - 1), I64))
        total = b.mul(total, n)
    nbytes = b.mul(total, esize)
    span, sh_base, sh_off, swz_mask = shared_window(lw, dst, nbytes, swz)

    def loop() -> None:
        # the box index (i0, i1, ...) steps like an odometer (no division per element); the element moves
        # as one load and store of its width (a switch on it)
        pre = b.block
        head = lw.llfn.append_basic_block("tma_head")
        body = lw.llfn.append_basic_block("tma_body")
        done = lw.llfn.append_basic_block("tma_done")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64)
        k.add_incoming(const_int(I64, 0), pre)
        idx = []
        for _ in range(rank):
            ph = b.phi(I64)
            ph.add_incoming(const_int(I64, 0), pre)
            idx.append(ph)
        b.cbranch(b.icmp_unsigned("<", k, total), body, done)
        b.position_at_end(body)
        goff, inside = const_int(I64, 0), const_int(I1, 1)
        for d in range(rank):
            c = b.add(coords[d], b.mul(idx[d], estr[d]))
            inside = b.and_(inside, b.and_(b.icmp_signed(">=", c, const_int(I64, 0)), b.icmp_signed("<", c, dims[d])))
            goff = b.add(goff, b.mul(c, strides[d]))
        soff = b.add(sh_off, b.mul(k, esize))
        soff = b.xor(soff, b.and_(b.lshr(soff, const_int(I64, 3)), swz_mask))
        sp = b.gep(sh_base, [soff])
        gp = b.gep(base, [goff])
        if red is not None:
            with b.if_then(inside):
                _reduce_element(lw, red, op, dtype, combiner, gp, sp)
        elif store:
            with b.if_then(inside):
                _move_element(lw, esize, sp, gp)
        else:
            with b.if_else(inside) as (then, other):
                with then:
                    _move_element(lw, esize, gp, sp)
                with other:
                    _move_element(lw, esize, None, sp)
        carry = one
        nxt = []
        for d in range(rank):
            v = b.add(idx[d], carry)
            wrap = b.icmp_unsigned("==", v, counts[d])
            nxt.append(b.select(wrap, const_int(I64, 0), v))
            carry = b.zext(wrap, I64)
        end = b.block
        k.add_incoming(b.add(k, one), end)
        for ph, v in zip(idx, nxt, strict=True):
            ph.add_incoming(v, end)
        b.branch(head)
        b.position_at_end(done)
    _guard_span(lw, shared_op, dst, span, loop)
    if not store and ins.has("mbarrier::complete_tx::bytes"):
        complete_tx(ins.operands[2], nbytes)


def _move_element(lw: FnLowering, esize: ll.Value, src: ll.Value | None, dst: ll.Value) -> None:
    """Copy one element of `esize` (1, 2, 4 or 8) bytes from src to dst (zeros when src is None)."""
    b = lw.b
    merge = lw.llfn.append_basic_block("tma_elem_done")
    sw = b.switch(esize, merge)
    for n in (1, 2, 4, 8):
        blk = lw.llfn.append_basic_block(f"tma_elem{n}")
        sw.add_case(const_int(I64, n), blk)
        b.position_at_end(blk)
        it = ll.IntType(8 * n)
        v = ll.Constant(it, 0) if src is None else b.load(lw.typed_ptr(src, it), align=1)
        b.store(v, lw.typed_ptr(dst, it), align=1)
        b.branch(merge)
    b.position_at_end(merge)


def _reduce_element(lw: FnLowering, red: list, op: str, dtype: ll.Value, combiner, gp: ll.Value,
                    sp: ll.Value) -> None:
    """global element = op(global element, shared element), as the map's element type (a switch on it)."""
    b = lw.b
    merge = lw.llfn.append_basic_block("tma_red_done")
    sw = b.switch(dtype, merge)
    for t, code, n in red:
        blk = lw.llfn.append_basic_block(f"tma_red_{t}")
        sw.add_case(const_int(I64, code), blk)
        b.position_at_end(blk)
        it = ll.IntType(8 * n)
        pa, pv = lw.typed_ptr(gp, it), lw.typed_ptr(sp, it)
        a = lw.user_access(b.load(pa, align=n), "global")
        v = lw.user_access(b.load(pv, align=n), "shared")
        fn = combiner(op, f"b{8 * n}" if op in ("and", "or", "xor") else t)
        lw.user_access(b.store(fn(b, a, v), pa, align=n), "global")
        b.branch(merge)
    b.position_at_end(merge)


def _guard_span(lw: FnLowering, addr: ir.Addr, p: ll.Value, span: ll.Value, emit) -> None:
    """emit() if shared bytes [p, p + span) are in bounds (checked at the first and the last byte; the
    last through an address without a base register, so that no hoisted check stands in for it)."""
    b = lw.b
    if not lw.bounds.enabled:
        emit()
        return
    last = b.gep(p, [b.sub(span, const_int(I64, 1))])
    with b.if_then(b.icmp_unsigned("!=", span, const_int(I64, 0))):
        lw.bounds.guarded(addr, "shared", p, 1, lambda: lw.bounds.guarded(
            ir.Addr(None, 0), "shared", last, 1, emit))
