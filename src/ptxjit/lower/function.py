"""Lowering of one PTX function body to one LLVM function.

`FnLowering` owns the LLVM builder and everything rules need: typed operand reads and writes,
address computation per state space, labels, guards, yields (suspension points for barriers and
warp collectives) and traps.  Rules (lower/rules/*) only call these helpers.

A kernel body is lowered to `i32 body(i64* launch, i64* worker, i32 tlin, i32 resume)`: it runs
one GPU thread from `resume` until it exits (returns 0) or reaches a suspension point (returns
that point's code after saving its registers).  A device function is lowered to
`void f(i64* launch, i64* worker, i32 tlin, i8* param0, ..., i8* ret0, ...)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ptxjit.errors import UnsupportedInstructionError
from ptxjit.frontend import ir
from ptxjit.isa.special import is_special
from ptxjit.lower import abi
from ptxjit.lower.folding import FoldingBuilder
from ptxjit.lower.operands import OperandLowering, nan_classes
from ptxjit.lower.progress import SPINPOINT, ProgressLowering, back_edges
from ptxjit.lower.regions import RegionLowering
from ptxjit.lower.registry import RULES
from ptxjit.lower.safety.bounds import BoundsChecks
from ptxjit.lower.special import special_register
from ptxjit.lower.threadloop import ThreadLoopLowering
from ptxjit.lower.types import I8, I32, I64, PTR, const_int, lltype
from ptxjit.passes.affine import tid_affine
from ptxjit.passes.dataflow import defs_uses, liveness, operand_reg_names
from ptxjit.passes.pointers import pointer_registers
from ptxjit.passes.recursion import RECURSION_STACK_BYTES
from ptxjit.passes.remat import rematerializable
from ptxjit.passes.shflchain import shuffle_chains
from ptxjit.passes.shflsched import batched_shfls

if TYPE_CHECKING:
    from ptxjit.lower.context import ModuleContext
    from ptxjit.passes.shflchain import Chain

MAX_THREAD_BYTES = 512 * 1024  # local memory per thread on sm_90 (a .param/.local variable lives there too)


# launch record slots nothing writes while the launch runs (the error, cursor and completion slots change)
_FIXED_LAUNCH_SLOTS = frozenset({abi.L_PARAMS, abi.L_GLOBALS, abi.L_GRID, abi.L_GRID + 1, abi.L_GRID + 2,
                                 abi.L_BLOCK, abi.L_BLOCK + 1, abi.L_BLOCK + 2, abi.L_NCTAS, abi.L_DYN_SMEM,
                                 abi.L_PRINTF, abi.L_GRIDID, abi.L_NTHREADS, abi.L_NWORKERS, abi.L_RANGES,
                                 abi.L_PROBE, abi.L_COOP, abi.L_CLUSTER})


class FnLowering(ThreadLoopLowering, RegionLowering, ProgressLowering, OperandLowering):
    def __init__(self, cg: ModuleContext, fn: ir.Function, llfn: ll.Function, is_kernel: bool,
                 batched: set[int] | frozenset[int] = frozenset()) -> None:
        self.cg = cg
        self.fn = fn
        self.llfn = llfn
        self.is_kernel = is_kernel
        self.launch, self.worker, self.tlin = llfn.args[0], llfn.args[1], llfn.args[2]
        self.entry = llfn.append_basic_block("entry")
        self.b = FoldingBuilder(self.entry)  # constant arithmetic folded as it is emitted (lower/folding.py)
        self.regs: dict[str, ll.AllocaInstr] = {}
        self.reg_types: dict[str, str] = dict(fn.regs)
        self.labels: dict[str, ll.Block] = {}
        self.var_ptrs: dict[str, ll.Value] = {}  # function-scope .param/.local variables
        self.cur: ir.Instr | None = None
        self.yield_blocks: list[tuple[int, ll.Block]] = []
        # register save area layout (used at suspension points): one slot per register
        self.save_slots: dict[str, int] = {}
        self.save_stride = 0
        for name, t in fn.regs.items():
            size = max(8, ir.type_size(t))
            self.save_slots[name] = _align(self.save_stride, size)
            self.save_stride = self.save_slots[name] + size
        self.save_stride = _align(self.save_stride, 16)
        self.nan_class = nan_classes(fn)
        # loop back-edges poll for cancellation; spin points may suspend (lower/progress.py)
        self.back_edges = back_edges(fn)
        self.has_spinpoints = any(i.opcode == SPINPOINT for i in fn.instructions)
        # `batched`: the mma.sync that share the suspension of the one before them (lower/rules/mma.py
        # batched_mmas, which the module's codegen runs)
        # region mode (a kernel, the block known): back-to-back independent shuffles share one too
        # (passes/shflsched.py; instrumented code keeps one point per shuffle, as its probes count)
        shfl_batch = is_kernel and cg.block is not None and cg.probes is None
        # and a shuffle chain's later shuffles do not suspend: the chain runs at its first one
        # (passes/shflchain.py; what its other instructions compute comes from lower/rules/sync.py)
        self.chain_of: dict[int, Chain] = {}
        self.chain_skip: set[int] = set()
        if shfl_batch:
            batched = self._plan_chains(fn, batched)
        self.suspends = lambda i: cg.yields(i) and id(i) not in batched
        yields = [i for i in fn.instructions if self.suspends(i)]
        # each suspension point's resume code is fixed by its position (1, 2, ... in program order)
        self.yield_index = {id(i): k + 1 for k, i in enumerate(yields)}
        # region-mode exchange-buffer rows: a suspension point's own (its index), and past the last
        # one a row pair for each shuffle that shares the suspension of the one before it
        self.xbuf_index: dict[int, int] = {}
        self.shfl_runs: dict[int, list[ir.Instr]] = {}
        if shfl_batch:
            leader = None  # the shuffle whose suspension the run shares
            for i in fn.instructions:
                if id(i) in self.chain_skip:
                    leader = None
                    continue
                if i.opcode == "shfl" and id(i) in batched and leader is not None:
                    self.xbuf_index[id(i)] = len(yields) + 1 + len(self.xbuf_index)
                    self.shfl_runs[id(leader)].append(i)
                    continue
                leader = i if i.opcode == "shfl" else None
                if leader is not None:
                    self.shfl_runs[id(i)] = []
        self.xbuf_points = len(yields) + 1 + len(self.xbuf_index)
        # and a row pair per step of each shuffle chain: the values after that step
        self.chain_rows: dict[int, list[int]] = {}
        for head, c in self.chain_of.items():
            self.chain_rows[head] = list(range(self.xbuf_points, self.xbuf_points + len(c.steps)))
            self.xbuf_points += len(c.steps)
        self.thread_loop = is_kernel and not yields
        # region mode: every suspension point is a CTA barrier, so each call of the body runs one
        # barrier-to-barrier region for all threads waiting at the same point, as a loop over threads
        # (region mode sizes its buffers by the block shape: generic translations use the per-thread scheduler)
        self.region_mode = is_kernel and bool(yields) and cg.block is not None
        self.nyields = len(yields)
        self.dense = False  # region mode: lowering the copy run when every thread waits at its point
        self.region_codes: list[int] = []
        self.region_code = -1  # region mode: the resume point whose copy is being lowered
        self.skip_branch: ir.Instr | None = None
        self.mask_codes: set[int] = set()
        # region mode keeps the register save area structure-of-arrays (contiguous across threads)
        self.soa_offsets: dict[str, int] = {}
        off = 0
        for name, t in fn.regs.items():
            self.soa_offsets[name] = off
            off += max(1, ir.type_size(t))

        self.pointer_regs = pointer_registers(fn, set(cg.kparams) if is_kernel else set())
        self.bounds = BoundsChecks(self)  # memory safety: checks of loads, stores and atomics
        # instrumentation: probes emitted by the object the translation was given (ptxjit/instrument);
        # `probing` is off while code that is no execution of the kernel is lowered (the guard loop)
        self.probes = cg.probes.emitter(self) if cg.probes is not None else None
        self.probing = self.probes is not None
        self.live_after: dict[int, set[str]] | None = None
        self.remat: dict[str, ir.Instr] = self.__dict__.get("remat", {})  # (_plan_chains may have it)
        self.affine: dict[str, tuple[int, int, int]] = {}
        self.affine_restore: dict[str, tuple[ll.Value, tuple[int, int, int]]] = {}
        if self.region_mode:
            self.affine = tid_affine(fn, set(cg.kparams))
        if is_kernel and (yields or cg.checked):  # checked: the addresses bounds checks can hoist

            if not self.remat:  # (computed already where shuffle chains were looked for: _plan_chains)
                self.remat = rematerializable(fn, set(cg.kparams), is_special)
            self.instr_order = {id(i): k for k, i in enumerate(fn.instructions)}
        if is_kernel and yields:
            _blocks, after = liveness(fn)
            # across a suspension point: what is live after it, and what it re-reads on resume
            self.live_after = {k: v | set(defs_uses(i)[1]) for i in fn.instructions
                               if self.suspends(i) for k, v in [(id(i), after[id(i)])]}

    def _plan_chains(self, fn: ir.Function, batched: set[int]) -> set[int]:
        """Region mode: the shuffle chains to fuse (passes/shflchain.py) and the shuffles that share a
        suspension (passes/shflsched.py), returned with `batched`.  A chain is fused only when nothing
        between its first shuffle and its last operation suspends: its result, written where the first
        shuffle resumes, is no register saved across a suspension point by the liveness of the PTX."""

        self.remat = remat = rematerializable(fn, set(self.cg.kparams), is_special)
        chains = shuffle_chains(fn, lambda r: r in remat or is_special(r))
        pos = {id(i): k for k, i in enumerate(fn.instructions)}
        while True:
            skip = {id(i) for c in chains for i in c.members()}
            out = batched | batched_shfls(fn, skip) | {id(s.shfl) for c in chains for s in c.steps[1:]}
            keep = [c for c in chains if not any(
                self.cg.yields(i) and id(i) not in out
                for i in fn.instructions[pos[id(c.head)] + 1:max(pos[id(i)] for i in c.members()) + 1])]
            if len(keep) == len(chains):
                break
            chains = keep
        self.chain_of = {id(c.head): c for c in chains}
        self.chain_skip = skip
        return out

    # ------------------------------------------------------------------ setup
    def new_register_slot(self, b: ll.IRBuilder, name: str, zeroed: bool = True) -> ll.AllocaInstr:
        """Register `name`'s stack slot, zeroed: a register read before any write is 0, not LLVM's
        undef (which would let a bounds check fold away and an address be anything: fuzzer, a deleted
        mul.wide).  `zeroed=False` for a register written before it is read on every path."""
        ty = PTR if name in self.pointer_regs else lltype(self.fn.regs[name])  # (as register_type)
        slot = b.alloca(ty, name=name.lstrip("%").replace("$", "_"))
        if zeroed:
            b.store(ll.Constant(ty, None), slot)
        return slot

    def register_type(self, name: str) -> ll.Type:
        """The LLVM type register `name` is kept as (pointer registers as pointers: lower/operands.py)."""
        return PTR if name in self.pointer_regs else lltype(self.fn.regs[name])

    def lower(self) -> None:
        b = self.b
        fn = self.fn
        # a slot for each register the instructions name (PTX declares registers by the range,
        # `.reg .f32 %f<24>`, and compilers declare more than they use); any other declared register
        # gets its slot when something asks for it (Registers.__missing__)
        named = {r for ins in fn.instructions for r in _named_registers(ins)}
        read_first = named
        if self.cg.baseline:  # (the optimized builds' SROA removes the stores of registers written first)

            blocks, _ = liveness(fn)
            read_first = blocks[0].live_in if blocks else set()  # read before any write on some path
        self.regs = Registers(self, named, read_first, self._resident_registers())
        entry = b.block
        if self.region_mode:
            self._lower_regions(entry)
            return
        if self.thread_loop:
            self._lower_thread_loop(entry)
            return
        if not self.is_kernel and fn.name in self.cg.recursive:
            self.stack_guard()
        self._setup_vars()
        start = self.llfn.append_basic_block("start")
        dispatch_from = b.block
        self._lower_body(start)
        if self.regs.zeroed_resident:  # (the switch below enters `start` for a thread's first run alone)
            b.position_at_start(start)
            self.zero_resident()
        # entry dispatch: kernels resume at the point their code names
        b.position_at_end(dispatch_from)
        if self.is_kernel and self.yield_blocks:
            sw = b.switch(self.llfn.args[3], start)
            for code, blk in self.yield_blocks:
                sw.add_case(const_int(I32, code), blk)
        else:
            b.branch(start)


    def _setup_vars(self) -> None:
        b = self.b
        fn = self.fn
        local_off = 0
        local_vars = []
        for v in fn.vars:
            if v.space in ("param", "local") and v.size > MAX_THREAD_BYTES:
                raise UnsupportedInstructionError(v.pos, f".{v.space} {v.name}", (
                    f"{v.size} bytes; CUDA allows at most {MAX_THREAD_BYTES} bytes of local memory per thread"))
            if v.space == "param":
                if v.name in self.var_ptrs:
                    continue
                with b.goto_entry_block():
                    slot = b.alloca(ll.ArrayType(I8, max(v.size, 1)), name=v.name.replace("$", "_"))
                    slot.align = max(v.alignment, 8)
                    self.var_ptrs[v.name] = b.bitcast(slot, PTR)
            elif v.space == "local":
                local_off = _align(local_off, v.alignment)
                local_vars.append((v, local_off))
                local_off += v.size
        if self.is_kernel:
            if local_off:
                base = b.load(b.gep(self.worker, [const_int(I32, abi.W_LOCAL)]))
                thread_off = b.mul(b.zext(self.tlin, I64), const_int(I64, self.cg.local_stride(fn)))
                tptr = b.inttoptr(b.add(base, thread_off), PTR)
                self.thread_local = tptr
                for v, off in local_vars:
                    self.var_ptrs[v.name] = b.gep(tptr, [const_int(I64, off)])
        else:
            for v, _off in local_vars:
                slot = b.alloca(ll.ArrayType(I8, max(v.size, 1)), name=v.name.replace("$", "_"))
                slot.align = max(v.alignment, 16)
                self.var_ptrs[v.name] = b.bitcast(slot, PTR)
            for i, p in enumerate(fn.params):
                self.var_ptrs[p.name] = self.llfn.args[3 + i]
            for i, r in enumerate(fn.rets):
                self.var_ptrs[r.name] = self.llfn.args[3 + len(fn.params) + i]

    # ------------------------------------------------------------------ instructions
    def lower_instr(self, ins: ir.Instr) -> None:
        self.cur = ins
        if id(ins) in self.chain_skip:  # computed where the chain's first shuffle resumes (sync.py)
            return
        probes = self.probes if self.probing else None
        if ins is self.skip_branch:  # the thread-loop copy run when no thread takes this branch
            if probes is not None:
                probes.enter(ins)
                probes.execute(ins)  # records it (not taken)
            return
        r = RULES.get(ins.opcode)
        if r is None:
            raise UnsupportedInstructionError(ins.pos, ins.text, "no rule for this opcode")
        if r.yields and not self.is_kernel:
            raise UnsupportedInstructionError(
                ins.pos, ins.text, "barriers and warp collectives inside non-inlined device functions")
        if probes is not None:
            probes.enter(ins)  # before the guard: a basic block's entry
            # a counting run's variant without memory accesses (instrument/independence.py)
            r = probes.rule(ins, r) if hasattr(probes, "rule") else r
        if ins.guard is None or r.handles_guard:
            if probes is not None:
                probes.execute(ins)
            r.lower(self, ins)
            if probes is not None:
                probes.after(ins)
            return
        b = self.b
        then = self.llfn.append_basic_block("guarded")
        cont = self.llfn.append_basic_block("cont")
        b.cbranch(self.read_pred(ins.guard), then, cont)
        b.position_at_end(then)
        if probes is not None:
            probes.execute(ins)  # the guard holds: the instruction executes
        r.lower(self, ins)
        if probes is not None and not b.block.is_terminated:
            probes.after(ins)
        if not b.block.is_terminated:
            b.branch(cont)
        b.position_at_end(cont)

    def outlined(self, name: str, ret: ll.Type, args: list[ll.Value], emit) -> ll.Value:
        """emit(self, *args), a pure function of `args` of type `ret`: inline in the optimized builds; in
        the baseline build lowered once per module and form (`name`) as an internal function, called at
        each use (tier 0 compiles for speed and does not inline).  Numeric emulations are long sequences
        (a multifunction unit's bit-exact result, a rounding to f16) that kernels run dozens of times:
        inline, they were a third of a Triton attention kernel's IR at tier 0."""
        if not self.cg.baseline:
            return emit(self, *args)
        mod = self.cg.llmod
        gname = f"__ptxjit_{name}"
        fn = mod.globals.get(gname)
        if fn is None:
            fn = ll.Function(mod, ll.FunctionType(ret, [a.type for a in args]), gname)
            fn.linkage = "internal"
            builder = self.b
            self.b = FoldingBuilder(fn.append_basic_block("entry"))
            try:
                self.b.ret(emit(self, *fn.args))
            finally:
                self.b = builder
        return self.b.call(fn, args)

    def weigh_branch(self, ins: ir.Instr, br: ll.Instruction) -> None:
        """Tier 1 (ptxjit/tiers/counters.py): the branch weights tier 0's block counters gave branch
        `ins`, as `!prof` metadata on its conditional branch `br` (lower_bra)."""
        if self.fn is self.cg.kernel and self.cg.block is not None:
            w = self.cg.weights_of.get(id(ins))  # the kernel's statements move (ModuleCodegen)
        else:
            index = self.__dict__.get("_stmt_index")
            if index is None:
                index = self._stmt_index = {id(s): i for i, s in enumerate(self.fn.body or [])}
            w = self.cg.branch_weights.get((self.fn.name, index.get(id(ins), -1)))
        if w is not None:
            br.set_weights(list(w))

    def probe_memory(self, p: ll.Value, part: int = 0) -> None:
        """Instrumentation hook of the memory rules: the current instruction accesses host pointer `p`
        (`part`: which of its accesses, for cp.async's source 0 and destination 1)."""
        if self.probes is not None and self.probing:
            self.probes.memory(self.cur, p, part)

    def internal_access(self, inst: ll.Instruction) -> ll.Instruction:
        """Mark a load/store of the runtime's own per-thread buffers (see ModuleContext.scopes)."""
        inst.set_metadata("alias.scope", self.cg.scopes("internal"))
        inst.set_metadata("noalias", self.cg.scopes("shared", "local"))
        return inst

    def user_access(self, inst: ll.Instruction, space: str) -> ll.Instruction:
        """Mark a load/store of kernel-visible memory in state space `space` ('' = generic): it
        never aliases the runtime's buffers, and a global access never reaches shared or local."""
        if space in ("shared", "local"):
            inst.set_metadata("alias.scope", self.cg.scopes(space))
            inst.set_metadata("noalias", self.cg.scopes("internal"))
        elif space in ("global", "const"):
            inst.set_metadata("noalias", self.cg.scopes("internal", "shared", "local"))
        else:
            inst.set_metadata("noalias", self.cg.scopes("internal"))
        return inst

    def unsupported(self, reason: str) -> UnsupportedInstructionError:
        ins = self.cur
        assert ins is not None
        return UnsupportedInstructionError(ins.pos, ins.text, reason)

    # ------------------------------------------------------------------ launch/worker slots
    def launch_slot(self, idx: int) -> ll.Value:
        c = self.cg.launch_consts.get(idx) if self.cg.launch_consts else None
        if c is not None:  # specialized (ptxjit/tiers): the launch's value is known
            return const_int(I64, c)
        if idx in _FIXED_LAUNCH_SLOTS:  # the same for the whole launch: loaded once, in the entry block
            return self.once_in_entry(("launch", idx), lambda b: b.load(b.gep(self.launch, [const_int(I32, idx)])))
        return self.b.load(self.b.gep(self.launch, [const_int(I32, idx)]))

    def worker_slot(self, idx: int) -> ll.Value:
        return self.b.load(self.b.gep(self.worker, [const_int(I32, idx)]))

    def shared_base(self) -> ll.Value:
        return self.worker_slot(abi.W_SHARED)

    def once_in_entry(self, key, make) -> ll.Value:
        """make(builder), emitted once in the entry block and cached under `key` (loop-invariant values
        of the bounds checks and probes: range tables, record pointers)."""
        cache = self.__dict__.setdefault("_entry_values", {})
        v = cache.get(key)
        if v is None:
            v = cache[key] = self._emit_in(self.llfn.entry_basic_block, make)
        return v

    def _emit_in(self, blk: ll.Block, make) -> ll.Value:
        """make(builder) at the end of `blk` (before its terminator); the builder then goes back to the
        exact place it was (goto_block returns to the end of the block, and a latch's saves are
        inserted at its start)."""
        b = self.b
        here = b.block
        after = here.instructions[b._anchor] if b._anchor < len(here.instructions) else None
        with b.goto_block(blk):
            v = make(b)
        if after is not None:
            b.position_before(after)
        return v

    def entry_record_ptr(self, idx: int) -> ll.Value:
        """A pointer held in worker record slot idx, loaded once in the entry block."""
        cache = self.__dict__.setdefault("_record_ptrs", {})
        p = cache.get(idx)
        if p is None:
            b = self.b
            with b.goto_entry_block():
                slot = b.bitcast(b.gep(self.worker, [const_int(I32, idx)]), PTR.as_pointer())
                p = b.load(slot, typ=PTR, align=8)
            cache[idx] = p
        return p

    def shared_ptr(self) -> ll.Value:
        """The CTA's shared memory as a pointer, loaded once per call in the entry block."""
        p = self.__dict__.get("_shared_ptr")
        if p is None:
            b = self.b
            with b.goto_entry_block():
                slot = b.bitcast(b.gep(self.worker, [const_int(I32, abi.W_SHARED)]), PTR.as_pointer())
                p = b.load(slot, typ=PTR, align=8)
                if self.cg.shared.static_size:
                    size = self.cg.shared.static_size
                    p.set_metadata("dereferenceable", self.cg.llmod.add_metadata([const_int(I64, size)]))
                p.set_metadata("align", self.cg.llmod.add_metadata([const_int(I64, 16)]))
            self._shared_ptr = p
        return p

    # ------------------------------------------------------------------ operands
    def special(self, name: str) -> ll.Value:
        return special_register(self, name)

    def per_thread(self, key, make) -> ll.Value:
        """make(builder), a function of this thread's index alone, computed once per thread: in the entry
        block when the thread is the function's argument (one call per thread), in the thread's own
        block of a loop over the CTA's threads (lower/threadloop.py) otherwise.  Saves and restores at
        suspension points and tensor-core fragments ask for such values at every register and element."""
        if isinstance(self.tlin, ll.Argument):
            return self.once_in_entry(("per_thread", key), make)
        home = getattr(self, "thread_home", None)
        if home is None or home[0] is not self.tlin:
            return make(self.b)
        cache = self.__dict__.setdefault("_per_thread", {})
        v = cache.get((home[1].name, key))
        if v is None:
            v = cache[(home[1].name, key)] = self._emit_in(home[1], make)
        return v

    def lane(self) -> ll.Value:
        return self.per_thread("lane", lambda b: b.and_(self.tlin, const_int(I32, 31)))

    # ------------------------------------------------------------------ control
    def label_block(self, name: str) -> ll.Block:
        blk = self.labels.get(name)
        if blk is None:
            raise self.unsupported(f"unknown label '{name}'")
        return self.bounds.loop_entry(name, blk)

    def emit_return(self) -> None:
        if self.region_mode:
            self.internal_access(self.b.store(const_int(I32, abi.STATUS_EXITED),
                                              self.b.gep(self.status_ptr, [self.tlin])))
            self.b.branch(self.thread_latch)
        elif self.thread_loop:
            self.b.branch(self.thread_latch)  # this thread is done: on to the next
        elif self.is_kernel:
            self.b.ret(const_int(I32, 0))
        else:
            self.b.ret_void()

    def trap(self, code: int, arg: ll.Value | None = None) -> None:
        """Record the first error of the launch (which thread, where) and stop this thread."""
        b = self.b
        ins_id = self.cg.location_id(self.cur)
        err = b.gep(self.launch, [const_int(I32, abi.L_ERROR)])
        res = b.cmpxchg(err, const_int(I64, 0), const_int(I64, code), "seq_cst", "seq_cst")
        won = b.extract_value(res, 1)
        with b.if_then(won):
            b.store(self._linear_cta(), b.gep(self.launch, [const_int(I32, abi.L_ERR_CTA)]))
            b.store(b.zext(self.tlin, I64), b.gep(self.launch, [const_int(I32, abi.L_ERR_TID)]))
            b.store(const_int(I64, ins_id), b.gep(self.launch, [const_int(I32, abi.L_ERR_WHERE)]))
            if arg is not None:
                b.store(arg, b.gep(self.launch, [const_int(I32, abi.L_ERR_ARG)]))
        if self.is_kernel:
            b.ret(const_int(I32, abi.RESUME_TRAP))
        else:
            b.ret_void()

    def _linear_cta(self) -> ll.Value:
        b = self.b
        cx, cy, cz = (self.worker_slot(abi.W_CTA + i) for i in range(3))
        gx, gy = self.launch_slot(abi.L_GRID), self.launch_slot(abi.L_GRID + 1)
        return b.add(cx, b.mul(gx, b.add(cy, b.mul(gy, cz))))

    def stack_guard(self) -> None:
        """On entry of a device function that may recurse (passes/recursion.py): trap once the native
        stack below the worker's entry passed RECURSION_STACK_BYTES, before it can overflow."""

        b = self.b
        sp = b.ptrtoint(b.call(self.cg.intrinsic("llvm.stacksave.p0", PTR, [], exact=True), []), I64)
        used = b.sub(self.worker_slot(abi.W_STACK), sp)
        deep = b.icmp_unsigned(">", used, const_int(I64, RECURSION_STACK_BYTES))
        with b.if_then(deep, likely=False):
            saved, self.cur = self.cur, next(iter(self.fn.instructions), None)
            self.trap(abi.ERR_TRAP, const_int(I64, abi.STACK_TRAP << 56))
            self.cur = saved

    def check_error_after_call(self) -> None:
        """After a device-function call: if the callee trapped or exited, unwind this thread too."""
        b = self.b
        err = self.launch_slot(abi.L_ERROR)
        exited_slot = b.gep(self.worker, [const_int(I32, abi.W_EXITED)])
        exited = b.load(exited_slot)
        unwind = b.icmp_unsigned("!=", b.or_(err, exited), const_int(I64, 0))
        with b.if_then(unwind, likely=False):
            if not self.is_kernel:
                b.ret_void()
            else:
                failed = b.icmp_unsigned("!=", err, const_int(I64, 0))
                b.store(const_int(I64, 0), exited_slot)
                if self.thread_loop or self.region_mode:
                    trap_blk = self.llfn.append_basic_block("callee_trapped")
                    exited_blk = self.llfn.append_basic_block("callee_exited")
                    b.cbranch(failed, trap_blk, exited_blk)
                    b.position_at_end(exited_blk)
                    self.emit_return()
                    b.position_at_end(trap_blk)
                    b.ret(const_int(I32, abi.RESUME_TRAP))
                else:
                    b.ret(b.select(failed, const_int(I32, abi.RESUME_TRAP), const_int(I32, 0)))



def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _named_registers(ins: ir.Instr) -> list[str]:
    out = [r for op in ins.operands for r in operand_reg_names(op)]
    if isinstance(ins.guard, ir.Reg):
        out.append(ins.guard.name)
    return out


class Registers(dict):
    """Register name -> stack slot.  Created in the entry block, in declaration order, for the registers
    `named` (zeroed where `read_first`: read before any write on some path); a declared register nothing
    names gets its slot on first use, at the top of the entry block (so that it dominates every use).

    A `resident` register (the baseline build's registers live across a suspension point: regions.py
    _resident_registers) has no stack slot: its slot is its place in the thread's save area, asked of
    the lowering at each use (FnLowering.resident_slot); items() and values() leave such registers out."""

    def __init__(self, lw: FnLowering, named: set[str], read_first: set[str],
                 resident: dict[str, ll.Type] | None = None) -> None:
        super().__init__()
        self.lw = lw
        self.declared = lw.fn.regs
        self.resident = resident or {}
        # resident registers read before any write on some path: zeroed where a thread starts instead
        self.zeroed_resident = [n for n in self.resident if n in read_first]
        for name in self.declared:
            if name in named and name not in self.resident:
                self[name] = lw.new_register_slot(lw.b, name, zeroed=name in read_first)

    def __getitem__(self, name: str) -> ll.Value:
        if name in self.resident:
            return self.lw.resident_slot(name)
        return dict.__getitem__(self, name)  # (__missing__ for a declared register without a slot yet)

    def __missing__(self, name: str) -> ll.AllocaInstr:
        if name not in self.declared:
            raise KeyError(name)
        # (with the lowering's own builder, put back where it was by the instruction after it: an index
        # into the entry block would move with the two instructions inserted at its start)
        b = self.lw.b
        here = b.block
        after = here.instructions[b._anchor] if b._anchor < len(here.instructions) else None
        b.position_at_start(self.lw.entry)
        slot = self[name] = self.lw.new_register_slot(b, name)
        if after is not None:
            b.position_before(after)
        else:
            b.position_at_end(here)
        return slot

    def __contains__(self, name: object) -> bool:
        return name in self.declared or dict.__contains__(self, name)

    def get(self, name: str, default=None):
        return self[name] if name in self else default
