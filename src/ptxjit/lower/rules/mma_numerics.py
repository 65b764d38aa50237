"""D = A x B + C over a warp's dense matrices, bit for bit as the H100's tensor cores compute it.

The matrices (built by mma.py) hold 64-bit elements: f64 values for floating-point inputs (decoded
exactly), i64 for integers, 32-bit words of k for .b1.  One LLVM function per variant loops over
the M x N outputs and writes each over its C element.

Observed rules (reverse-engineered from shared/gpu-golden/tc, every lane of every warp):
- integers: exact sum in 64 bits, then wrapped to s32, or clamped to [-2^31, 2^31 - 1] (.satfinite);
  .b1: C + popc(a xor b) / popc(a and b) summed over the 32-bit words of k.
- f64: a chain of fused multiply-adds in k order, d = fma(a_k, b_k, d) from d = c (k = 0 first).
- f16/bf16/tf32 (block-fused): k is cut into blocks of `group` products.  For each block the
  accumulator and the block's products (exact) are aligned to one exponent E = max(e_c of the
  accumulator, e_a + e_b for each nonzero product; e_x = floor(log2 |x|), so a product's own exponent
  may be E + 1), every term is truncated toward zero to a multiple of 2^(E - 25), the truncated terms
  are summed exactly, and the sum is rounded toward zero to f32: the new accumulator (a sum beyond
  the f32 range gives inf, as rounding to nearest would).  Infinite or NaN inputs give what IEEE
  arithmetic gives for the plain sum (NaN: the canonical 0x7fffffff).  f16 accumulators: the f32
  result is rounded to nearest even to f16.  Blocks: 16 products for f16/bf16, 8 for tf32 (mma.sync
  m16n8k8, wgmma), but 4 for wmma's m16n16k8 tf32.
- wgmma e4m3/e5m2 (exact on every finite golden case): the same with all 32 products in one block,
  only 13 fraction bits below E, and the sum truncated to 13 fraction bits (an e8m13 accumulator).
- mma.sync e4m3/e5m2 (exact on every golden case): what ptxas makes of it for sm_90 (its SASS, read
  with nvdisasm): the fp8 fragments unpacked to f16 (exact), then two f16 HMMA.16816 from a zero
  accumulator, the first over the low 16-bit halves of the fragment registers (k mod 4 in {0, 1}), the
  second over the high halves, each the f16 block model above (f16 accumulators: each HMMA's result
  rounded to f16), then C added once (FADD / HADD2: rounded to nearest).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ptxjit.lower.types import F64, I1, I32, I64, PTR, VOID, const_int

if TYPE_CHECKING:
    from ptxjit.lower.rules.mma import Mma

F_BITS = 25  # fraction bits kept below the block's exponent
GROUP = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}  # f16/bf16/tf32: fitted  # products fused per block


@contextmanager
def counted_loop(b: ll.IRBuilder, n: int, name: str):
    """for i in range(n) (i32 i), as LLVM blocks."""
    f = b.function
    pre = b.block
    head = f.append_basic_block(name + "_head")
    body = f.append_basic_block(name + "_body")
    done = f.append_basic_block(name + "_done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32)
    i.add_incoming(const_int(I32, 0), pre)
    b.cbranch(b.icmp_unsigned("<", i, const_int(I32, n)), body, done)
    b.position_at_end(body)
    yield i
    nxt = b.add(i, const_int(I32, 1))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


def _ptr(b: ll.IRBuilder, base: ll.Value, off: int, idx: ll.Value, t: ll.Type) -> ll.Value:
    p = b.gep(base, [b.add(const_int(I64, off), b.mul(b.zext(idx, I64), const_int(I64, 8)))])
    return b.bitcast(p, t.as_pointer())


def _intrinsic(b: ll.IRBuilder, name: str, t: ll.Type, nargs: int) -> ll.Function:
    mod = b.module
    fn = mod.globals.get(name)
    if fn is None:
        fn = ll.Function(mod, ll.FunctionType(t, [t] * nargs), name=name)
    return fn


def _expo(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """floor(log2 |x|) of a nonzero finite f64 whose value is normal in f64 (i32)."""
    bits = b.bitcast(x, I64)
    e = b.and_(b.lshr(bits, const_int(I64, 52)), const_int(I64, 0x7FF))
    return b.sub(b.trunc(e, I32), const_int(I32, 1023))


def _pow2(b: ll.IRBuilder, k: ll.Value) -> ll.Value:
    """2^k as f64 for an i32 k in [-1022, 1023]."""
    e = b.add(b.zext(b.add(k, const_int(I32, 1023)), I64), const_int(I64, 0))
    return b.bitcast(b.shl(e, const_int(I64, 52)), F64)


def _rz_f32(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """f64 -> the f32 value rounded toward zero, as f64 (finite x)."""
    r = b.fptrunc(x, ll.FloatType())
    back = b.fpext(r, F64)
    fabs = _intrinsic(b, "llvm.fabs.f64", F64, 1)
    over = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [x]))
    bits = b.bitcast(r, I32)
    # an overflow stays infinite (the H100 gives inf, not the largest finite value)
    over = b.and_(over, b.icmp_unsigned("!=", b.and_(bits, const_int(I32, 0x7FFFFFFF)), const_int(I32, 0x7F800000)))
    down = b.bitcast(b.sub(bits, const_int(I32, 1)), ll.FloatType())
    return b.fpext(b.select(over, down, r), F64)


def _finite(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    fabs = _intrinsic(b, "llvm.fabs.f64", F64, 1)
    return b.fcmp_ordered("<", b.call(fabs, [x]), ll.Constant(F64, float("inf")))


def _trunc_mantissa(b: ll.IRBuilder, x: ll.Value, bits: int) -> ll.Value:
    """x (f64, normal) truncated toward zero to `bits` fraction bits."""
    mask = const_int(I64, ~((1 << (52 - bits)) - 1))
    return b.bitcast(b.and_(b.bitcast(x, I64), mask), F64)


def _block_float(b: ll.IRBuilder, mm: Mma, base: ll.Value, m: ll.Value, n: ll.Value, acc: ll.Value,
                 ks: range | list[int], f_bits: int = F_BITS, out_bits: int = 23) -> ll.Value:
    """One block, the products of k in `ks`, fused with the accumulator (see the module docstring):
    terms truncated to f_bits below the block exponent, the sum truncated to out_bits fraction bits."""
    oa, ob, _oc, _ = mm.offsets()
    zero = ll.Constant(F64, 0.0)
    none = const_int(I32, -100000)
    e = b.select(b.fcmp_ordered("!=", acc, zero), _expo(b, acc), none)
    plain = acc
    prods = []
    for k in ks:
        a = b.load(_ptr(b, base, oa, b.add(b.mul(m, const_int(I32, mm.ka)), const_int(I32, k)), F64))
        x = b.load(_ptr(b, base, ob, b.add(b.mul(const_int(I32, k), const_int(I32, mm.N)), n), F64))
        p = b.fmul(a, x)
        plain = b.fadd(plain, p)
        nz = b.and_(b.fcmp_ordered("!=", a, zero), b.fcmp_ordered("!=", x, zero))
        pe = b.add(_expo(b, a), _expo(b, x))
        e = b.select(b.and_(nz, b.icmp_signed(">", pe, e)), pe, e)
        prods.append(p)
    trunc = _intrinsic(b, "llvm.trunc.f64", F64, 1)
    scale = _pow2(b, b.sub(const_int(I32, f_bits), e))
    s = zero
    for t in [acc, *prods]:
        s = b.fadd(s, b.call(trunc, [b.fmul(t, scale)]))
    exact = b.fmul(s, _pow2(b, b.sub(e, const_int(I32, f_bits))))
    if out_bits < 23:
        exact = _trunc_mantissa(b, exact, out_bits)
    fused = _rz_f32(b, exact)
    empty = b.icmp_signed("==", e, none)  # every term zero: IEEE sum of the signed zeros
    fused = b.select(empty, plain, fused)
    return b.select(_finite(b, plain), fused, plain)


def _round_f16(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """x (f64) rounded to nearest even to f16's precision and range (overflow: inf; NaN kept)."""
    q = _expo(b, x)
    q = b.sub(b.select(b.icmp_signed("<", q, const_int(I32, -14)), const_int(I32, -14), q), const_int(I32, 10))
    rint = _intrinsic(b, "llvm.roundeven.f64", F64, 1)
    r = b.fmul(b.call(rint, [b.fmul(x, _pow2(b, b.sub(const_int(I32, 0), q)))]), _pow2(b, q))
    fabs = _intrinsic(b, "llvm.fabs.f64", F64, 1)
    big = b.fcmp_ordered(">", b.call(fabs, [r]), ll.Constant(F64, 65504.0))
    inf = b.select(b.fcmp_ordered("<", x, ll.Constant(F64, 0.0)), ll.Constant(F64, float("-inf")),
                   ll.Constant(F64, float("inf")))
    return b.select(big, inf, r)


def _fp8_mma_sync(b: ll.IRBuilder, mm: Mma, base: ll.Value, m: ll.Value, n: ll.Value, acc: ll.Value) -> ll.Value:
    """mma.sync fp8 as ptxas compiles it for sm_90 (module docstring): two f16 m16n8k16 HMMAs from a zero
    accumulator, then C added once, rounded to nearest in the accumulator's type."""
    h = ll.Constant(F64, 0.0)
    for half in (0, 1):  # the fragments' low / high 16-bit halves
        h = _block_float(b, mm, base, m, n, h, [k for k in range(mm.K) if k % 4 // 2 == half])
        if mm.dt == "f16":
            h = _round_f16(b, h)
    if mm.dt == "f16":  # HADD2: f16 values sum exactly in f64
        return _round_f16(b, b.fadd(acc, h))
    f32 = ll.FloatType()  # FADD
    return b.fpext(b.fadd(b.fptrunc(acc, f32), b.fptrunc(h, f32)), F64)


VW = 8  # outputs (along n) computed together in one vector; every shape's N is a multiple of 8
_V64, _VI32, _VI64, _VF32 = (ll.VectorType(t, VW) for t in (F64, I32, I64, ll.FloatType()))
_NONE = -100000  # "exponent" of a zero: sums of two stay far below any real exponent (> -2200)


def _splat(b: ll.IRBuilder, x: ll.Value, vt: ll.VectorType) -> ll.Value:
    v = b.insert_element(ll.Constant(vt, ll.Undefined), x, const_int(I32, 0))
    return b.shuffle_vector(v, ll.Constant(vt, ll.Undefined), ll.Constant(ll.VectorType(I32, VW), [0] * VW))


def _vexpo(b: ll.IRBuilder, x: ll.Value, vt: ll.Type, it: ll.Type, zero: ll.Value) -> ll.Value:
    """floor(log2 |x|) of normal f64 (scalar or vector), _NONE where x is zero (i32)."""
    e = b.and_(b.lshr(b.bitcast(x, I64 if vt is F64 else _VI64), _c(b, it, I64, 52)), _c(b, it, I64, 0x7FF))
    e = b.sub(b.trunc(e, I32 if vt is F64 else _VI32), _c(b, it, I32, 1023))
    return b.select(b.fcmp_ordered("!=", x, zero), e, _c(b, it, I32, _NONE))


def _c(b: ll.IRBuilder, it: ll.Type, t: ll.Type, v: int | float) -> ll.Constant:
    """Constant v of scalar type t, or its splat when `it` is a vector type."""
    return ll.Constant(ll.VectorType(t, VW), [v] * VW) if isinstance(it, ll.VectorType) else ll.Constant(t, v)


def _vpow2(b: ll.IRBuilder, k: ll.Value) -> ll.Value:
    """2^k (<VW x f64>) for <VW x i32> k in [-1022, 1023]."""
    e = b.zext(b.add(k, _c(b, _VI32, I32, 1023)), _VI64)
    return b.bitcast(b.shl(e, _c(b, _VI64, I64, 52)), _V64)


def _vrz_f32(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """_rz_f32 on <VW x f64>."""
    r = b.fptrunc(x, _VF32)
    fabs = _intrinsic(b, "llvm.fabs.v8f64", _V64, 1)
    over = b.fcmp_ordered(">", b.call(fabs, [b.fpext(r, _V64)]), b.call(fabs, [x]))
    bits = b.bitcast(r, _VI32)
    mag = b.and_(bits, _c(b, _VI32, I32, 0x7FFFFFFF))
    over = b.and_(over, b.icmp_unsigned("!=", mag, _c(b, _VI32, I32, 0x7F800000)))
    down = b.bitcast(b.sub(bits, _c(b, _VI32, I32, 1)), _VF32)
    return b.fpext(b.select(over, down, r), _V64)


def _vptr(b: ll.IRBuilder, base: ll.Value, off: int, idx: ll.Value, t: ll.Type) -> ll.Value:
    """Pointer to the VW elements of type t from 64-bit slot idx (f64 matrices) onward."""
    return b.bitcast(_ptr(b, base, off, idx, F64), t.as_pointer())


def _build_vec(cg, mm: Mma, group: int) -> ll.Function:
    """The block-fused model (module docstring) for f16/bf16/tf32, VW outputs of a row at a time.

    Bit for bit the same as _block_float, but arranged for speed: every element's exponent is taken
    once per mma (not once per use), B's VW-column slice is loaded once for all rows, and the IEEE sum
    (`plain`) is only computed where it is the answer: an infinite or NaN term makes E >= 512 (inf's
    f64 exponent is 1024; no finite product reaches 2^255) or the truncated sum NaN.  Where every term
    is zero the truncated sum, started from the accumulator's term, is already the IEEE sum of the
    signed zeros; elsewhere it cannot be a zero of the wrong sign (the largest term survives)."""
    fn = ll.Function(cg.llmod, ll.FunctionType(VOID, [PTR]), name="tc." + mm.key())
    fn.linkage = "internal"
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    base = fn.args[0]
    oa, ob, oc, _ = mm.offsets()
    vzero = ll.Constant(_V64, [0.0] * VW)
    trunc = _intrinsic(b, "llvm.trunc.v8f64", _V64, 1)
    ka, N = mm.ka, mm.N
    exps = {name: b.bitcast(b.alloca(ll.ArrayType(I32, count), name=name), I32.as_pointer())
            for count, name in ((mm.M * ka, "ea"), (ka * N, "eb"))}  # in the entry block: static
    for off, count, name in ((oa, mm.M * ka, "ea"), (ob, ka * N, "eb")):
        with counted_loop(b, count // VW, name + "_loop") as i:
            idx = b.mul(i, const_int(I32, VW))
            x = b.load(_vptr(b, base, off, idx, _V64), align=8)
            b.store(_vexpo(b, x, _V64, _VI32, vzero), b.bitcast(b.gep(exps[name], [idx]), _VI32.as_pointer()),
                    align=4)
    ea, eb = exps["ea"], exps["eb"]
    with counted_loop(b, N // VW, "nc") as nc:
        n0 = b.mul(nc, const_int(I32, VW))
        bv, bev = [], []
        for k in range(ka):  # this column slice of B, for every row
            idx = b.add(const_int(I32, k * N), n0)
            bv.append(b.load(_vptr(b, base, ob, idx, _V64), align=8))
            bev.append(b.load(b.bitcast(b.gep(eb, [idx]), _VI32.as_pointer()), align=4))
        with counted_loop(b, mm.M, "m") as m:
            cp = _vptr(b, base, oc, b.add(b.mul(m, const_int(I32, N)), n0), _V64)
            acc = b.load(cp, align=8)
            for k0 in range(0, mm.K, group):
                e = _vexpo(b, acc, _V64, _VI32, vzero)
                prods = []
                for k in range(k0, k0 + group):
                    ai = b.add(b.mul(m, const_int(I32, ka)), const_int(I32, k))
                    a = _splat(b, b.load(_ptr(b, base, oa, ai, F64)), _V64)
                    prods.append(b.fmul(a, bv[k]))
                    pe = b.add(_splat(b, b.load(b.gep(ea, [ai])), _VI32), bev[k])
                    e = b.select(b.icmp_signed(">", pe, e), pe, e)
                # all terms zero (E is a sum of _NONE): any scale keeps the zeros, so clamp it in range
                ec = b.select(b.icmp_signed("<", e, _c(b, _VI32, I32, -900)), _c(b, _VI32, I32, -900), e)
                scale = _vpow2(b, b.sub(_c(b, _VI32, I32, F_BITS), ec))
                s = b.call(trunc, [b.fmul(acc, scale)])
                for p in prods:
                    s = b.fadd(s, b.call(trunc, [b.fmul(p, scale)]))
                fused = _vrz_f32(b, b.fmul(s, _vpow2(b, b.sub(ec, _c(b, _VI32, I32, F_BITS)))))
                bad = b.or_(b.icmp_signed(">=", e, _c(b, _VI32, I32, 512)), b.fcmp_unordered("uno", s, s))
                anybad = b.icmp_unsigned("!=", b.bitcast(bad, ll.IntType(VW)), ll.Constant(ll.IntType(VW), 0))
                pre = b.block
                with b.if_then(anybad, likely=False):  # an infinite or NaN term: the IEEE sum
                    plain = acc
                    for p in prods:
                        plain = b.fadd(plain, p)
                    slow = b.select(bad, plain, fused)
                    slow_end = b.block
                res = b.phi(_V64)
                res.add_incoming(fused, pre)
                res.add_incoming(slow, slow_end)
                acc = res
            b.store(acc, cp, align=8)
    b.ret_void()
    return fn


def _build(cg, mm: Mma) -> ll.Function:
    if mm.kind == "float" and mm.at in ("f16", "bf16", "tf32") and mm.N % VW == 0:
        return _build_vec(cg, mm, min(4 if mm.frag == "wmma" and mm.at == "tf32" else GROUP[mm.at], mm.K))
    fn = ll.Function(cg.llmod, ll.FunctionType(VOID, [PTR]), name="tc." + mm.key())
    fn.linkage = "internal"
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    base = fn.args[0]
    oa, ob, oc, _ = mm.offsets()
    with counted_loop(b, mm.M * mm.N, "mn") as idx:
        m = b.udiv(idx, const_int(I32, mm.N))
        n = b.urem(idx, const_int(I32, mm.N))
        if mm.kind in ("float", "f64"):
            cp = _ptr(b, base, oc, idx, F64)
            acc = b.load(cp)
            if mm.kind == "f64":
                fma = _intrinsic(b, "llvm.fma.f64", F64, 3)
                for k in range(mm.K):
                    a = b.load(_ptr(b, base, oa, b.add(b.mul(m, const_int(I32, mm.ka)), const_int(I32, k)), F64))
                    x = b.load(_ptr(b, base, ob, b.add(b.mul(const_int(I32, k), const_int(I32, mm.N)), n), F64))
                    acc = b.call(fma, [a, x, acc])
            elif mm.at in ("e4m3", "e5m2") and mm.frag == "wgmma":  # 13-bit accumulator
                acc = _block_float(b, mm, base, m, n, acc, range(mm.K), f_bits=13, out_bits=13)
            elif mm.at in ("e4m3", "e5m2"):
                acc = _fp8_mma_sync(b, mm, base, m, n, acc)
            else:
                group = min(4 if mm.frag == "wmma" and mm.at == "tf32" else GROUP[mm.at], mm.K)
                for k0 in range(0, mm.K, group):
                    acc = _block_float(b, mm, base, m, n, acc, range(k0, k0 + group))
            b.store(acc, cp)
        else:
            cp = _ptr(b, base, oc, idx, I64)
            acc = b.load(cp)
            popc = _intrinsic(b, "llvm.ctpop.i64", I64, 1)
            for k in range(mm.ka):
                a = b.load(_ptr(b, base, oa, b.add(b.mul(m, const_int(I32, mm.ka)), const_int(I32, k)), I64))
                x = b.load(_ptr(b, base, ob, b.add(b.mul(const_int(I32, k), const_int(I32, mm.N)), n), I64))
                if mm.kind == "b1":
                    acc = b.add(acc, b.call(popc, [b.xor(a, x) if mm.bitop == "xor" else b.and_(a, x)]))
                else:
                    acc = b.add(acc, b.mul(a, x))
            if mm.satfinite:
                hi, lo = const_int(I64, 2**31 - 1), const_int(I64, -(2**31))
                acc = b.select(b.icmp_signed(">", acc, hi), hi, acc)
                acc = b.select(b.icmp_signed("<", acc, lo), lo, acc)
            b.store(acc, cp)
    b.ret_void()
    return fn


def compute_function(cg, mm: Mma) -> ll.Function:
    """The (cached) LLVM function computing variant mm in place: void(i8* group_base)."""
    cache = cg.__dict__.setdefault("_tc_functions", {})
    fn = cache.get(mm.key())
    if fn is None:
        fn = cache[mm.key()] = _build(cg, mm)
    return fn


__all__ = ["F_BITS", "GROUP", "I1", "compute_function"]
