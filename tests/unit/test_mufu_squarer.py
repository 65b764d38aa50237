"""The multifunction unit's truncated squarer as lowered (lower/rules/approx.py `_trunc_square`: t*t minus
the partial products it drops) against its definition in the model the tables were fitted with
(tools/mufu/fit.py `trunc_square`: the kept partial products summed one by one), for every argument of
every table's (offset bits, cut)."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest
from llvmlite import binding as llvm
from llvmlite import ir as ll

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ptxjit.lower import mufu_tables as T  # noqa: E402
from ptxjit.lower.module import for_range  # noqa: E402
from ptxjit.lower.rules import approx  # noqa: E402
from tools.mufu import fit  # noqa: E402


class _Builder:
    """What _trunc_square reads of a FnLowering: its IR builder."""

    def __init__(self, b: ll.IRBuilder) -> None:
        self.b = b


@pytest.mark.parametrize("name", sorted(T.PARAMS))
def test_truncated_square_is_exact_for_every_argument(name):
    nb, cut, _frac = T.PARAMS[name]
    i64 = ll.IntType(64)
    m = ll.Module(name=f"sq_{name}")
    f = ll.Function(m, ll.FunctionType(ll.VoidType(), [i64.as_pointer(), i64.as_pointer(), i64]), "sq")
    b = ll.IRBuilder(f.append_basic_block())
    src, dst, n = f.args
    with for_range(b, ll.Constant(i64, 0), n) as i:
        b.store(approx._trunc_square(_Builder(b), b.load(b.gep(src, [i])), nb, cut), b.gep(dst, [i]))
    b.ret_void()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(m)), tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(engine.get_function_address("sq"))
    t = np.arange(1 << nb, dtype=np.int64)
    out = np.zeros_like(t)
    fn(t.ctypes.data, out.ctypes.data, t.size)
    np.testing.assert_array_equal(out, fit.trunc_square(t, nb, cut))
