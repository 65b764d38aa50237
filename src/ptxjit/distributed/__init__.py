"""One launch's CTAs across machines: a Ray backend for ptxjit.

    import ptxjit.distributed as pd
    pd.init(address=None, actors=4)      # ray.init(...) unless Ray is initialized; then the actors
    k = pd.kernel(module_or_ptx, "name")  # or PTXJIT_BACKEND=ray: every Kernel.__call__ distributes
    k(grid, block, args)                  # synchronous; results in the NumPy arrays, as with ptxjit
    pd.stats()                            # per launch: actors, CTAs per actor, bytes in/out, times

How (see the modules): the grid is split into one range of consecutive CTAs per actor (one actor per
node, in proportion to its threads; node.py runs a range with the launch record's ranged mode, as
stream batches do).  Arguments go through Ray's object store, once per launch: read-only arrays, the
arrays the kernel may write, and the module's globals.  Each actor returns the bytes its CTAs changed
(changes.py: a diff against the input, why not dirty ranges is explained there), which the driver
writes into the caller's arrays in CTA order, and, for buffers that only take atomic adds whose result
is unused, its sum of those adds starting from zero (a delta), which the driver adds to the input:
exact for integers (wrapping as on a GPU); for floats the additions happen in another order than in
one process (each node sums its CTAs' adds, then the driver adds the input and the nodes' sums in
node order), so results may differ in the last bits -- as they differ between two runs on a GPU.

Kernels whose CTAs communicate otherwise (other global atomics, an atomic whose old value is used --
a ticket or "last block" counter --, flags and fences, memory read and written in ways analysis.py
cannot separate) are refused: DistributionRefused (a ValueError) names the kernel and the reason.
They are never quietly run on one node: a program that asked for a cluster would silently lose it;
run such a kernel with ptxjit itself.

Completion counts: each actor's threads count the CTAs they completed; the actor reports their sum
per launch, and the driver checks that the actors' sum equals the grid (stats() keeps both levels).
"""

from __future__ import annotations

try:
    import ray as _ray  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("ptxjit.distributed needs Ray: pip install 'ptxjit[ray]'") from e

from ptxjit.distributed.analysis import DistributionRefused, Plan, plan_kernel
from ptxjit.distributed.driver import (
    DistributedKernel,
    LaunchStats,
    clear_stats,
    init,
    kernel,
    launch,
    shutdown,
    stats,
)

__all__ = ["DistributedKernel", "DistributionRefused", "LaunchStats", "Plan", "clear_stats", "init", "kernel",
           "launch", "plan_kernel", "shutdown", "stats"]
