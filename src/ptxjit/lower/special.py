"""Special registers (%tid, %ctaid, %laneid, %clock64, ...)."""

from __future__ import annotations

import time

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.clusters import cluster_register
from ptxjit.lower.layout import RESERVED_SMEM_BYTES, RESERVED_SMEM_PREFIX, RESERVED_SMEM_SLOT
from ptxjit.lower.types import I32, I64, const_int

_AXIS = {"x": 0, "y": 1, "z": 2, "w": 3}


def special_register(lw, name: str) -> ll.Value:
    b = lw.b
    base, _, comp = name.partition(".")
    axis = _AXIS.get(comp, 0)

    def launch32(idx: int) -> ll.Value:
        return b.trunc(lw.launch_slot(idx), I32)

    block = lw.cg.block

    def ntid(i: int) -> ll.Value:
        return const_int(I32, block[i]) if block is not None else launch32(abi.L_BLOCK + i)

    if base == "%tid":
        if axis == 3:
            return const_int(I32, 0)
        loop_tid = getattr(lw, "loop_tid", None)
        if loop_tid is not None:  # inside the nested thread loops: the induction variables
            return loop_tid[axis]
        nx, ny = ntid(0), ntid(1)
        t = lw.tlin
        if axis == 0:
            return b.urem(t, nx)
        if axis == 1:
            return b.urem(b.udiv(t, nx), ny)
        return b.udiv(t, b.mul(nx, ny))
    if base == "%ntid":
        return ntid(axis) if axis < 3 else const_int(I32, 0)
    if base == "%ctaid":
        return b.trunc(lw.worker_slot(abi.W_CTA + axis), I32) if axis < 3 else const_int(I32, 0)
    if base == "%nctaid":
        return launch32(abi.L_GRID + axis) if axis < 3 else const_int(I32, 0)
    if base == "%laneid":
        return lw.lane()
    if base == "%warpid":
        return b.lshr(lw.tlin, const_int(I32, 5))
    if base == "%nwarpid":
        n = const_int(I32, block[0] * block[1] * block[2]) if block is not None else launch32(abi.L_NTHREADS)
        return b.lshr(b.add(n, const_int(I32, 31)), const_int(I32, 5))
    if base == "%warpsize":
        return const_int(I32, 32)
    if base.startswith("%lanemask_"):
        lane = b.zext(lw.lane(), I64)
        one = const_int(I64, 1)
        eq = b.shl(one, lane)
        lt = b.sub(eq, one)
        le = b.sub(b.shl(const_int(I64, 2), lane), one)
        v = {"eq": eq, "lt": lt, "le": le, "gt": b.not_(le), "ge": b.not_(lt)}[base[len("%lanemask_"):]]
        return b.trunc(v, I32)
    if base in ("%clock", "%clock64", "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
        if base.startswith("%globaltimer"):
            c = b.call(globaltimer_function(lw.cg.llmod), [])
        else:
            c = b.call(lw.cg.intrinsic("llvm.readcyclecounter", I64, [], exact=True), [])
        if base in ("%clock", "%globaltimer_lo"):
            return b.trunc(c, I32)
        if base in ("%clock_hi", "%globaltimer_hi"):
            return b.trunc(b.lshr(c, const_int(I64, 32)), I32)
        return c
    if base.startswith("%pm"):  # performance monitor counters: a monotone count (the cycle counter)
        c = b.call(lw.cg.intrinsic("llvm.readcyclecounter", I64, [], exact=True), [])
        return c if base.endswith("_64") else b.trunc(c, I32)
    if base == "%smid":
        return b.trunc(lw.worker_slot(abi.W_ID), I32)
    if base == "%nsmid":
        return launch32(abi.L_NWORKERS)
    if base == "%gridid":
        return lw.launch_slot(abi.L_GRIDID)
    if base == "%dynamic_smem_size":
        return launch32(abi.L_DYN_SMEM)
    if base in ("%total_smem_size", "%aggr_smem_size"):
        # the user's shared memory (static, alignment, dynamic) in allocation units; %aggr_smem_size
        # adds the region reserved for the system software, which the GPU reserves in every CTA
        lay = lw.cg.shared
        user = b.sub(lw.worker_slot(abi.W_SHARED_SIZE), const_int(I64, lay.reserved_bytes))
        unit = SMEM_ALLOCATION_UNIT
        total = b.and_(b.add(user, const_int(I64, unit - 1)), const_int(I64, -unit))
        if base == "%aggr_smem_size":
            total = b.add(total, const_int(I64, RESERVED_SMEM_BYTES))
        return b.trunc(total, I32)
    if base.startswith(RESERVED_SMEM_PREFIX):
        # offsets in the shared window of this CTA's reserved region (lower/layout.py)
        begin = lw.cg.shared.reserved
        if begin < 0:
            raise lw.unsupported(f"special register {name}: the kernel's shared layout has no reserved region")
        at = {"begin": begin, "end": begin + RESERVED_SMEM_BYTES, "cap": RESERVED_SMEM_BYTES,
              "0": begin, "1": begin + RESERVED_SMEM_SLOT}[base[len(RESERVED_SMEM_PREFIX):]]
        return const_int(I32, at)
    if base == "%current_graph_exec":  # ptxjit launches no CUDA graphs: 0 is the ISA's "not in a graph"
        return const_int(I64, 0)
    if base.startswith(("%cluster", "%ncluster", "%is_explicit_cluster")):
        return cluster_register(lw, base, comp)
    if base in ("%envreg1", "%envreg2"):
        # the grid workspace of a cooperative launch (runtime/cooperative.py): nvcc's grid.sync()
        # builds its address as %envreg1 << 32 | %envreg2, and traps where it is 0 (not cooperative)
        mark_grid_workspace(lw)
        ws = lw.launch_slot(abi.L_COOP)
        return b.trunc(b.lshr(ws, const_int(I64, 32)) if base == "%envreg1" else ws, I32)
    if base.startswith("%envreg"):
        return const_int(I32, 0)
    raise lw.unsupported(f"special register {name}")


GRID_WORKSPACE_MARK = "%envreg"

# %total_smem_size counts shared memory in the GPU's allocation units (PTX ISA: 128 bytes on sm_8x and
# sm_9x)
SMEM_ALLOCATION_UNIT = 128


def mark_grid_workspace(lw) -> None:
    """List a marker in the translation's location table: the kernel reads the grid workspace, so a
    trap in a non-cooperative launch gets a hint (runtime/cooperative.py: explain_trap)."""

    cg = lw.cg
    mark = cg.__dict__.get("_grid_workspace_mark")
    if mark is None:
        mark = cg.__dict__["_grid_workspace_mark"] = ir.Instr(GRID_WORKSPACE_MARK, (), [], None, lw.cur.pos)
    cg.location_id(mark)


# %globaltimer: CLOCK_MONOTONIC plus the distance of the Unix epoch from it, which the runtime measures once
# per process and publishes under EPOCH_SYMBOL (runtime/globaltimer.py)
GLOBALTIMER_FUNCTION = "__ptxjit_globaltimer"
EPOCH_SYMBOL = "__ptxjit_globaltimer_epoch"


def globaltimer_function(mod: ll.Module) -> ll.Function:
    """`i64 __ptxjit_globaltimer()`, the %globaltimer value (emitted once per module; inlined)."""
    fn = mod.globals.get(GLOBALTIMER_FUNCTION)
    if fn is not None:
        return fn
    timespec = ll.LiteralStructType([I64, I64])  # struct timespec on 64-bit Linux: tv_sec, tv_nsec
    gettime = mod.globals.get("clock_gettime") or ll.Function(
        mod, ll.FunctionType(I32, [I32, timespec.as_pointer()]), name="clock_gettime")
    epoch = mod.globals.get(EPOCH_SYMBOL)
    if epoch is None:
        epoch = ll.GlobalVariable(mod, I64, name=EPOCH_SYMBOL)  # external: add_symbol
    fn = ll.Function(mod, ll.FunctionType(I64, []), name=GLOBALTIMER_FUNCTION)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = ll.IRBuilder(fn.append_basic_block())
    ts = b.alloca(timespec)
    b.call(gettime, [const_int(I32, time.CLOCK_MONOTONIC), ts])
    sec = b.load(b.gep(ts, [const_int(I32, 0), const_int(I32, 0)]))
    nsec = b.load(b.gep(ts, [const_int(I32, 0), const_int(I32, 1)]))
    b.ret(b.add(b.add(b.mul(sec, const_int(I64, 1_000_000_000)), nsec), b.load(epoch)))
    return fn
