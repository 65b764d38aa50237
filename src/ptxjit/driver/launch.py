"""cuLaunchKernel's raw parameter buffers, launched without per-argument Python conversion.

The program hands the parameters as bytes already laid out as the kernel's .param space (from
`kernelParams`, gathered at the layout's offsets, or whole from `extra`'s CU_LAUNCH_PARAM_BUFFER_POINTER).
They are unpacked once with the kernel's record format (ArgPacker's plan) into the launch record; the
pointer parameters' allocations give the memory-safety ranges (driver/memory.py), so an access outside the
allocation a pointer points into — or through a pointer whose allocation was freed — is
CUDA_ERROR_ILLEGAL_ADDRESS, with ptxjit's fault report in the driver log.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from ptxjit.api import launch_hooks
from ptxjit.driver import capture, streams
from ptxjit.driver import errors as E
from ptxjit.driver.errors import CudaError
from ptxjit.driver.memory import REGISTRY
from ptxjit.errors import KernelError
from ptxjit.runtime import printf
from ptxjit.runtime.args import check_launch_shape, check_shared_memory, resolve_checked
from ptxjit.runtime.memory import Pointer

_PAD = 4  # runtime/args.py's slot kind of parameters packed as byte patches (aggregates, f16)


class _Plan:
    """What a raw launch of one function needs, computed at its first launch."""

    __slots__ = ("unpack", "patches", "ranges", "size", "checkable")

    def __init__(self, f) -> None:
        k = f.kernel
        packer = k._packer
        self.unpack = struct.Struct("<" + packer.format).unpack_from
        self.size = f.param_size
        self.patches = [(off, f.param_sizes[i]) for (kind, i, *_rest, off, _ph) in packer.slots if kind == _PAD]
        self.ranges = [f.param_offsets[i] for i in k._range_params]
        # a pointer the kernel did not get as a parameter (in a by-value struct, loaded from memory, computed
        # in a device function) has no range of its own, and a correct access through it would be refused:
        # such kernels run without the bounds checks
        why = unranged_pointers(f.module.module.ir, k.fn)
        self.checkable = why is None
        if why is not None:
            _note_unchecked(f.name, why)


_unchecked_noted = 0


def _note_unchecked(name: str, why: str) -> None:
    """A kernel that runs without bounds checks: each one named in PTXJIT_DRIVER_LOG's file; on stderr only the
    first (a library such as CuPy passes every array as a struct: one line per kernel would bury the output)."""
    global _unchecked_noted
    _unchecked_noted += 1
    if E.logs_to_file() or _unchecked_noted == 1:
        more = "" if E.logs_to_file() else " (more kernels like it: set PTXJIT_DRIVER_LOG=<file> to name each)"
        E.log(f"ptxjit driver: kernel '{name}' {why}: its launches run without memory-safety checks{more}")


_MEMORY_OPS = frozenset({"ld", "st", "atom", "red", "ldu"})
_OTHER_SPACES = ("shared", "local", "const", "param")


def unranged_pointers(module, fn) -> str | None:
    """Why some global or generic access of kernel `fn` may go through a pointer that is not one of its
    64-bit parameters (so no launch range covers it), or None when every one derives from a parameter."""
    from ptxjit.passes.pointers import pointer_registers, provenance

    if any(p.dims for p in fn.params):
        return "takes a by-value struct parameter (which may hold device pointers)"
    kparams = {p.name for p in fn.params}
    ptrs = pointer_registers(fn, kparams)
    prov = provenance(fn, kparams, ptrs)
    for ins in fn.instructions:
        if ins.opcode == "call":
            callee = next((o.name for o in ins.operands if getattr(o, "name", None) in module.functions), None)
            if callee is not None and _touches_memory(module, callee, set()):
                return f"calls the device function '{callee}', which accesses memory through its arguments"
            continue
        if ins.opcode not in _MEMORY_OPS or ins.has(*_OTHER_SPACES):  # only global and generic accesses
            continue
        for op in ins.operands:
            base = getattr(op, "base", None)
            if base is not None and getattr(base, "name", "").startswith("%") and prov.get(base.name) not in kparams:
                return f"accesses memory through a pointer it loads or computes ({ins.opcode} at {ins.pos})"
    return None


def _touches_memory(module, name: str, seen: set[str]) -> bool:
    """Whether device function `name` (or one it calls) has a global or generic access."""
    if name in seen:
        return False
    seen.add(name)
    fn = module.functions[name]
    for ins in fn.instructions if fn.body is not None else ():
        if ins.opcode in _MEMORY_OPS and not ins.has(*_OTHER_SPACES):
            return True
        if ins.opcode == "call":
            callee = next((o.name for o in ins.operands if getattr(o, "name", None) in module.functions), None)
            if callee is not None and _touches_memory(module, callee, seen):
                return True
    return False


class RawArgs(Sequence):
    """A raw launch's arguments by parameter index, decoded only when asked (fault messages, printf's %s):
    a 64-bit pointer parameter reads as a Pointer with the memory it points into (device_pointer)."""

    def __init__(self, f, raw: bytes) -> None:
        self._f = f
        self._raw = raw

    def __len__(self) -> int:
        return len(self._f.param_offsets)

    def __getitem__(self, i):  # type: ignore[override]
        f = self._f
        off, size = f.param_offsets[i], f.param_sizes[i]
        data = self._raw[off:off + size]
        if size == 8 and i in f.kernel._range_params:
            return device_pointer(int.from_bytes(data, "little"))
        return data


def plan_of(f) -> _Plan:
    p = getattr(f, "_raw_plan", None)
    if p is None:
        p = f._raw_plan = _Plan(f)
    return p


def gather(f, read_param) -> bytes:
    """The parameter buffer from kernelParams: `read_param(i, size)` gives parameter i's bytes."""
    buf = bytearray(max(f.param_size, 8))
    for i, (off, size) in enumerate(zip(f.param_offsets, f.param_sizes, strict=True)):
        buf[off:off + size] = read_param(i, size)
    return bytes(buf)


PARAM_END, PARAM_BUFFER_POINTER, PARAM_BUFFER_SIZE = 0, 1, 2  # CU_LAUNCH_PARAM_*


def parameter_buffer(ffi, f, kernel_params, extra, what: str) -> bytes:
    """The launch's parameter buffer from `kernel_params` (one pointer per parameter) or from `extra`
    (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs ended by CU_LAUNCH_PARAM_END), for the driver's and the
    runtime's launches and kernel nodes alike (`ffi`: the calling library's)."""
    def at(p, size: int) -> bytes:
        return bytes(ffi.buffer(ffi.cast("char *", p), size))

    if kernel_params != ffi.NULL:
        if extra != ffi.NULL:
            raise CudaError(E.INVALID_VALUE, f"{what}: both kernelParams and extra are given")
        return gather(f, lambda i, size: at(kernel_params[i], size))
    if extra != ffi.NULL:
        buf = size = None
        i = 0
        while (key := int(ffi.cast("uintptr_t", extra[i]))) != PARAM_END:
            if key == PARAM_BUFFER_POINTER:
                buf = extra[i + 1]
            elif key == PARAM_BUFFER_SIZE:
                size = ffi.cast("size_t *", extra[i + 1])[0]
            else:
                raise CudaError(E.INVALID_VALUE, f"{what}: unknown extra option {key:#x}")
            i += 2
        if buf is None or size is None:
            raise CudaError(E.INVALID_VALUE, f"{what}: extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and "
                                             "CU_LAUNCH_PARAM_BUFFER_SIZE")
        # the buffer must reach the last parameter's end; the layout's trailing alignment padding may be left out
        end = max((o + n for o, n in zip(f.param_offsets, f.param_sizes, strict=True)), default=0)
        if size < end:
            raise CudaError(E.INVALID_VALUE, f"{what} '{f.name}': the parameter buffer has {size} bytes, "
                                             f"the kernel's parameters take {end}")
        return at(buf, end).ljust(f.param_size, b"\0") if end else b""
    if f.param_size:
        raise CudaError(E.INVALID_VALUE, f"{what} '{f.name}': the kernel takes {len(f.param_offsets)} "
                                         f"parameters, but kernelParams and extra are both NULL")
    return b""


NO_MEMORY = np.empty(0, np.uint8)  # a pointer into no live allocation: every access through it is illegal


def device_pointer(address: int) -> Pointer:
    """A pointer parameter's value with the memory it points into: its live allocation (the bounds checks
    and the checking tools allow all of it, whichever byte the pointer names), or no memory at all for a
    pointer into none (freed, or never allocated: an access through it is CUDA_ERROR_ILLEGAL_ADDRESS)."""
    a = REGISTRY.find(address) if address else None
    if a is None:
        return Pointer(address, NO_MEMORY) if address else Pointer(0)
    return Pointer(address, a.memory())


def python_args(f, raw: bytes) -> list:
    """The parameters as the Python API takes them (launches through Kernel.__call__ take that path: launch
    hooks, cooperative and cluster launches): a 64-bit value inside a live allocation, or of a pointer the
    kernel dereferences, as a Pointer with the memory it points into."""
    out = []
    for i, p in enumerate(f.kernel.fn.params):
        off, size = f.param_offsets[i], f.param_sizes[i]
        data = raw[off:off + size]
        t = p.type
        if p.dims:
            out.append(data)
        elif t == "f32":
            out.append(struct.unpack("<f", data)[0])
        elif t == "f64":  # before the 8-byte range parameters, which an .f64 is one of: a double, not its bits
            out.append(struct.unpack("<d", data)[0])
        elif size == 8 and i in f.kernel._range_params:
            v = int.from_bytes(data, "little")
            ptr = device_pointer(v)
            out.append(ptr if ptr.memory is not None and ptr.memory.nbytes or f.kernel._access.params[i].pointer
                       else v)
        elif t in ("f16", "bf16"):
            out.append(data)
        else:
            out.append(int.from_bytes(data, "little"))
    return out


def launch(driver, ctx, f, grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int,
           stream_handle, raw: bytes, cooperative: bool = False, cluster=None) -> None:
    printf.flush_held()  # a launch is a synchronization point for device printf output, as on CUDA
    k = f.kernel
    if len(raw) < f.param_size:
        raise CudaError(E.INVALID_VALUE, f"cuLaunchKernel '{f.name}': the parameter buffer has {len(raw)} bytes, "
                                         f"the kernel's parameters take {f.param_size}")
    if min(grid) < 1 or min(block) < 1:
        raise CudaError(E.INVALID_VALUE, f"cuLaunchKernel '{f.name}': grid {grid} and block {block} must be >= 1")
    try:
        check_launch_shape(k.name, grid, block)
        if k._ntid_limits:
            k._check_ntid(block)
        check_shared_memory(k.name, k._static_shared, shared_mem, k._access)
    except ValueError as exc:
        raise CudaError(E.INVALID_VALUE, str(exc)) from None
    cap = streams.capturing(driver, stream_handle)
    if cap is not None:  # stream capture: the launch becomes a kernel node of the graph
        from ptxjit.driver.graphs import KernelNode

        streams.record(driver, cap, KernelNode(f, grid, block, shared_mem, raw))
        return
    if capture.active() and stream_handle in capture.LEGACY_HANDLES:
        capture.refuse_legacy(driver, f"launching '{f.name}' on the legacy stream")
    stream = stream_handle if isinstance(stream_handle, streams.Stream) else streams.resolve(driver, stream_handle)
    plan = plan_of(f)
    checked = resolve_checked(None, False) and plan.checkable  # a pointer without a range: no bounds checks
    if launch_hooks() or cooperative or cluster is not None or k._declared_cluster or k._auto_cooperative:
        return _launch_kernel(ctx, f, grid, block, shared_mem, stream, raw, checked, cooperative, cluster)
    values = list(plan.unpack(raw))
    patches = [(off, raw[off:off + size]) for off, size in plan.patches] or None
    ranges = None
    if checked:
        ranges = []
        find = REGISTRY.find
        for off in plan.ranges:
            v = int.from_bytes(raw[off:off + 8], "little")
            a = find(v) if v else None
            if a is None:
                ranges += (0, 0)  # no allocation: any access through it is illegal, as on a GPU
            else:
                ranges += (a.base, a.size)
    if stream is streams.Stream.null:
        # the legacy stream: run now, on the synchronous path (it waits for the blocking streams first, and
        # takes the tiers), which costs a third of a stream round trip; a kernel error then comes back from
        # this call instead of the next synchronization, which CUDA allows, and sticks to the context
        try:
            k.launch_packed(grid, block, RawArgs(f, raw), values, ranges, patches, shared_mem, None, checked, None)
        except KernelError as exc:
            raise streams.make_sticky(ctx, exc) from None
        return
    k.launch_packed(grid, block, RawArgs(f, raw), values, ranges, patches, shared_mem, None, checked, stream)


def _launch_kernel(ctx, f, grid, block, shared_mem: int, stream, raw: bytes, checked: bool, cooperative: bool,
                   cluster) -> None:
    """The launch as a Python API launch (Kernel.__call__): through the launch hooks (PTXJIT_CHECK's tools,
    a program's own), and the cooperative and cluster launchers.  A kernel error a launch raises here (a
    checked launch on a stream runs at once) sticks to the context, as on the legacy stream."""
    try:
        f.kernel(grid, block, python_args(f, raw), shared_mem=shared_mem, checked=checked,
                 stream=None if stream is streams.Stream.null and not (cooperative or cluster) else stream,
                 cooperative=cooperative, cluster=cluster)
    except ValueError as exc:
        code = E.COOPERATIVE_LAUNCH_TOO_LARGE if cooperative and "cooperative" in str(exc) else E.INVALID_VALUE
        raise CudaError(code, str(exc)) from None
    except KernelError as exc:
        raise streams.make_sticky(ctx, exc) from None
