"""The load pipeline (jit/load.py): the passes between PTX text and its first translation, in order."""

from __future__ import annotations

import pytest

from ptxjit.errors import PTXValidationError
from ptxjit.jit.load import LOAD_PIPELINE, load_module
from tests.ptxsnip import snippet_kernel


def _opcodes(module, fn: str = "k") -> list[str]:
    return [i.opcode + "".join("." + m for m in i.mods) for i in module.functions[fn].instructions]


def test_every_pass_runs_once_in_order():
    module, state = load_module(snippet_kernel("    mov.u32 %r1, 1;\n", []), "k.ptx", fmad=True)
    assert list(state.seconds) == [p.name for p in LOAD_PIPELINE]
    assert [p.name for p in LOAD_PIPELINE].index("validate") < [p.name for p in LOAD_PIPELINE].index("grid barriers")


def test_cluster_wait_becomes_cta_barriers_around_the_internal_wait():
    ptx = snippet_kernel("    barrier.cluster.arrive;\n    barrier.cluster.wait;\n", []).replace(
        ".target sm_80", ".target sm_90")
    module, _ = load_module(ptx, "k.ptx", fmad=True)
    ops = _opcodes(module)
    assert ops[:3] == ["barrier.sync", "clusterwait", "barrier.sync"], ops  # the arrive folded into the wait


def test_internal_instructions_are_refused_in_ptx():
    """Validation runs before the rewrites that insert ptxjit's own instructions: PTX cannot name them."""
    for internal in ("clusterwait", "gridwait"):
        with pytest.raises(PTXValidationError, match=internal):
            load_module(snippet_kernel(f"    {internal};\n", []), "k.ptx", fmad=True)


def test_stack_rewrite_joins_the_cache_key():
    body = "    alloca.u64 %rd1, 64;\n    stacksave.u64 %rd2;\n    stackrestore.u64 %rd2;\n"
    ptx = snippet_kernel(body, []).replace(".target sm_80", ".target sm_90")
    module, state = load_module(ptx, "k.ptx", fmad=True)
    assert state.cache_key_suffix.startswith("|stack=")
    assert "stacksave.u64" not in _opcodes(module) and "stackrestore.u64" not in _opcodes(module)
    _, plain = load_module(snippet_kernel("    mov.u32 %r1, 1;\n", []), "k.ptx", fmad=True)
    assert plain.cache_key_suffix == ""


def test_contraction_only_with_fmad():
    body = "    mul.f32 %f3, %f1, %f2;\n    add.f32 %f4, %f3, %f5;\n    mov.b32 %r1, %f4;\n"
    with_fmad, s1 = load_module(snippet_kernel(body, []), "k.ptx", fmad=True)
    without, s2 = load_module(snippet_kernel(body, []), "k.ptx", fmad=False)
    assert s1.contracted == {"k": 1} and s2.contracted == {}
    assert "fma.rn.f32" in _opcodes(with_fmad) and "fma.rn.f32" not in _opcodes(without)
