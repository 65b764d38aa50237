"""The ISA table (ptxjit.isa) and the load-time validation that reads it.

Every negative case records what ptxas (CUDA 13.0, `ptxas -arch=sm_80`) says about it; the expected
verdicts come from ptxas, not from the table.  `test_verdicts_agree_with_ptxas` re-checks them when
ptxas is on PATH.  The snippets declare %r (.b32), %rd (.b64), %f (.f32), %fd (.f64), %h (.b16),
%hh (.b32), %p (.pred) registers (tests/ptxsnip.py).
"""

from __future__ import annotations

import glob
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import ptxjit
from ptxjit.errors import InvalidInstructionError
from ptxjit.frontend.parser import parse
from ptxjit.isa import SPECS, Context, check, lookup
from ptxjit.lower.rules import RULES
from tests.ptxsnip import snippet_kernel

ROOT = Path(__file__).resolve().parents[1]
EXTRA = ".global .u32 gvar;\n"

# (instruction, what the message must say, ptxas's verdict)
INVALID = [
    ("ld.foo.nc.f32 %f1, [%rd1];", "unknown modifier .foo", "Unknown modifier '.foo'"),
    ("fma.rn.f23 %f1, %f2, %f3, %f4;", ".f23", "Unknown modifier '.f23'"),
    ("add.s32 %r1, %r2;", "add.s32 takes 3 operands (d, a, b), got 2", "Arguments mismatch for instruction 'add'"),
    ("add.s32 %r1, %r2, %r3, %r4;", "takes 3 operands", "Arguments mismatch for instruction 'add'"),
    ("fma.rn.f32 %f1, %f2, %f3;", "takes 4 operands", "Arguments mismatch for instruction 'fma'"),
    ("not.b32 %r1, %r2, %r3;", "not.b32 takes 2 operands", "Arguments mismatch for instruction 'not'"),
    ("sub.f32 %f1, %rd1, %f2;",
     "operand 2 (a) of sub.f32 must be a 32-bit float-compatible register (.f32/.b32), got %rd1 (.b64)",
     "Arguments mismatch for instruction 'sub'"),
    ("st.const.u32 [%rd1+12], %r2;", "state space .const is incorrect for st",
     "State space incorrect for instruction 'st'"),
    ("@%clock64 add.s32 %r1, %r1, 1;", "guard @%clock64 must be a predicate register",
     "Predicate expression expected"),
    ("@%r1 add.s32 %r1, %r1, 1;", "guard @%r1 must be a predicate register (.pred), got .b32",
     "Predicate expression expected"),
    ("add.b8 %h1, %h2, %h3;", "impossible type .b8 for add", "Unexpected instruction types specified for 'add'"),
    ("add.f32 %f1, %f2, 1;", "integer literal cannot be a .f32 operand", "Arguments mismatch for instruction 'add'"),
    ("add.s32 1, %r2, %r3;", "is a result and must be a register", "Result register required for instruction 'add'"),
    ("add.s32 %r1, %tid.x, 1;", "special register %tid.x is not allowed",
     "Special register argument not allowed for instruction 'add'"),
    ("add.s32 _, %r1, %r2;", "sink _ is not allowed", "Result discard mode is not allowed for instruction 'add'"),
    ("mul.wide.s32 %r1, %r2, %r3;", "64-bit integer register", "Arguments mismatch for instruction 'mul'"),
    ("popc.b64 %rd1, %rd2;", "operand 1 (d) of popc.b64 must be a 32-bit integer register",
     "Arguments mismatch for instruction 'popc'"),
    ("setp.lo.s32 %p1, %r1, %r2;", ".lo does not compare .s32",
     "Mismatch between instruction type and comparison qualifier"),
    ("setp.eq.ftz.f64 %p1, %fd1, %fd2;", ".ftz is not allowed with .f64",
     "Illegal modifier '.ftz' for instruction 'setp'"),
    ("ld.global.u32 %r1, [%r2];", "32-bit register but addresses in the global space are 64-bit",
     "Program uses 32-bit address ... conflicting with .address_size 64"),
    ("ld.global.u32 %r1, [%f1];", "an address needs an integer or bit-size register",
     "Illegal to use symbol '%f1' of type .f32 as address operand"),
    ("ld.shared.u32 %r1, [gvar];", "state space mismatch", "State space mismatch between instruction and address"),
    ("ld.global.nc.ca.cg.u32 %r1, [%rd1];", "cannot be combined", "Multiple cache operation modifiers specified"),
    ("ld.shared.nc.u32 %r1, [%rd1];", ".nc needs the .global state space", "Modifier '.nc' requires .global space"),
    ("ld.relaxed.global.u32 %r1, [%rd1];", "needs a scope", "Modifier '.relaxed' requires scope"),
    ("ld.global.v4.f32 {%f1, %f2}, [%rd1];", "vector of 4 elements", "Argument vector size mismatch"),
    ("cvt.s32.f32 %r1, %f1;", "needs an integer rounding modifier", "Rounding modifier required for instruction 'cvt'"),
    ("cvt.rn.f64.f32 %fd1, %f1;", "widens exactly", "Illegal rounding modifier for instruction 'cvt'"),
    ("cvt.f32.f64 %f1, %fd1;", "needs a floating rounding modifier", "Rounding modifier required"),
    ("mad.f32 %f1, %f2, %f3, %f4;", "needs one of .rn", "Rounding modifier required for instruction 'mad'"),
    ("min.abs.f32 %f1, %f2, %f3;", ".xorsign and .abs go together",
     "Modifier '.abs' requires modifier '.xorsign'"),
    ("atom.global.max.f16 %h1, [%rd1], %h2;", "needs .noftz", "'.noftz' modifier required for instruction 'atom'"),
    ("atom.global.add.s64 %rd1, [%rd1], %rd2;", "not .s64", "Operation .add requires .u32 or .s32 or .u64 ..."),
    ("atom.local.add.u32 %r1, [%rd1], %r2;", "state space .local is incorrect for atom",
     "State space incorrect for instruction 'atom'"),
    ("atom.global.cas.b32 %r1, [%rd1], %r2;", "takes 4 operands", "Arguments mismatch for instruction 'atom'"),
    ("selp.b32 %r1, %r2, %r3, %r4;", "predicate register", "Arguments mismatch for instruction 'selp'"),
    ("shf.l.b32 %r1, %r2, %r3, %r4;", "needs one of .clamp, .wrap", "shf needs .clamp or .wrap (syntax error)"),
    ("mov.u32 %r1, %rd1;", "must be a 32-bit integer register", "Arguments mismatch for instruction 'mov'"),
    ("mov.u64 %rd1, %tid.x;", "must be a 64-bit", "Arguments mismatch for instruction 'mov'"),
    ("and.b32 %r1, !%r2, %r3;", "'!' negates only predicate sources", "Illegal argument to predicate negation"),
    ("vote.sync.ballot.b32 %p1, %p2, -1;", "must be a 32-bit register", "Arguments mismatch for instruction 'vote'"),
    ("bar.sync;", "takes 1 to 2 operands", "Arguments mismatch for instruction 'bar'"),
    ("mov.u32 %zz9, 1;", "register %zz9 is not declared", "Unknown symbol '%zz9'"),
    ("bra $L_nowhere;", "unknown label $L_nowhere", "Unknown symbol '$L_nowhere'"),
    ("xyzzy.u32 %r1, %r2;", "unknown instruction 'xyzzy'", "Not a name of any known instruction: 'xyzzy'"),
    ("st.async.b32 [%r1], %r2, [%r3];", "needs one of .mbarrier::complete_tx::bytes",
     "Modifier '.shared::cluster' requires modifier '.completion_mechanism' for instruction 'st.async'"),
    ("red.async.weak.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r1], %r2, [%r3];",
     "red.async takes .relaxed", "Illegal modifier '.weak' for instruction 'red.async'"),
    ("createpolicy.fractional.L2::evict_first.L2::evict_last.b64 %rd1, 1.0;", "cannot be combined",
     "Unsupported modifier '.evict_last' as secondary_priority for instruction 'createpolicy.fractional'"),
    ("alloca.local.u64 %rd1, 64;", "unknown modifier .local for alloca",
     "No state space qualifier expected for instruction 'alloca'"),
    ("fence.release.sync_restrict::shared::cluster.cluster;", ".release goes with .sync_restrict::shared::cta",
     "Modifier '.sync_restrict::shared::cluster' cannot be combined with modifier '.release'"),
    ("fence.proxy.async::generic.sync_restrict::shared::cta.cluster;", "needs one of .acquire, .release",
     ".acquire/.release modifier required for instruction 'fence.proxy'"),
]


def _load(body: str, name: str = "isa.ptx") -> ptxjit.Module:
    return ptxjit.Module(snippet_kernel(f"    {body}", [("u64", "out")], extra_decls=EXTRA), name)


@pytest.mark.parametrize("body,expected,ptxas_says", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_instruction_refused_at_load(body, expected, ptxas_says):
    with pytest.raises(InvalidInstructionError) as ei:
        _load(body)
    msg = str(ei.value)
    ptx = snippet_kernel(f"    {body}", [("u64", "out")], extra_decls=EXTRA)
    line = next(i for i, t in enumerate(ptx.splitlines(), 1) if body in t)
    assert msg.startswith(f"isa.ptx:{line}:"), msg
    assert "invalid PTX" in msg and body.rstrip(";").split()[0] in msg, msg
    assert expected in msg, msg
    # an invalid instruction is a validation error, and still an "unsupported" one for old callers
    assert isinstance(ei.value, ptxjit.PTXValidationError) and isinstance(ei.value, ptxjit.UnsupportedInstructionError)


# Valid PTX (ptxas accepts each) that ptxjit has no rule for: refused as unsupported, not as invalid.
# (createpolicy, mma.sync, alloca, stacksave, istypep and sured were examples until they got rules; every
# sm_90 instruction has one now, tools/breadth: so the rule is taken away for the test)
VALID_UNSUPPORTED = [
    "sured.b.add.1d.u32.trap [%rd1, {%r1}], %r2;",
]


@pytest.mark.parametrize("body", VALID_UNSUPPORTED)
def test_valid_but_unsupported_is_not_invalid(body, monkeypatch):
    from ptxjit.lower.rules import RULES

    monkeypatch.delitem(RULES, body.split(".")[0])
    with pytest.raises(ptxjit.UnsupportedInstructionError) as ei:
        _load(body)
    assert not isinstance(ei.value, InvalidInstructionError), str(ei.value)
    assert "valid PTX, but ptxjit has no rule" in str(ei.value)


# Valid PTX (ptxas, CUDA 13.0, sm_90a accepts each) whose rule refuses the form: unsupported, not invalid.
VALID_REFUSED_BY_RULE = [
    # (st.async, red.async and mov of %pm0 were examples until they got rules: tests/test_async_store.py,
    # tests/test_sm90_forms.py)
    "alloca.u32 %r1, %r2, 16;",  # 32-bit local addresses (lower/rules/stack.py)
    "stacksave.u32 %r1;",
]


@pytest.mark.parametrize("body", VALID_REFUSED_BY_RULE)
def test_valid_form_a_rule_refuses_is_not_invalid(body):
    with pytest.raises(ptxjit.UnsupportedInstructionError) as ei:
        _load(body)
    assert not isinstance(ei.value, InvalidInstructionError), str(ei.value)
    assert "valid PTX, but not supported by ptxjit" in str(ei.value) and "isa.ptx:" in str(ei.value)


# Valid forms ptxas accepts that a strict table could get wrong (register-class and order rules).
VALID = [
    "add.u32 %r1, %r2, %r3;",            # .b32 registers for a .u32 instruction
    "add.s32.sat %r1, %r2, %r3;",        # modifiers in any order
    "ld.nc.global.f32 %f1, [%rd1];",
    "add.f32 %f1, %r2, %f2;",            # .b32 register for a .f32 operand
    "and.b32 %r1, %r2, 0f3F800000;",     # float literal for a bit type
    "ld.global.u8 %r1, [%rd1];",         # ld/st/cvt take wider registers
    "cvt.u64.u32 %rd1, %r1;",
    "cvt.u32.u16 %r1, %tid.x;",          # special registers in mov/cvt
    "mov.u16 %h1, %tid.x;",
    "setp.eq.s32 %p1|_, %r1, 1;",
    "setp.lt.and.s32 %p1, %r1, 1, !%p2;",
    "mov.b64 %rd1, {%r1, %r2};",
    "mov.b32 {%h1, _}, %r1;",
    "ld.global.v2.f32 {%f1, _}, [%rd1];",
    "ld.global.f32 {%f1}, [%rd1];",
    "ld.shared.u32 %r1, [%r1];",         # 32-bit addresses are fine in .shared
    "mul.sat.rn.ftz.sat.f32 %f1, %f2, %f3;",  # ptxas accepts a repeated flag
    "add.s32.rank %r1, %r2, %r3;",       # ptxas ignores tensormap field names as modifiers
]


@pytest.mark.parametrize("body", VALID)
def test_valid_forms_pass_the_table(body):
    m = parse(snippet_kernel(f"    {body}", [("u64", "out")], extra_decls=EXTRA))
    fn = m.functions["k"]
    ctx = Context.for_function(m, fn)
    for ins in fn.instructions:
        v = check(lookup(ins.opcode), ins, ctx)
        assert v.ok, f"{body}: {v.reason}"


def _ptxas_ok(ptx: str, tmp_path: Path) -> bool:
    f = tmp_path / "k.ptx"
    f.write_text(ptx)
    return subprocess.run(["ptxas", "-arch=sm_80", str(f), "-o", "/dev/null"], capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_verdicts_agree_with_ptxas(tmp_path):
    for body, _, _ in INVALID:
        assert not _ptxas_ok(snippet_kernel(f"    {body}", [("u64", "out")], extra_decls=EXTRA), tmp_path), body
    for body in VALID + VALID_UNSUPPORTED:
        assert _ptxas_ok(snippet_kernel(f"    {body}", [("u64", "out")], extra_decls=EXTRA), tmp_path), body


def _corpus_files() -> list[str]:
    files = glob.glob(str(ROOT / "corpus/**/*.ptx"), recursive=True) + glob.glob(str(ROOT / "examples/*.ptx"))
    files += glob.glob(str(ROOT / "tests/data/**/*.ptx"), recursive=True)
    for sub in ("isa/ptx", "tc/ptx"):
        files += glob.glob(f"/work/shared/gpu-golden/{sub}/*.ptx")
    return sorted(files)


def test_no_false_rejections_over_the_corpora():
    """Every module ptxas accepts passes the table (the corpora are all ptxas-accepted PTX)."""
    rejected = []
    for f in _corpus_files():
        m = parse(Path(f).read_text().rstrip("\0"), f)  # NVRTC ends its PTX with a NUL
        for fn in m.functions.values():
            if fn.body is None:
                continue
            ctx = Context.for_function(m, fn)
            for ins in fn.instructions:
                sp = lookup(ins.opcode)
                v = check(sp, ins, ctx) if sp else None
                if v is None or not v.ok:
                    rejected.append(f"{ins.pos}: {ins.text}: {v.reason if v else 'unknown opcode'}")
    assert not rejected, "\n".join(rejected[:20])


def test_rules_are_attached_to_their_specs():
    for op, r in RULES.items():
        if op in SPECS:
            assert r.spec is SPECS[op] and SPECS[op].rule is r, op
    # rules without a spec are ptxjit-internal pseudo-instructions (inserted after validation):
    # written in PTX they are refused as invalid
    for op in (op for op in RULES if op not in SPECS):
        with pytest.raises(InvalidInstructionError, match="unknown instruction"):
            _load(f"{op};")
    m = parse(snippet_kernel("    mul.wide.s32 %rd1, %r2, %r3;", [("u64", "out")]))
    ins = m.functions["k"].instructions[0]
    match = RULES["mul"].spec_match(ins)
    assert match is not None and match.operand_type(0) == "s64" and match.operand_type(1) == "s32"


def test_table_size_and_describe():
    assert len(SPECS) >= 130
    for sp in SPECS.values():
        assert sp.describe()
    assert "rounding" in SPECS["fma"].describe()


_MUTANTS = ["%rd1", "%f1", "%p1", "%h1", "1", "0f3F800000", "[%rd1]", "{%r1, %r2}", "_", "%tid.x", "gvar", "!%p1"]
_BASE = ["add.s32 %r1, %r2, %r3;", "ld.global.v2.f32 {%f1, %f2}, [%rd1];", "setp.lt.and.s32 %p1, %r1, 1, %p2;",
         "atom.global.cas.b32 %r1, [%rd1], %r2, %r3;", "mov.b64 %rd1, {%r1, %r2};", "cvt.rn.f32.s32 %f1, %r1;",
         "shfl.sync.idx.b32 %r1|%p1, %r2, 1, 31, -1;", "st.global.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};",
         "bar.red.popc.u32 %r1, 0, %p1;", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, "
         "{%r1,%r2}, {%r3}, {%f5,%f6,%f7,%f8};", "vadd.s32.s32.s32.add %r1, %r2, %r3, %r4;", "call.uni foo, (%r1);"]


def test_malformed_instructions_raise_only_ptx_errors():
    """Random operand and modifier mutations: loading raises a PTXError or succeeds, never an internal
    exception (IndexError, KeyError, AttributeError, ValueError, llvmlite errors)."""
    rng = random.Random(7)
    vocab = sorted({v for sp in SPECS.values() for v in sp.modifiers})[:400] + ["u32", "f32", "b64", "pred"]
    for _ in range(400):
        body = rng.choice(_BASE)
        head, _, ops = body.rstrip(";").partition(" ")
        parts = head.split(".")
        operands = [o.strip() for o in ops.split(", ")] if ops else []
        k = rng.randrange(4)
        if k == 0 and operands:
            operands[rng.randrange(len(operands))] = rng.choice(_MUTANTS)
        elif k == 1:
            parts.insert(rng.randrange(1, len(parts) + 1), rng.choice(vocab))
        elif k == 2 and operands:
            operands.pop(rng.randrange(len(operands)))
        else:
            operands.append(rng.choice(_MUTANTS))
        text = f"{'.'.join(parts)} {', '.join(operands)};"
        try:
            _load(text)
        except ptxjit.PTXError:
            pass
