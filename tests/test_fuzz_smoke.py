"""A bounded fuzz run (tools/fuzz): ~100 seeded corpus mutants, each loaded and launched in a forked
child under memory and time limits, every one built at the baseline (tier 0's build) and every other one
at the optimizing level too.  Nothing may kill the child, hang it or escape as an internal exception;
scripts/fuzz.sh runs the long version."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.fuzz.child import OPTIMIZING  # noqa: E402
from tools.fuzz.mutate import load_corpus, make_mutant  # noqa: E402
from tools.fuzz.runner import BASELINE, Limits, run_many  # noqa: E402

SEED = 2024
COUNT = 100


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the fuzz runner forks a child per case")
def test_fuzz_smoke(monkeypatch):
    monkeypatch.setenv("PTXJIT_WORKERS", "1")
    monkeypatch.setenv("PTXJIT_CACHE_DIR", tempfile.mkdtemp(prefix="ptxjit-fuzz-smoke-"))
    pools = load_corpus()
    cases = [(i, make_mutant(SEED, i, pools)[2]) for i in range(COUNT)]
    # 120 s per case: a module of several warp-shuffle kernels takes tens of seconds to translate (checked
    # translations hold two copies of each thread loop) on a loaded 2-core machine; a hang is not slowness
    results = run_many(cases, Limits(timeout=120.0, mem_bytes=8 << 30, opt_every=2), jobs=2)
    assert len(results) == COUNT
    # both builds met the mutants: the baseline every one, the optimizing level the even indices
    assert all(r.levels[:1] == [BASELINE] for r in results.values() if r.loaded)
    assert any(OPTIMIZING in r.levels for r in results.values() if r.outcome == "ok")
    # "fault" too: a kernel touching memory it does not own is stopped by the default bounds checks
    # (KernelFault, a clean outcome) before it can corrupt or crash anything
    bad = {i: r for i, r in results.items() if r.outcome in ("internal", "signal", "hang", "fault")}
    detail = "\n".join(f"mutant {i} ({make_mutant(SEED, i, pools)[1]}): {r.outcome} {r.type} in {r.phase} "
                       f"at {r.where}: {r.msg[:120]}" for i, r in sorted(bad.items()))
    assert not bad, f"reproduce with: python -m tools.fuzz --seed {SEED} --start <i> -n 1\n{detail}"
    # the mutants exercise both paths: some load and run, some are refused with a clean error
    outcomes = {r.outcome for r in results.values()}
    assert {"ok", "clean"} <= outcomes


def _spinning_module(kernels: int) -> str:
    """`kernels` kernels that spin on a flag nobody sets: each launch ends at the child's launch watchdog."""
    body = []
    for i in range(kernels):
        body.append(f"""
.visible .entry spin{i}(.param .u64 flag)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [flag];
$L_wait:
    ld.volatile.global.u32 %r1, [%rd1];
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra $L_wait;
    ret;
}}""")
    return ".version 8.0\n.target sm_90\n.address_size 64\n" + "\n".join(body)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the fuzz runner forks a child per case")
def test_a_case_over_its_limit_whose_steps_progress_is_slow_not_hung(monkeypatch):
    import tools.fuzz.runner as runner
    from tools.fuzz.child import LAUNCH_TIMEOUT

    monkeypatch.setenv("PTXJIT_WORKERS", "1")
    text = _spinning_module(3)  # three launches of LAUNCH_TIMEOUT each: more than the case's limit
    limit = LAUNCH_TIMEOUT * 2 + 1.5
    res = runner.run_many([(0, text)], Limits(timeout=limit, mem_bytes=8 << 30, opt_every=0), jobs=1)[0]
    assert res.outcome == "slow", res
    # the same case where one step may not take that long: a hang
    monkeypatch.setattr(runner, "STALL_LIMIT", 0.5)
    res = runner.run_many([(0, text)], Limits(timeout=limit, mem_bytes=8 << 30, opt_every=0), jobs=1)[0]
    assert res.outcome == "hang", res
