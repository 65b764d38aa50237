"""Modules, functions and globals: cuModuleLoad*, cuLibraryLoad*, cuModuleGetFunction/Global.

An image is PTX text, a fatbin container (or the wrapper nvcc's host code passes), or a cubin.  ptxjit runs
PTX: from a fatbin it takes the PTX entry best matching the virtual device; an image holding only SASS is
refused with CUDA_ERROR_NO_BINARY_FOR_GPU and a message naming its kernels and the nvcc flag that embeds PTX.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ptxjit.driver import errors as E
from ptxjit.driver.errors import CudaError
from ptxjit.driver.memory import REGISTRY, Allocation
from ptxjit.errors import PTXError
from ptxjit.lower.layout import param_layout


@dataclass
class Function:
    """A kernel of a loaded module, with what a raw launch needs planned once."""

    handle: int
    module: DriverModule
    kernel: object  # ptxjit.api.Kernel
    name: str
    param_offsets: list[int]
    param_sizes: list[int]
    param_size: int
    attributes: dict[int, int] = field(default_factory=dict)


@dataclass
class DriverModule:
    handle: int
    context: object
    module: object  # ptxjit.api.Module
    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    globals_alloc: Allocation | None = None
    library: bool = False


def image_to_ptx(data: bytes, sm: int, what: str) -> tuple[str, str]:
    """(PTX text, a description of where it came from) for a module image; CudaError otherwise."""
    from ptxjit.driver import fatbin

    kind = fatbin.classify_image(data)
    if kind == "ptx":
        return data.split(b"\0", 1)[0].decode("utf-8", errors="replace"), "PTX"
    if kind == "fatbin":
        try:
            entries = fatbin.parse_fatbin(data)
        except fatbin.FatbinError as exc:
            raise CudaError(E.INVALID_IMAGE, f"{what}: corrupt fatbin: {exc}") from None
        entry = fatbin.select_ptx(entries, sm)
        if entry is None:
            raise CudaError(E.NO_BINARY_FOR_GPU, f"{what}: {fatbin.describe_no_ptx(data, sm)}")
        return entry.ptx or entry.payload.decode("utf-8", errors="replace"), f"fatbin PTX entry {entry.target}"
    if kind == "cubin":
        raise CudaError(E.NO_BINARY_FOR_GPU, f"{what}: {fatbin.describe_no_ptx(data)}")
    raise CudaError(E.INVALID_IMAGE, f"{what}: the image is neither PTX text, a fatbin nor a cubin "
                                     f"(first bytes {data[:8].hex()})")


def image_size(head: bytes) -> int | None:
    """How many bytes an image given only by its address has, from its first 64 bytes: a fatbin's header,
    a cubin's ELF header (its section table ends it); -1 for a fatbin wrapper (it points at the fatbin);
    None for text (read to its NUL)."""
    from ptxjit.driver import fatbin

    magic = int.from_bytes(head[:4], "little")
    if magic == fatbin.WRAPPER_MAGIC:
        return -1
    try:
        if magic == fatbin.FATBIN_MAGIC:
            return fatbin.fatbin_size(head)
    except fatbin.FatbinError as exc:
        raise CudaError(E.INVALID_IMAGE, f"corrupt fatbin header: {exc}") from None
    if head[:4] == b"\x7fELF" and len(head) >= 64 and head[4] == 2:  # ELF64: sized by its tables
        shoff = int.from_bytes(head[0x28:0x30], "little")
        shentsize = int.from_bytes(head[0x3A:0x3C], "little")
        shnum = int.from_bytes(head[0x3C:0x3E], "little")
        phoff = int.from_bytes(head[0x20:0x28], "little")
        phnum = int.from_bytes(head[0x38:0x3A], "little")
        phentsize = int.from_bytes(head[0x36:0x38], "little")
        end = max(shoff + shnum * shentsize, phoff + phnum * phentsize)
        if not shoff or shentsize < 64 or end > 1 << 32:
            raise CudaError(E.INVALID_IMAGE, "an ELF image whose section table cannot be found")
        return -2 - end  # the caller reads the tables, then the extent of the sections (elf_extent)
    return None


def elf_extent(tables: bytes) -> int:
    """The size of an ELF64 image from its first bytes through its section table: the furthest end of a header
    table or of a section's contents."""
    shoff = int.from_bytes(tables[0x28:0x30], "little")
    shentsize = int.from_bytes(tables[0x3A:0x3C], "little")
    shnum = int.from_bytes(tables[0x3C:0x3E], "little")
    end = len(tables)
    for i in range(shnum):
        at = shoff + i * shentsize
        kind = int.from_bytes(tables[at + 4:at + 8], "little")
        offset = int.from_bytes(tables[at + 0x18:at + 0x20], "little")
        size = int.from_bytes(tables[at + 0x20:at + 0x28], "little")
        if kind != 8:  # SHT_NOBITS takes no room in the file
            end = max(end, offset + size)
    if end > 1 << 32:
        raise CudaError(E.INVALID_IMAGE, "an ELF image with a section past 4 GB")
    return end


def load(driver, ctx, data: bytes, name: str, library: bool = False) -> DriverModule:
    from ptxjit.api import Module

    text, origin = image_to_ptx(data, driver.model.sm, name)
    try:
        mod = Module(text, name)
    except PTXError as exc:
        raise CudaError(E.INVALID_PTX, f"{name} ({origin}): {exc}") from None
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise CudaError(E.INVALID_PTX, f"{name} ({origin}): ptxjit could not load it: {exc}") from None
    dm = DriverModule(0, ctx, mod, name, library=library)
    dm.handle = (driver.libraries if library else driver.modules).new(dm)
    if mod.globals.nbytes:
        buf = mod.globals
        dm.globals_alloc = REGISTRY.add(Allocation(int(buf.ctypes.data), int(buf.nbytes), "module globals", ctx))
    return dm


def unload(driver, dm: DriverModule) -> None:
    (driver.libraries if dm.library else driver.modules).drop(dm.handle)
    for f in dm.functions.values():
        try:
            driver.functions.drop(f.handle)
        except CudaError:
            pass
    if dm.globals_alloc is not None:
        REGISTRY.remove(dm.globals_alloc.base, ("module globals",), "cuModuleUnload")


def unload_context(driver, ctx) -> None:
    for table in (driver.modules, driver.libraries):
        for _, dm in table.items():
            if dm.context is ctx:
                unload(driver, dm)


def get_function(driver, dm: DriverModule, name: str) -> Function:
    f = dm.functions.get(name)
    if f is not None:
        return f
    entry = next((e for e in dm.module.ir.entries if e.name == name), None)
    if entry is None:
        raise CudaError(E.NOT_FOUND, f"no kernel named '{name}' in {dm.name}; kernels: "
                        + (", ".join(e.name for e in dm.module.ir.entries) or "none"))
    kernel = dm.module.get_function(name)
    lay = param_layout(entry.params)
    f = Function(0, dm, kernel, name, list(lay.offsets), [max(p.size, p.elem_size) for p in entry.params],
                 lay.size)
    f.handle = driver.functions.new(f)
    dm.functions[name] = f
    return f


def get_global(dm: DriverModule, name: str) -> tuple[int, int]:
    """(address, size) of a module-scope variable, by its PTX name."""
    mod = dm.module
    lay = mod._glay
    var = next((v for v in mod.ir.globals if v.name == name), None)
    if var is None or var.name not in lay.offsets:
        raise CudaError(E.NOT_FOUND, f"no .global/.const variable named '{name}' in {dm.name}")
    off = lay.offsets[var.name][1]
    return int(mod.globals.ctypes.data) + off, int(var.size)


def function_attribute(driver, f: Function, attr: int) -> int:
    from ptxjit.driver.abi_tables import FUNCTION_ATTRIBUTE as A

    info = f.kernel.info
    perf = f.kernel.fn.perf
    max_threads = 1024
    for key in ("reqntid", "maxntid"):
        lim = perf.get(key)
        if lim:
            max_threads = int(np.prod(lim))
    sm = driver.model.sm
    table = {
        A["CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"]: max_threads,
        A["CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"]: info.shared_size,
        # user __constant__ data: the module's .const variables (ptxas's bank 3, shared by the module's kernels)
        A["CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES"]: sum(int(v.size) for v in f.module.module.ir.globals
                                                     if v.space == "const"),
        A["CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES"]: info.local_size,
        # an estimate (ptxjit allocates no registers), within the kernel's .maxnreg as ptxas keeps it
        A["CU_FUNC_ATTRIBUTE_NUM_REGS"]: min(255, max(16, sum(info.registers.values())),
                                             int((perf.get("maxnreg") or (255,))[0])),
        A["CU_FUNC_ATTRIBUTE_PTX_VERSION"]: _ptx_version(f.module.module),
        A["CU_FUNC_ATTRIBUTE_BINARY_VERSION"]: sm,
        A["CU_FUNC_ATTRIBUTE_CACHE_MODE_CA"]: 0,
        A["CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"]: 48 * 1024 - info.shared_size,
        A["CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT"]: -1,
        A["CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET"]: 0,
        A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH"]: 0,
        A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT"]: 0,
        A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH"]: 0,
        A["CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED"]: 1 if sm >= 90 else 0,
        A["CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"]: 0,
    }
    cluster = perf.get("reqnctapercluster")
    if cluster:
        dims = [*cluster, 1, 1][:3]
        table[A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH"]] = dims[0]
        table[A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT"]] = dims[1]
        table[A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH"]] = dims[2]
    table.update(f.attributes)
    if attr not in table:
        raise CudaError(E.INVALID_VALUE, f"cuFuncGetAttribute: {attr} is not a CUfunction_attribute")
    return table[attr]


def _ptx_version(mod) -> int:
    v = getattr(mod.ir, "version", None)
    if isinstance(v, tuple | list) and len(v) >= 2:
        return int(v[0]) * 10 + int(v[1])
    if isinstance(v, str) and "." in v:
        a, b = v.split(".", 1)
        return int(a) * 10 + int(b[:1] or 0)
    return 0
