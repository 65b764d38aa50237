"""Code every baseline translation shares: the worker loop (grab CTAs, run them, report faults) and warp
mode's CTA scheduler.  Both are the same for every kernel of a shape (checked or not, ...), so the
baseline build does not lower them again per kernel: its `ptxjit_worker` and `run_cta` are stubs that
call the shared function with the kernel's own `run_cta` or body as a last argument, and ptxjit.jit
compiles each shared function once per process (from the disk cache after the first) and binds its
symbol (llvm.add_symbol) before a translation that names it is loaded.  For a small kernel that is
300-500 of its ~1,000 lines of LLVM IR.  Optimized tiers keep their own copies (inlined, specialized
on the block shape); instrumented code keeps its own (its probes live in the worker loop)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.lower.types import I32, I64, VOID

WORKER_SYMBOL = "ptxjit_worker"
_I64P = I64.as_pointer()
_CTA_TYPE = ll.FunctionType(I32, [_I64P, _I64P, I32])  # run_cta(launch, worker, nthreads)
_BODY_TYPE = ll.FunctionType(I32, [_I64P, _I64P, I32, I32])  # body(launch, worker, thread, resume)


@dataclass(frozen=True)
class WorkerLoop:
    """ptxjit_worker(launch, worker, run_cta): `checked` code reports faults after each CTA (`fault_scan`:
    faults recorded outside thread loops, so W_FAULT is scanned after every CTA); `reserved`: the offset
    of the CTA's reserved shared region zeroed before each CTA (-1: none), `reserved_bytes` its size."""

    checked: bool
    fault_scan: bool
    reserved: int = -1
    reserved_bytes: int = 0
    stub_name = WORKER_SYMBOL

    def symbol(self) -> str:
        tail = f"_r{self.reserved}_{self.reserved_bytes}" if self.reserved >= 0 else ""
        return f"__ptxjit_worker_{'c' if self.checked else 'u'}{'s' if self.fault_scan else ''}{tail}"

    def function_type(self) -> ll.FunctionType:
        return ll.FunctionType(VOID, [_I64P, _I64P, _CTA_TYPE.as_pointer()])


@dataclass(frozen=True)
class WarpScheduler:
    """run_cta(launch, worker, nthreads, body) of warp mode: threads run until they suspend at a warp
    point or a barrier; `checked`: a thread's recorded fault ends the CTA at once."""

    checked: bool
    stub_name = "run_cta"

    def symbol(self) -> str:
        return f"__ptxjit_warp_cta_{'c' if self.checked else 'u'}"

    def function_type(self) -> ll.FunctionType:
        return ll.FunctionType(I32, [_I64P, _I64P, I32, _BODY_TYPE.as_pointer()])


_WORKER = re.compile(r"__ptxjit_worker_([cu])(s?)(?:_r(\d+)_(\d+))?")
_WARP = re.compile(r"__ptxjit_warp_cta_([cu])")


def shape_of(symbol: str) -> WorkerLoop | WarpScheduler:
    """The shape a shared symbol names (translations cached on disk record the symbols they call)."""
    m = _WORKER.fullmatch(symbol)
    if m is not None:
        return WorkerLoop(m[1] == "c", m[2] == "s", int(m[3]) if m[3] else -1, int(m[4]) if m[4] else 0)
    m = _WARP.fullmatch(symbol)
    if m is not None:
        return WarpScheduler(m[1] == "c")
    raise ValueError(f"not a shared-code symbol: {symbol!r}")
