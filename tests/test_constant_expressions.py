"""PTX constant expressions (`(1<<4)+3`, `0<192`, `buf+2*4`, `(.u64)-1 >> 60`, `1.5*2.0`).

Expected values are ptxas's: `tests/data/constexpr/expected.json` holds what ptxas 13 (sm_90) put in
the cubin's initial data for each expression (`tests/data/constexpr/make.py` regenerates it). The
same expressions are checked as initializers and as instruction operands; what ptxas refuses raises
PTXSyntaxError naming file:line:col, with ptxas's reason."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import PTXSyntaxError

DATA = Path(__file__).parent / "data" / "constexpr"
EXPECTED = json.loads((DATA / "expected.json").read_text())
HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def module() -> ptxjit.Module:
    return ptxjit.Module((DATA / "constexpr.ptx").read_text(), "constexpr.ptx")


def expected_words() -> list[int]:
    return ([int(e["u64"], 16) for e in EXPECTED["ints"]]
            + [int(e["f64_bits"], 16) for e in EXPECTED["floats"]])


def test_initializers_hold_what_ptxas_computes():
    m = module()
    ints = m.get_global("ints", np.uint64)
    floats = m.get_global("floats", np.uint64)
    got = [int(v) for v in ints] + [int(v) for v in floats]
    for e, want, have in zip(EXPECTED["ints"] + EXPECTED["floats"], expected_words(), got, strict=True):
        assert have == want, f"{e['expr']}: {have:#x} != ptxas {want:#x}"


@pytest.mark.parametrize("tiers", ["0", "1"])
def test_instruction_operands_hold_what_ptxas_computes(monkeypatch, tiers):
    monkeypatch.setenv("PTXJIT_TIERS", tiers)
    words = expected_words()
    out = np.zeros(len(words), np.uint64)
    module().get_function("operands")(1, 1, (out,))
    for e, want, have in zip(EXPECTED["ints"] + EXPECTED["floats"], words, out.tolist(), strict=True):
        assert have == want, f"{e['expr']}: {have:#x} != ptxas {want:#x}"


def test_expressions_in_addresses_symbols_and_narrow_operands():
    text = HEAD + """
.global .align 8 .u32 buf[8] = {10, 11, 12, 13, 14, 15, 16, 17};
.global .u64 ptrs[2] = {buf+(2*4), generic(buf)+4*3};
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  mov.u64 %rd2, buf+4-2*2;
  ld.global.u32 %r1, [%rd2+(1?4:8)];
  ld.global.u32 %r2, [buf+4*3];
  ld.global.u32 %r3, [%rd2+-4+8];
  mov.u32 %r4, (1<<32)+7;
  add.s32 %r5, %r4, -(3*2);
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+4*1], %r2;
  st.global.u32 [%rd1+8], %r3;
  st.global.u32 [%rd1+12], %r4;
  st.global.u32 [%rd1+16], %r5;
  mov.f32 %f1, 1.0/3.0;
  st.global.f32 [%rd1+20], %f1;
  ret;
}
"""
    m = ptxjit.Module(text, "t.ptx")
    out = np.zeros(6, np.uint32)
    m.get_function("k")(1, 1, (out,))
    assert out[:5].tolist() == [11, 13, 11, 7, 1]
    assert out[5:].view(np.float32)[0] == np.float32(1.0 / 3.0)
    base = m.get_global("ptrs", np.uint64)
    assert int(base[1]) - int(base[0]) == 4  # buf+8 and buf+12


def load(body: str = "", decls: str = "") -> ptxjit.Module:
    return ptxjit.Module(HEAD + decls + "\n.visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<3>;\n"
                         ".reg .b64 %rd<3>;\n.reg .f32 %f<3>;\n.reg .pred %p<2>;\n" + body + "\nret;\n}\n", "t.ptx")


@pytest.mark.parametrize("body, decls, message", [
    ("mov.u32 %r1, 5 / 0;", "", r"t.ptx:11:\d+: .*division by zero"),
    ("mov.u32 %r1, 5 % (2 - 2);", "", r"t.ptx:11:\d+: .*division by zero"),
    ("mov.f32 %f1, 1.0 / 0.0;", "", r"t.ptx:11:\d+: .*division by zero"),
    ("mov.f32 %f1, 1.5 + 1;", "", r"t.ptx:11:\d+: .*type mismatch.*a float and an integer"),
    ("mov.u32 %r1, ~1.0;", "", r"t.ptx:11:\d+: .*integer constant expression expected: '~'"),
    ("mov.u32 %r1, !1.0;", "", r"t.ptx:11:\d+: .*integer constant expression expected: '!'"),
    ("mov.u32 %r1, 1.0 < 2.0 ? 1 : 2.0;", "", r"integer constant expression expected: '\?:'"),
    ("mov.u32 %r1, (.s64)2.5;", "", r"integer constant expression expected: '\(\.s64\)'"),
    ("mov.u32 %r1, (.u32)5;", "", r"t.ptx:11:\d+: .*unsupported cast \(\.u32\)"),
    ("mov.f32 %f1, 0f3F800000+1.0;", "", r"t.ptx:11:\d+: .*"),
    ("mov.u32 %r1, 7 %3;", "", r"t.ptx:11:\d+: "),  # `%3` reads as a register name, as in ptxas
    ("", ".global .f32 x = 2+1;", r"t.ptx:4:\d+: .*initial value type mismatch: integer"),
    ("", ".global .u32 x = 1.5*2.0;", r"t.ptx:4:\d+: .*initial value type mismatch: float"),
    ("mov.u32 %r1, " + "(" * 100 + "1" + ")" * 100 + ";", "", r"t.ptx:11:\d+: .*shallower constant"),
])
def test_what_ptxas_refuses_is_refused_with_its_place(body, decls, message):
    with pytest.raises(PTXSyntaxError, match=message):
        load(body, decls)


def test_operators_next_to_registers_still_read_as_before():
    # `%` starts register names; `!`/`-` before a register negate it; `(` before names is a call list
    text = HEAD + """
.func (.param .b32 r) twice(.param .b32 a)
{
  .reg .b32 %t<2>;
  ld.param.b32 %t1, [a];
  add.s32 %t1, %t1, %t1;
  st.param.b32 [r], %t1;
  ret;
}
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<2>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 20 % 6;
  setp.ne.u32 %p1, %r1, 2;
  mov.u32 %r2, 5;
  @!%p1 mov.u32 %r2, 7 - 4;
  {
    .param .b32 a0;
    .param .b32 r0;
    st.param.b32 [a0], %r2;
    call.uni (r0), twice, (a0);
    ld.param.b32 %r3, [r0];
  }
  vmad.s32.s32.s32 %r4, -%r3, 1, 0;
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+4], %r3;
  st.global.s32 [%rd1+8], %r4;
  ret;
}
"""
    out = np.zeros(3, np.int32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    assert out.tolist() == [2, 6, -6]


def test_expected_values_are_well_formed():
    # guard against a regenerated expected.json silently losing cases
    assert len(EXPECTED["ints"]) >= 50 and len(EXPECTED["floats"]) >= 9
    assert struct.unpack("<d", struct.pack("<Q", int(EXPECTED["floats"][0]["f64_bits"], 16)))[0] == 3.0
