"""cp.async.bulk.tensor in im2col mode (PTX ISA §5.5.4 "Im2col mode", §9.7.9.25.5.1), with ptxjit's im2col
tensor maps.

    cp.async.bulk.tensor.Nd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
        [dst], [tensorMap, {c, w[, h[, d]], n}], [mbar], {off_w[, off_h[, off_d]]}

A tensor of rank N = 3..5 is (innermost first) channels C, N - 2 spatial dimensions W, H, D and images N.
`encode_im2col_tensor_map` (cuTensorMapEncodeIm2col's arguments) describes it with a pixel bounding box per
spatial dimension s: positions lowerCorner[s] .. dim[s] - 1 + upperCorner[s], stepped by elementStrides[s];
channelsPerPixel and pixelsPerColumn size the load.  The instruction's coordinates name the first pixel (a
position in the box) and its image; pixels follow in W, then H, then D order through the box, then on into the
next image, pixelsPerColumn of them.  Pixel p loads channels c, c + e0, ... (ceil(channelsPerPixel / e0) of
them) at spatial position p + im2col offset (the 16-bit offsets of the instruction: the filter tap), zeros
outside the tensor.  Shared memory gets them densely, pixel after pixel, swizzled like the tile mode; all
those bytes count on the mbarrier.

The map: tma.py's layout with magic "PJIC"; the box words hold channelsPerPixel (16), pixelsPerColumn (20)
and the corners as s16: lower W, H, D (24..29), upper W, H, D (30..35).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.rules import tma as T
from ptxjit.lower.types import I1, I8, I16, I32, I64, PTR, const_int

MAGIC_IM2COL = 0x43494A50  # "PJIC" little endian
OFF_CPP, OFF_PPC, OFF_LOWER, OFF_UPPER = T.OFF_BOX, T.OFF_BOX + 4, T.OFF_BOX + 8, T.OFF_BOX + 14
_CORNER_BITS = {3: 16, 4: 8, 5: 4}  # the driver's corner ranges per rank: [-2^(b-1), 2^(b-1) - 1]


def encode_im2col_tensor_map(array: np.ndarray, lower_corner: Sequence[int], upper_corner: Sequence[int],
                             channels_per_pixel: int, pixels_per_column: int,
                             element_strides: Sequence[int] | None = None, swizzle: int = 0,
                             dtype: str | None = None) -> T.TensorMap:
    """An im2col tensor map of `array` (cuTensorMapEncodeIm2col): rank 3 to 5, dimensions innermost first
    (C, W[, H[, D]], N); `lower_corner` / `upper_corner` per spatial dimension (W first); ValueError where
    the driver would refuse."""
    a = np.asarray(array)
    if not 3 <= a.ndim <= 5:
        raise ValueError(f"encode_im2col_tensor_map: the array has {a.ndim} dimensions; im2col needs 3 to 5")
    ns = a.ndim - 2
    lo, hi = [int(x) for x in lower_corner], [int(x) for x in upper_corner]
    if len(lo) != ns or len(hi) != ns:
        raise ValueError(f"encode_im2col_tensor_map: {ns} lower and upper corners needed (W first)")
    lim = 1 << (_CORNER_BITS[a.ndim] - 1)
    if any(not -lim <= v < lim for v in lo + hi):
        raise ValueError(f"encode_im2col_tensor_map: corners must lie in [{-lim}, {lim - 1}] for rank {a.ndim}")
    if not 1 <= channels_per_pixel <= 256 or not 1 <= pixels_per_column <= 1024:
        raise ValueError("encode_im2col_tensor_map: channels_per_pixel 1..256, pixels_per_column 1..1024")
    # the tile encoder checks the rest (dtype, strides, alignment, element strides, swizzle span)
    box = [min(channels_per_pixel, 256)] + [1] * (a.ndim - 1)
    m = T.encode_tensor_map(a, box, element_strides, swizzle, dtype)
    raw = bytearray(bytes(m.raw))
    raw[T.OFF_MAGIC:T.OFF_MAGIC + 4] = MAGIC_IM2COL.to_bytes(4, "little")
    raw[OFF_CPP:OFF_CPP + 4] = channels_per_pixel.to_bytes(4, "little")
    raw[OFF_PPC:OFF_PPC + 4] = pixels_per_column.to_bytes(4, "little")
    for s in range(3):
        raw[OFF_LOWER + 2 * s:OFF_LOWER + 2 * s + 2] = (lo[s] if s < ns else 0).to_bytes(2, "little", signed=True)
        raw[OFF_UPPER + 2 * s:OFF_UPPER + 2 * s + 2] = (hi[s] if s < ns else 0).to_bytes(2, "little", signed=True)
    out = T.TensorMap.from_buffer_copy(bytes(raw))
    out._array = a  # type: ignore[attr-defined]
    return out


def _sfield(lw: FnLowering, m: ll.Value, off: int) -> ll.Value:
    b = lw.b
    return b.sext(b.load(lw.typed_ptr(b.gep(m, [const_int(I64, off)]), I16), align=1), I64)


def lower_im2col(lw: FnLowering, ins: Instr, complete_tx) -> None:
    """The im2col load (module docstring); a map that is not an im2col map of this rank traps."""
    b = lw.b
    rank = int(next(m for m in ins.mods if m in ("3d", "4d", "5d"))[0])
    ns = rank - 2
    tensor_op, shared_op = ins.operands[1], ins.operands[0]
    offs_op = ins.operands[3] if len(ins.operands) > 3 else None
    if not (isinstance(tensor_op, ir.Vec) and len(tensor_op.items) == 2 and isinstance(tensor_op.items[1], ir.Vec)
            and len(tensor_op.items[1].items) == rank and isinstance(offs_op, ir.Vec) and len(offs_op.items) == ns):
        raise lw.unsupported(f"expected [tensorMap, {{{rank} coordinates}}], [mbar], {{{ns} im2col offsets}}")
    m = lw.address(tensor_op.items[0], "")
    coords = [b.sext(lw.read(c, "s32"), I64) for c in tensor_op.items[1].items]
    offs = [b.zext(lw.read(o, "u16"), I64) for o in offs_op.items]
    dst = lw.address(shared_op, "shared")
    good = b.and_(b.icmp_unsigned("==", T._field(lw, m, T.OFF_MAGIC, I32), const_int(I64, MAGIC_IM2COL)),
                  b.icmp_unsigned("==", T._field(lw, m, T.OFF_RANK, I8), const_int(I64, rank)))
    okp = T._map_readable(lw, m)
    if okp is not None:
        good = b.and_(good, okp)
    with b.if_then(b.not_(good), likely=False):
        lw.trap(abi.ERR_TRAP)
        b.position_at_end(lw.llfn.append_basic_block("unreachable_after_trap"))
    one, zero = const_int(I64, 1), const_int(I64, 0)
    base = b.inttoptr(T._field(lw, m, T.OFF_ADDR, I64), PTR)
    esize = T._field(lw, m, T.OFF_ESIZE, I8)
    swz = T._field(lw, m, T.OFF_SWIZZLE, I8)
    dims = [T._field(lw, m, T.OFF_DIM + 8 * d, I64) for d in range(rank)]
    strides = [esize] + [T._field(lw, m, T.OFF_STRIDE + 8 * (d - 1), I64) for d in range(1, rank)]
    estr = [T._field(lw, m, T.OFF_ESTRIDE + 4 * d, I32) for d in range(rank)]
    cpp = T._field(lw, m, OFF_CPP, I32)
    nch = b.udiv(b.add(cpp, b.sub(estr[0], one)), estr[0])
    npix = T._field(lw, m, OFF_PPC, I32)
    lo = [_sfield(lw, m, OFF_LOWER + 2 * s) for s in range(ns)]
    hi = [b.add(b.sub(dims[1 + s], one), _sfield(lw, m, OFF_UPPER + 2 * s)) for s in range(ns)]
    total = b.mul(npix, nch)
    nbytes = b.mul(total, esize)
    span, sh_base, sh_off, swz_mask = T.shared_window(lw, dst, nbytes, swz)

    def loop() -> None:
        # state: element k, channel index j, pixel position (spatial..., image); the pixel advances through
        # the bounding box like an odometer when j wraps
        pre = b.block
        head = lw.llfn.append_basic_block("im2col_head")
        body = lw.llfn.append_basic_block("im2col_body")
        done = lw.llfn.append_basic_block("im2col_done")
        b.branch(head)
        b.position_at_end(head)
        k, j = b.phi(I64), b.phi(I64)
        k.add_incoming(zero, pre)
        j.add_incoming(zero, pre)
        pos = []
        for d in range(1, rank):
            ph = b.phi(I64)
            ph.add_incoming(coords[d], pre)
            pos.append(ph)
        b.cbranch(b.icmp_unsigned("<", k, total), body, done)
        b.position_at_end(body)
        ch = b.add(coords[0], b.mul(j, estr[0]))
        at = [ch] + [b.add(pos[s], offs[s]) for s in range(ns)] + [pos[ns]]
        inside, goff = const_int(I1, 1), zero
        for d in range(rank):
            inside = b.and_(inside, b.and_(b.icmp_signed(">=", at[d], zero), b.icmp_signed("<", at[d], dims[d])))
            goff = b.add(goff, b.mul(at[d], strides[d]))
        soff = b.add(sh_off, b.mul(k, esize))
        soff = b.xor(soff, b.and_(b.lshr(soff, const_int(I64, 3)), swz_mask))
        sp = b.gep(sh_base, [soff])
        with b.if_else(inside) as (then, other):
            with then:
                T._move_element(lw, esize, b.gep(base, [goff]), sp)
            with other:
                T._move_element(lw, esize, None, sp)
        jn = b.add(j, one)
        carry = b.icmp_unsigned("==", jn, nch)  # next pixel
        nxt = []
        for s in range(ns):
            v = b.select(carry, b.add(pos[s], estr[1 + s]), pos[s])
            wrap = b.and_(carry, b.icmp_signed(">", v, hi[s]))
            nxt.append(b.select(wrap, lo[s], v))
            carry = wrap
        nxt.append(b.select(carry, b.add(pos[ns], one), pos[ns]))
        end = b.block
        k.add_incoming(b.add(k, one), end)
        j.add_incoming(b.select(b.icmp_unsigned("==", jn, nch), zero, jn), end)
        for ph, v in zip(pos, nxt, strict=True):
            ph.add_incoming(v, end)
        b.branch(head)
        b.position_at_end(done)
    T._guard_span(lw, shared_op, dst, span, loop)
    if ins.has("mbarrier::complete_tx::bytes"):
        complete_tx(ins.operands[2], nbytes)


__all__ = ["MAGIC_IM2COL", "encode_im2col_tensor_map", "lower_im2col"]
