"""PTX kernel -> native code: lowering, LLVM optimization and JIT, with an in-memory cache."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ptxjit.frontend import ir
from ptxjit.jit.engine import NativeCode, compile_ir
from ptxjit.lower.layout import GlobalsLayout, SharedLayout
from ptxjit.lower.layout import local_size as fn_local_size
from ptxjit.lower.module import WORKER_SYMBOL, ModuleCodegen


@dataclass
class Translation:
    kernel: str
    block: tuple[int, int, int] | None
    native: NativeCode
    save_stride: int
    local_stride: int
    shared: SharedLayout
    has_yields: bool
    locations: list[ir.Instr]
    llvm_ir: str
    seconds: float


_stats = {"translations": 0, "memory_hits": 0, "disk_hits": 0}
_lock = threading.Lock()


def cache_stats() -> dict[str, int]:
    return dict(_stats)


def translate(module: ir.Module, kernel: ir.Function, glay: GlobalsLayout,
              block: tuple[int, int, int] | None = None) -> Translation:
    t0 = time.perf_counter()
    cg = ModuleCodegen(module, kernel, glay, block)
    llmod = cg.build()
    text = str(llmod)
    native = compile_ir(text, WORKER_SYMBOL)
    with _lock:
        _stats["translations"] += 1
    return Translation(kernel.name, block, native, cg.body_save_stride, fn_local_size(kernel), cg.shared,
                       cg.has_yields, cg.locations, text, time.perf_counter() - t0)


def note_memory_hit() -> None:
    with _lock:
        _stats["memory_hits"] += 1
