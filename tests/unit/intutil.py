"""Shared helpers for the integer / bit / compare / control-flow PTX unit tests in tests/unit.

* kernel plumbing: `run_ptx` (tests/unit/kernelutil.py) compiles PTX text with ptxjit and launches it; `elementwise`
  wraps one instruction (or a few) in a kernel where thread i loads element i of every input array from
  global memory, executes the code under test and stores its result(s) to element i of the output arrays.
* a small reference model of PTX integer semantics on Python ints (explicit masking / sign extension).
  Nothing here imports ptxjit's arithmetic: expectations never come from the code under test.

Setting PTXJIT_TEST_PTXAS=1 makes `run_ptx` also assemble every generated kernel with `ptxas -arch=sm_80`
(when ptxas is on PATH), which is how the snippets were validated; PTXJIT_TEST_PTXAS=only assembles without
running (the tests then fail on their sentinel outputs; useful only while developing the tests).
"""

from __future__ import annotations

import struct

import numpy as np

from tests.ptxsnip import snippet_kernel
from tests.unit.kernelutil import run_ptx

# ----------------------------------------------------------------------------------------------------------
# kernel plumbing
# ----------------------------------------------------------------------------------------------------------

# kind -> (register prefix, byte size, ld/st type, numpy dtype holding the raw bits)
KINDS = {
    "b16": ("%h", 2, "b16", np.uint16),
    "u16": ("%h", 2, "u16", np.uint16),
    "s16": ("%h", 2, "s16", np.uint16),
    "b32": ("%r", 4, "b32", np.uint32),
    "u32": ("%r", 4, "u32", np.uint32),
    "s32": ("%r", 4, "s32", np.uint32),
    "b64": ("%rd", 8, "b64", np.uint64),
    "u64": ("%rd", 8, "u64", np.uint64),
    "s64": ("%rd", 8, "s64", np.uint64),
    "f32": ("%f", 4, "f32", np.uint32),
    "f64": ("%fd", 8, "f64", np.uint64),
    "pred": ("%p", 4, "u32", np.uint32),  # predicates travel through memory as u32 0/1
}

_IN_NAMES = ("a", "b", "c", "e")
_OUT_NAMES = ("d", "d2")


def bits_of(kind: str, v) -> int:
    """A Python value as the raw bit pattern of `kind` (ints are masked; floats are packed IEEE)."""
    size = KINDS[kind][1]
    if kind == "pred":
        return 1 if v else 0
    if isinstance(v, float):
        if kind == "f32":
            return struct.unpack("<I", struct.pack("<f", v))[0]
        if kind == "f64":
            return struct.unpack("<Q", struct.pack("<d", v))[0]
        raise TypeError(f"float {v!r} for integer kind {kind}")
    return int(v) & ((1 << (8 * size)) - 1)


def elementwise(template: str, inputs, outs, *, pre: str = "", block: int = 128,
                sentinel: int = 0xA5) -> list[list[int]]:
    """Run `template` once per element; return the outputs as lists of raw unsigned bit patterns.

    template: PTX text with placeholders {a} {b} {c} {e} (inputs, in order) and {d} {d2} (outputs), e.g.
              "add.s32 {d}, {a}, {b};".  Scratch registers free for the template / `pre`: %r20-%r39,
              %rd20-%rd39, %h20-%h39, %f20-%f39, %fd20-%fd39, %p5-%p9.
    inputs:   list of (kind, values); values are Python ints (masked to the width, so -1 is fine), floats
              (for f32 / f64), or bools (pred).
    outs:     list of kinds for {d}, {d2}.
    """
    n = len(inputs[0][1])
    assert all(len(v) == n for _, v in inputs)
    params = [("u64", f"o{j}") for j in range(len(outs))] + [("u64", f"i{j}") for j in range(len(inputs))]
    params.append(("u32", "n"))
    lines = [f"    ld.param.u64 %rd{40 + j}, [o{j}];" for j in range(len(outs))]
    lines += [f"    ld.param.u64 %rd{44 + j}, [i{j}];" for j in range(len(inputs))]
    lines += [
        "    ld.param.u32 %r60, [n];",
        "    mov.u32 %r61, %tid.x;",
        "    mov.u32 %r62, %ctaid.x;",
        "    mov.u32 %r63, %ntid.x;",
        "    mad.lo.s32 %r59, %r62, %r63, %r61;",
        "    setp.ge.u32 %p15, %r59, %r60;",
        "    @%p15 bra $L_done;",
    ]
    fmt: dict[str, str] = {}
    arrays = []
    for j, (kind, vals) in enumerate(inputs):
        prefix, size, ldt, dt = KINDS[kind]
        arrays.append(np.array([bits_of(kind, v) for v in vals], dtype=dt))
        lines.append(f"    mul.wide.u32 %rd{50 + j}, %r59, {size};")
        lines.append(f"    add.s64 %rd{54 + j}, %rd{44 + j}, %rd{50 + j};")
        if kind == "pred":
            lines.append(f"    ld.global.u32 %r{50 + j}, [%rd{54 + j}];")
            lines.append(f"    setp.ne.u32 %p{1 + j}, %r{50 + j}, 0;")
            fmt[_IN_NAMES[j]] = f"%p{1 + j}"
        else:
            reg = f"{prefix}{1 + j}"
            lines.append(f"    ld.global.{ldt} {reg}, [%rd{54 + j}];")
            fmt[_IN_NAMES[j]] = reg
    store = []
    out_arrays = []
    for j, kind in enumerate(outs):
        prefix, size, ldt, dt = KINDS[kind]
        reg = f"{prefix}{10 + j}"
        src = reg
        if kind == "pred":
            store.append(f"    selp.u32 %r{56 + j}, 1, 0, {reg};")
            src = f"%r{56 + j}"
        fmt[_OUT_NAMES[j]] = reg
        store.append(f"    mul.wide.u32 %rd{58 + j}, %r59, {size};")
        store.append(f"    add.s64 %rd{60 + j}, %rd{40 + j}, %rd{58 + j};")
        store.append(f"    st.global.{ldt} [%rd{60 + j}], {src};")
        o = np.empty(n, dtype=dt)
        o.view(np.uint8)[:] = sentinel
        out_arrays.append(o)
    if pre:
        lines.append(pre.format(**fmt))
    lines.append("    " + template.format(**fmt))
    lines += store
    lines.append("$L_done:")
    ptx = snippet_kernel("\n".join(lines), params)
    grid = (n + block - 1) // block
    run_ptx(ptx, out_arrays + arrays + [np.uint32(n)], grid=grid, block=min(block, n))
    return [[int(x) for x in o] for o in out_arrays]


def check(got, expected, inputs=None, what: str = "", width: int = 32, limit: int = 8) -> None:
    """Assert got == expected element-wise (raw bit patterns); report the first mismatches in hex."""
    assert len(got) == len(expected)
    digits = max(1, width // 4)
    bad = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e]
    if not bad:
        return
    lines = [f"{what}: {len(bad)}/{len(got)} mismatches"]
    for i in bad[:limit]:
        ins = ""
        if inputs is not None:
            ins = " ".join(f"0x{bits_of(k, v[i]):x}" if k not in ("f32", "f64") else repr(v[i])
                           for k, v in inputs)
        lines.append(f"  [{i}] inputs {ins}: expected 0x{expected[i]:0{digits}x} got 0x{got[i]:0{digits}x}")
    raise AssertionError("\n".join(lines))


# ----------------------------------------------------------------------------------------------------------
# reference model helpers
# ----------------------------------------------------------------------------------------------------------


def mask(width: int) -> int:
    return (1 << width) - 1


def u(x: int, width: int) -> int:
    """Value as an unsigned `width`-bit integer."""
    return x & mask(width)


def s(x: int, width: int) -> int:
    """Value as a signed (two's complement) `width`-bit integer."""
    x &= mask(width)
    return x - (1 << width) if x >> (width - 1) else x


def val(x: int, typ: str) -> int:
    """Interpret bits `x` as PTX type `typ` (u32, s64, b16, ...) -> Python int."""
    w = int(typ[1:])
    return s(x, w) if typ[0] == "s" else u(x, w)


def tdiv(a: int, b: int) -> int:
    """Integer division truncating toward zero (C semantics)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trem(a: int, b: int) -> int:
    """Remainder with the sign of the dividend (C semantics)."""
    return a - b * tdiv(a, b)


def edge_values(width: int) -> list[int]:
    """Interesting bit patterns for a `width`-bit integer type (as unsigned ints)."""
    m = mask(width)
    top = 1 << (width - 1)
    vals = {0, 1, 2, 3, 7, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, m, m - 1, top, top - 1, top + 1,
            0x12345678 & m, 0xDEADBEEF & m, 0x0F0F0F0F0F0F0F0F & m, 0xF0F0F0F0F0F0F0F0 & m,
            0x5555555555555555 & m, 0xAAAAAAAAAAAAAAAA & m, 0x00000000FFFFFFFF & m, 0xFFFFFFFF00000000 & m,
            0x0000000100000000 & m, 0x80000000 & m, 0x7FFFFFFF & m, 0xFFFFFFFF & m, 0x1000000 & m,
            0xFFFFFF & m, 0x800000 & m, 0x7FFFFF & m}
    return sorted(vals)


def random_values(width: int, n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    hi = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    lo = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    return [((int(h) << 32) | int(lo_)) & mask(width) for h, lo_ in zip(hi, lo, strict=True)]


def pairs(values_a, values_b=None):
    """Cartesian product of two value lists -> (list_a, list_b)."""
    if values_b is None:
        values_b = values_a
    a = [x for x in values_a for _ in values_b]
    b = [y for _ in values_a for y in values_b]
    return a, b


def operands(width: int, n_random: int, seed: int, count: int = 2, n_edges: int | None = None):
    """`count` operand lists: every pair of edge values (when count==2) plus random tuples."""
    edges = edge_values(width)
    if n_edges is not None:
        edges = edges[:n_edges]
    if count == 1:
        return [edges + random_values(width, n_random, seed)]
    rnd = [random_values(width, n_random, seed + k) for k in range(count)]
    if count == 2:
        a, b = pairs(edges)
        return [a + rnd[0], b + rnd[1]]
    # count >= 3: pair the edges for the first two operands, cycle edges through the rest
    a, b = pairs(edges)
    rest = [[edges[(i * (k + 3)) % len(edges)] for i in range(len(a))] for k in range(count - 2)]
    return [a + rnd[0], b + rnd[1]] + [r + rnd[2 + k] for k, r in enumerate(rest)]


def predicate_mask(templates: list[str], inputs, *, block: int = 128) -> list[int]:
    """Run several predicate-producing snippets in ONE kernel (compiling a kernel is the expensive part).

    Each template writes predicates {p} (and optionally {q}); its results land in bits 2k ({p}) and 2k+1
    ({q}) of one u32 per element.  At most 16 templates.  Other placeholders as in `elementwise`.
    """
    assert len(templates) <= 16
    lines = ["    mov.u32 %r21, 0;"]
    for k, t in enumerate(templates):
        lines.append("    " + t.replace("{p}", "%p5").replace("{q}", "%p6"))
        lines.append(f"    selp.u32 %r22, {1 << (2 * k)}, 0, %p5;")
        lines.append("    or.b32 %r21, %r21, %r22;")
        if "{q}" in t:
            lines.append(f"    selp.u32 %r22, {1 << (2 * k + 1)}, 0, %p6;")
            lines.append("    or.b32 %r21, %r21, %r22;")
    (got,) = elementwise("mov.b32 {d}, %r21;", inputs, ["u32"], pre="\n".join(lines), block=block)
    return got


def check_predicate_mask(got, expected_bits, names, inputs=None, what: str = "", limit: int = 8) -> None:
    """Compare `predicate_mask` output with expected per-template (p, q) results.

    expected_bits[i] is a list with, per template k, either p_k or a (p_k, q_k) tuple; names[k] labels it.
    """
    exp = []
    for row in expected_bits:
        m = 0
        for k, e in enumerate(row):
            p, q = e if isinstance(e, tuple) else (e, 0)
            m |= (int(p) << (2 * k)) | (int(q) << (2 * k + 1))
        exp.append(m)
    bad = [i for i, (g, e) in enumerate(zip(got, exp, strict=True)) if g != e]
    if not bad:
        return
    lines = [f"{what}: {len(bad)}/{len(got)} elements with wrong predicates"]
    for i in bad[:limit]:
        wrong = []
        for k, name in enumerate(names):
            for j, pq in enumerate("pq"):
                g = (got[i] >> (2 * k + j)) & 1
                e = (exp[i] >> (2 * k + j)) & 1
                if g != e:
                    wrong.append(f"{name} ({pq}): expected {e} got {g}")
        ins = ""
        if inputs is not None:
            ins = " ".join(f"0x{bits_of(kd, v[i]):x}" if kd not in ("f32", "f64") else repr(v[i])
                           for kd, v in inputs)
        lines.append(f"  [{i}] inputs {ins}: " + "; ".join(wrong))
    raise AssertionError("\n".join(lines))
