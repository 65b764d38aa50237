"""Grid synchronization through cudadevrt's cooperative-groups entry points, as Numba emits it:
`call (retval0), cudaCGGetIntrinsicHandle, (scope)` and `call (retval0), cudaCGSynchronize, (handle,
flags)` (`cuda.cg.this_grid().sync()`).  nvcc inlines its grid.sync() instead (runtime/cooperative.py).

After validation the load pipeline (passes/grid_barriers.py) replaces the handle call by a store of 0 to
its return value (the handle is never needed: the launch's grid workspace is abi.L_COOP) and the synchronize call by
`barrier.sync 0; gridwait; barrier.sync 0` and a store of 0 (cudaSuccess).  `gridwait` is nvcc's
scheme run by thread 0 of each block: an atomic add on the workspace's counter at +4 (block (0,0,0)
adds 0x80000001 - blocks, every other block 1) and a spin until the counter's top bit flips, polling
the launch's error word and yielding its core meanwhile (runtime/cooperative.py watches the same
counter for deadlocks).  Outside a cooperative launch it traps, as cudaCGSynchronize fails there.
Kernels that contain it launch cooperatively by themselves (Numba does the same).
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.special import mark_grid_workspace, special_register
from ptxjit.lower.types import I1, I32, I64, const_int
from ptxjit.passes.grid_barriers import GRID_WAIT


def uses_grid_wait(fn: ir.Function) -> bool:
    return any(i.opcode == GRID_WAIT for i in fn.instructions)


@rule(GRID_WAIT, family="sync")
def lower_grid_wait(lw: FnLowering, ins: Instr) -> None:
    """Internal (between two CTA barriers): thread 0 arrives at the grid barrier and waits for every block."""

    b = lw.b
    mark_grid_workspace(lw)  # a trap here in a non-cooperative launch gets runtime/cooperative.py's hint
    ws = lw.launch_slot(abi.L_COOP)
    leader = lw.llfn.append_basic_block("grid_arrive")
    after = lw.llfn.append_basic_block("grid_passed")
    b.cbranch(b.icmp_unsigned("==", lw.tlin, const_int(I32, 0)), leader, after)
    b.position_at_end(leader)
    with b.if_then(b.icmp_unsigned("==", ws, const_int(I64, 0)), likely=False):
        lw.trap(abi.ERR_TRAP)  # not a cooperative launch: cudaCGSynchronize fails, grid.sync() traps
    n = [special_register(lw, f"%nctaid.{a}") for a in "xyz"]
    c = [special_register(lw, f"%ctaid.{a}") for a in "xyz"]
    nblocks = b.mul(b.mul(n[0], n[1]), n[2])
    first = const_int(I1, 1)
    for v in c:
        first = b.and_(first, b.icmp_unsigned("==", v, const_int(I32, 0)))
    ctr = b.inttoptr(b.add(ws, const_int(I64, 4)), I32.as_pointer())
    arrive_and_spin(lw, ctr, first, nblocks, after, "grid")


def arrive_and_spin(lw: FnLowering, ctr, first, count, after, name: str) -> None:
    """nvcc's grid-barrier protocol on the u32 counter `ctr`: the first block adds 0x80000001 - count, the
    others 1, so the top bit flips when the last one arrives; spin (yielding the core, polling the launch's
    error word so that a failed or cancelled launch stops this block) until it does, then go on at `after`.
    Also the cluster barrier's (lower/rules/cluster.py), on a counter per cluster."""
    b = lw.b
    inc = b.select(first, b.sub(const_int(I32, 0x80000001), count), const_int(I32, 1))
    old = b.atomic_rmw("add", ctr, inc, "seq_cst")
    head = lw.llfn.append_basic_block(f"{name}_spin")
    body = lw.llfn.append_basic_block(f"{name}_spin_body")
    stop = lw.llfn.append_basic_block(f"{name}_stop")
    b.branch(head)
    b.position_at_end(head)
    now = b.load_atomic(ctr, "seq_cst", 4)
    b.cbranch(b.icmp_signed("<", b.xor(now, old), const_int(I32, 0)), after, body)
    b.position_at_end(body)
    err = b.load_atomic(b.gep(lw.launch, [const_int(I32, abi.L_ERROR)]), "monotonic", 8)
    b.call(lw.cg.extern_function("sched_yield", I32, []), [])
    b.cbranch(b.icmp_unsigned("!=", err, const_int(I64, 0)), stop, head)
    b.position_at_end(stop)
    if lw.is_kernel:
        b.ret(const_int(I32, abi.RESUME_TRAP))  # the launch failed or was cancelled: stop this block
    else:
        b.ret_void()
    b.position_at_end(after)
