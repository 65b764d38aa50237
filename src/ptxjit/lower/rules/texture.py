"""Textures and surfaces: tex, tld4, txq (texture objects), suld.b, sust.b, sured.b, suq (surface objects).

The handle a kernel gets is a row of ptxjit.texture's table (see there); every instruction first checks
that the handle names a live object of the right kind (else: trap, before any other memory is read).

Texture fetches follow the CUDA Programming Guide's appendix "Texture Fetching":

- normalized coordinates are scaled by the size (x * N);
- point filtering: texel floor(x); linear: xB = x - 0.5, i = floor(xB), alpha = frac(xB) held in 9-bit
  fixed point with 8 fractional bits (rounded to the nearest 1/256), then
  (1-a)T[i] + aT[i+1] (2D: (1-a)(1-b)T[i,j] + a(1-b)T[i+1,j] + (1-a)bT[i,j+1] + abT[i+1,j+1]; 3D alike),
  each weight the product of its per-dimension factors in x, y, z order, summed in corner order;
- the address mode maps each texel index: clamp to [0, N-1], wrap i mod N, mirror (reflect at both
  ends), border (outside: the border color); wrap and mirror need normalized coordinates (CUDA clamps
  otherwise: ptxjit.texture decides that on the host);
- integer coordinates (tex1Dfetch: tex.1d.v4.*.s32) index texels directly, without filtering;
- tld4 (tex2Dgather) returns one component of the four texels of the bilinear footprint in PTX's order:
  counter-clockwise from the lower left, {T[i,j+1], T[i+1,j+1], T[i+1,j], T[i,j]};
- layered geometries (a1d, a2d) take the layer first; it is clamped to the layers there are.

The texels come from the texture's canonical copy (4 x 32 bits per texel, format conversions done on
the host), so one 16-byte load fetches a texel of any format.  Surfaces work on the array's bytes: x
is a byte offset; an access that does not fit follows the instruction's mode (.trap: trap; .clamp:
the coordinate is clamped to the last whole access; .zero: loads give 0, stores are dropped).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower import texture_table as T
from ptxjit.lower.registry import rule
from ptxjit.lower.types import F32, I1, I32, I64, PTR, const_int

TEX_GEOMS = {"1d": 1, "2d": 2, "3d": 3, "a1d": 1, "a2d": 2}
# per surface geometry: the coordinate that gives x, y, z (a layer is addressed as z)
SURF_GEOMS = {"1d": (0,), "2d": (0, 1), "3d": (0, 1, 2), "a1d": (1, None, 0), "a2d": (1, 2, 0)}
# txq/suq queries ptxjit answers, with the table word each reads
TXQ_WORDS = {"width": T.W_WIDTH, "height": T.W_HEIGHT, "depth": T.W_DEPTH, "normalized_coords": T.W_NORM,
             "filter_mode": T.W_FILTER, "addr_mode_0": T.W_QADDR0, "addr_mode_1": T.W_QADDR0 + 1,
             "addr_mode_2": T.W_QADDR0 + 2, "array_size": T.W_LAYERS}
SUQ_WORDS = {"width": T.W_WIDTH, "height": T.W_HEIGHT, "depth": T.W_DEPTH, "array_size": T.W_LAYERS}
Word = Callable[[int], ll.Value]


# ---------------------------------------------------------------- checks (load time)
def _handle_shape(ins: Instr, k: int) -> str | None:
    x = ins.operands[k] if len(ins.operands) > k else None
    if not isinstance(x, ir.Vec) or len(x.items) != 2 or not isinstance(x.items[0], ir.Addr):
        return "independent texture mode (a separate sampler operand) is not supported; use texture objects"
    if not isinstance(x.items[0].base, ir.Reg) or x.items[0].offset:
        return ".texref/.surfref module variables are not supported; pass a texture/surface object (a u64 " \
               "kernel parameter)"
    return None


def _geom(ins: Instr, table: dict[str, int]) -> str | None:
    return next((m for m in ins.mods if m in table), None)


def _check_tex(ins: Instr) -> str | None:
    if _geom(ins, TEX_GEOMS) is None:
        return "only the 1d, 2d, 3d, a1d and a2d geometries are supported (no cube maps, no multisample textures)"
    if ins.types()[0] not in ("f32", "s32", "u32") or ins.has("v2"):
        return "only .v4.f32, .v4.s32 and .v4.u32 results are supported"
    if isinstance(ins.operands[0], ir.Pair):
        return "the residency predicate (d|p) is not supported"
    extra = len(ins.operands) - 2
    if extra != (1 if ins.has("level") else 2 if ins.has("grad") else 0):
        return "texel offsets and depth comparison operands are not supported"
    if ins.opcode == "tld4" and _geom(ins, TEX_GEOMS) != "2d":
        return "tld4 supports the 2d geometry only"
    return _handle_shape(ins, 1)


def _check_query(ins: Instr) -> str | None:
    words = TXQ_WORDS if ins.opcode == "txq" else SUQ_WORDS
    q = next((m for m in ins.mods if m in words), None)
    if q is None or ins.has("level"):
        return f"only the queries {', '.join(sorted(words))} are supported"
    a = ins.operands[1]
    if not isinstance(a, ir.Addr) or not isinstance(a.base, ir.Reg):
        return ".texref/.surfref module variables are not supported; pass a texture/surface object"
    return None


def _check_surface(ins: Instr) -> str | None:
    if ins.opcode == "sust" and ins.has("p"):
        return "formatted surface stores (sust.p) are not supported"
    if not ins.has("b"):
        return "only unformatted (.b) surface accesses are supported"
    if _geom(ins, SURF_GEOMS) is None:
        return "only the 1d, 2d, 3d, a1d and a2d surface geometries are supported"
    return _handle_shape(ins, 1 if ins.opcode == "suld" else 0)


# ---------------------------------------------------------------- the table
def _row(lw, handle: ir.Reg, kind: int) -> Word:
    """Validate `handle` (trap unless it names a live object of `kind`) and return a reader of its row."""
    b = lw.b
    mod = b.module
    g = mod.globals.get(T.SYMBOL)
    if g is None:
        g = ll.GlobalVariable(mod, ll.ArrayType(I64, T.ROWS * T.WORDS), name=T.SYMBOL)  # add_symbol
    h = lw.read(handle, "b64")
    slot = b.and_(h, const_int(I64, 0xFFFF))
    inside = b.icmp_unsigned("<", slot, const_int(I64, T.ROWS))
    base = b.mul(b.select(inside, slot, const_int(I64, 0)), const_int(I64, T.WORDS))

    def word(i: int) -> ll.Value:
        p = b.gep(g, [const_int(I32, 0), b.add(base, const_int(I64, i))])
        return lw.internal_access(b.load(p))

    ok = b.and_(inside, b.icmp_unsigned("==", word(T.W_HANDLE), h))
    ok = b.and_(ok, b.icmp_unsigned("==", b.lshr(h, const_int(I64, 48)), const_int(I64, kind)))
    with b.if_then(b.not_(ok), likely=False):
        # not a live texture/surface object of this kind: nothing else is read
        why = T.TRAP_BAD_TEXTURE if kind == T.KIND_TEXTURE else T.TRAP_BAD_SURFACE
        lw.trap(abi.ERR_TRAP, b.or_(b.and_(h, const_int(I64, (1 << 48) - 1)), const_int(I64, T.trap_word(why))))
    return word


def _handle_and_coords(ins: Instr, k: int) -> tuple[ir.Reg, list]:
    x = ins.operands[k]
    return x.items[0].base, list(x.items[1].items)


def _i32(lw, v: ll.Value) -> ll.Value:
    return lw.b.trunc(v, I32)


def _intrinsic(lw, name: str, *args: ll.Value) -> ll.Value:
    fn = lw.b.module.declare_intrinsic(name, [F32], ll.FunctionType(F32, [F32] * len(args)))
    return lw.b.call(fn, list(args))


# ---------------------------------------------------------------- texture fetch
def _address(lw, i: ll.Value, mode: ll.Value, n: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(texel index in [0, n), in range) of index i under the address mode (branch-free)."""
    b = lw.b
    zero = const_int(I32, 0)
    nm1 = b.sub(n, const_int(I32, 1))
    lo = b.select(b.icmp_signed("<", i, zero), zero, i)
    clamped = b.select(b.icmp_signed(">", lo, nm1), nm1, lo)
    r = b.srem(i, n)
    wrap = b.select(b.icmp_signed("<", r, zero), b.add(r, n), r)
    n2 = b.add(n, n)
    mm = b.srem(i, n2)
    mm = b.select(b.icmp_signed("<", mm, zero), b.add(mm, n2), mm)
    mirror = b.select(b.icmp_signed("<", mm, n), mm, b.sub(b.sub(n2, const_int(I32, 1)), mm))
    is_mode = [b.icmp_unsigned("==", mode, const_int(I32, v)) for v in (T.MODE_WRAP, T.MODE_MIRROR)]
    j = b.select(is_mode[0], wrap, b.select(is_mode[1], mirror, clamped))
    inr = b.and_(b.icmp_signed(">=", i, zero), b.icmp_signed("<", i, n))
    ok = b.or_(inr, b.icmp_unsigned("!=", mode, const_int(I32, T.MODE_BORDER)))
    return j, ok


def _texel(lw, word: Word, idx: list[ll.Value], layer: ll.Value, border: list[ll.Value],
           ok: ll.Value) -> list[ll.Value]:
    """The 4 channels (i32 bits) of texel idx (x, y, z) of `layer`, or the border color where not ok."""
    b = lw.b
    w, h, d = (word(k) for k in (T.W_WIDTH, T.W_HEIGHT, T.W_DEPTH))
    x, y, z = (b.sext(v, I64) for v in (*idx, *[const_int(I32, 0)] * (3 - len(idx))))
    lin = b.add(b.mul(b.add(b.mul(b.add(b.mul(b.sext(layer, I64), d), z), h), y), w), x)
    p = b.gep(b.inttoptr(word(T.W_DATA), PTR), [b.mul(lin, const_int(I64, 16))])
    vec = lw.user_access(b.load(b.bitcast(p, ll.VectorType(I32, 4).as_pointer()), align=4), "global")
    return [b.select(ok, b.extract_element(vec, const_int(I32, c)), border[c]) for c in range(4)]


def _coords(lw, word: Word, coords: list, sizes: list[ll.Value], shift: bool) -> tuple[list, list]:
    """Float coordinates -> (first texel index, 8-bit fixed-point weight) per dimension."""
    b = lw.b
    norm = b.icmp_unsigned("!=", word(T.W_NORM), const_int(I64, 0))
    i0, alpha = [], []
    for c, n in zip(coords, sizes, strict=True):
        x = lw.read(c, "f32")
        x = b.select(norm, b.fmul(x, b.sitofp(n, F32)), x)
        if shift:
            x = b.fsub(x, ll.Constant(F32, 0.5))
        # keep the index representable (and NaN out of fptosi): far outside is as good as 2**30
        x = _intrinsic(lw, "llvm.maxnum", x, ll.Constant(F32, -2.0 ** 30))
        x = _intrinsic(lw, "llvm.minnum", x, ll.Constant(F32, 2.0 ** 30))
        f = _intrinsic(lw, "llvm.floor", x)
        i0.append(b.fptosi(f, I32))
        if shift:  # the weight in 9-bit fixed point, 8 fractional bits (CUDA Programming Guide)
            q = _intrinsic(lw, "llvm.floor", b.fadd(b.fmul(b.fsub(x, f), ll.Constant(F32, 256.0)),
                                                    ll.Constant(F32, 0.5)))
            alpha.append(b.fmul(q, ll.Constant(F32, 1.0 / 256)))
    return i0, alpha


def _corners(lw, word: Word, i0: list, sizes: list, modes: list, border: list, layer: ll.Value,
             n: int) -> list[list[ll.Value]]:
    """The first n texels of the footprint (corner c: +1 in dimension k where bit k of c is set)."""
    b = lw.b
    out = []
    for c in range(n):
        idx, ok = [], const_int(I1, 1)
        for k in range(len(i0)):
            i = b.add(i0[k], const_int(I32, 1)) if c >> k & 1 else i0[k]
            j, inr = _address(lw, i, modes[k], sizes[k])
            idx.append(j)
            ok = b.and_(ok, inr)
        out.append(_texel(lw, word, idx, layer, border, ok))
    return out


def _blend(lw, corners: list[list[ll.Value]], alpha: list[ll.Value]) -> list[ll.Value]:
    """sum over corners of (product over dimensions of a or 1 - a) * texel, per channel (f32 bits)."""
    b = lw.b
    one = ll.Constant(F32, 1.0)
    out = []
    for ch in range(4):
        acc = None
        for c, texel in enumerate(corners):
            wgt = None
            for k in range(len(alpha)):
                f = alpha[k] if c >> k & 1 else b.fsub(one, alpha[k])
                wgt = f if wgt is None else b.fmul(wgt, f)
            term = b.fmul(wgt, b.bitcast(texel[ch], F32))
            acc = term if acc is None else b.fadd(acc, term)
        out.append(b.bitcast(acc, I32))
    return out


def _sample(lw, word: Word, coords: list, int_coords: bool, layer: ll.Value, gather: int | None) -> list[ll.Value]:
    b = lw.b
    ndim = len(coords)
    sizes = [_i32(lw, word(k)) for k in (T.W_WIDTH, T.W_HEIGHT, T.W_DEPTH)[:ndim]]
    modes = [_i32(lw, word(T.W_ADDR0 + k)) for k in range(ndim)]
    border = [_i32(lw, word(T.W_BORDER + c)) for c in range(4)]
    if int_coords:
        return _corners(lw, word, [lw.read(c, "s32") for c in coords], sizes, modes, border, layer, 1)[0]
    if gather is not None:  # counter-clockwise from the lower left: (i,j+1), (i+1,j+1), (i+1,j), (i,j)
        i0, _ = _coords(lw, word, coords, sizes, True)
        corners = _corners(lw, word, i0, sizes, modes, border, layer, 4)
        return [corners[c][gather] for c in (2, 3, 1, 0)]
    filt = b.and_(b.icmp_unsigned("!=", word(T.W_FILTER), const_int(I64, 0)),
                  b.icmp_unsigned("!=", word(T.W_FLOATS), const_int(I64, 0)))
    with b.if_else(filt) as (linear, point):  # a branch, not selects: point sampling reads one texel
        with linear:
            i0, alpha = _coords(lw, word, coords, sizes, True)
            lin = _blend(lw, _corners(lw, word, i0, sizes, modes, border, layer, 1 << ndim), alpha)
            lin_end = b.block
        with point:
            i0, _ = _coords(lw, word, coords, sizes, False)
            pt = _corners(lw, word, i0, sizes, modes, border, layer, 1)[0]
            pt_end = b.block
    out = []
    for v_lin, v_pt in zip(lin, pt, strict=True):
        phi = b.phi(I32)
        phi.add_incoming(v_lin, lin_end)
        phi.add_incoming(v_pt, pt_end)
        out.append(phi)
    return out


def _layer(lw, word: Word, op) -> ll.Value:
    b = lw.b
    if op is None:
        return const_int(I32, 0)
    v = lw.read(op, "s32")
    last = b.sub(_i32(lw, word(T.W_LAYERS)), const_int(I32, 1))
    v = b.select(b.icmp_signed("<", v, const_int(I32, 0)), const_int(I32, 0), v)
    return b.select(b.icmp_signed(">", v, last), last, v)


def _write4(lw, dst, vals: list[ll.Value]) -> None:
    for op, v in zip(dst.items, vals, strict=True):
        lw.write(op, v, "b32")


@rule("tex", family="texture", check=_check_tex)
def lower_tex(lw, ins: Instr) -> None:
    """tex.{1d,2d,3d,a1d,a2d}.v4.{f32,s32,u32}.{f32,s32} d, [tex, {coords}]: fetch, filter, address."""
    geom = _geom(ins, TEX_GEOMS)
    assert geom is not None
    handle, coords = _handle_and_coords(ins, 1)
    word = _row(lw, handle, T.KIND_TEXTURE)
    layer_op = coords.pop(0) if geom.startswith("a") else None
    layer = _layer(lw, word, layer_op)
    vals = _sample(lw, word, coords[:TEX_GEOMS[geom]], ins.types()[1] == "s32", layer, None)
    _write4(lw, ins.operands[0], vals)


@rule("tld4", family="texture", check=_check_tex)
def lower_tld4(lw, ins: Instr) -> None:
    """tld4.{r,g,b,a}.2d.v4.{f32,s32,u32}.f32 d, [tex, {x, y}]: the bilinear footprint's component."""
    handle, coords = _handle_and_coords(ins, 1)
    word = _row(lw, handle, T.KIND_TEXTURE)
    comp = next(i for i, c in enumerate("rgba") if ins.has(c))
    vals = _sample(lw, word, coords[:2], False, const_int(I32, 0), comp)
    _write4(lw, ins.operands[0], vals)


@rule("txq", "suq", family="texture", check=_check_query)
def lower_query(lw, ins: Instr) -> None:
    """txq/suq.{width,height,depth,...}.b32 d, [handle]: an attribute of the object."""
    words = TXQ_WORDS if ins.opcode == "txq" else SUQ_WORDS
    q = next(m for m in ins.mods if m in words)
    word = _row(lw, ins.operands[1].base, T.KIND_TEXTURE if ins.opcode == "txq" else T.KIND_SURFACE)
    lw.write(ins.operands[0], _i32(lw, word(words[q])), "b32")


def _surface_offset(lw, ins: Instr, word, xs: list, size: int) -> tuple[ll.Value, ll.Value]:
    """(in range, byte offset) of a `size`-byte surface access at coordinates xs (x in bytes), after the
    instruction's .trap (trap outside), .clamp (clamp to the last whole element) or .zero mode."""
    b = lw.b
    ndim = len(xs)
    # per dimension: the largest valid coordinate (bytes for x: the last whole access)
    lims = [b.sub(word(T.W_WBYTES), const_int(I64, size)), b.sub(word(T.W_HEIGHT), const_int(I64, 1)),
            b.sub(word(T.W_ZEXT), const_int(I64, 1))][:ndim]
    zero = const_int(I64, 0)
    ok = b.icmp_signed(">=", lims[0], zero)  # the access fits in a row at all
    mode = next(m for m in ("trap", "clamp", "zero") if ins.has(m))
    for k in range(ndim):
        if mode == "clamp":
            lo = b.select(b.icmp_signed("<", xs[k], zero), zero, xs[k])
            xs[k] = b.select(b.icmp_signed(">", lo, lims[k]), lims[k], lo)
        else:
            ok = b.and_(ok, b.and_(b.icmp_signed(">=", xs[k], zero), b.icmp_signed("<=", xs[k], lims[k])))
    if mode == "trap":
        with b.if_then(b.not_(ok), likely=False):
            # CUDA: an out-of-range surface access with cudaBoundaryModeTrap traps
            lw.trap(abi.ERR_TRAP, const_int(I64, T.trap_word(T.TRAP_SURFACE_RANGE)))
    off = xs[0]
    if ndim > 1:
        off = b.add(off, b.mul(xs[1], word(T.W_PITCH)))
    if ndim > 2:
        off = b.add(off, b.mul(xs[2], word(T.W_SLICE)))
    return ok, off


# ---------------------------------------------------------------- surfaces
@rule("suld", "sust", family="surface", check=_check_surface)
def lower_surface(lw, ins: Instr) -> None:
    """suld.b/sust.b.{1d,2d,3d,a1d,a2d}{.v2,.v4}.{b8,b16,b32,b64}.{trap,clamp,zero}: x in bytes."""
    b = lw.b
    load = ins.opcode == "suld"
    geom = _geom(ins, SURF_GEOMS)
    assert geom is not None
    which = SURF_GEOMS[geom]
    t = ins.types()[0]
    esz = int(t[1:]) // 8
    n = 4 if ins.has("v4") else 2 if ins.has("v2") else 1
    size = esz * n
    handle, coords = _handle_and_coords(ins, 1 if load else 0)
    word = _row(lw, handle, T.KIND_SURFACE)
    xs = [const_int(I64, 0) if k is None else b.sext(lw.read(coords[k], "s32"), I64) for k in which]
    ok, off = _surface_offset(lw, ins, word, xs, size)
    ety = ll.IntType(8 * esz)
    pre = b.block
    vals = [] if load else [lw.read(op, t) for op in _items(ins.operands[1])]
    with b.if_then(ok):
        p = b.gep(b.inttoptr(word(T.W_DATA), PTR), [off])
        for k in range(n):
            q = b.bitcast(b.gep(p, [const_int(I64, k * esz)]), ety.as_pointer())
            if load:
                vals.append(lw.user_access(b.load(q, align=1), "global"))
            else:
                lw.user_access(b.store(vals[k], q, align=1), "global")
        then_end = b.block
    if load:
        phis = []
        for v in vals:  # every phi first: they must open the block
            phi = b.phi(ety)
            phi.add_incoming(v, then_end)
            phi.add_incoming(ll.Constant(ety, 0), pre)
            phis.append(phi)
        for op, v in zip(_items(ins.operands[0]), phis, strict=True):
            lw.write(op, v, t)


def _items(x) -> list:
    return list(x.items) if isinstance(x, ir.Vec) else [x]


# ---------------------------------------------------------------- sured (surface reductions)
_SURED_TYPES = {"add": ("u32", "u64", "s32"), "min": ("u32", "s32", "u64", "s64"),
                "max": ("u32", "s32", "u64", "s64"), "and": ("b32", "b64"), "or": ("b32", "b64")}
_SURED_RMW = {("add", False): "add", ("min", False): "umin", ("min", True): "min", ("max", False): "umax",
              ("max", True): "max", ("and", False): "and", ("or", False): "or"}


def _check_sured(ins: Instr) -> str | None:
    if not ins.has("b"):
        return "only unformatted (.b) surface reductions are supported (sured.p is not)"
    op = next((m for m in ins.mods if m in _SURED_TYPES), None)
    t = ins.types()[-1] if ins.types() else ""
    if op is None or t not in _SURED_TYPES[op]:
        return f"sured .{op}.{t}: the PTX ISA defines .{op} for {', '.join(_SURED_TYPES.get(op, ()))}"
    if _geom(ins, {"1d": 1, "2d": 2, "3d": 3}) is None:
        return "sured takes the 1d, 2d and 3d geometries"
    if not any(ins.has(m) for m in ("trap", "clamp", "zero")):
        return "sured needs .trap, .clamp or .zero"
    return _handle_shape(ins, 0)


@rule("sured", family="surface", check=_check_sured)
def lower_sured(lw, ins: Instr) -> None:
    """sured.b.op.geom.ctype.mode [surf, {x[, y[, z]]}], c: an atomic read-modify-write (op = add, min,
    max, and, or) of the ctype-sized element at byte x (row y, slice z) of the surface, with c.  The
    coordinates follow sust.b's rules (x in bytes; .trap traps outside, .clamp clamps to the last whole
    element, .zero drops the reduction); the reduction is atomic across threads and blocks."""
    b = lw.b
    op = next(m for m in ins.mods if m in _SURED_TYPES)
    t = ins.types()[-1]
    geom = _geom(ins, SURF_GEOMS)
    assert geom is not None
    which = SURF_GEOMS[geom]
    esz = int(t[1:]) // 8
    handle, coords = _handle_and_coords(ins, 0)
    word = _row(lw, handle, T.KIND_SURFACE)
    xs = [b.sext(lw.read(coords[k], "s32"), I64) for k in which]
    ok, off = _surface_offset(lw, ins, word, xs, esz)
    v = lw.read(ins.operands[1], t)
    with b.if_then(ok):
        p = b.bitcast(b.gep(b.inttoptr(word(T.W_DATA), PTR), [off]), ll.IntType(8 * esz).as_pointer())
        lw.user_access(b.atomic_rmw(_SURED_RMW[op, t.startswith("s")], p, v, "monotonic"), "global")
