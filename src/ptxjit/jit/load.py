"""The load pipeline: what a PTX module goes through between its text and its first translation, in one
place and in order.  `load_module` parses the text and runs LOAD_PIPELINE over the module, each pass one
shape (the module and the load's state in, the module changed in place); `ptxjit.Module` keeps the result.

    source lines      CUDA file:line of every instruction, from .loc (passes/sourcelines.py)
    inline            device functions that suspend (barriers, warp collectives) inlined into their callers
    validate          the ISA table and the rule table: invalid or unsupported PTX refused, with its place
    grid barriers     Numba's grid sync and cluster barriers as CTA barriers around ptxjit's waits
    stack             alloca/stacksave/stackrestore onto a per-thread stack (the size joins the cache key)
    preprocess        hints removed, unreachable code and self-loops reported (per function)
    immediates        constants propagated into approximate instructions, as ptxas folds them
    contract          mul + add fused into fma, as ptxas --fmad does (only with fmad)

Passes before `validate` see PTX as written, the ones after only valid PTX; the rewrites after it insert
ptxjit's internal instructions, which no PTX may name.  What happens later, per translation (the block
shape known: lockstep loops, warp-synchronous rounds, spin points, shuffle grouping), is the codegen's
(lower/context.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.frontend.parser import parse
from ptxjit.isa.effects import may_suspend
from ptxjit.lower.validate import validate
from ptxjit.passes.approx_fold import propagate_immediates
from ptxjit.passes.contract import contract_fma
from ptxjit.passes.grid_barriers import rewrite_cg_calls, rewrite_cluster_barriers
from ptxjit.passes.inline import inline_suspending_calls
from ptxjit.passes.preprocess import PreprocessReport, preprocess
from ptxjit.passes.sourcelines import attach_source_lines
from ptxjit.passes.stack import rewrite_stack


@dataclass
class LoadState:
    """What the passes of one load share: its options in, their results out."""
    fmad: bool
    cache_key_suffix: str = ""  # what the rewrites add to the module's translation-cache key
    preprocess_reports: dict[str, PreprocessReport] = field(default_factory=dict)
    contracted: dict[str, int] = field(default_factory=dict)  # fma contractions per function
    seconds: dict[str, float] = field(default_factory=dict)  # per pass


@dataclass(frozen=True)
class ModulePass:
    name: str
    run: Callable[[ir.Module, LoadState], None]


def _bodies(module: ir.Module) -> list[ir.Function]:
    return [f for f in module.functions.values() if f.body is not None]


def _stack(module: ir.Module, state: LoadState) -> None:
    state.cache_key_suffix += rewrite_stack(module)


def _preprocess(module: ir.Module, state: LoadState) -> None:
    state.preprocess_reports = {f.name: preprocess(f) for f in _bodies(module)}


def _immediates(module: ir.Module, state: LoadState) -> None:
    for f in _bodies(module):
        propagate_immediates(f)


def _contract(module: ir.Module, state: LoadState) -> None:
    if state.fmad:
        state.contracted = {f.name: contract_fma(f) for f in _bodies(module)}


def _grid_barriers(module: ir.Module, state: LoadState) -> None:
    rewrite_cluster_barriers(module)
    rewrite_cg_calls(module)


def _inline(module: ir.Module, state: LoadState) -> None:
    inline_suspending_calls(module, lambda ins: may_suspend(ins.opcode))


LOAD_PIPELINE: tuple[ModulePass, ...] = (
    ModulePass("source lines", lambda m, s: attach_source_lines(m)),
    ModulePass("inline", _inline),
    ModulePass("validate", lambda m, s: validate(m)),
    ModulePass("grid barriers", _grid_barriers),
    ModulePass("stack", _stack),
    ModulePass("preprocess", _preprocess),
    ModulePass("immediates", _immediates),
    ModulePass("contract", _contract),
)


def run_load_pipeline(module: ir.Module, state: LoadState,
                      pipeline: tuple[ModulePass, ...] = LOAD_PIPELINE) -> LoadState:
    """Run `pipeline` over `module` in order; each pass's time goes into state.seconds."""
    for p in pipeline:
        t0 = time.perf_counter()
        p.run(module, state)
        state.seconds[p.name] = state.seconds.get(p.name, 0.0) + time.perf_counter() - t0
    return state


def load_module(ptx: str, name: str, fmad: bool) -> tuple[ir.Module, LoadState]:
    """Parse `ptx` (errors name `name` as its file) and run the load pipeline over it."""
    module = parse(ptx, name)
    return module, run_load_pipeline(module, LoadState(fmad))
