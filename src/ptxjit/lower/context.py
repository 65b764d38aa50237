"""What a kernel's module is to the lowering of its functions: ModuleContext, the state of one launch-time
specialization and the queries FnLowering (lower/function.py) asks of the module being built."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.errors import PTXValidationError, UnsupportedInstructionError
from ptxjit.frontend import ir
from ptxjit.isa.effects import suspends
from ptxjit.lower.builders import noalias_records, type_suffix
from ptxjit.lower.layout import GlobalsLayout, param_layout, shared_layout
from ptxjit.lower.layout import local_size as fn_local_size
from ptxjit.lower.progress import spin_points
from ptxjit.lower.types import I8, I32, I64, PTR, VOID
from ptxjit.passes.lockstep import lockstep_loops
from ptxjit.passes.recursion import recursive_functions
from ptxjit.passes.shflsched import group_shuffles
from ptxjit.passes.unroll import unroll_lockstep
from ptxjit.passes.warpsync import warp_sync_points


class ModuleContext:
    """One kernel's module as its functions' lowering sees it (lower/function.py FnLowering takes one):
    the launch-time specialization (block shape, checked, probes, tier 1's profile), the kernel's
    parameter and shared-memory layouts, and the symbols, intrinsics, metadata and device functions of the
    LLVM module being built.  ModuleCodegen (lower/module.py) builds the module around it."""

    def __init__(self, module: ir.Module, kernel: ir.Function, globals_layout: GlobalsLayout,
                 block: tuple[int, int, int] | None = None, checked: bool = False, probes=None,
                 spec=None, instrumented: bool = False, baseline: bool = False) -> None:
        """`instrumented`: lower as for `probes` (set when only the kernel as lowered is wanted: the probe
        plan's view, ptxjit/instrument/probes.py lowered_kernel).  `baseline`: for the baseline build
        (jit/engine.py BASELINE), one copy of each thread loop: no fast copies whose accesses are checked
        once per CTA before the loop, no copy without the kernel's entry guard, no counted loops checked
        on entry (each saves run time only after LLVM's optimizations, and costs its IR every time)."""
        self.module = module
        self.analysis_seconds = 0.0  # build(): the time of the passes over the PTX (FnLowering's analyses)
        self.recursive = recursive_functions(module)  # device functions that get a stack guard
        # profile-guided specialization (ptxjit/tiers/specialize.py): parameter bytes by offset and
        # launch-record slots read as constants; the launches that run this code are guarded to match
        self.spec_params: dict[int, bytes] = dict(spec.params) if spec is not None else {}
        self.launch_consts: dict[int, int] = dict(spec.launch) if spec is not None else {}
        # tier 1's branch weights from tier 0's block counters: (function, stmt) -> (taken, fall-through)
        self.branch_weights: dict[tuple[str, int], tuple[int, int]] = {
            (f, i): (t, n) for f, i, t, n in getattr(spec, "weights", ())}
        # instrumentation (ptxjit/instrument): an object that emits probes into the code (FnLowering's
        # `probes`) and the worker loop (worker_prologue, before_cta, after_cta); None: plain code
        self.probes = probes
        # memory safety (lower/safety/bounds.py); kernels calling device malloc also accept the heap's live blocks
        self.checked = checked
        self.baseline = baseline
        # lower/safety/bounds.py: faults recorded per thread outside thread loops (scan W_FAULT)
        self.fault_scan = False
        # (a module that declares malloc or free: its kernels may reach blocks another launch allocated)
        self.uses_heap = checked and any(
            name in module.functions and module.functions[name].body is None for name in ("malloc", "free"))
        # launch-time specialization: a known block shape makes %ntid, %tid and the thread loop's
        # trip count constants (None: generic code reading them from the launch record)
        self.block = block
        self.kernel = kernel
        self.glay = globals_layout
        self.llmod = ll.Module(name=kernel.name)
        play = param_layout(kernel.params)
        self.kparams = {p.name: off for p, off in zip(kernel.params, play.offsets, strict=True)}
        self.kparam_size = play.size
        self.shared = shared_layout(module, kernel)
        # tier 1's branch weights by instruction object (the kernel's statements as the counters
        # indexed them: lowered_kernel, before unrolling and shuffle grouping move them)
        self.weights_of: dict[int, tuple[int, int]] = {}
        if block is not None:  # region mode can run stride loops in lockstep across the CTA
            self.kernel = lockstep_loops(kernel, self.yields, block)
            # warp-synchronous volatile code runs its steps in lockstep rounds (passes/warpsync.py)
            self.kernel = warp_sync_points(self.kernel, self.yields)
            # and suspend threads that spin on a flag, so that the thread setting it runs
            self.kernel = spin_points(self.kernel, self.yields)
            counted_body = self.kernel.body or []
            for (f, i), w in self.branch_weights.items():
                if f == kernel.name and 0 <= i < len(counted_body):
                    self.weights_of[id(counted_body[i])] = w
            unroll = dict(getattr(spec, "unroll", ()))
            if unroll:  # tier 1: lockstep loops unrolled by the trip counts tier 0 saw (passes/unroll.py)
                self.kernel, origin = unroll_lockstep(self.kernel, unroll)
                for new_id, old in origin.items():
                    if id(old) in self.weights_of:
                        self.weights_of[new_id] = self.weights_of[id(old)]
            # independent shuffles back to back, to share suspension points (not in instrumented code:
            # its probe plans count one point per shuffle, in the PTX's order)
            if probes is None and not instrumented:
                self.kernel = group_shuffles(self.kernel)
        self.locations: list[ir.Instr] = []
        self._loc_ids: dict[int, int] = {}
        self.funcs: dict[str, ll.Function] = {}
        self.pending: list[ir.Function] = []
        self.body_save_stride = 0

    # ------------------------------------------------------------------ queries used by FnLowering
    def symbol(self, name: str, fn: ir.Function, ins: ir.Instr | None) -> tuple[str, int]:
        if fn is self.kernel and name in self.kparams:
            return "kparam", self.kparams[name]
        if name in self.shared.offsets:
            return "shared", self.shared.offsets[name]
        if name in self.glay.offsets:
            return self.glay.offsets[name]
        f = self.module.functions.get(name)
        if f is not None and f.body is not None and not f.is_entry:
            return "func", 0
        raise PTXValidationError(ins.pos if ins else fn.pos, f"unknown symbol '{name}' in function '{fn.name}'")

    def yields(self, ins: ir.Instr) -> bool:
        return suspends(ins)

    def location_id(self, ins: ir.Instr | None) -> int:
        if ins is None:
            return -1
        key = id(ins)
        if key not in self._loc_ids:
            self._loc_ids[key] = len(self.locations)
            self.locations.append(ins)
        return self._loc_ids[key]

    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Type], exact: bool = False) -> ll.Function:
        """Declare (once) an LLVM intrinsic; overloaded names get the first argument's type suffix."""
        if not exact:
            t = args[0] if args else ret
            name = f"{name}.{type_suffix(t)}"
        return self.extern_function(name, ret, args)

    def scopes(self, *names: str):
        """A list of alias scopes.  'internal' holds the runtime's own per-thread buffers (register
        save area, thread states, warp exchange), which kernel memory accesses never touch;
        'shared' and 'local' hold those state spaces, which global addresses never reach.  Telling
        LLVM lets it vectorize loops whose addresses it cannot analyse (indices restored from the
        save area) past their stores."""
        cache = self.__dict__.setdefault("_scopes", {})
        if not cache:
            cache["domain"] = self.llmod.add_metadata([ll.MetaDataString(self.llmod, "ptxjit")])
        key = tuple(sorted(names))
        md = cache.get(key)
        if md is None:
            scope = [cache.get(("scope", n)) or cache.setdefault(("scope", n), self.llmod.add_metadata(
                [ll.MetaDataString(self.llmod, "ptxjit." + n), cache["domain"]])) for n in key]
            md = cache[key] = self.llmod.add_metadata(scope)
        return md

    def empty_md(self):
        md = getattr(self, "_empty_md", None)
        if md is None:
            md = self._empty_md = self.llmod.add_metadata([])
        return md

    SCRATCH_BYTES = 256  # larger than any single load or store (a .v8 of 64-bit elements is 64 bytes)

    def scratch_area(self, store: bool, size: int) -> ll.Value:
        """Where a bounds-checked access goes when it is out of bounds (lower/safety/bounds.py redirected):
        for loads a constant block of zeros, for stores a junk block nobody reads (racy writes of junk
        by several workers are harmless)."""
        if size > self.SCRATCH_BYTES:
            raise ValueError(f"access of {size} bytes is larger than the bounds-check scratch area")
        name = "__ptxjit_oob_junk" if store else "__ptxjit_oob_zeros"
        g = self.llmod.globals.get(name)
        if g is None:
            ty = ll.ArrayType(I8, self.SCRATCH_BYTES)
            g = ll.GlobalVariable(self.llmod, ty, name=name)
            g.linkage = "internal"
            g.align = 64
            g.initializer = ll.Constant(ty, None)
            g.global_constant = not store
        return g.bitcast(PTR)

    def extern_function(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        g = self.llmod.globals.get(name)
        if g is None:
            g = ll.Function(self.llmod, ll.FunctionType(ret, args), name=name)
        return g

    def local_stride(self, fn: ir.Function) -> int:
        return fn_local_size(fn)

    def device_function(self, name: str, ins: ir.Instr) -> ll.Function:
        f = self.funcs.get(name)
        if f is not None:
            return f
        target = self.module.functions.get(name)
        if target is None:
            raise UnsupportedInstructionError(ins.pos, ins.text, f"call to unknown function '{name}'")
        if target.body is None:
            raise UnsupportedInstructionError(ins.pos, ins.text, f"call to external function '{name}'")
        nargs = len(target.params) + len(target.rets)
        fnty = ll.FunctionType(VOID, [I64.as_pointer(), I64.as_pointer(), I32] + [PTR] * nargs)
        f = ll.Function(self.llmod, fnty, name="dev." + name)
        f.linkage = "internal"
        noalias_records(f)
        self.funcs[name] = f
        self.pending.append(target)
        return f

    def new_cta_function(self) -> tuple[ll.Function, ll.IRBuilder]:
        """A new run_cta(launch, worker, nthreads) function and a builder at its entry."""
        i64p = I64.as_pointer()
        f = ll.Function(self.llmod, ll.FunctionType(I32, [i64p, i64p, I32]), name="run_cta")
        f.linkage = "internal"
        noalias_records(f)
        return f, ll.IRBuilder(f.append_basic_block("entry"))

