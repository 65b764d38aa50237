"""PTX kernel -> native code, launch-time: lowering, LLVM optimization, object code, with an
in-memory cache (per Module) and an on-disk cache (shared between processes)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm

from ptxjit import accounting, config
from ptxjit.frontend import ir
from ptxjit.jit import cache, shared_code
from ptxjit.jit.engine import BASELINE, NativeCode, host_description, load_object, optimize_to_object
from ptxjit.lower.layout import GlobalsLayout, SharedLayout
from ptxjit.lower.layout import local_size as fn_local_size
from ptxjit.lower.module import WORKER_SYMBOL, ModuleCodegen

VERSION = "0.1.0"


@dataclass
class Translation:
    kernel: str
    block: tuple[int, int, int] | None
    native: NativeCode
    save_stride: int
    local_stride: int
    shared: SharedLayout
    has_yields: bool
    locations: list[tuple[str, str]]  # per instruction id: ("file:line:col", "opcode text")
    seconds: float
    from_disk: bool = False
    nyields: int = 0
    xbuf_points: int = 0  # region mode: exchange-buffer row pairs (0: nyields + 1; lower/function.py)
    checked: bool = False  # bounds-checked code: the launch must give it a range table (L_RANGES)
    probes: str = ""  # instrumented code (ptxjit/instrument): its probe key; the launch must give a probe table
    # where a fresh translation's time went (seconds): analysis (the passes over the PTX), ir_build (the
    # lowering's LLVM IR), ir_text (its text), llvm_passes and codegen (or llvm: both, in a child process), link
    phases: dict[str, float] | None = None
    llvm_lines: int = 0  # the LLVM IR's size, in lines


@dataclass(frozen=True, eq=False)
class CompileOptions:
    """What one translation of a kernel is built for, and the one key both caches (the module's in memory, the
    disk cache) file it under.  `block`: the block shape it is specialized for (None: any); `checked`: bounds
    checks of its memory accesses (lower/safety/bounds.py); `probes`: instrumentation (ptxjit/instrument, an
    object with a `key`); `opt_level`: LLVM's level (ptxjit/tiers builds its quick tier 0 lower); `spec`: a
    tier's constants for parameters and launch slots (ptxjit/tiers/specialize.py, with a `key`)."""

    block: tuple[int, int, int] | None = None
    checked: bool = False
    probes: object = None
    opt_level: int = 3
    spec: object = None

    @property
    def probe_key(self) -> str:
        return self.probes.key if self.probes is not None else ""

    @property
    def key(self) -> str:
        """Everything but the block, as text: what sets this translation apart from the plain one."""
        pkey = self.probe_key
        return (("|checked" if self.checked else "") + (f"|probes={pkey}" if pkey else "")
                + (f"|O{self.opt_level}" if self.opt_level != 3 else "")
                + (f"|spec={self.spec.key}" if self.spec is not None else ""))

    def memory_key(self, kernel: str) -> tuple:
        """The module's in-memory cache key of kernel's translation with these options."""
        return (kernel, self.block, self.key)


_stats = {"translations": 0, "memory_hits": 0, "disk_hits": 0}
_lock = threading.Lock()
_host = ""


def cache_stats() -> dict[str, int]:
    """translations: kernels compiled by this process; memory_hits / disk_hits: launches served by a cache."""
    with _lock:
        return dict(_stats)


def note_memory_hit() -> None:
    with _lock:
        _stats["memory_hits"] += 1


def _count(what: str) -> None:
    with _lock:
        _stats[what] += 1


def translation_key(ptx_hash: str, kernel: str, block: tuple[int, int, int] | None) -> str:
    global _host
    if not _host:
        _host = host_description() + "|" + compiler_fingerprint()
    return cache.cache_key(ptx_hash, kernel, repr(block), VERSION, str(llvm.llvm_version_info), _host)


def _shared_code_key(symbol: str) -> str:
    return translation_key("shared-code", symbol, None)


@functools.cache
def compiler_fingerprint() -> str:
    """Hash of the translator's own source: any change to it invalidates cached translations, also
    between releases with the same version number (and in a development checkout)."""
    h = hashlib.sha256()
    pkg = Path(__file__).resolve().parent.parent
    # the whole package: tiers (specializations), checking (probes) and the runtime's ABI shape code too
    for f in sorted(pkg.rglob("*.py")):
        h.update(f.relative_to(pkg).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def ptx_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def translate(module: ir.Module, kernel: ir.Function, glay: GlobalsLayout, options: CompileOptions,
              ptx_digest: str | None = None, lock=None, optimizer=None) -> Translation:
    """Kernel's native code for `options`, from the disk cache when `ptx_digest` (the module's text's hash)
    finds it there.  `lock`: held only while lowering reads the module's IR (ptxjit/tiers' background
    builds), not through LLVM's optimization and code generation, so that other launches do not wait for
    them.  `optimizer`: in place of engine.optimize_to_object (the tiers run it in a child process)."""
    t0 = time.perf_counter()
    block, checked, probes, opt_level, spec = (options.block, options.checked, options.probes, options.opt_level,
                                               options.spec)
    pkey = options.probe_key
    key = translation_key(ptx_digest + options.key, kernel.name, block) if ptx_digest else None
    # PTXJIT_DUMP_DIR wants the IR and assembly, which a cached object lacks: translate afresh (and re-cache)
    if key is not None and not config.DUMP_DIR.raw():
        hit = cache.load(key)
        if hit is not None:
            meta, obj = hit
            try:
                shared_code.ensure(meta.get("shared_code", ()), _shared_code_key)  # before the link: it names them
                native = load_object(obj, WORKER_SYMBOL, kernel.name)
            except Exception:  # unusable object (e.g. other LLVM build): rebuild below
                native = None
            if native is not None:
                try:  # an entry is checksummed and bound to its key; still, malformed metadata only rebuilds
                    sh = meta["shared"]
                    hit_tr = Translation(kernel.name, block, native, int(meta["save_stride"]),
                                         int(meta["local_stride"]),
                                         SharedLayout(dict(sh["offsets"]), int(sh["static_size"]),
                                                      int(sh["dynamic_offset"])),
                                         bool(meta["has_yields"]), [tuple(x) for x in meta["locations"]],
                                         time.perf_counter() - t0, from_disk=True, nyields=int(meta["nyields"]),
                                         xbuf_points=int(meta.get("xbuf_points", 0)),
                                         checked=checked, probes=pkey)
                except (KeyError, TypeError, ValueError):
                    hit_tr = None
                if hit_tr is not None:
                    _count("disk_hits")
                    accounting.translated(hit_tr.seconds, lock is not None, from_disk=True)
                    return hit_tr
    phases: dict[str, float] = {}
    with lock if lock is not None else contextlib.nullcontext():
        t_lower = time.perf_counter()
        cg = ModuleCodegen(module, kernel, glay, block, checked=checked, probes=probes, spec=spec,
                           baseline=opt_level == BASELINE)
        llmod = cg.build()
        t_text = time.perf_counter()
        llvm_ir = str(llmod)
        phases.update(analysis=cg.analysis_seconds, ir_build=t_text - t_lower - cg.analysis_seconds,
                      ir_text=time.perf_counter() - t_text)
    t_opt = time.perf_counter()
    if optimizer is None:
        obj = optimize_to_object(llvm_ir, opt_level=opt_level, name=kernel.name, timings=phases)
    else:
        obj = optimizer(llvm_ir, opt_level=opt_level, name=kernel.name)
        phases["llvm"] = time.perf_counter() - t_opt
    t_link = time.perf_counter()
    shared_code.ensure(cg.shared_code, _shared_code_key)
    native = load_object(obj, WORKER_SYMBOL, kernel.name)
    phases["link"] = time.perf_counter() - t_link
    _count("translations")
    locations = [(str(i.pos), i.text) for i in cg.locations]  # CUDA line first where .loc gives one
    tr = Translation(kernel.name, block, native, cg.body_save_stride, fn_local_size(kernel), cg.shared,
                     cg.has_yields, locations, time.perf_counter() - t0, nyields=cg.nyields, checked=checked,
                     xbuf_points=getattr(cg, "xbuf_points", 0),
                     probes=pkey, phases=phases, llvm_lines=llvm_ir.count("\n"))
    accounting.translated(tr.seconds, lock is not None)  # `lock`: a tiers build on its own thread
    if key is not None:
        cache.store(key, {
            "kernel": kernel.name, "save_stride": tr.save_stride, "local_stride": tr.local_stride,
            "shared": {"offsets": cg.shared.offsets, "static_size": cg.shared.static_size,
                       "dynamic_offset": cg.shared.dynamic_offset},
            "has_yields": tr.has_yields, "locations": locations, "nyields": tr.nyields,
            "xbuf_points": tr.xbuf_points, "shared_code": cg.shared_code,
        }, obj)
    return tr
