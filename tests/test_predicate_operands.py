"""Predicate source operands: immediates and negation where ptxas takes them, and the cp.async operand forms.

ptxas takes an integer immediate wherever an instruction reads a predicate source: selp's c, the .and/.or/.xor
combine operand c of setp and set, vote's a, bar.red's c (and lop3's q, and the .pred logic operations).  Any
non-zero value is true, and `!` of an integer negates it: ptxas folds `selp.b32 d, a, b, 2` (and -2) to a,
`selp.b32 d, a, b, !2` to b, `vote.sync.ballot.b32 d, 5, -1` to `VOTE.ANY d, PT, PT` and
`setp.lt.and.u32 p, a, b, 2` to `ISETP.LT.U32.AND p, PT, a, b, PT` (sm_90).  A float
literal is refused ("Arguments mismatch").  `!%p` negates a predicate register in all of them, and in cp.async's
fourth operand, which is src-size (a 32-bit integer) or ignore-src (a predicate).

The accept/refuse verdicts below are ptxas's (CUDA 13.0, sm_90a), re-checked by
`test_verdicts_agree_with_ptxas` when ptxas is on PATH; the run-time results are the PTX ISA's definitions
computed here in Python.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import InvalidInstructionError
from tests.ptxsnip import snippet_kernel

DECLS = ".shared .align 16 .b8 smem_arr[64];\n.global .align 16 .u32 garr[8];\n.const .u32 carr[4];\n"

# valid forms ptxas accepts (sm_90a)
VALID = [
    "selp.b32 %r1, %r2, %r3, 1;",
    "selp.b32 %r1, %r2, %r3, 0;",
    "selp.b32 %r1, %r2, %r3, 2;",
    "selp.b32 %r1, %r2, %r3, -1;",
    "selp.f64 %fd1, %fd2, %fd3, 1;",
    "selp.b32 %r1, %r2, %r3, !%p1;",
    "selp.b32 %r1, %r2, %r3, !1;",
    "vote.sync.ballot.b32 %r1, !0, -1;",
    "setp.lt.and.s32 %p1, %r1, 1, !2;",
    "bar.red.popc.u32 %r1, 0, !1;",
    "vote.sync.all.pred %p1, 1, 0xffffffff;",
    "vote.sync.any.pred %p1, 0, 0xffffffff;",
    "vote.sync.uni.pred %p1, -1, 0xffffffff;",
    "vote.sync.ballot.b32 %r1, 0, -1;",
    "vote.sync.ballot.b32 %r1, 5, -1;",
    "vote.sync.ballot.b32 %r1, !%p1, -1;",
    "setp.lt.and.s32 %p1, %r1, 1, 1;",
    "setp.lt.or.s32 %p1, %r1, 1, 2;",
    "setp.lt.xor.s32 %p1|%p2, %r1, 1, 0;",
    "set.lt.and.u32.s32 %r1, %r2, 1, 1;",
    "set.lt.and.f32.s32 %f1, %r2, 1, 0;",
    "set.lt.or.u32.s32 %r1, %r2, 1, !%p1;",
    "bar.red.popc.u32 %r1, 0, 1;",
    "bar.red.and.pred %p1, 0, 1;",
    "bar.red.or.pred %p1, 0, 64, 0;",
    "barrier.red.popc.u32 %r1, 0, 1;",
    "lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0x96, 1;",
    "cp.async.ca.shared.global [smem_arr], [%rd1], 4;",
    "cp.async.ca.shared.global [smem_arr+16], [%rd1+8], 8, 4;",
    "cp.async.ca.shared.global [smem_arr], [garr+4], 4;",
    "cp.async.ca.shared.global [%r1+4], [%rd1], 4;",
    "cp.async.cg.shared.global [smem_arr], [%rd1], 16, %r2;",
    "cp.async.cg.shared.global [smem_arr], [%rd1], 16, %p1;",
    "cp.async.cg.shared.global [smem_arr], [%rd1], 16, !%p1;",
    "cp.async.cg.shared.global.L2::cache_hint [smem_arr], [%rd1], 16, %rd2;",
    "cp.async.cg.shared.global.L2::cache_hint [smem_arr], [%rd1], 16, !%p1, %rd2;",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [smem_arr], [garr], 16, [smem_arr+32];",
    "cp.async.bulk.global.shared::cta.bulk_group [garr+16], [smem_arr+16], 16;",
]

# (instruction, what the message must say, ptxas's verdict)
INVALID = [
    ("selp.b32 %r1, %r2, %r3, 1.0;", "a float literal cannot be a .pred operand",
     "Arguments mismatch for instruction 'selp'"),
    ("vote.sync.ballot.b32 %r1, 0f3F800000, -1;", "a float literal cannot be a .pred operand",
     "Arguments mismatch for instruction 'vote'"),
    ("setp.lt.and.s32 %p1, %r1, 1, %r2;", "must be a predicate register",
     "Arguments mismatch for instruction 'setp'"),
    ("cp.async.ca.shared.global [smem_arr], [%rd1], 4, !%r2;", "'!' negates only predicate sources",
     "Illegal argument to predicate negation"),
    ("cp.async.cg.shared.global [smem_arr], [%rd1], 16, %rd2;", "32-bit integer register",
     "Arguments mismatch for instruction 'cp.async'"),
    ("cp.async.ca.shared.global [garr], [%rd1], 4;", "state space mismatch: the destination is .shared",
     "State space mismatch between instruction and address in instruction 'cp.async'"),
    ("cp.async.ca.shared.global [smem_arr], [carr], 4;", "the source is .global, but carr is a .const variable",
     "State space mismatch between instruction and address in instruction 'cp.async'"),
    ("cp.async.ca.shared.global [16], [%rd1], 4;", "immediate address",
     "Immediate addresses allowed only for .local state space"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [smem_arr], [garr], 16, [garr];",
     "the mbarrier is .shared", "State space mismatch between instruction and address in instruction "
     "'cp.async.bulk'"),
]


def _ptx(body: str) -> str:
    ptx = snippet_kernel(f"    {body}", [("u64", "out")], extra_decls=DECLS)
    return ptx.replace(".target sm_80", ".target sm_90a").replace(".version 8.0", ".version 8.7")  # lop3's q


@pytest.mark.parametrize("body", VALID)
def test_valid_forms_load(body):
    ptxjit.Module(_ptx(body), "pred.ptx")


@pytest.mark.parametrize("body,expected,ptxas_says", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_forms_refused_with_the_place(body, expected, ptxas_says):
    with pytest.raises(InvalidInstructionError) as ei:
        ptxjit.Module(_ptx(body), "pred.ptx")
    msg = str(ei.value)
    line = next(i for i, t in enumerate(_ptx(body).splitlines(), 1) if body in t)
    assert msg.startswith(f"pred.ptx:{line}:") and expected in msg, msg


def _ptxas_ok(ptx: str, tmp_path: Path) -> bool:
    f = tmp_path / "k.ptx"
    f.write_text(ptx)
    return subprocess.run(["ptxas", "-arch=sm_90a", str(f), "-o", "/dev/null"], capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_verdicts_agree_with_ptxas(tmp_path):
    for body in VALID:
        assert _ptxas_ok(_ptx(body), tmp_path), body
    for body, _, _ in INVALID:
        assert not _ptxas_ok(_ptx(body), tmp_path), body


# ---------------------------------------------------------------- what they compute

# (immediate, its truth): `!` of an integer is its logical negation (ptxas folds `selp.b32 d, a, b, !2` to b)
IMMS = [("0", False), ("1", True), ("2", True), ("-1", True), ("!1", False), ("!0", True), ("!2", False)]


def _run(body: str, n_words: int, block: int = 64, extra_params=(), args=()) -> np.ndarray:
    text = f"""    ld.param.u64 %rd60, [out];
    mov.u32 %r60, %tid.x;
    mul.wide.u32 %rd61, %r60, {4 * n_words};
    add.s64 %rd62, %rd60, %rd61;
{body}"""
    mod = ptxjit.Module(snippet_kernel(text, [("u64", "out"), *extra_params], extra_decls=DECLS), "pred.ptx")
    out = np.full(block * n_words, 0xCDCDCDCD, dtype=np.uint32)
    mod.get_function("k")(1, block, (out, *args))
    return out.reshape(block, n_words)


def test_selp_setp_set_with_immediate_predicates():
    """selp's c, setp's and set's combine operand c as immediates: non-zero is true."""
    lines = []
    for j, (imm, _) in enumerate(IMMS):
        lines += [f"    selp.b32 %r1, 7, 9, {imm};", f"    st.global.u32 [%rd62+{16 * j}], %r1;",
                  f"    setp.lt.and.u32 %p1, %r60, 5, {imm};", "    selp.u32 %r2, 1, 0, %p1;",
                  f"    st.global.u32 [%rd62+{16 * j + 4}], %r2;",
                  f"    set.lt.or.u32.u32 %r3, %r60, 5, {imm};", f"    st.global.u32 [%rd62+{16 * j + 8}], %r3;",
                  f"    setp.ge.xor.u32 %p2, %r60, 5, {imm};", "    selp.u32 %r4, 1, 0, %p2;",
                  f"    st.global.u32 [%rd62+{16 * j + 12}], %r4;"]
    got = _run("\n".join(lines), 4 * len(IMMS))
    tid = np.arange(64)
    for j, (imm, c) in enumerate(IMMS):
        assert np.all(got[:, 4 * j] == (7 if c else 9)), imm
        assert np.array_equal(got[:, 4 * j + 1], ((tid < 5) & c).astype(np.uint32)), imm
        assert np.array_equal(got[:, 4 * j + 2], np.where((tid < 5) | c, 0xFFFFFFFF, 0).astype(np.uint32)), imm
        assert np.array_equal(got[:, 4 * j + 3], ((tid >= 5) ^ c).astype(np.uint32)), imm


def test_vote_with_immediate_predicates():
    """vote.sync .all/.any/.uni/.ballot of an immediate: every lane votes the same value."""
    lines = []
    for j, (imm, _) in enumerate(IMMS):
        lines += [f"    vote.sync.all.pred %p1, {imm}, 0xffffffff;", f"    vote.sync.any.pred %p2, {imm}, -1;",
                  f"    vote.sync.uni.pred %p3, {imm}, -1;", f"    vote.sync.ballot.b32 %r1, {imm}, -1;",
                  "    selp.u32 %r2, 1, 0, %p1;", "    selp.u32 %r3, 2, 0, %p2;", "    selp.u32 %r4, 4, 0, %p3;",
                  "    or.b32 %r2, %r2, %r3;", "    or.b32 %r2, %r2, %r4;",
                  f"    st.global.u32 [%rd62+{8 * j}], %r2;", f"    st.global.u32 [%rd62+{8 * j + 4}], %r1;"]
    got = _run("\n".join(lines), 2 * len(IMMS))
    for j, (imm, c) in enumerate(IMMS):
        assert np.all(got[:, 2 * j] == (1 if c else 0) | (2 if c else 0) | 4), imm
        assert np.all(got[:, 2 * j + 1] == (0xFFFFFFFF if c else 0)), imm


def test_bar_red_with_immediate_predicates():
    """bar.red.popc/.and/.or over a CTA of 64 with an immediate predicate: all threads contribute it."""
    lines = []
    for j, (imm, _) in enumerate(IMMS):
        lines += [f"    bar.red.popc.u32 %r1, 0, {imm};", f"    bar.red.and.pred %p1, 1, {imm};",
                  f"    bar.red.or.pred %p2, 2, 64, {imm};", "    selp.u32 %r2, 1, 0, %p1;",
                  "    selp.u32 %r3, 2, 0, %p2;", "    or.b32 %r2, %r2, %r3;",
                  f"    st.global.u32 [%rd62+{8 * j}], %r1;", f"    st.global.u32 [%rd62+{8 * j + 4}], %r2;"]
    got = _run("\n".join(lines), 2 * len(IMMS))
    for j, (imm, c) in enumerate(IMMS):
        assert np.all(got[:, 2 * j] == (64 if c else 0)), imm
        assert np.all(got[:, 2 * j + 1] == (3 if c else 0)), imm


@pytest.mark.parametrize("unchecked", [False, True])
def test_cp_async_negated_ignore_src_and_symbol_addresses(unchecked):
    """cp.async into a .shared array named in the address (with an offset), from a .global array named in the
    address, with src-size and with a negated ignore-src predicate: !%p with %p false writes cp-size zeros,
    with %p true copies (PTX ISA: a true ignore-src ignores the source and zero-fills)."""
    body = """    ld.param.u64 %rd60, [out];
    ld.param.u64 %rd1, [src];
    mov.u32 %r9, 0xABABABAB;
    st.shared.v4.u32 [smem_arr], {%r9, %r9, %r9, %r9};
    st.shared.v4.u32 [smem_arr+16], {%r9, %r9, %r9, %r9};
    st.shared.v4.u32 [smem_arr+32], {%r9, %r9, %r9, %r9};
    st.shared.v4.u32 [smem_arr+48], {%r9, %r9, %r9, %r9};
    setp.ne.u32 %p1, 0, 0;
    setp.eq.u32 %p2, 0, 0;
    cp.async.ca.shared.global [smem_arr], [%rd1], 4;
    cp.async.ca.shared.global [smem_arr+16], [garr+4], 8;
    cp.async.cg.shared.global [smem_arr+32], [%rd1+16], 16, !%p1;
    cp.async.ca.shared.global [smem_arr+48], [%rd1], 8, !%p2;
    cp.async.ca.shared.global [smem_arr+56], [%rd1+4], 8, 4;
    cp.async.commit_group;
    cp.async.wait_all;
    mov.u32 %r1, 0;
$L_copy:
    mul.wide.u32 %rd5, %r1, 4;
    mov.u64 %rd6, smem_arr;
    cvta.shared.u64 %rd6, %rd6;
    add.s64 %rd6, %rd6, %rd5;
    ld.u32 %r2, [%rd6];
    add.s64 %rd7, %rd60, %rd5;
    st.global.u32 [%rd7], %r2;
    add.u32 %r1, %r1, 1;
    setp.lt.u32 %p3, %r1, 16;
    @%p3 bra $L_copy;"""
    decls = DECLS.replace("garr[8];", "garr[8] = {1, 2, 3, 4, 5, 6, 7, 8};")
    mod = ptxjit.Module(snippet_kernel(body, [("u64", "out"), ("u64", "src")], extra_decls=decls), "cpasync.ptx")
    src = np.arange(100, 108, dtype=np.uint32)
    out = np.full(16, 0xCDCDCDCD, dtype=np.uint32)
    mod.get_function("k")(1, 1, (out, src), unchecked=unchecked)
    want = np.full(16, 0xABABABAB, dtype=np.uint32)
    want[0] = 100                      # [smem_arr] <- src[0]
    want[4:6] = [2, 3]                 # [smem_arr+16] <- garr[1..2]
    want[8:12] = 0                     # ignore-src !%p1, %p1 false: ignored, zero-filled
    want[12:14] = src[0:2]             # ignore-src !%p2, %p2 true: copied
    want[14:16] = [101, 0]             # src-size 4 of 8: the rest zero-filled
    assert np.array_equal(out, want), out
