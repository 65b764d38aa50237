"""lower/folding.py's constant folding against LLVM's own: each operation on constant operands, built with
the plain IRBuilder and folded by LLVM's optimizer, must give the constant FoldingBuilder produces."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import llvmlite.ir as ll
import pytest

from ptxjit.jit.engine import _target_machine
from ptxjit.lower.folding import FoldingBuilder

VALUES = {8: [0, 1, 7, 0x7F, 0x80, 0xFF], 32: [0, 1, 31, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 123456789],
          64: [0, 1, 63, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 0x123456789ABCDEF]}
BINOPS = ["add", "sub", "mul", "and_", "or_", "xor", "shl", "lshr", "ashr"]
CMPS = ["==", "!=", "<", "<=", ">", ">="]


def _llvm_folds(width: int, build) -> int:
    """The constant LLVM folds `build(builder)` (an iN value) to, as an unsigned number."""
    mod = ll.Module()
    ty = ll.IntType(width)
    fn = ll.Function(mod, ll.FunctionType(ty, []), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    b.ret(build(b))
    m = llvm.parse_assembly(str(mod))
    pb = llvm.create_pass_builder(_target_machine(), llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(m, pb)
    text = str(m.get_function("f"))
    found = re.search(rf"ret i{width} (-?\d+|true|false)", text)
    assert found, text
    v = {"true": 1, "false": 0}.get(found.group(1))
    return (int(found.group(1)) if v is None else v) & ((1 << width) - 1)


@pytest.mark.parametrize("width", sorted(VALUES))
@pytest.mark.parametrize("op", BINOPS)
def test_binary_operations_fold_as_llvm_folds_them(op, width):
    ty = ll.IntType(width)
    fb = FoldingBuilder(ll.Function(ll.Module(), ll.FunctionType(ty, []), "g").append_basic_block())
    for a in VALUES[width]:
        for b in VALUES[width]:
            if op in ("shl", "lshr", "ashr") and b >= width:
                continue  # poison in LLVM: FoldingBuilder leaves it to the builder
            got = getattr(fb, op)(ll.Constant(ty, a), ll.Constant(ty, b))
            assert isinstance(got, ll.Constant), (op, a, b)
            want = _llvm_folds(width, lambda bb, a=a, b=b: getattr(bb, op)(ll.Constant(ty, a), ll.Constant(ty, b)))
            assert got.constant & ((1 << width) - 1) == want, (op, width, a, b)


@pytest.mark.parametrize("signed", [False, True])
def test_comparisons_selects_and_casts_fold_as_llvm_folds_them(signed):
    i32, i64, i8 = ll.IntType(32), ll.IntType(64), ll.IntType(8)
    fb = FoldingBuilder(ll.Function(ll.Module(), ll.FunctionType(i32, []), "g").append_basic_block())
    cmp = "icmp_signed" if signed else "icmp_unsigned"
    for a in VALUES[32]:
        for b in VALUES[32][:4]:
            for op in CMPS:
                def build(bb, a=a, b=b, op=op):
                    c = getattr(bb, cmp)(op, ll.Constant(i32, a), ll.Constant(i32, b))
                    return bb.select(c, ll.Constant(i32, 11), ll.Constant(i32, 22))
                assert build(fb).constant == _llvm_folds(32, build), (cmp, op, a, b)
        for cast, to in (("zext", i64), ("sext", i64), ("trunc", i8)):
            got = getattr(fb, cast)(ll.Constant(i32, a), to)
            assert got.constant == _llvm_folds(to.width, lambda bb, cast=cast, to=to, a=a: getattr(bb, cast)(
                ll.Constant(i32, a), to)), (cast, a)


def test_shifts_by_the_width_or_more_are_left_to_the_builder():
    i32 = ll.IntType(32)
    fb = FoldingBuilder(ll.Function(ll.Module(), ll.FunctionType(i32, []), "g").append_basic_block())
    assert not isinstance(fb.shl(ll.Constant(i32, 1), ll.Constant(i32, 32)), ll.Constant)


def _llvm_simplifies(width: int, build) -> str:
    """What LLVM's optimizer makes of `build(builder, x)` for an unknown argument x: "x" or the constant."""
    mod = ll.Module()
    ty = ll.IntType(width)
    fn = ll.Function(mod, ll.FunctionType(ty, [ty]), "f")
    fn.args[0].name = "x"
    b = ll.IRBuilder(fn.append_basic_block())
    b.ret(build(b, fn.args[0]))
    m = llvm.parse_assembly(str(mod))
    pb = llvm.create_pass_builder(_target_machine(), llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(m, pb)
    found = re.search(rf"ret i{width} (%\"?x\"?|-?\d+)\s", str(m.get_function("f")))
    if not found:
        return "unchanged"
    return "x" if "x" in found.group(1) else str(int(found.group(1)) & ((1 << width) - 1))


@pytest.mark.parametrize("op", BINOPS)
def test_identities_with_one_constant_operand_are_llvms(op):
    """x + 0, 0 | x, x & -1, x & 0, x * 1, x >> 0 ...: folded exactly where LLVM folds them the same way."""
    width = 32
    ty = ll.IntType(width)
    fn = ll.Function(ll.Module(), ll.FunctionType(ty, [ty]), "g")
    fb = FoldingBuilder(fn.append_basic_block())
    x = fn.args[0]
    folded = 0
    for c in (0, 1, 2 ** width - 1):
        for x_left in (True, False):
            def build(bb, xv, c=c, x_left=x_left):
                k = ll.Constant(ty, c)
                return getattr(bb, op)(xv, k) if x_left else getattr(bb, op)(k, xv)
            got = build(fb, x)
            if isinstance(got, ll.Instruction):
                continue  # left to LLVM
            folded += 1
            want = _llvm_simplifies(width, build)
            assert want == ("x" if got is x else str(got.constant & (2 ** width - 1))), (op, c, x_left)
    assert folded >= 1, op  # every operation has an identity


def test_select_of_one_value_is_that_value():
    i32 = ll.IntType(32)
    fn = ll.Function(ll.Module(), ll.FunctionType(i32, [ll.IntType(1), i32]), "g")
    fb = FoldingBuilder(fn.append_basic_block())
    assert fb.select(fn.args[0], fn.args[1], fn.args[1]) is fn.args[1]
