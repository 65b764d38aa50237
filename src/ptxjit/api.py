"""The public API: Module (load PTX), Kernel (launch), introspection records, and launch hooks
(launch_hook: code that wraps or redirects every Kernel launch)."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ptxjit import config
from ptxjit import tiers as _tiers
from ptxjit.demangle import demangle, short_name
from ptxjit.errors import PTXValidationError
from ptxjit.frontend import ir
from ptxjit.jit import translate as tr
from ptxjit.jit.load import load_module
from ptxjit.jit.priority import foreground
from ptxjit.lower.layout import encode_initializer, globals_layout, local_size, param_layout, shared_layout
from ptxjit.runtime import launch, printf, watchdog
from ptxjit.runtime.access import analyze
from ptxjit.runtime.args import (
    MAX_BLOCK,
    MAX_GRID,
    MAX_STATIC_SHARED,
    MAX_THREADS_PER_BLOCK,
    ArgPacker,
    array_address,
    check_launch_shape,
    check_shared_memory,
    dims,
    pack_arguments,
    resolve_checked,
)
from ptxjit.streams import stream as _streams
from ptxjit.streams.launches import LaunchSpec
from ptxjit.util import gc_paused


@dataclass(frozen=True)
class ParamInfo:
    name: str
    type: str
    size: int
    align: int
    offset: int
    is_pointer_sized: bool
    array: bool = False


@dataclass(frozen=True)
class KernelInfo:
    name: str
    params: list[ParamInfo]
    shared_size: int
    local_size: int
    registers: dict[str, int]
    instructions: dict[str, int]
    num_instructions: int
    perf: dict[str, tuple[int, ...]] = field(default_factory=dict)
    has_dynamic_shared: bool = False


_GLOBAL_DTYPES = {"u8": np.uint8, "s8": np.int8, "b8": np.uint8, "u16": np.uint16, "s16": np.int16,
                  "b16": np.uint16, "f16": np.float16, "u32": np.uint32, "s32": np.int32, "b32": np.uint32,
                  "f32": np.float32, "u64": np.uint64, "s64": np.int64, "b64": np.uint64, "f64": np.float64}


_MANGLED = re.compile(r"_Z(?:N\d*)?(\d+)")


def _plain_name(mangled: str) -> str | None:
    m = _MANGLED.match(mangled)
    if not m:
        return None
    n = int(m.group(1))
    start = m.end()
    return mangled[start:start + n]


class Module:
    """A loaded PTX module: parsed and validated; kernels are translated at their first launch."""

    def __init__(self, ptx: str | bytes, name: str = "<ptx>", fmad: bool | None = None) -> None:
        """Parse and validate `ptx`.  `fmad` (default True, or PTXJIT_FMAD=0 to turn it off) fuses
        mul + add/sub without rounding modifiers into fma as ptxas does by default (`ptxas --fmad`),
        which is what a GPU computes; False keeps every mul and add separately rounded."""
        if isinstance(ptx, bytes):
            ptx = ptx.decode("utf-8", errors="replace")
        if not isinstance(ptx, str):
            raise TypeError(f"Module() takes PTX text (str or bytes), got {type(ptx).__name__}")
        self.name = name
        self.source_text = ptx
        if fmad is None:
            fmad = config.fmad()
        self.fmad = bool(fmad)
        # the translation depends on the contraction choice: key cached code by it
        self.ptx_digest = tr.ptx_hash(ptx) + ("" if self.fmad else "|nofmad")
        with gc_paused():  # parse, validate and rewrite: the load pipeline (jit/load.py)
            self.ir, loaded = load_module(ptx, name, self.fmad)
        self.ptx_digest += loaded.cache_key_suffix
        self.preprocess_reports = loaded.preprocess_reports
        self.contracted = loaded.contracted
        self._glay = globals_layout(self.ir)
        self.globals = np.zeros(self._glay.size, dtype=np.uint8)
        self._init_globals()
        self._lock = threading.Lock()
        self._translations: dict[tuple, tr.Translation] = {}
        self._functions: dict[str, Kernel] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> Module:
        """Load the PTX file at `path` (errors name it as the file)."""
        p = Path(path)
        return cls(p.read_text(), str(p))

    def _init_globals(self) -> None:
        base = self.globals.ctypes.data

        def addr(name: str) -> int:
            if name in self._glay.offsets:
                return base + self._glay.offsets[name][1]
            raise PTXValidationError(None, f"initializer refers to unknown variable '{name}'")

        for v, off in self._glay.inits:
            data = encode_initializer(v, addr)[: max(v.size, 0) or None]
            self.globals[off:off + len(data)] = np.frombuffer(data, dtype=np.uint8)

    # ------------------------------------------------------------ introspection
    def get_global(self, name: str, dtype=None) -> np.ndarray:
        """A writable NumPy view of a module-scope `.global`/`.const` variable (`__device__`/`__constant__`),
        typed by its PTX type and shaped by its dimensions, or viewed as `dtype` (nvcc declares initialized
        variables as `.b8` arrays: `get_global("c_poly", dtype=np.float32)`).
        Writes before a launch are what the kernel reads, as `cudaMemcpyToSymbol` does; a C++ name
        (`ns::table`) finds its mangled symbol."""
        var = next((v for v in self.ir.globals if v.name == name), None)
        if var is None:
            var = next((v for v in self.ir.globals if short_name(v.name) == name), None)
        if var is None or var.name not in self._glay.offsets:
            known = ", ".join(v.name for v in self.ir.globals if v.name in self._glay.offsets) or "none"
            raise KeyError(f"no .global/.const variable named '{name}' in {self.name}; variables: {known}")
        start = self._glay.offsets[var.name][1]
        raw = self.globals[start:start + var.size]
        if dtype is not None:
            return raw.view(dtype)
        elem = _GLOBAL_DTYPES.get(var.type)
        if elem is None or var.vector != 1:
            return raw
        shape = tuple(d for d in var.dims if d) or ()
        return raw.view(elem).reshape(shape) if shape else raw.view(elem).reshape(())

    @property
    def kernels(self) -> dict[str, KernelInfo]:
        """Every kernel (.entry) of the module by name: its parameters, shared/local sizes, PTX virtual
        register counts and instruction mix (KernelInfo)."""
        return {f.name: self._info(f) for f in self.ir.entries}

    def _info(self, f: ir.Function) -> KernelInfo:
        lay = param_layout(f.params)
        params = [ParamInfo(p.name, p.type, max(p.size, p.elem_size), p.alignment, off,
                            ir.type_size(p.type) == 8 and not p.dims, bool(p.dims))
                  for p, off in zip(f.params, lay.offsets, strict=True)]
        sh = shared_layout(self.ir, f)
        regs = Counter(f.regs.values())
        mix = Counter(i.opcode for i in f.instructions)
        return KernelInfo(f.name, params, sh.user_static_size, local_size(f), dict(regs), dict(mix),
                          sum(mix.values()), dict(f.perf), sh.dynamic_offset != sh.static_size or any(
                              v.space == "shared" and v.dims and v.dims[-1] is None
                              for v in [*self.ir.globals, *f.vars]))

    def get_function(self, name: str) -> Kernel:
        """The kernel `name`, to launch as `kernel(grid, block, args)`.  A C++ kernel is also found by
        the name its author wrote (`matmul_tiled<float, 16>`) or its full signature; KeyError lists the
        module's kernels when none matches."""
        fn = self._functions.get(name)
        if fn is not None:
            return fn
        entries = {f.name: f for f in self.ir.entries}
        f = entries.get(name)
        if f is None:  # a C++ kernel by the name its author wrote: `matmul_tiled<float, 16>`, or its full signature
            spaced = name.replace(" ", "")
            for match in (lambda e: short_name(e).replace(" ", "") == spaced,
                          lambda e: demangle(e).replace(" ", "") == spaced,
                          lambda e: _plain_name(e) == name):
                matches = [e for e in entries.values() if match(e.name)]
                if len(matches) == 1:
                    f = matches[0]
                    break
        if f is None:
            listing = ", ".join(e if short_name(e) == e else f"{e} ({short_name(e)})" for e in entries) or "none"
            raise KeyError(f"no kernel named '{name}' in {self.name}; kernels: {listing}")
        k = Kernel(self, f)
        self._functions[name] = k
        return k

    def translation(self, f: ir.Function, block: tuple[int, int, int] | None = None,
                    checked: bool = False, probes=None, opt_level: int = 3, spec=None) -> tr.Translation:
        """The native code of kernel f for launches with this block shape (grid size does not matter);
        `checked`: with bounds checks of its memory accesses (lower/safety/bounds.py); `probes`: instrumented
        (ptxjit/instrument), cached apart by the probe set's key.  `opt_level`, `spec`: a tier's
        version (ptxjit/tiers), cached apart by its level and specialization."""
        return self.compiled(f, tr.CompileOptions(block, checked, probes, opt_level, spec))

    def compiled(self, f: ir.Function, options: tr.CompileOptions) -> tr.Translation:
        """The native code of kernel f for `options` (jit/translate.py CompileOptions), translated once."""
        key = options.memory_key(f.name)
        with self._lock:
            t = self._translations.get(key)
            if t is not None:
                tr.note_memory_hit()
                return t
            with gc_paused(), foreground():  # the tiers' background builds wait (jit/priority.py)
                t = tr.translate(self.ir, f, self._glay, options, self.ptx_digest)
            self._translations[key] = t
            return t

    def cached(self, f: ir.Function, options: tr.CompileOptions) -> tr.Translation | None:
        """The translation for `options` if one was made already."""
        with self._lock:
            return self._translations.get(options.memory_key(f.name))

    def keep(self, f: ir.Function, options: tr.CompileOptions, t: tr.Translation) -> tr.Translation:
        """Keep `t`, made elsewhere (ptxjit/tiers' background builds), as the translation for `options`;
        one made meanwhile wins.  Returns the one kept."""
        with self._lock:
            return self._translations.setdefault(options.memory_key(f.name), t)


class Kernel:
    """A kernel of a Module; call it as `kernel(grid, block, args, shared_mem=0)`."""

    def __init__(self, module: Module, fn: ir.Function) -> None:
        """Made by `Module.get_function`; plans what every launch needs (argument packing, checks)."""
        self.module = module
        self.fn = fn
        self.name = fn.name
        self._layout = param_layout(fn.params)
        # what the launch checks need, computed once: pointer/read-only/width facts per parameter,
        # dynamic shared memory use, and the static shared size (CUDA's per-block limit counts both)
        self._access = analyze(module.ir, fn)
        self._static_shared = shared_layout(module.ir, fn).user_static_size  # (the reserved region is CUDA's)
        from ptxjit.lower.safety.bounds import range_params

        self._range_params = range_params(fn.params)  # the parameters with a bounds-check range
        # the per-launch work planned once: argument packing, the launch memory's layout (unchecked,
        # checked), the translations this kernel has used, and which launch checks can apply
        self._packer = ArgPacker(fn.name, fn.params, self._layout, self._access, self._range_params)
        self._plans = tuple(launch.RecordPlan(self._packer.format, self._packer.size, len(self._range_params), c)
                            for c in (False, True))
        self._range_names = [(fn.params[i].name, i) for i in self._range_params]
        self._tcache: dict[tuple, tr.Translation] = {}
        self._ntid_limits = any(self.fn.perf.get(k) for k in ("reqntid", "maxntid"))
        self._no_shared_check = (self._static_shared <= MAX_STATIC_SHARED
                                 and not self._access.dynamic_shared)  # shared_mem=0 needs no check
        self._globals: tuple = (None, 0, 0)  # the module's globals buffer, its address and size
        self._declared_cluster = bool(fn.perf.get("reqnctapercluster"))  # __cluster_dims__: a cluster launch
        from ptxjit.lower.rules.grid_sync import uses_grid_wait

        self._auto_cooperative = uses_grid_wait(fn)  # Numba's grid sync: cooperative by itself, as in Numba
        # (block, checked) -> the tiers' state for those launches (ptxjit/tiers KernelTiers), made at the first
        # tiered launch; other subsystems keep what they need per kernel in maps of their own (util.PerObject)
        self.tier_states: dict = {}

    @property
    def info(self) -> KernelInfo:
        """The kernel's parameters, memory sizes, PTX virtual registers and instruction mix."""
        return self.module._info(self.fn)

    @property
    def static_shared_size(self) -> int:
        """Bytes of static shared memory the kernel declares (CUDA's per-block limit counts them with the
        launch's dynamic shared memory)."""
        return self._static_shared

    def __call__(self, grid, block, args=(), shared_mem: int = 0, timeout: float | None = None,
                 checked: bool | None = None, unchecked: bool = False, probes=None, stream=None,
                 cooperative: bool = False, cluster=None) -> None:
        """Launch: `grid` blocks of `block` threads on `args`.  `timeout` (seconds; default
        PTXJIT_TIMEOUT, else none) stops the launch and raises KernelTimeout when it runs longer.

        Memory accesses are bounds-checked by default: one outside the arrays passed, the module's
        globals and the block's shared/local memory raises KernelFault without touching that memory
        (lower/safety/bounds.py; most checks run once per block, before its threads).  `unchecked=True`
        (or `checked=False`, PTXJIT_UNCHECKED=1) turns the checks off and is UNSAFE: an out-of-bounds
        access then silently corrupts other memory or crashes the process.

        `probes` (internal: ptxjit.trace) runs instrumented code: an object with `spec` (the probe set,
        ptxjit/instrument/emit.py ProbeSpec) and `table` (its buffers for this launch, instrument/buffers.py).

        `stream` (a ptxjit.Stream): enqueue the launch there and return at once (ptxjit/streams); the
        arguments are kept until it completes, its errors are raised at the stream's synchronization.

        `cooperative=True` (cudaLaunchCooperativeKernel): every block runs at once, so grid.sync()
        works; a grid larger than `max_cooperative_grid_blocks(block)` is refused (runtime/cooperative.py).
        `cluster=(x, y, z)` (or a kernel declaring `__cluster_dims__`): a thread-block cluster launch
        (runtime/clusters.py).

        With launch hooks installed (launch_hook), the launch goes through them first: PTXJIT_BACKEND=ray and
        PTXJIT_CHECK are launch hooks too (ptxjit/env_launchers.py)."""
        if _LAUNCH_HOOKS and probes is None:  # one global read when no hook is installed
            chain = getattr(_HOOK_STATE, "chain", None)  # inside a hook: the hooks below it
            if chain is None:
                chain = _LAUNCH_HOOKS
            if chain:
                return _run_hooks(chain, Launch(self, grid, block, args, shared_mem, timeout, checked, unchecked,
                                                stream, cooperative, cluster))
        if probes is not None:
            if cooperative or cluster is not None:
                raise ValueError(f"kernel '{self.name}': cooperative and cluster launches cannot be instrumented or "
                                 "distributed")
            if stream is not None:
                raise ValueError(f"kernel '{self.name}': instrumented launches cannot go on a stream")
        # per launch only what depends on this launch's values (the rest is planned in __init__)
        if type(grid) is int and type(block) is int and 0 < grid <= _MAX_GRID_X and 0 < block <= _MAX_BLOCK_X:
            g = (grid, 1, 1)
            b = (block, 1, 1)
        else:
            g = dims(grid, "grid")
            b = dims(block, "block")
            check_launch_shape(self.name, g, b)
        if self._ntid_limits:
            self._check_ntid(b)
        if type(shared_mem) is not int or shared_mem or not self._no_shared_check:
            if not isinstance(shared_mem, int | np.integer) or shared_mem < 0:
                raise ValueError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
            shared_mem = int(shared_mem)
            check_shared_memory(self.name, self._static_shared, shared_mem, self._access)
        if probes is not None:
            return self._launch_probed(g, b, args, shared_mem, timeout, checked, unchecked, probes)
        if unchecked:
            checked = False
        elif checked is None:
            checked = resolve_checked(None, False)
        else:
            checked = bool(checked)
        if cooperative or cluster is not None or self._declared_cluster or self._auto_cooperative:
            return self._launch_special(g, b, args, shared_mem, timeout, checked, stream,
                                        cooperative or self._auto_cooperative, cluster)
        values, ranges, patches = self._packer.pack(args, checked)
        self.launch_packed(g, b, args, values, ranges, patches, shared_mem, timeout, checked, stream)

    def launch_packed(self, g: tuple[int, int, int], b: tuple[int, int, int], args, values: list,
                      ranges: list | None, patches: list | None, shared_mem: int, timeout, checked: bool,
                      stream) -> None:
        """Run a launch whose shape is checked and whose parameters are packed (ArgPacker.pack's values,
        range entries and byte patches; the driver API's raw parameter buffers come this way too).
        `args`: the arguments by parameter index, for fault messages and kept alive while the launch runs."""
        if stream is None and _tiers_on():  # PTXJIT_TIERS (ptxjit/tiers): checked launches too
            return _tiers.launch(self, g, b, values, patches, shared_mem, timeout, args, checked, ranges)
        key = (b, checked)
        t = _tiers.stream_translation(self, g, b, values, patches, shared_mem, checked) \
            if stream is not None and _tiers_on() else self._tcache.get(key)
        if t is None:
            t = self._tcache[key] = self.module.translation(self.fn, b, checked)
        else:  # Module.translation's cache counts its hits: so does this one
            tr.note_memory_hit()
        gb, gaddr, gsize = self._globals
        if gb is not self.module.globals:
            gb = self.module.globals
            gaddr, gsize = array_address(gb), gb.nbytes
            self._globals = (gb, gaddr, gsize)
        plan = self._plans[checked]
        if stream is not None:
            return _streams.launch(stream, LaunchSpec(
                t, self.name, g, b, plan, values, ranges, patches, gaddr, gsize, shared_mem,
                watchdog.timeout_seconds(timeout), self._range_names, args, (args, gb),
                ([args[i] for i in self._range_params], gb) if self._access.uses_printf else None))
        if _streams.BUSY:  # the legacy default stream: first the blocking streams' work
            _streams.wait_legacy()
        if self._access.uses_printf:  # %s may only read memory this launch knows (runtime/printf.py)
            with printf.known_memory([args[i] for i in self._range_params], gb):
                launch.run_packed(t, self.name, g, b, plan, values, ranges, patches, gaddr, gsize, shared_mem,
                                  timeout, self._range_names, args, (args, gb))
        else:
            launch.run_packed(t, self.name, g, b, plan, values, ranges, patches, gaddr, gsize, shared_mem,
                              timeout, self._range_names, args, (args, gb))

    def _launch_special(self, g, b, args, shared_mem: int, timeout, checked: bool, stream, cooperative: bool,
                        cluster) -> None:
        """A cooperative or cluster launch (runtime/cooperative.py, runtime/clusters.py)."""
        if cooperative and (cluster is not None or self._declared_cluster):
            raise ValueError(f"kernel '{self.name}': cooperative cluster launches are not supported")
        # it runs now, in its stream's order: first that stream's earlier work, or the blocking streams' work
        # for the legacy default stream (done once the launch's shape is accepted)
        wait_streams = stream.synchronize if stream is not None else _wait_legacy
        if cooperative:
            from ptxjit.runtime.cooperative import launch_cooperative

            return launch_cooperative(self, g, b, args, shared_mem, timeout, checked, wait_streams)
        from ptxjit.runtime.clusters import launch_clusters

        return launch_clusters(self, g, b, args, shared_mem, timeout, checked, cluster, wait_streams)

    def max_cooperative_grid_blocks(self, block, shared_mem: int = 0) -> int:
        """The most blocks a cooperative launch with this block accepts (runtime/cooperative.py)."""
        from ptxjit.runtime.cooperative import max_cooperative_grid_blocks

        return max_cooperative_grid_blocks(self, block, shared_mem)

    def _check_ntid(self, b: tuple[int, int, int]) -> None:
        """The block shapes the kernel's .reqntid / .maxntid allow."""
        nthreads = b[0] * b[1] * b[2]
        for key in ("reqntid", "maxntid"):
            lim = self.fn.perf.get(key)
            if lim:
                lim3 = tuple(lim) + (1,) * (3 - len(lim))
                if key == "reqntid" and b != lim3:
                    raise ValueError(f"kernel '{self.name}' requires block {lim3} (.reqntid), got {b}")
                if key == "maxntid" and nthreads > lim3[0] * lim3[1] * lim3[2]:
                    raise ValueError(f"kernel '{self.name}' allows at most {lim3} threads (.maxntid), got {b}")

    def _launch_probed(self, g, b, args, shared_mem: int, timeout, checked, unchecked, probes) -> None:
        """An instrumented launch (ptxjit.trace): the general path, without the fast path's plans."""
        params, keep = pack_arguments(self.name, self.fn.params, args, self._layout, self._access)
        checked = resolve_checked(checked, unchecked)
        spec = probes.spec if probes is not None else None
        t = self.module.translation(self.fn, None if spec is not None and spec.generic else b, checked, spec)
        table = probes.table if probes is not None else None
        ranges = names = None
        if checked:
            ranges = launch.range_table(self._range_params, args, params, self.module.globals)
            names = [(self.fn.params[i].name, i, args[i]) for i in self._range_params]
        if self._access.uses_printf:  # %s may only read memory this launch knows (runtime/printf.py)
            with printf.known_memory(keep, self.module.globals):
                launch.run(t, self.name, g, b, params, self.module.globals, int(shared_mem), timeout, ranges, names,
                           table)
        else:
            launch.run(t, self.name, g, b, params, self.module.globals, int(shared_mem), timeout, ranges, names,
                       table)
        del keep


def _wait_legacy() -> None:
    """A launch on the legacy default stream: first the blocking streams' work."""
    if _streams.BUSY:
        _streams.wait_legacy()


_MAX_GRID_X = MAX_GRID[0]
_tiers_on = _tiers.enabled
_MAX_BLOCK_X = min(MAX_BLOCK[0], MAX_THREADS_PER_BLOCK)  # an int block: CUDA's block.x and threads limits


# ---------------------------------------------------------------------------------------- launch hooks
class Launch(NamedTuple):
    """One launch as a launch hook sees it: `Kernel.__call__`'s arguments as the caller passed them
    (`grid` and `block` an int or a tuple, `checked` None where the caller did not choose).  Immutable: a
    hook that changes a launch passes `launch.replace(...)` to `proceed`.  (A named tuple: every hooked
    launch makes one, and a frozen dataclass takes three times as long to build.)"""

    kernel: Kernel
    grid: object
    block: object
    args: object = ()
    shared_mem: int = 0
    timeout: float | None = None
    checked: bool | None = None
    unchecked: bool = False
    stream: object = None
    cooperative: bool = False
    cluster: object = None

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        """The grid as three ints (TypeError or ValueError as the launch would raise them)."""
        return dims(self.grid, "grid")

    @property
    def block_dims(self) -> tuple[int, int, int]:
        """The block as three ints (TypeError or ValueError as the launch would raise them)."""
        return dims(self.block, "block")

    def replace(self, **changes) -> Launch:
        """This launch with some fields changed: `launch.replace(checked=True)`."""
        return self._replace(**changes)


LaunchHook = Callable[[Launch, Callable[..., object]], object]

# The installed hooks, oldest first; a launch calls the newest first.  A tuple replaced as a whole (under
# _HOOKS_LOCK) so that a launch reads a consistent chain without taking a lock, and Kernel.__call__ tests
# one global when there is none.
_LAUNCH_HOOKS: tuple[LaunchHook, ...] = ()
_INSTALLED: list[object] = []  # one token per installation, in _LAUNCH_HOOKS's order
_HOOKS_LOCK = threading.Lock()
# per thread, while a hook runs: the hooks a launch it makes itself goes through (those below it; () past
# the last, so that ptxjit's own launch and anything it launches skip them all)
_HOOK_STATE = threading.local()


def _run_hooks(chain: tuple[LaunchHook, ...], launch: Launch):
    hook, below = chain[-1], chain[:-1]

    def proceed(changed: Launch | None = None):
        """Run the launch (or `changed` instead) through the hooks below this one, then ptxjit."""
        todo = launch if changed is None else changed
        return _run_hooks(below, todo) if below else _run_plain(todo)

    saved = getattr(_HOOK_STATE, "chain", None)
    _HOOK_STATE.chain = below
    try:
        return hook(launch, proceed)
    finally:
        _HOOK_STATE.chain = saved


def _run_plain(launch: Launch):
    saved = getattr(_HOOK_STATE, "chain", None)
    _HOOK_STATE.chain = ()
    try:
        return launch.kernel(launch.grid, launch.block, launch.args, launch.shared_mem, launch.timeout,
                             launch.checked, launch.unchecked, stream=launch.stream, cooperative=launch.cooperative,
                             cluster=launch.cluster)
    finally:
        _HOOK_STATE.chain = saved


def add_launch_hook(hook: LaunchHook) -> Callable[[], None]:
    """Install `hook` for every Kernel launch in the process, from any thread, until the function this
    returns is called (launch_hook is the scoped form).  Each launch calls `hook(launch, proceed)`:
    `launch` a Launch, `proceed()` runs it (through the hooks installed before this one, then ptxjit)
    and `proceed(other)` runs another Launch instead; not calling it skips the launch.  What the hook
    returns, the launch returns.  The newest hook sees a launch first.  Launches a hook makes itself go
    through the hooks below it only, so a hook may launch kernels (or call ptxjit.trace) without seeing
    its own launches; instrumented launches (ptxjit.trace's, ptxjit.check's) and launches the driver and
    runtime libraries make (cuLaunchKernel, a program under `ptxjit exec`) do not go through hooks."""
    if not callable(hook):
        raise TypeError(f"a launch hook must be callable, got {hook!r}")
    global _LAUNCH_HOOKS
    token = object()  # this installation: the same function installed twice is removed once per remove()
    with _HOOKS_LOCK:
        _INSTALLED.append(token)
        _LAUNCH_HOOKS = (*_LAUNCH_HOOKS, hook)

    def remove() -> None:
        global _LAUNCH_HOOKS
        with _HOOKS_LOCK:
            if token in _INSTALLED:  # a second call does nothing
                i = _INSTALLED.index(token)
                del _INSTALLED[i]
                _LAUNCH_HOOKS = _LAUNCH_HOOKS[:i] + _LAUNCH_HOOKS[i + 1:]

    return remove


@contextmanager
def launch_hook(hook: LaunchHook) -> Iterator[None]:
    """`with launch_hook(hook):` every Kernel launch in the process goes through `hook` (add_launch_hook
    says how) until the block ends; blocks nest, the innermost hook seeing a launch first."""
    remove = add_launch_hook(hook)
    try:
        yield
    finally:
        remove()


def launch_hooks() -> tuple[LaunchHook, ...]:
    """The hooks installed now, the first a launch calls first."""
    return _LAUNCH_HOOKS[::-1]
