"""LLVM JIT: optimize an LLVM module for the host CPU and return native entry points."""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
import time
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite.binding.common import _is_shutting_down

from ptxjit import config

_lock = threading.Lock()
_state: dict[str, object] = {}


_build_machines = threading.local()  # per thread: a target machine is not safe to share between threads


def _build_machine(opt: int) -> llvm.TargetMachine:
    """The target machine that optimizes and emits this thread's builds at code-generator level `opt`
    (kept: creating one costs 0.3 ms a build; no engine owns these)."""
    machines = _build_machines.__dict__.setdefault("by_level", {})
    tm = machines.get(opt)
    if tm is None:
        tm = machines[opt] = _target_machine(opt)
    return tm


def _target_machine(opt: int = 3) -> llvm.TargetMachine:
    """A new host target machine (`opt`: its code generator's level).  Each MCJIT engine takes
    ownership of (and frees) its own, so target machines are never shared between engines."""
    with _lock:
        if not _state.get("initialized"):
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            # the host's name and features, asked once (half a millisecond a time, twice per build)
            _state["host"] = (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
            _state["initialized"] = True
    cpu, features = _state["host"]
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, reloc="default",
                                        codemodel="jitdefault")


def host_description() -> str:
    """CPU name and features: part of every translation-cache key."""
    _target_machine()
    cpu, features = _state["host"]
    return f"{cpu}|{features}|llvm{llvm.llvm_version_info}"


WorkerFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


@dataclass
class NativeCode:
    """A compiled kernel: keeps the engine alive as long as the entry point is used."""

    engine: object
    worker: object  # ctypes function: worker(launch*, worker*)
    address: int


BASELINE = 0  # opt_level of the baseline build (the tiers' first version of a kernel): compile speed first
# The baseline's passes: the lowering keeps every PTX register in a stack slot (SROA makes them SSA values,
# as mem2reg), instruction combining folds the operand and bounds-check arithmetic, and simplify-cfg merges
# the lowering's many small blocks.  A fraction of O2's time (bitonic sort: 0.11 s against 0.81 s), and the
# code generator at its fast level.
_BASELINE_PASSES = ("sroa", "instruction_combine", "simplify_cfg")


def optimize_to_object(ir_text: str, opt_level: int = 3, name: str = "kernel",
                       timings: dict[str, float] | None = None) -> bytes:
    """Parse, verify and optimize LLVM IR for the host CPU; return relocatable object code.
    `timings` (when given) receives llvm_passes (parsing included) and codegen, in seconds.
    `opt_level` < 2 (the tiers' quick first version, ptxjit/tiers) also lowers the code generator's
    level: instruction selection and register allocation dominate a low-level build's time."""
    tm = _build_machine(3 if opt_level >= 2 else 0)
    # Each build parses into an LLVMContext of its own: LLVM's global context is not thread-safe, and
    # builds run in several threads at once (a kernel's first version next to another's tier-1 link)
    t_start = time.perf_counter()
    ctx = llvm.create_context()
    mod = None
    try:
        mod = llvm.parse_assembly(ir_text, context=ctx)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        dump_dir = config.DUMP_DIR.raw()
        if dump_dir:  # for looking at what the translation became: IR before and after, assembly, object
            _dump(dump_dir, name, ".ll", ir_text)
        if opt_level == BASELINE:
            pm = llvm.create_new_module_pass_manager()
            for p in _BASELINE_PASSES:
                getattr(pm, f"add_{p}_pass")()
        else:
            pm = pb.getModulePassManager()
        pm.run(mod, pb)
        t_codegen = time.perf_counter()
        obj = tm.emit_object(mod)
        if timings is not None:
            timings.update(llvm_passes=t_codegen - t_start, codegen=time.perf_counter() - t_codegen)
        if dump_dir:
            _dump(dump_dir, name, ".opt.ll", str(mod))
            _dump(dump_dir, name, ".s", tm.emit_assembly(mod))
            _dump(dump_dir, name, ".o", obj)
        return obj
    finally:
        if mod is not None:
            mod.close()  # before its context
        ctx.close()


def _dump(directory: str, name: str, suffix: str, data: str | bytes) -> None:
    os.makedirs(directory, exist_ok=True)
    if len(name) > 120:  # mangled names (numba's run to hundreds of characters) within a file name's limit
        name = f"{name[:100]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    with open(os.path.join(directory, name + suffix), "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def load_object(obj: bytes, entry: str, name: str = "") -> NativeCode:
    """Link object code into the process (external symbols such as libm resolve here).  `name`
    (the kernel's) labels the code for profilers: with PTXJIT_PERF_MAP=1 its address range goes to
    /tmp/perf-<pid>.map, the file `perf report` reads to name JIT code (`ptxjit:<kernel>`)."""
    tm = _target_machine()
    ctx = llvm.create_context()  # the engine's own (see optimize_to_object); freed after the engine
    holder = llvm.parse_assembly("", context=ctx)
    holder.triple = tm.triple
    owner = _OwnedEngine(llvm.create_mcjit_compiler(holder, tm), ctx)
    engine = owner.engine
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    addr = engine.get_function_address(entry)
    if not addr:
        raise RuntimeError(f"compiled kernel object lacks its entry point '{entry}'")
    if config.DUMP_DIR.raw():  # where the code landed, to match profiler addresses
        print(f"ptxjit: {entry} loaded at {addr:#x}", flush=True)
    if config.perf_map():
        _perf_map(llvm.ObjectFileRef.from_data(obj), addr, name or entry)  # (the engine owns the first)
    return NativeCode(owner, WorkerFn(addr), addr)


class _OwnedEngine:
    """An MCJIT engine and the LLVMContext of the module it owns.  The engine goes first: its module
    leaves the context as it is destroyed.  The context is detached from llvmlite's own finalizer, which
    the garbage collector could run before the engine's."""

    def __init__(self, engine, ctx) -> None:
        self.engine = engine
        self._ctx = ctx._ptr
        ctx.detach()

    def __del__(self, _is_shutting_down=_is_shutting_down) -> None:
        if _is_shutting_down():  # as llvmlite's own objects: nothing of LLVM is freed at interpreter exit
            return
        self.engine.close()
        llvm.ffi.lib.LLVMPY_ContextDispose(self._ctx)


def _perf_map(objref, entry_addr: int, name: str) -> None:
    """Append the code's range to perf's map of JIT code (one line: start, size, symbol).  The entry
    point opens the object's text section (the worker function comes first), so the section's size
    from `entry_addr` covers the kernel (its thread loops, regions, inlined device functions)."""
    size = max((s.size() for s in objref.sections() if s.is_text()), default=0)
    if size <= 0:
        return
    with _lock, open(f"/tmp/perf-{os.getpid()}.map", "a") as f:
        f.write(f"{entry_addr:x} {size:x} ptxjit:{name}\n")
