"""Multi-instruction carry chains (add.cc/addc, sub.cc/subc, mad.cc/madc) against Python's exact integers.

The flag, CC.CF, as ptxas compiles it for the H100: one carry bit for additions and subtractions alike.

- add.cc / addc.cc / mad{c}.lo.cc / mad{c}.hi.cc set it to the carry-out of their addition;
- sub.cc a, b sets it to the carry-out of a + ~b + 1 (1 when a >= b: the complement of a borrow), and
  subc.cc a, b to the carry-out of a + ~b + CF;
- addc and madc add CF; subc a, b computes a + ~b + CF, that is a - b - (1 - CF).

A chain of one kind is then exact multi-word arithmetic, which the H100 golden set shows per chain:
isa_add_cc_u32_chain, isa_add_cc_s32_chain, isa_add_cc_u64_chain, isa_sub_cc_u32_chain, isa_sub_cc_s32_chain,
isa_sub_cc_u64_chain, isa_mad_lo_cc_u32_chain, isa_mad_lo_cc_s32_chain, isa_mad_lo_cc_u64_chain,
isa_madc_lo_u32_chain and isa_addc_u32_nocc (`test_flag_model_reproduces_the_h100` runs the model below over
their recorded inputs and compares it with what the H100 wrote).  Where a chain mixes kinds, the flag an
addition set reads in a subc as the complement of a borrow, and a subtraction's flag reads in an addc or madc
as "no borrow": ptxas emits `sub.cc a, b; addc d, 0, 0` for sm_90 as `IADD3 RZ, P0, a, -b, RZ` (P0: the
carry of a + ~b + 1) and `SEL d, RZ, 0x1, !P0`, and `add.cc a, b; subc d, 0, 0` as `IADD3 RZ, P1, a, b, RZ`
and `IMAD.X d, RZ, RZ, -0x1, P1` (d = ~0 + CF).

Expected values of the multi-word chains are Python big-int sums, differences and products; those of the
mixed chains come from the flag model, which is checked against the H100 by the golden replay.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

import numpy as np
import pytest

import ptxjit
from tests.markers import golden_needs
from tests.ptxsnip import snippet_kernel
from tests.unit.goldenutil import GOLDEN
from tests.unit.goldenutil import _index as golden_index

M32 = 0xFFFFFFFF
EDGE_LIMBS = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFE]


# ---------------------------------------------------------------- the flag model


@dataclass
class Flag:
    """CC.CF and the chain instructions on w-bit Python integers (the model the docstring states)."""

    w: int
    cf: int = 0

    @property
    def mask(self) -> int:
        return (1 << self.w) - 1

    def _sum(self, x: int, cc: bool) -> int:
        if cc:
            self.cf = x >> self.w
        return x & self.mask

    def add(self, a: int, b: int, *, cc: bool = False, cin: bool = False) -> int:
        return self._sum(a + b + (self.cf if cin else 0), cc)

    def sub(self, a: int, b: int, *, cc: bool = False, cin: bool = False) -> int:
        return self._sum(a + (~b & self.mask) + (self.cf if cin else 1), cc)

    def mad(self, a: int, b: int, c: int, *, hi: bool, signed: bool = False, cc: bool = False,
            cin: bool = False) -> int:
        if signed:
            a, b = (x - (1 << self.w) if x >> (self.w - 1) else x for x in (a, b))
        p = (a * b) & ((1 << 2 * self.w) - 1)
        part = p >> self.w if hi else p & self.mask
        return self._sum(part + c + (self.cf if cin else 0), cc)


# golden case -> (limb width, the chain's instructions as the recorded PTX spells them, the model of it
# over the thread's input slots x0.. giving its output slots)
GOLDEN_CHAINS = {
    "isa_add_cc_u32_chain": (32, ["add.cc.u32 %r10, %r6, %r8;", "addc.cc.u32 %r11, %r7, %r9;",
                                  "addc.u32 %r12, 0, 0;"],
                             lambda f, x: [f.add(x[0], x[2], cc=True), f.add(x[1], x[3], cc=True, cin=True),
                                           f.add(0, 0, cin=True) & 1]),
    "isa_add_cc_s32_chain": (32, ["add.cc.s32 %r10, %r6, %r8;", "addc.cc.s32 %r11, %r7, %r9;",
                                  "addc.s32 %r12, 0, 0;"],
                             lambda f, x: [f.add(x[0], x[2], cc=True), f.add(x[1], x[3], cc=True, cin=True),
                                           f.add(0, 0, cin=True) & 1]),
    "isa_add_cc_u64_chain": (64, ["add.cc.u64 %rd11, %rd7, %rd9;", "addc.cc.u64 %rd12, %rd8, %rd10;",
                                  "addc.u64 %rd13, 0, 0;"],
                             lambda f, x: [f.add(x[0], x[2], cc=True), f.add(x[1], x[3], cc=True, cin=True),
                                           f.add(0, 0, cin=True) & 1]),
    "isa_sub_cc_u32_chain": (32, ["sub.cc.u32 %r10, %r6, %r8;", "subc.cc.u32 %r11, %r7, %r9;",
                                  "subc.u32 %r12, 0, 0;"],
                             lambda f, x: [f.sub(x[0], x[2], cc=True), f.sub(x[1], x[3], cc=True, cin=True),
                                           f.sub(0, 0, cin=True) & 1]),
    "isa_sub_cc_s32_chain": (32, ["sub.cc.s32 %r10, %r6, %r8;", "subc.cc.s32 %r11, %r7, %r9;",
                                  "subc.s32 %r12, 0, 0;"],
                             lambda f, x: [f.sub(x[0], x[2], cc=True), f.sub(x[1], x[3], cc=True, cin=True),
                                           f.sub(0, 0, cin=True) & 1]),
    "isa_sub_cc_u64_chain": (64, ["sub.cc.u64 %rd11, %rd7, %rd9;", "subc.cc.u64 %rd12, %rd8, %rd10;",
                                  "subc.u64 %rd13, 0, 0;"],
                             lambda f, x: [f.sub(x[0], x[2], cc=True), f.sub(x[1], x[3], cc=True, cin=True),
                                           f.sub(0, 0, cin=True) & 1]),
    "isa_mad_lo_cc_u32_chain": (32, ["mad.lo.cc.u32 %r10, %r6, %r7, %r8;", "madc.hi.cc.u32 %r11, %r6, %r7, %r9;",
                                     "addc.u32 %r12, 0, 0;"],
                                lambda f, x: [f.mad(x[0], x[1], x[2], hi=False, cc=True),
                                              f.mad(x[0], x[1], x[3], hi=True, cc=True, cin=True),
                                              f.add(0, 0, cin=True) & 1]),
    "isa_mad_lo_cc_s32_chain": (32, ["mad.lo.cc.s32 %r10, %r6, %r7, %r8;", "madc.hi.cc.s32 %r11, %r6, %r7, %r9;",
                                     "addc.s32 %r12, 0, 0;"],
                                lambda f, x: [f.mad(x[0], x[1], x[2], hi=False, signed=True, cc=True),
                                              f.mad(x[0], x[1], x[3], hi=True, signed=True, cc=True, cin=True),
                                              f.add(0, 0, cin=True) & 1]),
    "isa_mad_lo_cc_u64_chain": (64, ["mad.lo.cc.u64 %rd11, %rd7, %rd8, %rd9;",
                                     "madc.hi.cc.u64 %rd12, %rd7, %rd8, %rd10;", "addc.u64 %rd13, 0, 0;"],
                                lambda f, x: [f.mad(x[0], x[1], x[2], hi=False, cc=True),
                                              f.mad(x[0], x[1], x[3], hi=True, cc=True, cin=True),
                                              f.add(0, 0, cin=True) & 1]),
    "isa_madc_lo_u32_chain": (32, ["mad.hi.cc.u32 %r10, %r6, %r7, %r8;", "madc.lo.u32 %r11, %r6, %r7, %r9;"],
                              lambda f, x: [f.mad(x[0], x[1], x[2], hi=True, cc=True),
                                            f.mad(x[0], x[1], x[3], hi=False, cin=True)]),
    "isa_addc_u32_nocc": (32, ["add.cc.u32 %r9, %r6, %r7;", "addc.u32 %r10, %r8, 0;"],
                          lambda f, x: [f.add(x[0], x[1], cc=True), f.add(x[2], 0, cin=True)]),
}

_SIZES = {"u32": 4, "s32": 4, "u64": 8, "s64": 8}


@golden_needs("isa")
@pytest.mark.parametrize("case", sorted(GOLDEN_CHAINS))
def test_flag_model_reproduces_the_h100(case):
    """The flag model, run over a golden chain's recorded inputs, gives the bytes the H100 wrote."""
    w, chain, model = GOLDEN_CHAINS[case]
    layout = json.loads((GOLDEN / "layout.json").read_text())["variants"][case]
    rec = GOLDEN / "in" / f"{golden_index()[case]}.npz"
    z = np.load(rec)
    ptx = (GOLDEN / "ptx" / f"{json.loads(str(z['meta']))['ptx']}.ptx").read_text()
    lines = [ln.strip() for ln in ptx.splitlines()]
    assert all(ins in lines for ins in chain), f"{case}: the recorded kernel is not the modelled chain"
    inp = z["b0"].tobytes()
    out = np.load(GOLDEN / "gpu" / rec.name)["g1"].tobytes()
    bad = []
    for i in range(layout["n"]):
        x = [int.from_bytes(inp[i * layout["in_slot"] + o:][:_SIZES[t]], "little")
             for o, t in zip(layout["in_off"], layout["ins"], strict=True)]
        got = [int.from_bytes(out[i * layout["out_slot"] + o:][:_SIZES[t]], "little")
               for o, t in zip(layout["out_off"], layout["outs"], strict=True)]
        want = model(Flag(w), x)
        if got != want:
            bad.append((i, [hex(v) for v in x], [hex(v) for v in got], [hex(v) for v in want]))
    assert not bad, f"{case}: {len(bad)} of {layout['n']} rows differ, e.g. {bad[:3]}"


# ---------------------------------------------------------------- running chains through ptxjit


def _run(body: str, words: np.ndarray, n_out: int) -> np.ndarray:
    """Run `body` once per row of `words` (uint32, n x k): row i's words in %r1..%rk, outputs %r40.. ."""
    n, k = words.shape
    load = "\n".join(f"    ld.global.u32 %r{j + 1}, [%rd61+{4 * j}];" for j in range(k))
    store = "\n".join(f"    st.global.u32 [%rd62+{4 * j}], %r{40 + j};" for j in range(n_out))
    text = f"""    ld.param.u64 %rd60, [inp];
    ld.param.u64 %rd63, [out];
    ld.param.u32 %r60, [n];
    mov.u32 %r61, %tid.x;
    mov.u32 %r62, %ctaid.x;
    mov.u32 %r63, %ntid.x;
    mad.lo.s32 %r59, %r62, %r63, %r61;
    setp.ge.u32 %p15, %r59, %r60;
    @%p15 bra $L_done;
    mul.wide.u32 %rd59, %r59, {4 * k};
    add.s64 %rd61, %rd60, %rd59;
    mul.wide.u32 %rd59, %r59, {4 * n_out};
    add.s64 %rd62, %rd63, %rd59;
{load}
{body}
{store}
$L_done:"""
    mod = ptxjit.Module(snippet_kernel(text, [("u64", "inp"), ("u64", "out"), ("u32", "n")]), "chain.ptx")
    out = np.full(n * n_out, 0xCDCDCDCD, dtype=np.uint32)
    block = 128
    mod.get_function("k")((n + block - 1) // block, block, (np.ascontiguousarray(words, np.uint32), out,
                                                             np.uint32(n)))
    return out.reshape(n, n_out)


def _limbs(x: int, k: int) -> list[int]:
    return [(x >> (32 * j)) & M32 for j in range(k)]


def _join(row) -> int:
    return sum(int(v) << (32 * j) for j, v in enumerate(row))


def _operand_pairs(k: int, seed: int, n_random: int = 200) -> list[tuple[int, int]]:
    """(A, B) pairs of k-limb numbers: edge limbs in every position (and equal, off-by-one and carry-rippling
    neighbours), then random ones."""
    rng = random.Random(seed)
    edges = [sum(e << (32 * j) for j in range(k)) for e in EDGE_LIMBS]  # every limb the same edge value
    edges += [sum(rng.choice(EDGE_LIMBS) << (32 * j) for j in range(k)) for _ in range(60)]
    top = (1 << 32 * k) - 1
    pairs = [(a, b) for a in edges[:len(EDGE_LIMBS)] for b in edges[:len(EDGE_LIMBS)]]
    pairs += [(a, b) for a, b in zip(edges, reversed(edges), strict=True)]
    pairs += [(a, a) for a in edges] + [(a, (a + 1) & top) for a in edges] + [(a, (a - 1) & top) for a in edges]
    pairs += [(rng.getrandbits(32 * k), rng.getrandbits(32 * k)) for _ in range(n_random)]
    return pairs


def _words(pairs: list[tuple[int, int]], k: int) -> np.ndarray:
    return np.array([_limbs(a, k) + _limbs(b, k) for a, b in pairs], dtype=np.uint32)


def _check(got: np.ndarray, want: list[list[int]], pairs, what: str) -> None:
    bad = [(hex(a), hex(b), [hex(int(v)) for v in g], [hex(v) for v in w])
           for (a, b), g, w in zip(pairs, got, want, strict=True) if [int(v) for v in g] != w]
    assert not bad, f"{what}: {len(bad)} of {len(pairs)} differ, (A, B, got, want) e.g. {bad[:3]}"


def _chain(op: str, t: str, k: int, first: int, second: int, dest: int) -> str:
    """{op}.cc on limb 0, {op}c.cc on the middle limbs, {op}c on the top one: A in %r{first}.., B in %r{second}..,
    the result in %r{dest}.. (k limbs)."""
    lines = []
    for j in range(k):
        name = f"{op}.cc" if j == 0 else f"{op}c.cc" if j < k - 1 else f"{op}c"
        lines.append(f"    {name}.{t} %r{dest + j}, %r{first + j}, %r{second + j};")
    return "\n".join(lines)


@pytest.mark.parametrize("t", ["u32", "s32"])
@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_multiword_add_sub(op, k, t):
    """64/96/128-bit A + B and A - B through add.cc -> addc.cc -> addc (sub.cc -> subc.cc -> subc), against
    Python's exact result modulo 2^(32k)."""
    pairs = _operand_pairs(k, seed=k * 7 + (op == "sub"))
    got = _run(_chain(op, t, k, 1, 1 + k, 40), _words(pairs, k), k)
    top = (1 << 32 * k) - 1
    want = [_limbs((a + b if op == "add" else a - b) & top, k) for a, b in pairs]
    _check(got, want, pairs, f"{32 * k}-bit {op} chain .{t}")


@pytest.mark.parametrize("t", ["u32", "s32"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_multiword_carry_out(op, t):
    """128-bit A + B with the carry out as a fifth word (add.cc, addc.cc x3, addc 0, 0), and A - B with the borrow
    out (sub.cc, subc.cc x3, subc 0, 0: all ones when A < B)."""
    pairs = _operand_pairs(4, seed=11 + (op == "sub"))
    body = _chain(op, t, 4, 1, 5, 40).replace(f"    {op}c.{t}", f"    {op}c.cc.{t}")
    body += f"\n    {op}c.{t} %r44, 0, 0;"
    got = _run(body, _words(pairs, 4), 5)
    if op == "add":
        want = [_limbs(a + b, 5) for a, b in pairs]
    else:
        want = [_limbs((a - b) % (1 << 128), 4) + [M32 if a < b else 0] for a, b in pairs]
    _check(got, want, pairs, f"128-bit {op} with carry out .{t}")


@pytest.mark.parametrize("op", ["add", "sub"])
def test_u64_limbs(op):
    """128-bit A + B / A - B on two 64-bit limbs (add.cc.u64 -> addc.cc.u64 -> addc.u64 0, 0 for the carry)."""
    pairs = _operand_pairs(4, seed=21 + (op == "sub"))
    body = f"""    mov.b64 %rd1, {{%r1, %r2}};
    mov.b64 %rd2, {{%r3, %r4}};
    mov.b64 %rd3, {{%r5, %r6}};
    mov.b64 %rd4, {{%r7, %r8}};
    {op}.cc.u64 %rd5, %rd1, %rd3;
    {op}c.cc.u64 %rd6, %rd2, %rd4;
    {op}c.u64 %rd7, 0, 0;
    mov.b64 {{%r40, %r41}}, %rd5;
    mov.b64 {{%r42, %r43}}, %rd6;
    cvt.u32.u64 %r44, %rd7;"""
    got = _run(body, _words(pairs, 4), 5)
    if op == "add":
        want = [_limbs(a + b, 5) for a, b in pairs]
    else:
        want = [_limbs((a - b) % (1 << 128), 4) + [M32 if a < b else 0] for a, b in pairs]
    _check(got, want, pairs, f"128-bit {op} on u64 limbs")


def test_multiprecision_multiply():
    """A (128-bit) * B (32-bit) -> 160 bits with mad.lo.cc / madc.lo.cc / addc, and 64 x 64 -> 128 with
    mad.lo.cc / madc.hi.cc, against Python's product."""
    pairs = _operand_pairs(4, seed=31)
    body = """    mul.lo.u32 %r40, %r1, %r5;
    mul.hi.u32 %r41, %r1, %r5;
    mul.hi.u32 %r42, %r2, %r5;
    mul.hi.u32 %r43, %r3, %r5;
    mul.hi.u32 %r44, %r4, %r5;
    mad.lo.cc.u32 %r41, %r2, %r5, %r41;
    madc.lo.cc.u32 %r42, %r3, %r5, %r42;
    madc.lo.cc.u32 %r43, %r4, %r5, %r43;
    addc.u32 %r44, %r44, 0;
    mul.lo.u32 %r45, %r1, %r5;
    mul.hi.u32 %r46, %r1, %r5;
    mad.lo.cc.u32 %r46, %r2, %r5, %r46;
    madc.hi.u32 %r47, %r2, %r5, 0;
    mad.lo.cc.u32 %r46, %r1, %r6, %r46;
    madc.hi.cc.u32 %r47, %r1, %r6, %r47;
    addc.u32 %r48, 0, 0;
    mad.lo.cc.u32 %r47, %r2, %r6, %r47;
    madc.hi.u32 %r48, %r2, %r6, %r48;"""
    got = _run(body, _words(pairs, 4), 9)
    want = [_limbs(a * (b & M32), 5) + _limbs((a & (1 << 64) - 1) * (b & (1 << 64) - 1), 4) for a, b in pairs]
    _check(got, want, pairs, "multiprecision multiply")


# mixed chains: (PTX over a = %r1, b = %r2, x = %r3, y = %r4, results %r40..; the flag model of it)
MIXED = {
    "sub.cc -> addc": ("sub.cc.u32 %r40, %r1, %r2;\n    addc.u32 %r41, %r3, %r4;",
                       lambda f, a, b, x, y: [f.sub(a, b, cc=True), f.add(x, y, cin=True)]),
    "add.cc -> subc": ("add.cc.u32 %r40, %r1, %r2;\n    subc.u32 %r41, %r3, %r4;",
                       lambda f, a, b, x, y: [f.add(a, b, cc=True), f.sub(x, y, cin=True)]),
    "add.cc -> subc.cc -> addc": (
        "add.cc.s32 %r40, %r1, %r2;\n    subc.cc.s32 %r41, %r3, %r4;\n    addc.s32 %r42, 0, 0;",
        lambda f, a, b, x, y: [f.add(a, b, cc=True), f.sub(x, y, cc=True, cin=True), f.add(0, 0, cin=True)]),
    "sub.cc -> addc.cc -> subc": (
        "sub.cc.u32 %r40, %r1, %r2;\n    addc.cc.u32 %r41, %r3, %r4;\n    subc.u32 %r42, 0, 0;",
        lambda f, a, b, x, y: [f.sub(a, b, cc=True), f.add(x, y, cc=True, cin=True), f.sub(0, 0, cin=True)]),
    "mad.lo.cc -> subc": ("mad.lo.cc.u32 %r40, %r1, %r2, %r3;\n    subc.u32 %r41, %r4, %r3;",
                          lambda f, a, b, x, y: [f.mad(a, b, x, hi=False, cc=True), f.sub(y, x, cin=True)]),
    "sub.cc -> madc.hi": ("sub.cc.u32 %r40, %r1, %r2;\n    madc.hi.u32 %r41, %r3, %r4, %r1;",
                          lambda f, a, b, x, y: [f.sub(a, b, cc=True), f.mad(x, y, a, hi=True, cin=True)]),
    "subc.cc -> madc.lo.cc -> addc": (
        "sub.cc.u32 %r40, %r1, %r2;\n    subc.cc.u32 %r41, %r3, %r4;\n"
        "    madc.lo.cc.u32 %r42, %r1, %r3, %r4;\n    addc.u32 %r43, 0, 0;",
        lambda f, a, b, x, y: [f.sub(a, b, cc=True), f.sub(x, y, cc=True, cin=True),
                               f.mad(a, x, y, hi=False, cc=True, cin=True), f.add(0, 0, cin=True)]),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_chains(name):
    """Chains that pass the flag between additions and subtractions: a subtraction's flag is "no borrow" to
    an addc/madc and an addition's carry is "no borrow" to a subc (the model, checked against the H100 by
    test_flag_model_reproduces_the_h100, and what ptxas emits for sm_90: see the module docstring)."""
    body, model = MIXED[name]
    rng = random.Random(len(name))
    vals = EDGE_LIMBS + [rng.getrandbits(32) for _ in range(4)]
    rows = [(a, b, rng.choice(vals), rng.choice(vals)) for a in vals for b in vals]
    rows += [tuple(rng.getrandbits(32) for _ in range(4)) for _ in range(200)]
    n_out = len(re.findall(r"%r4\d,", body))
    got = _run(body, np.array(rows, dtype=np.uint32), n_out)
    want = [model(Flag(32), *r) for r in rows]
    bad = [(r, [hex(int(v)) for v in g], [hex(v) for v in w]) for r, g, w in zip(rows, got, want, strict=True)
           if [int(v) for v in g] != w]
    assert not bad, f"{name}: {len(bad)} of {len(rows)} differ, (inputs, got, want) e.g. {bad[:3]}"


def test_mixed_chain_edge_values():
    """The flag's reading across kinds at 0 - 0, 0 - 1, 0 + 0 and ~0 + ~0: sub.cc 0, 0 leaves 1 (no borrow),
    so addc 0, 0 gives 1; add.cc 0, 0 leaves 0, so subc 0, 0 gives ~0 + 0."""
    body = """    sub.cc.u32 %r40, %r1, %r2;
    addc.u32 %r40, 0, 0;
    add.cc.u32 %r41, %r1, %r2;
    subc.u32 %r41, 0, 0;
    mad.lo.cc.u32 %r42, %r1, %r2, %r2;
    subc.u32 %r42, 0, 0;"""
    rows = [(0, 0), (0, 1), (1, 0), (M32, M32), (M32, 1), (0x80000000, 0x80000000)]
    got = _run(body, np.array(rows, dtype=np.uint32), 3)
    want = [[int(a >= b), 0 if a + b > M32 else M32, 0 if ((a * b) & M32) + b > M32 else M32] for a, b in rows]
    assert [[int(v) for v in g] for g in got] == want, (rows, got, want)
