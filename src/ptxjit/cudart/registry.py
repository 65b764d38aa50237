"""What nvcc's host code registers, and the modules loaded from it.

A program built by nvcc registers, from static constructors before main, each translation unit's fatbin
(`__cudaRegisterFatBinary`), its kernels by the address of their host stubs (`__cudaRegisterFunction`) and
its `__device__`/`__constant__` variables by the address of their host shadows (`__cudaRegisterVar`).
Registration only records; the fatbin becomes a driver module (its PTX entry translated) at the first launch
or symbol access, in the context current then, and again in a fresh primary context after cudaDeviceReset.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from dataclasses import dataclass, field

from ptxjit.cudart import errors as RE
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import fatbin as _fatbin
from ptxjit.driver import modules as _modules
from ptxjit.driver.context import DRIVER
from ptxjit.driver.errors import INVALID_IMAGE, NO_BINARY_FOR_GPU, CudaError


@dataclass
class FatBinary:
    """One registered fatbin (a translation unit's device code)."""

    wrapper: int  # the address of nvcc's __fatBinC_Wrapper_t
    handle: object = None  # the void ** handed back to the program (kept alive here)
    module: object = None  # the driver module (modules.DriverModule), once loaded
    names: list[str] = field(default_factory=list)
    # registered by a statically linked runtime's code (static_runtime.py), which launches with <<<>>> and
    # never reads the launch's error: a kernel it cannot run here must fail the program's next synchronizing
    # call, not leave memory unwritten without a word
    launch_errors_unread: bool = False


@dataclass
class Kernel:
    host: int
    fatbin: FatBinary
    name: str


@dataclass
class Variable:
    host: int
    fatbin: FatBinary
    name: str
    size: int
    constant: bool
    managed: bool = False  # __managed__: `host` is the address of the program's pointer to it


_MANAGED = re.compile(r"\.attribute\s*\(\s*\.managed\s*\)\s*")
FATBINS: dict[int, FatBinary] = {}  # by handle address
KERNELS: dict[int, Kernel] = {}  # by host stub address
VARIABLES: dict[int, Variable] = {}  # by host shadow address
_lock = threading.RLock()


def register_fatbin(wrapper: int, handle) -> FatBinary:
    fb = FatBinary(wrapper, handle)
    FATBINS[handle_address(handle)] = fb
    return fb


def handle_address(handle) -> int:
    from ptxjit.cudart import base as B

    return int(B.ffi.cast("uintptr_t", handle))


def fatbin_of(handle: int) -> FatBinary:
    fb = FATBINS.get(handle)
    if fb is None:
        raise RuntimeError_(RE.INVALID_VALUE, f"{handle:#x} is not a handle __cudaRegisterFatBinary returned")
    return fb


def unregister(handle: int) -> None:
    fb = FATBINS.pop(handle, None)
    if fb is None:
        return
    for table in (KERNELS, VARIABLES):
        for k in [k for k, v in table.items() if v.fatbin is fb]:
            del table[k]


def module_of(fb: FatBinary, ctx):
    """The driver module of `fb` in context `ctx`, loaded (translated) on first use."""
    with _lock:
        dm = fb.module
        if dm is not None and dm.context is ctx and ctx.alive:
            return dm
        try:
            data = _image(fb)
        except _fatbin.FatbinError as exc:
            raise CudaError(INVALID_IMAGE, f"the fatbin nvcc registered is corrupt: {exc}") from None
        name = f"{_program()}'s fatbin"
        text, _origin = _modules.image_to_ptx(data, DRIVER.model.sm, name)
        if _MANAGED.search(text):  # __managed__ variables: ordinary globals here (device memory is host memory)
            data = _MANAGED.sub("", text).encode() + b"\0"
        dm = _modules.load(DRIVER, ctx, data, name)
        fb.module = dm
        return dm


def _image(fb: FatBinary) -> bytes:
    """The image to load for a registered fatbin.  Relocatable device code (nvcc -rdc=true) registers the
    device-linked fatbin, which holds SASS only, in a version-2 wrapper that also lists the prelinked fatbins
    of the translation units (a NULL-terminated array): their PTX, linked as the driver's JIT linker links
    PTX, is the program's device code."""
    wrapper = _fatbin.parse_wrapper(ctypes.string_at(fb.wrapper, _fatbin.WRAPPER_SIZE))
    if wrapper.version == 2 and wrapper.filename_or_fatbins:
        from ptxjit.driver.link import INPUT_FATBINARY, LinkState

        state = LinkState()
        at = wrapper.filename_or_fatbins
        while len(state.inputs) < 4096:
            p = ctypes.c_void_p.from_address(at + 8 * len(state.inputs)).value
            if not p:
                break
            state.add(INPUT_FATBINARY, _fatbin.read_fatbin_at(p), f"{_program()}'s fatbin {len(state.inputs)}")
        if state.inputs:
            return state.complete()
    return _fatbin.read_fatbin_at(wrapper.data)


def _program() -> str:
    """The running program's name, for the module's name in reports (faults, a fatbin without PTX)."""
    try:
        return os.path.basename(os.readlink("/proc/self/exe"))
    except OSError:
        return "the program"


def kernel(host: int) -> Kernel:
    k = KERNELS.get(host)
    if k is None:
        raise RuntimeError_(RE.INVALID_DEVICE_FUNCTION,
                            f"{host:#x} is not a __global__ function registered by the program's host code")
    return k


def function_of(host: int, ctx):
    """The driver Function (modules.Function) for the kernel whose host stub is at `host`."""
    k = kernel(host)
    return _modules.get_function(DRIVER, module_of(k.fatbin, ctx), k.name)


def launch_function_of(host: int, ctx):
    """function_of for a launch.  A kernel without a runnable image, launched by code that does not read
    launch errors (a static runtime's), makes the error sticky on the context as a kernel fault is, so the
    program's next synchronizing call reports it instead of the program reading memory never written."""
    try:
        return function_of(host, ctx)
    except CudaError as exc:
        k = KERNELS.get(host)
        if exc.code == NO_BINARY_FOR_GPU and k is not None and k.fatbin.launch_errors_unread and not ctx.sticky:
            ctx.sticky = exc.code
            ctx.sticky_report = f"kernel {k.name!r} cannot run: {exc.args[0]}"
        raise


def registered_by(register_all) -> list[FatBinary]:
    """Run a translation unit's registration function; the fatbins it registered."""
    before = set(FATBINS)
    register_all()
    return [fb for h, fb in FATBINS.items() if h not in before]


def variable(host: int) -> Variable:
    v = VARIABLES.get(host)
    if v is None:  # a __managed__ variable is named by its own address (the program's pointer's target)
        v = next((m for m in VARIABLES.values()
                  if m.managed and ctypes.c_void_p.from_address(m.host).value == host), None)
    if v is None:
        raise RuntimeError_(RE.INVALID_SYMBOL,
                            f"{host:#x} is not a __device__ or __constant__ variable registered by the program")
    return v


def symbol_address(host: int, ctx) -> tuple[int, int]:
    """(device address, size) of the variable whose host shadow is at `host`."""
    v = variable(host)
    addr, size = _modules.get_global(module_of(v.fatbin, ctx), v.name)
    return addr, size or v.size
