"""What an instruction does besides computing its results, as the passes, the lowering and the tools ask
it: whether it may suspend the thread that runs it (a barrier or a warp collective: the other threads of
the CTA or warp run first), whether it has no effect on a CPU at all (a hint), and which state space a
memory instruction reaches.

The opcodes here are PTX's and, for suspension, three of ptxjit's own that its passes insert after
validation (`spinpoint`, `lockstep`, `warpstep`; lower/rules/sync.py lowers them).
"""

from __future__ import annotations

from ptxjit.frontend import ir

# block-wide barriers, and ptxjit's own suspension points (a spinning thread lets the others run; the
# rounds of lockstep loops and warp-synchronous code)
BARRIERS = frozenset({"bar", "barrier", "spinpoint", "lockstep", "warpstep"})
# warp collectives: every thread of the warp arrives before any goes on (their operands cross threads)
WARP_COLLECTIVES = frozenset({"shfl", "vote", "match", "redux", "activemask", "elect", "mma", "ldmatrix",
                              "stmatrix", "movmatrix", "wgmma", "wmma"})
SUSPENDING = BARRIERS | WARP_COLLECTIVES

# hints: instructions with no effect on results on a CPU (lowered to nothing, removed by preprocessing)
HINTS = frozenset({"prefetch", "prefetchu", "applypriority", "discard", "pmevent", "brkpt", "nanosleep",
                   "griddepcontrol", "setmaxnreg", "createpolicy"})
# createpolicy computes a value (an opaque cache policy), so it is lowered, not removed
REMOVABLE_HINTS = HINTS - {"createpolicy"}

SPACES = ("global", "shared", "local", "const", "param")


def may_suspend(opcode: str) -> bool:
    """Whether some form of `opcode` may suspend the thread (a barrier or a warp collective)."""
    return opcode in SUSPENDING


def suspends(ins: ir.Instr) -> bool:
    """Whether `ins` suspends its thread: a barrier or a warp collective, except `bar.arrive`, which
    counts an arrival and goes on."""
    if ins.opcode not in SUSPENDING:
        return False
    return not (ins.opcode in ("bar", "barrier") and ins.has("arrive") and not ins.has("warp"))


def is_block_barrier(ins: ir.Instr) -> bool:
    """A suspension that waits for threads beyond the warp (bar/barrier without .warp, ptxjit's own
    points), as opposed to a warp collective."""
    return ins.opcode in BARRIERS and not ins.has("warp")


def space_of(ins: ir.Instr) -> str:
    """The state space a memory instruction names (`ld.global` -> "global", `.shared::cta` -> "shared"),
    or "" when it names none (a generic address)."""
    for m in ins.mods:
        if m in SPACES:
            return m
        if m.startswith("shared::"):
            return "shared"
    return ""


def vector_length(ins: ir.Instr) -> int:
    """How many elements a vector access moves (`.v2`, `.v4`, `.v8`), 1 for a scalar one."""
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1
