"""Preprocessing and the summary pass, on hand-written PTX and on corpus kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import ptxjit
from ptxjit.cli import main
from ptxjit.frontend.parser import parse
from ptxjit.passes.preprocess import preprocess
from ptxjit.passes.summary import summarize
from tests.ptxsnip import snippet_kernel

CORPUS = Path(__file__).parent.parent / "corpus" / "ptx"

DEAD_AND_LOOPING = """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    prefetch.global.L1 [%rd1];
    setp.eq.u32 %p1, %r1, 5;
    @%p1 bra $L_spin;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    bra $L_done;
    add.s32 %r2, %r1, 1;
    st.global.u32 [%rd3], %r2;
$L_dead:
    mul.lo.s32 %r3, %r1, 7;
$L_spin:
    bra.uni $L_spin;
$L_done:
"""


def _fn(ptx: str, name: str = "k"):
    return parse(ptx).functions[name]


def test_preprocess_removes_noops_dead_code_and_self_loops():
    fn = _fn(snippet_kernel(DEAD_AND_LOOPING, [("u64", "out")]))
    n0 = len(fn.instructions)
    rep = preprocess(fn)
    assert [x.split()[-1] for x in rep.removed_noops] == ["prefetch.global.L1"]
    removed = [x.split()[-1] for x in rep.removed_unreachable]
    assert removed == ["add.s32", "st.global.u32", "mul.lo.s32"]
    assert len(rep.self_loops) == 1 and "$L_spin" in rep.self_loops[0]
    assert len(fn.instructions) == n0 - 4
    assert [i.text for i in fn.instructions if i.opcode == "trap"] == ["trap.selfloop"]


def test_self_loop_traps_instead_of_hanging():
    mod = ptxjit.Module(snippet_kernel(DEAD_AND_LOOPING, [("u64", "out")]), "spin.ptx")
    out = np.zeros(4, np.uint32)
    mod.get_function("k")(1, 4, (out,))  # thread 5 does not exist: no spin
    np.testing.assert_array_equal(out, np.arange(4))
    out = np.zeros(8, np.uint32)
    with pytest.raises(ptxjit.KernelTrap, match="loops to itself") as ei:
        mod.get_function("k")(1, 8, (out,))
    assert ei.value.thread == (5, 0, 0) and "spin.ptx:" in str(ei.value)


def test_summary_of_vadd_and_saxpy():
    mod = parse((CORPUS / "elementwise.ptx").read_text())
    s = summarize(mod.functions["vadd"])
    acc = {p.name[-1]: p for p in s.params}
    assert acc["0"].read and not acc["0"].written and acc["0"].strides == {4}
    assert acc["1"].read and acc["1"].strides == {4}
    assert acc["2"].written and not acc["2"].read and acc["2"].strides == {4}
    assert not (acc["3"].read or acc["3"].written)
    assert s.barriers == [] and s.warp_collectives == [] and s.loops == 0
    assert s.registers == {"pred": 2, "b32": 6, "f32": 4, "b64": 11}
    sx = summarize(mod.functions["saxpy"])
    y = sx.params[3]
    assert y.read and y.written and y.strides == {4}


def test_summary_of_reduction_and_histogram():
    red = parse((CORPUS / "reduce.ptx").read_text())
    s = summarize(red.functions["reduce_shfl_f32"])
    # warp_sum (5 x __shfl_down_sync) is inlined twice around one __syncthreads
    assert len(s.warp_collectives) == 10 and len(s.barriers) == 1
    src, out = s.params[0], s.params[1]
    assert src.read and not src.written and not src.atomic
    assert out.atomic and not out.written and not out.read
    assert s.max_live_at_suspension >= 1 and s.loops >= 1
    hist = parse((CORPUS / "histogram.ptx").read_text())
    h = summarize(hist.functions["hist256"])
    assert len(h.barriers) == 2 and h.loops >= 3  # init loop, grid-stride loop, flush loop
    data, _n, bins = h.params
    assert data.read and not data.written
    assert bins.atomic and not bins.read and not bins.written


def test_info_summary_and_rules_cli():
    r = CliRunner().invoke(main, ["info", "--summary", "--rules", str(CORPUS / "elementwise.ptx")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "read (stride 4 B/thread)" in out and "written (stride 4 B/thread)" in out
    assert "shfl" in out and "lop3" in out  # the rule table


def test_barriers_and_shuffles_in_noinline_device_functions():
    """nvcc keeps __noinline__ helpers with __syncthreads/__shfl_down_sync as .func; ptxjit inlines them."""
    data = Path(__file__).parent / "data" / "noinline_sync.ptx"
    assert ".func _Z11block_stagePfif" in data.read_text()  # the input really has the calls
    mod = ptxjit.Module.from_file(data)
    body_ops = [i.opcode for i in mod.ir.functions["block_sum"].instructions]
    assert "call" not in body_ops and "bar" in body_ops and "shfl" in body_ops
    rng = np.random.default_rng(3)
    for n in (1000, 1024, 77):
        x = rng.random(n, dtype=np.float32)
        out = np.zeros(1, np.float32)
        mod.get_function("block_sum")((n + 255) // 256, 256, (x, out, n))
        # each block sums s[t] + s[(t+1) % 256] over its threads: twice the block's inputs
        np.testing.assert_allclose(out[0], 2 * x.astype(np.float64).sum(), rtol=1e-5)
