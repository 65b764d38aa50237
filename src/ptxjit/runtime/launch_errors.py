"""Exceptions for a failed launch: what the launch record says happened (trap, assert, fault, deadlock,
timeout), where (CTA, thread, PTX and CUDA source line) and, for faults, which memory was nearest."""

from __future__ import annotations

import numpy as np

from ptxjit.errors import KernelDeadlock, KernelFault, KernelTimeout, KernelTrap
from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.runtime.memory import Pointer, memory_of


def launch_error(tr: Translation, kernel: str, L: np.ndarray, grid, block, elapsed: float,
                  limit: float | None) -> BaseException:
    code = int(L[abi.L_ERROR])
    if code == abi.ERR_TIMEOUT:
        nctas = grid[0] * grid[1] * grid[2]
        done = int(L[abi.L_DONE])
        return KernelTimeout(kernel, elapsed, limit or 0.0, f"{done} of {nctas} blocks had completed")
    if code == abi.ERR_CANCEL:  # Ctrl-C stopped it, but no KeyboardInterrupt came (it may later)
        return KeyboardInterrupt(f"kernel '{kernel}' was interrupted")
    if code == abi.ERR_DEADLOCK:
        return _deadlock_error(tr, kernel, L, grid, block)
    return _trap_error(tr, kernel, L, grid, block)


def _where(tr: Translation, L: np.ndarray) -> str:
    where_id = int(L[abi.L_ERR_WHERE])
    if 0 <= where_id < len(tr.locations):
        pos, text = tr.locations[where_id]
        return f"{pos} ('{text}')"
    return ""


def _unlinear(i: int, dims) -> tuple[int, int, int]:
    return i % dims[0], (i // dims[0]) % dims[1], i // (dims[0] * dims[1])


def _deadlock_error(tr: Translation, kernel: str, L: np.ndarray, grid, block) -> KernelDeadlock:
    n = block[0] * block[1] * block[2]
    cta = _unlinear(int(L[abi.L_ERR_CTA]), grid)
    tid = int(L[abi.L_ERR_TID])
    bid, arrived, need, live = (int(L[s]) for s in (abi.L_ERR_ARG, abi.L_ERR_FILE, abi.L_ERR_LINE, abi.L_ERR_LIVE))
    where = _where(tr, L)
    bar = f"barrier {bid}" + (f" at {where}" if where else "")
    if need > n:
        why = f"it waits for {need} threads but the block has only {n}"
    elif need < 0:
        why = (f"it waits for every live thread of the block ({live} of {n}; exited threads count as "
               f"arrived) but only {arrived} arrived")
    else:
        why = f"it waits for {need} threads but only {arrived} arrived"
    who = f"thread {_unlinear(tid, block)} is waiting there" if tid >= 0 else ""
    msg = (f"kernel '{kernel}' deadlocked in block {cta}: {bar} can never complete: {why}; "
           f"{who}{'; ' if who else ''}all {live} live threads of the block wait at barriers, so no "
           f"other thread can arrive ({n - live} threads exited)")
    err = KernelDeadlock(msg)
    err.kernel, err.cta, err.barrier, err.where = kernel, cta, bid, where  # type: ignore[attr-defined]
    return err


def _trap_error(tr: Translation, kernel: str, L: np.ndarray, grid, block) -> KernelTrap:
    code = int(L[abi.L_ERROR])
    cta = _unlinear(int(L[abi.L_ERR_CTA]), grid)
    tid = _unlinear(int(L[abi.L_ERR_TID]), block)
    where = _where(tr, L)
    reason = "executed trap"
    assertion = None
    if code == abi.ERR_ASSERT:
        msg = _cstr(int(L[abi.L_ERR_ARG]))
        file = _cstr(int(L[abi.L_ERR_FILE]))
        line = int(L[abi.L_ERR_LINE])
        reason = f"failed assertion '{msg}' ({file}:{line})"
        assertion = (f"{file}:{line}: {_cstr(int(L[abi.L_ERR_FUNC]))}: block: [{cta[0]},{cta[1]},{cta[2]}], "
                     f"thread: [{tid[0]},{tid[1]},{tid[2]}] Assertion `{msg}` failed.")
    elif code == abi.ERR_SELF_LOOP:
        reason = "entered a branch that loops to itself forever"
    elif code == abi.ERR_BAD_WARP_SYNC:
        reason = "executed a warp synchronization that cannot complete"
    elif code == abi.ERR_ILLEGAL_ADDRESS:
        reason = "accessed an illegal address (an offset beyond +-2**47 from its base)"
    err = KernelTrap(kernel, cta, tid, where, reason)
    err.assertion = assertion
    return err


def fault_error(tr: Translation, kernel: str, L: np.ndarray, grid, block, ranges, names,
                 shared_bytes: int) -> KernelFault:
    from ptxjit.lower.safety.bounds import KIND_LOCAL, KIND_SHARED, unpack_fault

    cta = _unlinear(int(L[abi.L_ERR_CTA]), grid)
    tid = _unlinear(int(L[abi.L_ERR_TID]), block)
    ins_id, kind, addr = unpack_fault(int(L[abi.L_ERR_ARG]))
    where = ""
    if 0 <= ins_id < len(tr.locations):
        pos, text = tr.locations[ins_id]
        where = f"{pos} ('{text}')"
    if kind == KIND_SHARED:
        off = addr if addr < 1 << 47 else addr - (1 << 48)
        alloc = "shared"
        detail = (f"shared memory offset {off}: {off - shared_bytes} bytes past the end of the block's "
                  f"{shared_bytes} bytes of shared memory" if off >= 0 else
                  f"shared memory offset {off}: {-off} bytes before its start")
        return KernelFault(kernel, cta, tid, where, off, alloc, detail)
    if kind == KIND_LOCAL:
        return KernelFault(kernel, cta, tid, where, addr, "local",
                           f"address {addr:#x} outside the thread's local memory")
    from ptxjit.runtime.heap import describe  # device malloc's blocks, and refused device frees

    heap = describe(addr, where)
    if heap is not None:
        return KernelFault(kernel, cta, tid, where, addr, heap[0], heap[1])
    alloc, detail, best = "", f"address {addr:#x} is in no memory the kernel was given", None
    if ranges is not None:
        labels = [*names, ("globals", -1, None), ("parameter buffer", -1, None)]
        for j, (label, index, arg) in enumerate(labels):
            lo, n = int(ranges[2 * j]), int(ranges[2 * j + 1])
            if n <= 0:
                continue
            lo &= (1 << 48) - 1
            dist = lo - addr if addr < lo else addr - (lo + n) if addr >= lo + n else 0
            if best is None or dist < best:
                best, alloc = dist, label
                arr = memory_of(arg)
                what = f"argument {index} ('{label}')" if index >= 0 else label
                if isinstance(arg, Pointer):  # the memory it points into: an allocation of the driver's
                    what = f"the memory argument {index} ('{label}') points into"
                    desc, elem = f" ({n} bytes)", ""
                else:
                    desc = f" ({arr.dtype} array of {arr.size} elements)" if arr is not None else ""
                    idx = (addr - lo) // arr.itemsize if arr is not None and arr.itemsize else None
                    elem = f"; element [{idx}]" if idx is not None else ""
                if addr < lo:
                    detail = f"address {addr:#x} is {dist} bytes before the start of {what}{desc}{elem}"
                elif addr >= lo + n:
                    detail = f"address {addr:#x} is {dist} bytes past the end of {what}{desc}{elem}"
                else:
                    detail = (f"address {addr:#x} is at byte {addr - lo} of {what}{desc}{elem}, "
                              f"and the access runs past its end")
        if best is not None and best > 1 << 20:  # a wild pointer: nowhere near anything
            detail = (f"address {addr:#x} is in no memory the kernel was given (the nearest, {alloc}, "
                      f"is {best} bytes away)")
    return KernelFault(kernel, cta, tid, where, addr, alloc, detail)


def _cstr(addr: int) -> str:
    """A string the kernel passed by address (__assertfail's message, file, function): read without
    faulting, since a wrong call may pass any number there."""
    from ptxjit.runtime.printf import read_cstring

    raw = read_cstring(addr, 1024) if addr else None
    return "?" if raw is None else raw.decode("utf-8", errors="replace")
