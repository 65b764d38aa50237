"""A stream launch's record: packed like a synchronous one (runtime/launch.py run_packed), with the
launch record's L_RANGED mode on, so that each native call runs the one batch its worker names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.runtime import launch as _launch
from ptxjit.runtime import printf
from ptxjit.runtime.printf import PRINTF_ADDRESS
from ptxjit.streams.scheduler import Work


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a launch microseconds
class LaunchSpec:
    """Everything a stream launch needs, as Kernel.__call__ prepared it; a captured graph keeps these
    and packs a fresh launch record from them at each replay."""

    tr: Translation
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    plan: _launch.RecordPlan
    values: list
    ranges: list | None
    patches: list | None
    globals_addr: int
    globals_size: int
    dyn_smem: int
    limit: float | None
    range_names: list
    args: Any
    keep: Any
    printf_objs: tuple | None  # (arrays, globals) whose memory printf's %s may read, or None


def pack_ranged(spec: LaunchSpec, nworkers: int):
    """The launch record (a ctypes int64 array) and its address.  The same lines as run_packed's
    (there a function call would cost synchronous launches latency)."""
    tr, grid, block, plan = spec.tr, spec.grid, spec.block, spec.plan
    nctas = grid[0] * grid[1] * grid[2]
    nthreads = block[0] * block[1] * block[2]
    _launch._grid_counter += 1
    L = plan.type()
    base = _launch._addressof(L)
    shift = (base + plan.params_off) & 15
    params_addr = base + plan.params_off + (8 if shift else 0)
    gaddr = spec.globals_addr
    if plan.checked:
        plan.structs[1 if shift else 0].pack_into(
            L, 0, params_addr, gaddr, *grid, *block, nctas, 1, spec.dyn_smem, PRINTF_ADDRESS,
            _launch._grid_counter, nthreads, nworkers, base + plan.ranges_off, *spec.ranges, gaddr,
            spec.globals_size, params_addr, plan.param_size, *spec.values)
    else:
        if tr.checked:
            raise ValueError(f"kernel '{spec.kernel}': a bounds-checked translation needs a range table")
        plan.structs[1 if shift else 0].pack_into(
            L, 0, params_addr, gaddr, *grid, *block, nctas, 1, spec.dyn_smem, PRINTF_ADDRESS,
            _launch._grid_counter, nthreads, nworkers, 0, *spec.values)
    if spec.patches:
        for off, data in spec.patches:
            _launch._memmove(params_addr + off, data, len(data))
    L[abi.L_RANGED] = 1
    return L, base


def make_work(spec: LaunchSpec, nworkers: int, priority: int, on_done) -> Work:
    L, lp = pack_ranged(spec, nworkers)
    tr = spec.tr
    shared_bytes = tr.shared.dynamic_offset + spec.dyn_smem if spec.dyn_smem else tr.shared.static_size
    ctx = printf.known_memory(*spec.printf_objs) if spec.printf_objs is not None else None
    fault_info = (_launch._packed_fault_info, L, spec.plan, spec.range_names, spec.args)
    return Work(tr, spec.kernel, spec.grid, spec.block, L, lp, (spec.keep, spec.args), fault_info, shared_bytes,
                spec.limit, priority, on_done, context=ctx)
