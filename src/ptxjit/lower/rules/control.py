"""Control flow: bra, call (with the PTX parameter ABI), ret, exit, trap; CUDA printf and assert."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.isa.calls import split_call
from ptxjit.lower import abi, heap_code
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.safety.bounds import KIND_HOST
from ptxjit.lower.types import I32, I64, PTR, const_int, lltype


@rule("brx", family="control", handles_guard=True)
def lower_brx(lw: FnLowering, ins: Instr) -> None:
    """brx.idx[.uni] index, table: jump through a .branchtargets label table."""
    b = lw.b
    table = ins.operands[1]
    labels = lw.fn.branch_tables.get(getattr(table, "name", ""))
    if labels is None:
        raise lw.unsupported(f"unknown branch table {table}")
    idx = lw.read(ins.operands[0], "u32")
    if id(ins) in lw.back_edges:
        lw.poll_backedge()  # a loop: stop here when the launch is cancelled
    bad = lw.llfn.append_basic_block("brx_out_of_range")
    go = b.block
    if ins.guard is not None:
        go = lw.llfn.append_basic_block("brx_go")
        fall = lw.llfn.append_basic_block("fallthrough")
        b.cbranch(lw.read_pred(ins.guard), go, fall)
        b.position_at_end(go)
    sw = b.switch(idx, bad)
    for i, name in enumerate(labels):
        sw.add_case(const_int(I32, i), lw.label_block(name))
    b.position_at_end(bad)
    lw.trap(abi.ERR_TRAP)
    if ins.guard is not None:
        b.position_at_end(fall)


@rule("bra", family="control", handles_guard=True)
def lower_bra(lw: FnLowering, ins: Instr) -> None:
    """bra[.uni] label, optionally guarded by @p / @!p."""
    b = lw.b
    target = ins.operands[0]
    if not isinstance(target, ir.Sym):
        raise lw.unsupported("branch target must be a label")
    blk = lw.label_block(target.name)
    if id(ins) in lw.back_edges:
        lw.poll_backedge()  # a loop: stop here when the launch is cancelled
    if ins.guard is None:
        b.branch(blk)
        return
    fall = lw.llfn.append_basic_block("fallthrough")
    br = b.cbranch(lw.read_pred(ins.guard), blk, fall)
    if lw.cg.branch_weights:
        lw.weigh_branch(ins, br)
    b.position_at_end(fall)


@rule("ret", family="control")
def lower_ret(lw: FnLowering, ins: Instr) -> None:
    """ret: leave the function (the kernel: the thread exits)."""
    lw.emit_return()


@rule("exit", family="control")
def lower_exit(lw: FnLowering, ins: Instr) -> None:
    """exit: the thread exits."""
    if not lw.is_kernel:
        lw.b.store(const_int(I64, 1), lw.b.gep(lw.worker, [const_int(I32, abi.W_EXITED)]))
    lw.emit_return()


@rule("trap", family="control")
def lower_trap(lw: FnLowering, ins: Instr) -> None:
    """trap: abort the launch with an error naming the kernel, block, thread and source line."""
    lw.trap(abi.ERR_SELF_LOOP if ins.has("selfloop") else abi.ERR_TRAP)


def _check_call(ins: Instr) -> str | None:
    try:
        split_call(ins)
    except ValueError as e:
        return str(e)
    return None


def _param_ptr(lw: FnLowering, op) -> ll.Value:
    """Pointer to the storage of one call argument (a .param variable, or a temporary)."""
    b = lw.b
    if isinstance(op, ir.Sym):
        p = lw.var_ptrs.get(op.name)
        if p is None:
            raise lw.unsupported(f"call argument '{op.name}' is not a .param variable")
        return p
    t = lw.reg_type(op) or "b64"
    v = lw.read(op, t)
    with b.goto_entry_block():
        slot = b.alloca(lltype(t))
    b.store(v, slot)
    return b.bitcast(slot, PTR)


def _load_u64(lw: FnLowering, p: ll.Value) -> ll.Value:
    return lw.b.load(lw.typed_ptr(p, I64))


@rule("call", family="control", check=_check_call)
def lower_call(lw: FnLowering, ins: Instr) -> None:
    """call[.uni] (rets), f, (args): device functions, recursion; vprintf, __assertfail, malloc, free."""
    b = lw.b
    rets, target, args = split_call(ins)
    name = getattr(target, "name", "")
    arg_ptrs = [_param_ptr(lw, a) for a in args]
    ret_ptrs = [_param_ptr(lw, r) for r in rets]
    if name == "vprintf":
        fnty = ll.FunctionType(I32, [PTR, PTR])
        cb = b.inttoptr(lw.launch_slot(abi.L_PRINTF), fnty.as_pointer())
        fmt = b.inttoptr(_load_u64(lw, arg_ptrs[0]), PTR)
        data = b.inttoptr(_load_u64(lw, arg_ptrs[1]), PTR) if len(arg_ptrs) > 1 else ll.Constant(PTR, None)
        r = b.call(cb, [fmt, data])
        if ret_ptrs:
            b.store(r, lw.typed_ptr(ret_ptrs[0], I32))
        return
    if name in ("__assertfail", "__nv_assertfail"):
        b.store(_load_u64(lw, arg_ptrs[1]), b.gep(lw.launch, [const_int(I32, abi.L_ERR_FILE)]))
        line = b.zext(b.load(lw.typed_ptr(arg_ptrs[2], I32)), I64)
        b.store(line, b.gep(lw.launch, [const_int(I32, abi.L_ERR_LINE)]))
        if len(arg_ptrs) > 3:
            b.store(_load_u64(lw, arg_ptrs[3]), b.gep(lw.launch, [const_int(I32, abi.L_ERR_FUNC)]))
        lw.trap(abi.ERR_ASSERT, _load_u64(lw, arg_ptrs[0]))
        b.position_at_end(lw.llfn.append_basic_block("after_assert"))
        return
    if name == "malloc":  # the runtime's checked device heap (runtime/heap.py)
        fn = heap_code.function(lw.cg.llmod, "malloc")
        site = b.ptrtoint(heap_code.site_string(lw.cg.llmod, lw.cg.kernel.name, str(ins.pos)), I64)
        cta = [lw.worker_slot(abi.W_CTA + i) for i in range(3)]
        dims = [lw.launch_slot(abi.L_BLOCK + i) for i in range(2)]
        p = b.call(fn, [_load_u64(lw, arg_ptrs[0]), site, *cta, b.zext(lw.tlin, I64), *dims])
        b.store(b.ptrtoint(p, I64), lw.typed_ptr(ret_ptrs[0], I64))
        return
    if name == "free":  # a refused free (double, interior, not heap) is a fault at the call, never an abort
        ptr = _load_u64(lw, arg_ptrs[0])
        bad = b.call(heap_code.function(lw.cg.llmod, "free"), [ptr])
        if lw.bounds.enabled:
            lw.bounds._record_fault(b.icmp_unsigned("==", bad, const_int(I32, 0)), ptr, KIND_HOST)
        return
    if isinstance(target, ir.Reg):
        # indirect call: every device function has the same pointer-per-parameter signature
        i64p = I64.as_pointer()
        fnty = ll.FunctionType(ll.VoidType(), [i64p, i64p, I32] + [PTR] * (len(arg_ptrs) + len(ret_ptrs)))
        callee = b.inttoptr(lw.read(target, "u64"), fnty.as_pointer())
    else:
        callee = lw.cg.device_function(name, ins)
    b.call(callee, [lw.launch, lw.worker, lw.tlin, *arg_ptrs, *ret_ptrs])
    lw.check_error_after_call()
