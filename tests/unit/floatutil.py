"""Shared helpers for the PTX-level unit tests in tests/unit.

Two kinds of helpers live here:

* kernel plumbing: `launch` builds a snippet kernel (tests/ptxsnip.py), compiles it with ptxjit and runs
  it; `elementwise` wraps a single instruction in a kernel where thread i loads operand i of every input
  array, executes the instruction and stores its result(s).
* an independent reference model for binary floating point: exact rounding of rationals
  (`fractions.Fraction`) into f16 / bf16 / f32 / f64 with the four IEEE directed modes, bit casts, ulp
  distances.  Nothing in here imports ptxjit's arithmetic: expectations never come from the code under test.

Setting PTXJIT_TEST_PTXAS=1 makes `launch` also assemble every generated kernel with `ptxas -arch=sm_XX`
(when ptxas is on PATH), which is how the snippets were validated (PTXJIT_TEST_PTXAS=only: assemble, do not
run; the tests then fail on their sentinel outputs, which is only useful while developing the tests).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from tests.ptxsnip import snippet_kernel
from tests.unit.kernelutil import run_ptx

# ----------------------------------------------------------------------------------------------------------
# kernel plumbing
# ----------------------------------------------------------------------------------------------------------


def build(body: str, params, *, extra_decls: str = "", target: str | None = None) -> str:
    ptx = snippet_kernel(body, params, extra_decls=extra_decls)
    if target is not None:
        ptx = ptx.replace(".target sm_80", f".target {target}")
    return ptx


def launch(body: str, params, args, grid=1, block=1, shared_mem: int = 0, extra_decls: str = "",
           target: str | None = None) -> str:
    ptx = build(body, params, extra_decls=extra_decls, target=target)
    run_ptx(ptx, args, grid=grid, block=block, shared_mem=shared_mem)
    return ptx


# register class, byte size, ld/st type, numpy dtype used to hold the raw bits
_KIND = {
    "f32": ("%f", 4, "f32", np.uint32),
    "f64": ("%fd", 8, "f64", np.uint64),
    "b32": ("%r", 4, "b32", np.uint32),
    "u32": ("%r", 4, "u32", np.uint32),
    "s32": ("%r", 4, "s32", np.int32),
    "b64": ("%rd", 8, "b64", np.uint64),
    "u64": ("%rd", 8, "u64", np.uint64),
    "s64": ("%rd", 8, "s64", np.int64),
    "b16": ("%h", 2, "b16", np.uint16),
    "x2": ("%hh", 4, "b32", np.uint32),  # packed f16x2 / bf16x2 held in a .b32 register
    "pred": ("%p", 4, "u32", np.uint32),  # predicates travel as u32 0/1
}

_IN_NAMES = ("a", "b", "c", "e")


def elementwise(template: str, inputs, outs, *, target: str | None = None, block: int = 64,
                pre: str = "", sentinel: int = 0xA5) -> list[np.ndarray]:
    """Run one instruction per element.

    template: PTX text with {a} {b} {c} {e} (inputs) and {d} {d2} (outputs) placeholders, e.g.
              "add.rn.f32 {d}, {a}, {b};".
    inputs:   list of (kind, array) with kind in _KIND; arrays are reinterpreted as the raw bit dtype.
    outs:     list of kinds for {d}, {d2}.
    Returns the output arrays (raw bits, dtype per _KIND).
    """
    n = len(inputs[0][1])
    params = [("u64", f"o{j}") for j in range(len(outs))] + [("u64", f"i{j}") for j in range(len(inputs))]
    params.append(("u32", "n"))
    lines = []
    for j in range(len(outs)):
        lines.append(f"    ld.param.u64 %rd{40 + j}, [o{j}];")
    for j in range(len(inputs)):
        lines.append(f"    ld.param.u64 %rd{44 + j}, [i{j}];")
    lines += [
        "    ld.param.u32 %r1, [n];",
        "    mov.u32 %r2, %tid.x;",
        "    mov.u32 %r3, %ctaid.x;",
        "    mov.u32 %r4, %ntid.x;",
        "    mad.lo.s32 %r5, %r3, %r4, %r2;",
        "    setp.ge.u32 %p15, %r5, %r1;",
        "    @%p15 bra $L_done;",
    ]
    fmt = {}
    arrays = []
    for j, (kind, arr) in enumerate(inputs):
        prefix, size, ldt, dt = _KIND[kind]
        arr = np.ascontiguousarray(arr)
        assert arr.dtype.itemsize == size or kind == "pred", (kind, arr.dtype)
        arrays.append(arr.view(dt) if kind != "pred" else arr.astype(np.uint32))
        lines.append(f"    mul.wide.u32 %rd{50 + j}, %r5, {size};")
        lines.append(f"    add.s64 %rd{54 + j}, %rd{44 + j}, %rd{50 + j};")
        if kind == "pred":
            lines.append(f"    ld.global.u32 %r{20 + j}, [%rd{54 + j}];")
            lines.append(f"    setp.ne.u32 %p{1 + j}, %r{20 + j}, 0;")
            fmt[_IN_NAMES[j]] = f"%p{1 + j}"
        else:
            reg = f"{prefix}{1 + j}" if prefix != "%r" else f"%r{41 + j}"
            lines.append(f"    ld.global.{ldt} {reg}, [%rd{54 + j}];")
            fmt[_IN_NAMES[j]] = reg
    out_arrays = []
    store = []
    for j, kind in enumerate(outs):
        prefix, size, ldt, dt = _KIND[kind]
        name = "d" if j == 0 else "d2"
        if kind == "pred":
            reg = f"%p{10 + j}"
            store.append(f"    selp.u32 %r{30 + j}, 1, 0, {reg};")
            src = f"%r{30 + j}"
        else:
            reg = f"{prefix}{10 + j}" if prefix != "%r" else f"%r{50 + j}"
            src = reg
        fmt[name] = reg
        store.append(f"    mul.wide.u32 %rd{58 + j}, %r5, {size};")
        store.append(f"    add.s64 %rd{60 + j}, %rd{40 + j}, %rd{58 + j};")
        store.append(f"    st.global.{ldt} [%rd{60 + j}], {src};")
        o = np.empty(n, dtype=dt)
        o.view(np.uint8)[:] = sentinel
        out_arrays.append(o)
    lines.append(pre)
    lines.append("    " + template.format(**fmt))
    lines += store
    lines.append("$L_done:")
    body = "\n".join(lines)
    grid = (n + block - 1) // block
    launch(body, params, out_arrays + arrays + [np.uint32(n)], grid=grid, block=block, target=target)
    return out_arrays


# ----------------------------------------------------------------------------------------------------------
# bit casts
# ----------------------------------------------------------------------------------------------------------


def f2b(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def b2f(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def d2b(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def b2d(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b & 0xFFFFFFFFFFFFFFFF))[0]


def f32bits(values) -> np.ndarray:
    """Python floats / bit patterns (ints) -> uint32 bit array (floats are rounded to f32 by struct)."""
    return np.array([v if isinstance(v, int) else f2b(v) for v in values], dtype=np.uint32)


def f64bits(values) -> np.ndarray:
    return np.array([v if isinstance(v, int) else d2b(v) for v in values], dtype=np.uint64)


# ----------------------------------------------------------------------------------------------------------
# binary floating-point formats and an exact reference model
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fmt:
    name: str
    man: int  # explicit mantissa bits
    exp: int  # exponent bits

    @property
    def bits(self) -> int:
        return 1 + self.man + self.exp

    @property
    def bias(self) -> int:
        return (1 << (self.exp - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def exp_mask(self) -> int:
        return ((1 << self.exp) - 1) << self.man

    @property
    def man_mask(self) -> int:
        return (1 << self.man) - 1

    @property
    def inf(self) -> int:
        return self.exp_mask

    @property
    def max_finite(self) -> int:
        return self.exp_mask - (1 << self.man) + self.man_mask

    @property
    def canonical_nan(self) -> int:
        return self.exp_mask | self.man_mask


F16 = Fmt("f16", 10, 5)
BF16 = Fmt("bf16", 7, 8)
F32 = Fmt("f32", 23, 8)
F64 = Fmt("f64", 52, 11)
TF32 = Fmt("tf32", 10, 8)  # held in the upper 19 bits of an f32 encoding


def is_nan(fmt: Fmt, b: int) -> bool:
    return (b & fmt.exp_mask) == fmt.exp_mask and (b & fmt.man_mask) != 0


def is_inf(fmt: Fmt, b: int) -> bool:
    return (b & ~fmt.sign_bit) == fmt.inf


def is_subnormal(fmt: Fmt, b: int) -> bool:
    return (b & fmt.exp_mask) == 0 and (b & fmt.man_mask) != 0


def is_zero(fmt: Fmt, b: int) -> bool:
    return (b & ~fmt.sign_bit) == 0


def sign_of(fmt: Fmt, b: int) -> int:
    return 1 if b & fmt.sign_bit else 0


def to_fraction(fmt: Fmt, b: int) -> Fraction:
    """Exact value of a finite encoding."""
    e = (b & fmt.exp_mask) >> fmt.man
    m = b & fmt.man_mask
    if e == 0:
        v = Fraction(m) * Fraction(2) ** (fmt.emin - fmt.man)
    else:
        v = Fraction(m + (1 << fmt.man)) * Fraction(2) ** (e - fmt.bias - fmt.man)
    return -v if b & fmt.sign_bit else v


def _floor_log2(v: Fraction) -> int:
    """floor(log2(v)) for v > 0."""
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    elif Fraction(2) ** (e + 1) <= v:
        e += 1
    return e


def round_fraction(fmt: Fmt, v: Fraction, mode: str = "rn", zero_sign: int = 0) -> int:
    """Round the exact rational `v` into `fmt` with mode rn/rz/rm/rp/rna; returns the encoding.

    zero_sign gives the sign of an exact zero result (v == 0).  Overflow follows IEEE 754: rn -> inf,
    rz -> max finite, rm/rp -> inf or max finite depending on sign.
    """
    if v == 0:
        return fmt.sign_bit if zero_sign else 0
    sign = 1 if v < 0 else 0
    a = -v if sign else v
    e = max(_floor_log2(a), fmt.emin)
    q = Fraction(2) ** (e - fmt.man)  # quantum in this binade (or the subnormal quantum)
    scaled = a / q
    n = scaled.numerator // scaled.denominator
    rem = scaled - n
    if rem != 0:
        if mode == "rn":
            if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
                n += 1
        elif mode == "rz":
            pass
        elif mode == "rm":
            n += sign
        elif mode == "rp":
            n += 1 - sign
        elif mode == "rna":  # to nearest, ties away from zero
            if rem >= Fraction(1, 2):
                n += 1
        else:
            raise ValueError(mode)
    r = n * q
    emax = fmt.bias
    if r >= Fraction(2) ** (emax + 1):
        toward_inf = mode in ("rn", "rna") or (mode == "rp" and not sign) or (mode == "rm" and sign)
        mag = fmt.inf if toward_inf else fmt.max_finite
        return mag | (fmt.sign_bit if sign else 0)
    if r == 0:
        return fmt.sign_bit if sign else 0
    e2 = _floor_log2(r)
    if e2 < fmt.emin:
        mag = int(r / Fraction(2) ** (fmt.emin - fmt.man))
    else:
        mag = ((e2 + fmt.bias) << fmt.man) | (int(r / Fraction(2) ** (e2 - fmt.man)) - (1 << fmt.man))
    return mag | (fmt.sign_bit if sign else 0)


NAN = None  # model result meaning "some NaN"
F64_DEFAULT_NAN = 0xFFF8000000000000  # an invalid f64 operation (inf - inf, 0 * inf) on the H100 (and x86)


def gpu_nan(fmt: Fmt, *operands: int) -> int | None:
    """The NaN an H100 returns from arithmetic (golden set ../shared/gpu-golden/isa): f32 always the
    canonical 0x7FFFFFFF; f64 the first NaN among `operands` (listed in the hardware's priority order)
    with its quiet bit set and its sign and payload kept, else the default NaN 0xFFF8000000000000."""
    if fmt.name == "f32":
        return fmt.canonical_nan
    if fmt.name != "f64":
        return NAN
    for x in operands:
        if is_nan(fmt, x):
            return x | (1 << (fmt.man - 1))
    return F64_DEFAULT_NAN


def ftz_in(fmt: Fmt, b: int) -> int:
    """Flush a subnormal input to a zero of the same sign."""
    return b & fmt.sign_bit if is_subnormal(fmt, b) else b


def ftz_out(fmt: Fmt, b: int | None) -> int | None:
    if b is None:
        return None
    return b & fmt.sign_bit if is_subnormal(fmt, b) else b


def model_add(fmt: Fmt, a: int, b: int, mode: str = "rn") -> int | None:
    if is_nan(fmt, a) or is_nan(fmt, b):
        return gpu_nan(fmt, b, a)  # isa_add_f64: the second operand's NaN first
    ia, ib = is_inf(fmt, a), is_inf(fmt, b)
    if ia and ib:
        return a if sign_of(fmt, a) == sign_of(fmt, b) else gpu_nan(fmt)
    if ia:
        return a
    if ib:
        return b
    va, vb = to_fraction(fmt, a), to_fraction(fmt, b)
    s = va + vb
    if s == 0:
        if is_zero(fmt, a) and is_zero(fmt, b) and sign_of(fmt, a) == sign_of(fmt, b):
            zs = sign_of(fmt, a)
        else:
            zs = 1 if mode == "rm" else 0
        return round_fraction(fmt, s, mode, zs)
    return round_fraction(fmt, s, mode)


def model_sub(fmt: Fmt, a: int, b: int, mode: str = "rn") -> int | None:
    if is_nan(fmt, a) or is_nan(fmt, b):
        return gpu_nan(fmt, b, a)  # isa_sub_f64: b's NaN is not negated
    return model_add(fmt, a, b ^ fmt.sign_bit, mode)


def model_mul(fmt: Fmt, a: int, b: int, mode: str = "rn") -> int | None:
    if is_nan(fmt, a) or is_nan(fmt, b):
        return gpu_nan(fmt, b, a)
    sign = sign_of(fmt, a) ^ sign_of(fmt, b)
    if is_inf(fmt, a) or is_inf(fmt, b):
        if is_zero(fmt, a) or is_zero(fmt, b):
            return gpu_nan(fmt)
        return fmt.inf | (fmt.sign_bit if sign else 0)
    return round_fraction(fmt, to_fraction(fmt, a) * to_fraction(fmt, b), mode, sign)


def model_fma(fmt: Fmt, a: int, b: int, c: int, mode: str = "rn") -> int | None:
    if is_nan(fmt, a) or is_nan(fmt, b) or is_nan(fmt, c):
        return gpu_nan(fmt, b, c, a)  # isa_fma_rn_f64: b's NaN, then c's, then a's
    psign = sign_of(fmt, a) ^ sign_of(fmt, b)
    if is_inf(fmt, a) or is_inf(fmt, b):
        if is_zero(fmt, a) or is_zero(fmt, b):
            return gpu_nan(fmt)
        if is_inf(fmt, c) and sign_of(fmt, c) != psign:
            return gpu_nan(fmt)
        return fmt.inf | (fmt.sign_bit if psign else 0)
    if is_inf(fmt, c):
        return c
    p = to_fraction(fmt, a) * to_fraction(fmt, b)
    s = p + to_fraction(fmt, c)
    if s == 0:
        pzero = p == 0
        if pzero and is_zero(fmt, c) and psign == sign_of(fmt, c):
            zs = psign
        else:
            zs = 1 if mode == "rm" else 0
        return round_fraction(fmt, s, mode, zs)
    return round_fraction(fmt, s, mode)


def model_div(fmt: Fmt, a: int, b: int, mode: str = "rn") -> int | None:
    if is_nan(fmt, a) or is_nan(fmt, b):
        return gpu_nan(fmt, a, b)  # isa_div_rn_f64 (a software sequence on the GPU): a's NaN first
    sign = sign_of(fmt, a) ^ sign_of(fmt, b)
    sb = fmt.sign_bit if sign else 0
    if is_inf(fmt, a):
        return gpu_nan(fmt) if is_inf(fmt, b) else fmt.inf | sb
    if is_inf(fmt, b):
        return sb
    if is_zero(fmt, b):
        return gpu_nan(fmt) if is_zero(fmt, a) else fmt.inf | sb
    return round_fraction(fmt, to_fraction(fmt, a) / to_fraction(fmt, b), mode, sign)


def _sqrt_round(fmt: Fmt, v: Fraction, mode: str = "rn") -> int:
    """Correctly rounded sqrt of a positive rational v."""
    k = fmt.man + 4 - (_floor_log2(v) // 2)
    scaled = v * Fraction(4) ** k
    num = scaled.numerator // scaled.denominator
    r = math.isqrt(num)
    exact = scaled.denominator == 1 and r * r == num
    # the true root lies strictly inside (r, r+1) / 2^k when inexact; r + 1/2 stands in for it, which is
    # safe because every rounding boundary of fmt is a multiple of 2^-k
    base = Fraction(2 * r + (0 if exact else 1), 2) / Fraction(2) ** k
    return round_fraction(fmt, base, mode)


def model_sqrt(fmt: Fmt, a: int, mode: str = "rn") -> int | None:
    if is_nan(fmt, a):
        return gpu_nan(fmt, a)
    if is_zero(fmt, a):
        return a
    if sign_of(fmt, a):
        return gpu_nan(fmt)  # isa_sqrt_rn_f32(-1) = 0x7fffffff, isa_sqrt_rn_f64(-1) = 0xfff8…
    if is_inf(fmt, a):
        return a
    return _sqrt_round(fmt, to_fraction(fmt, a), mode)


def ulp_diff(fmt: Fmt, x: int, y: int) -> int:
    """Distance in representable steps between two finite/inf encodings (signed-magnitude ordering)."""
    def key(b: int) -> int:
        return -(b & ~fmt.sign_bit) if b & fmt.sign_bit else b

    return abs(key(x) - key(y))


def assert_bits_equal(fmt: Fmt, got, expected, inputs=None, what: str = "") -> None:
    """Compare encodings; an expected None/NaN only requires got to be some NaN."""
    bad = []
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g = int(g)
        if e is None:
            ok = is_nan(fmt, g)
        else:  # an expected NaN's bits are what the hardware gives: exact too
            ok = g == int(e)
        if not ok:
            ctx = "" if inputs is None else " inputs=" + ", ".join(hex(int(x[i])) for x in inputs)
            exp_s = "NaN" if e is None else hex(int(e))
            bad.append(f"[{i}]{ctx}: expected {exp_s}, got {hex(g)}")
    assert not bad, f"{what}: {len(bad)} mismatches\n" + "\n".join(bad[:20])
