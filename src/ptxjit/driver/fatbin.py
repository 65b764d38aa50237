"""Reading the images the CUDA driver API is handed: PTX text, cubins, fatbin containers, fatbin wrappers.

`cuModuleLoadData`, `cuModuleLoadFatBinary`, `cuLibraryLoadData` and the runtime's `__cudaRegisterFatBinary`
receive one of four things:

- PTX text, usually NUL-terminated;
- a cubin: an ELF file for the NVIDIA CUDA machine (SASS, which ptxjit cannot run: only its kernel names matter);
- a fatbin container, as `nvcc -fatbin`, `fatbinary` and nvFatbin write it;
- the 24-byte fatbin wrapper that nvcc-compiled host code passes, whose data pointer points at a container.

Container layout (little-endian; read from nvcc 13 / fatbinary output and public descriptions of the format):

    header (16 bytes):  u32 magic 0xBA55ED50, u16 version 1, u16 header size (16), u64 size of the entries that follow
    entry header (>= 64 bytes, then the payload):
      0  u16 kind            1 PTX, 2 ELF (cubin)
      2  u16 entry version   0x0101
      4  u32 header size     64, or more when an identifier, options or an ELF feature table follow the fixed part
      8  u64 payload size    bytes after the header, padded to 8
     16  u32 compressed size 0 when the payload is stored as it is
     20  u32 options offset  from the entry start: {u32 offset, u32 size} of the options string; 0 when none
     24  u16 minor, u16 major   PTX ISA version (PTX) or cubin code version (ELF)
     28  u32 arch            SM number: 80, 90, 100, 120
     32  u32 identifier offset, u32 identifier size (from the entry start; the source file name or --ident)
     40  u64 flags           see FLAG_*
     48  u64 reserved
     56  u64 uncompressed size  0 when the payload is stored as it is

Compression (per entry, by flag): 0x2000 is the LZ4 *block* format (`--compress-mode=speed`), 0x8000 a zstd frame
(`default`, `balance`, `size`). nvcc compresses PTX by default, the SASS only with `size` or `-Xfatbin -compress-all`.
Both are decoded by the maintained `lz4` and `zstandard` libraries, bounded by the entry's uncompressed size.

Every read is bounds-checked: bad input raises `FatbinError` (a ValueError) with the byte offset and what was expected,
never an IndexError or struct.error.
"""

from __future__ import annotations

import ctypes
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

FATBIN_MAGIC = 0xBA55ED50
FATBIN_VERSION = 1
FATBIN_HEADER_SIZE = 16
WRAPPER_MAGIC = 0x466243B1
WRAPPER_SIZE = 24  # {int magic; int version; const void *data; void *filename_or_fatbins} on a 64-bit host
ENTRY_FIXED_SIZE = 64

KIND_PTX = 1
KIND_ELF = 2

FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_PRODUCER_CUDA = 0x4
FLAG_PRODUCER_OPENCL = 0x8
FLAG_HOST_LINUX = 0x10
FLAG_HOST_MAC = 0x20
FLAG_HOST_WINDOWS = 0x40
FLAG_COMPRESSED_LZ4 = 0x2000
FLAG_COMPRESSED_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a, compute_100a: runs only on that exact SM
FLAG_FAMILY_SPECIFIC = 0x200000  # sm_100f: runs on the SMs of one family (same major version)
# Public readers of older toolkits' fatbins name 0x1000 a compression flag too; no toolkit here writes it, and its
# format is not known, so an entry carrying it is refused rather than handed on as garbage.
FLAG_COMPRESSED_UNKNOWN = 0x1000

_FLAG_NAMES: tuple[tuple[int, str], ...] = (
    (FLAG_64BIT, "64bit"),
    (FLAG_DEBUG, "debug"),
    (FLAG_PRODUCER_CUDA, "cuda"),
    (FLAG_PRODUCER_OPENCL, "opencl"),
    (FLAG_HOST_LINUX, "linux"),
    (FLAG_HOST_MAC, "mac"),
    (FLAG_HOST_WINDOWS, "windows"),
    (FLAG_COMPRESSED_UNKNOWN, "compressed"),
    (FLAG_COMPRESSED_LZ4, "lz4"),
    (FLAG_COMPRESSED_ZSTD, "zstd"),
    (FLAG_ARCH_SPECIFIC, "arch-specific"),
    (FLAG_FAMILY_SPECIFIC, "family-specific"),
)

# ELF constants (System V gABI; EM_CUDA from the ELF machine registry).
EM_CUDA = 190
SHT_SYMTAB = 2
SHT_NOBITS = 8
STT_FUNC = 2
# st_other bit that marks a kernel (an `.entry`) in a cubin; a `.func` compiled with -rdc is FUNC in its own
# `.text.<name>` section too, with its own `.nv.info.<name>`, but lacks this bit.
STO_CUDA_ENTRY = 0x10


class FatbinError(ValueError):
    """A truncated or corrupt image: `offset` is the byte where reading failed, the message says what was expected."""

    def __init__(self, offset: int, expected: str, what: str = "fatbin") -> None:
        self.offset = offset
        self.expected = expected
        self.what = what
        super().__init__(f"{what}: at byte offset {offset} (0x{offset:x}): {expected}")


# ---------------------------------------------------------------------------------------------------------------------
# bounded reads


def _unpack(fmt: str, data: bytes | memoryview, offset: int, what: str, name: str) -> tuple:
    size = struct.calcsize(fmt)
    if offset < 0 or offset + size > len(data):
        raise FatbinError(offset, f"{name} ({size} bytes), but the image ends at byte {len(data)}", what)
    return struct.unpack_from(fmt, data, offset)


def _slice(data: bytes, offset: int, size: int, what: str, name: str) -> bytes:
    if offset < 0 or size < 0 or offset + size > len(data):
        raise FatbinError(offset, f"{name} ({size} bytes), but the image ends at byte {len(data)}", what)
    return data[offset : offset + size]


# ---------------------------------------------------------------------------------------------------------------------
# classification

_PTX_VERSION_RE = re.compile(rb"^[ \t]*\.version[ \t]+\d+\.\d+", re.MULTILINE)
_PTX_COMMENTS_RE = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _looks_like_ptx(data: bytes) -> bool:
    text = data.rstrip(b"\0")
    if not text or b"\0" in text:
        return False
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    # A PTX module opens with `.version` (comments aside), which no other image type starts with as text.
    body = _PTX_COMMENTS_RE.sub(b"", text).lstrip()
    return _PTX_VERSION_RE.match(body) is not None


def classify_image(data: bytes) -> str:
    """What a driver-API image is: "ptx", "cubin", "fatbin", "fatbin_wrapper" or "unknown".

    A host ELF (an executable or shared library holding `.nv_fatbin`) is "unknown" here: it is not an image the driver
    loads; `extract_fatbins_from_elf` reads the containers out of it."""
    data = bytes(data)
    if len(data) >= 4:
        (magic,) = struct.unpack_from("<I", data, 0)
        if magic == FATBIN_MAGIC:
            return "fatbin"
        if magic == WRAPPER_MAGIC:
            return "fatbin_wrapper"
        if data[:4] == b"\x7fELF":
            try:
                return "cubin" if _ElfFile(data, "ELF image").machine == EM_CUDA else "unknown"
            except FatbinError:
                return "unknown"
    return "ptx" if _looks_like_ptx(data) else "unknown"


# ---------------------------------------------------------------------------------------------------------------------
# fatbin containers


@dataclass(frozen=True)
class FatbinEntry:
    """One image in a fatbin container, its payload decompressed."""

    kind: str  # "ptx", "elf" (a cubin) or "other"
    kind_code: int
    arch: int  # SM number: 80 for sm_80 / compute_80
    version: tuple[int, int]  # (major, minor): the PTX ISA version for PTX, the cubin code version for ELF
    flags: int
    compression: str  # "none", "lz4" or "zstd": how the payload was stored
    identifier: str | None  # the source file name (nvcc -G, --ident) when recorded
    options: str | None  # the options the PTX was compiled with (-Xptxas, -G), when recorded as text
    options_raw: bytes  # the options block as stored (sm_100+ cubin entries keep a binary feature table there)
    payload: bytes  # the decompressed image; PTX without its NUL padding
    offset: int  # byte offset of the entry header in the parsed buffer
    ptx: str | None = field(default=None)  # PTX text, for kind "ptx"

    @property
    def ptx_version(self) -> tuple[int, int] | None:
        return self.version if self.kind == "ptx" else None

    @property
    def is_64bit(self) -> bool:
        return bool(self.flags & FLAG_64BIT)

    @property
    def is_debug(self) -> bool:
        return bool(self.flags & FLAG_DEBUG)

    @property
    def compressed(self) -> bool:
        return self.compression != "none"

    @property
    def arch_suffix(self) -> str:
        """"a" for an arch-specific image (sm_90a), "f" for a family-specific one (sm_100f), "" otherwise."""
        if self.flags & FLAG_ARCH_SPECIFIC:
            return "a"
        if self.flags & FLAG_FAMILY_SPECIFIC:
            return "f"
        return ""

    @property
    def target(self) -> str:
        """The nvcc name of the image's target: compute_90 for PTX, sm_90a for SASS."""
        return f"{'compute' if self.kind == 'ptx' else 'sm'}_{self.arch}{self.arch_suffix}"

    @property
    def flag_names(self) -> list[str]:
        names = [name for bit, name in _FLAG_NAMES if self.flags & bit]
        rest = self.flags & ~sum(bit for bit, _ in _FLAG_NAMES)
        if rest:
            names.append(f"0x{rest:x}")
        return names


def fatbin_size(header: bytes, offset: int = 0) -> int:
    """Total size of the container whose 16-byte header starts at `offset` (what a pointer-only API must read)."""
    magic, version, header_size, fat_size = _unpack("<IHHQ", header, offset, "fatbin", "a fatbin header")
    if magic != FATBIN_MAGIC:
        raise FatbinError(offset, f"the fatbin magic 0x{FATBIN_MAGIC:08X}, found 0x{magic:08X}")
    if version != FATBIN_VERSION:
        raise FatbinError(offset + 4, f"fatbin version {FATBIN_VERSION}, found {version}")
    if header_size < FATBIN_HEADER_SIZE:
        raise FatbinError(offset + 6, f"a fatbin header size of at least {FATBIN_HEADER_SIZE}, found {header_size}")
    return header_size + fat_size


# LZ4's block format cannot expand by more than 255:1; a declared size beyond that is corrupt, and is refused before
# the output buffer is allocated.
_LZ4_MAX_RATIO = 255
_ZSTD_CHUNK = 1 << 20


def _decompress(flags: int, stored: bytes, size: int, at: int) -> tuple[str, bytes]:
    if flags & FLAG_COMPRESSED_ZSTD:
        import zstandard

        # Read in chunks, never past the declared size: neither a wrong size field nor a frame that expands without
        # limit can make this allocate more than the entry claims plus one chunk.
        parts: list[bytes] = []
        got = 0
        try:
            with zstandard.ZstdDecompressor().stream_reader(stored) as reader:
                while got <= size:
                    chunk = reader.read(min(_ZSTD_CHUNK, size + 1 - got))
                    if not chunk:
                        break
                    parts.append(chunk)
                    got += len(chunk)
        except zstandard.ZstdError as exc:
            raise FatbinError(at, f"a zstd frame decompressing to {size} bytes ({exc})") from None
        out = b"".join(parts)
        algo = "zstd"
    elif flags & FLAG_COMPRESSED_LZ4:
        import lz4.block

        if size > _LZ4_MAX_RATIO * len(stored) + 16:
            raise FatbinError(at, f"an LZ4 block of {len(stored)} bytes cannot decompress to the declared {size} bytes")
        try:
            out = lz4.block.decompress(stored, uncompressed_size=size)
        except (lz4.block.LZ4BlockError, ValueError, OverflowError) as exc:
            raise FatbinError(at, f"an LZ4 block decompressing to {size} bytes ({exc})") from None
        algo = "lz4"
    else:
        raise FatbinError(at, f"a known compression flag (0x2000 LZ4, 0x8000 zstd); the entry's flags are 0x{flags:x}")
    if len(out) != size:
        shown = f"more than {size}" if len(out) > size else str(len(out))
        raise FatbinError(at, f"{algo} data decompressing to the declared {size} bytes, got {shown}")
    return algo, out


def _entry_string(data: bytes, entry: int, end: int, rel: int, size: int, name: str) -> bytes:
    """A string the entry header points at (offset from the entry start), kept inside the entry header."""
    if rel < ENTRY_FIXED_SIZE or entry + rel + size > end:
        raise FatbinError(entry + rel, f"the entry's {name} ({size} bytes) inside its header (ends at byte {end})")
    return data[entry + rel : entry + rel + size]


def _printable(raw: bytes) -> str | None:
    try:
        text = raw.rstrip(b"\0").decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None


def _parse_entry(data: bytes, at: int, end: int) -> tuple[FatbinEntry, int]:
    fields = _unpack("<HHIQIIHHIIIQQQ", data, at, "fatbin", "a 64-byte fatbin entry header")
    (kind, _entry_version, header_size, payload_size, compressed_size, options_rel, minor, major, arch,
     ident_rel, ident_size, flags, _reserved, uncompressed_size) = fields  # fmt: skip
    if at + ENTRY_FIXED_SIZE > end:
        raise FatbinError(at, f"a 64-byte entry header inside the container (ends at byte {end})")
    if header_size < ENTRY_FIXED_SIZE or at + header_size > end:
        raise FatbinError(at + 4, f"an entry header size of 64 or more inside the container, found {header_size}")
    payload_at = at + header_size
    if payload_at + payload_size > end:
        raise FatbinError(at + 8, f"an entry payload of {payload_size} bytes inside the container (ends at byte {end})")
    header_end = payload_at
    identifier = None
    if ident_size:
        raw = _entry_string(data, at, header_end, ident_rel, ident_size, "identifier")
        identifier = raw.rstrip(b"\0").decode("utf-8", "replace")
    options = None
    options_raw = b""
    if options_rel:
        opt_at, opt_size = _unpack("<II", data, at + options_rel, "fatbin", "the entry's options descriptor")
        if at + options_rel + 8 > header_end:
            raise FatbinError(at + 20, f"the options descriptor inside the entry header (ends at byte {header_end})")
        options_raw = _entry_string(data, at, header_end, opt_at, opt_size, "options")
        options = _printable(options_raw) or None
    payload = data[payload_at : payload_at + payload_size]
    if flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD | FLAG_COMPRESSED_UNKNOWN):
        if compressed_size > payload_size:
            raise FatbinError(at + 16, f"a compressed size of at most the payload's {payload_size} bytes, "
                                       f"found {compressed_size}")  # fmt: skip
        compression, payload = _decompress(flags, payload[:compressed_size], uncompressed_size, payload_at)
    else:
        compression = "none"
    kind_name = {KIND_PTX: "ptx", KIND_ELF: "elf"}.get(kind, "other")
    ptx = None
    if kind_name == "ptx":
        payload = payload.rstrip(b"\0")  # the container pads PTX with NULs to 8 bytes
        try:
            ptx = payload.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FatbinError(payload_at + exc.start, "PTX text (UTF-8) in a PTX entry") from None
    entry = FatbinEntry(kind=kind_name, kind_code=kind, arch=arch, version=(major, minor), flags=flags,
                        compression=compression, identifier=identifier, options=options, options_raw=options_raw,
                        payload=payload, offset=at, ptx=ptx)  # fmt: skip
    return entry, payload_at + payload_size


def iter_containers(data: bytes, start: int = 0) -> Iterator[tuple[int, int]]:
    """(offset, size) of each container in a buffer of containers laid back to back, as in `.nv_fatbin`.

    Zero bytes between containers (alignment) are skipped; anything else must be a container header."""
    at = start
    n = len(data)
    while at < n:
        if data[at] == 0:
            nz = len(data) - len(data[at:].lstrip(b"\0"))
            at = nz if nz > at else n
            continue
        size = fatbin_size(data, at)
        if at + size > n:
            raise FatbinError(at, f"a fatbin container of {size} bytes, but the image ends at byte {n}")
        yield at, size
        at += size


def _parse_container(data: bytes, at: int, size: int) -> list[FatbinEntry]:
    (header_size,) = struct.unpack_from("<H", data, at + 6)
    end = at + size
    cur = at + header_size
    entries = []
    while cur < end:
        entry, cur = _parse_entry(data, cur, end)
        entries.append(entry)
    return entries


def parse_fatbin(data: bytes) -> list[FatbinEntry]:
    """The entries of a fatbin: one container, or several back to back (a `.nv_fatbin` section), in order."""
    data = bytes(data)
    if len(data) < FATBIN_HEADER_SIZE:
        raise FatbinError(0, f"a {FATBIN_HEADER_SIZE}-byte fatbin header, but the image is {len(data)} bytes")
    fatbin_size(data, 0)  # the first bytes must be a container header, not padding
    entries: list[FatbinEntry] = []
    for at, size in iter_containers(data):
        entries.extend(_parse_container(data, at, size))
    return entries


def _ptx_usable_on(entry: FatbinEntry, sm: int) -> bool:
    if entry.arch > sm:
        return False
    if entry.flags & FLAG_ARCH_SPECIFIC:
        return entry.arch == sm
    if entry.flags & FLAG_FAMILY_SPECIFIC:
        return entry.arch // 10 == sm // 10
    return True


def select_ptx(entries: Iterable[FatbinEntry], sm: int) -> FatbinEntry | None:
    """The PTX entry the driver JIT-compiles for a device of compute capability `sm` (90 for 9.0): the highest arch
    not above `sm`. Arch-specific PTX (compute_90a) serves only that SM, family-specific PTX (compute_100f) only SMs
    of its major version; at equal arch the more specific one wins, since it may use more of the SM."""
    best: FatbinEntry | None = None
    best_key = (-1, -1)
    for entry in entries:
        if entry.kind != "ptx" or not _ptx_usable_on(entry, sm):
            continue
        specificity = 2 if entry.flags & FLAG_ARCH_SPECIFIC else 1 if entry.flags & FLAG_FAMILY_SPECIFIC else 0
        key = (entry.arch, specificity)
        if key > best_key:
            best, best_key = entry, key
    return best


# ---------------------------------------------------------------------------------------------------------------------
# the fatbin wrapper


@dataclass(frozen=True)
class FatbinWrapper:
    """`__fatBinC_Wrapper_t`: what nvcc-compiled host code hands `__cudaRegisterFatBinary`."""

    magic: int
    version: int  # 1; 2 when filename_or_fatbins lists prelinked fatbins (-rdc)
    data: int  # address of the fatbin container
    filename_or_fatbins: int


def parse_wrapper(raw: bytes) -> FatbinWrapper:
    magic, version, data, extra = _unpack("<iiQQ", raw, 0, "fatbin wrapper", "a 24-byte fatbin wrapper")
    magic &= 0xFFFFFFFF
    if magic != WRAPPER_MAGIC:
        raise FatbinError(0, f"the fatbin wrapper magic 0x{WRAPPER_MAGIC:08X}, found 0x{magic:08X}", "fatbin wrapper")
    if not data:
        raise FatbinError(8, "a non-null pointer to the fatbin", "fatbin wrapper")
    return FatbinWrapper(magic=magic, version=version, data=data, filename_or_fatbins=extra)


def read_fatbin_at(address: int) -> bytes:
    """The container at a live address, sized from its own header."""
    if not address:
        raise FatbinError(0, "a non-null fatbin address")
    size = fatbin_size(ctypes.string_at(address, FATBIN_HEADER_SIZE))
    return ctypes.string_at(address, size)


def read_wrapper(address: int) -> bytes:
    """The fatbin container a live fatbin wrapper at `address` points at, read through ctypes.

    The caller vouches that `address` is a wrapper in this process (it came from `__cudaRegisterFatBinary` or a
    driver call); the magic of the wrapper and of the container are checked before their sizes are trusted."""
    if not address:
        raise FatbinError(0, "a non-null fatbin wrapper address", "fatbin wrapper")
    wrapper = parse_wrapper(ctypes.string_at(address, WRAPPER_SIZE))
    return read_fatbin_at(wrapper.data)


# ---------------------------------------------------------------------------------------------------------------------
# ELF: cubins and host binaries
#
# A small struct-based reader rather than pyelftools: only the section headers, their names and .symtab are needed,
# and every offset must be checked so that a corrupt image yields a FatbinError naming the byte, which pyelftools'
# lazily raised ELFError / struct.error would not give without wrapping each access.


@dataclass(frozen=True)
class _Section:
    index: int
    name: str
    type: int
    offset: int
    size: int
    link: int
    entsize: int


class _ElfFile:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.what = what
        if data[:4] != b"\x7fELF":
            raise FatbinError(0, "the ELF magic 7f 45 4c 46", what)
        ident = _slice(data, 0, 16, what, "the ELF identification")
        if ident[4] not in (1, 2):
            raise FatbinError(4, f"ELF class 1 (32-bit) or 2 (64-bit), found {ident[4]}", what)
        if ident[5] not in (1, 2):
            raise FatbinError(5, f"ELF data encoding 1 (little-endian) or 2 (big-endian), found {ident[5]}", what)
        self.is64 = ident[4] == 2
        self.abi_version = ident[8]
        e = "<" if ident[5] == 1 else ">"
        self.e = e
        if self.is64:
            (_type, self.machine, _version, _entry, phoff, shoff, self.flags, _ehsize, phentsize, phnum,
             shentsize, shnum, shstrndx) = _unpack(e + "HHIQQQIHHHHHH", data, 16, what, "the ELF header")  # fmt: skip
        else:
            (_type, self.machine, _version, _entry, phoff, shoff, self.flags, _ehsize, phentsize, phnum,
             shentsize, shnum, shstrndx) = _unpack(e + "HHIIIIIHHHHHH", data, 16, what, "the ELF header")  # fmt: skip
        # A cut-off image is corrupt even where the tables read here survive: the program headers and every
        # section's contents must lie inside it.
        phfmt = e + ("IIQQQQQQ" if self.is64 else "IIIIIIII")
        for i in range(phnum):
            at = phoff + i * phentsize
            fields = _unpack(phfmt, data, at, what, f"program header {i}")
            p_offset, p_filesz = (fields[2], fields[5]) if self.is64 else (fields[1], fields[4])
            if p_filesz and p_offset + p_filesz > len(data):
                raise FatbinError(at, f"segment {i}'s {p_filesz} bytes at {p_offset} inside the image "
                                      f"(ends at byte {len(data)})", what)  # fmt: skip
        shfmt = e + ("IIQQQQIIQQ" if self.is64 else "IIIIIIIIII")
        want = struct.calcsize(shfmt)
        if shnum and shentsize < want:
            raise FatbinError(0x3A if self.is64 else 0x2E,
                              f"a section header size of at least {want}, found {shentsize}", what)  # fmt: skip
        raw = []
        for i in range(shnum):
            at = shoff + i * shentsize
            name, stype, _flags, _addr, offset, size, link, _info, _align, entsize = _unpack(
                shfmt, data, at, what, f"section header {i}")
            if stype != SHT_NOBITS and size and offset + size > len(data):
                raise FatbinError(at, f"section {i}'s {size} bytes at {offset} inside the image "
                                      f"(ends at byte {len(data)})", what)  # fmt: skip
            raw.append((name, stype, offset, size, link, entsize, at))
        names = b""
        if shnum and shstrndx < shnum:
            _, stype, offset, size, _, _, at = raw[shstrndx]
            names = _slice(data, offset, size, what, "the section name table")
        elif shnum:
            raise FatbinError(0x3E if self.is64 else 0x32, f"a section name table index below {shnum}", what)
        self.sections: list[_Section] = []
        for i, (name, stype, offset, size, link, entsize, at) in enumerate(raw):
            self.sections.append(_Section(i, _cstring(names, name, what, at), stype, offset, size, link, entsize))

    def section_data(self, sec: _Section) -> bytes:
        if sec.type == SHT_NOBITS:
            return b""
        return _slice(self.data, sec.offset, sec.size, self.what, f"the contents of section {sec.name!r}")

    def symbols(self) -> Iterator[tuple[str, int, int, int]]:
        """(name, st_info, st_other, st_shndx) of each .symtab symbol."""
        symfmt = self.e + ("IBBHQQ" if self.is64 else "IIIBBH")
        want = struct.calcsize(symfmt)
        for sec in self.sections:
            if sec.type != SHT_SYMTAB:
                continue
            if sec.link >= len(self.sections):
                raise FatbinError(sec.offset, f"a symbol string table section index below {len(self.sections)}",
                                  self.what)  # fmt: skip
            strtab = self.section_data(self.sections[sec.link])
            body = self.section_data(sec)
            step = sec.entsize or want
            if step < want:
                raise FatbinError(sec.offset, f"a symbol entry size of at least {want}, found {step}", self.what)
            for at in range(0, len(body) - want + 1, step):
                if self.is64:
                    name, info, other, shndx, _value, _size = struct.unpack_from(symfmt, body, at)
                else:
                    name, _value, _size, info, other, shndx = struct.unpack_from(symfmt, body, at)
                yield _cstring(strtab, name, self.what, sec.offset + at), info, other, shndx


def _cstring(table: bytes, index: int, what: str, at: int) -> str:
    if index >= len(table) and index:
        raise FatbinError(at, f"a string index below the table's {len(table)} bytes, found {index}", what)
    end = table.find(b"\0", index)
    return table[index : end if end >= 0 else len(table)].decode("utf-8", "replace")


def kernel_names_of_cubin(elf: bytes) -> list[str]:
    """The kernels (`.entry` functions) a cubin holds, in symbol-table order.

    A kernel is a FUNC symbol that lives in its own `.text.<name>` section and carries the CUDA entry mark in
    st_other; out-of-line device functions are FUNC symbols too but lack the mark."""
    f = _ElfFile(bytes(elf), "cubin")
    if f.machine != EM_CUDA:
        raise FatbinError(18, f"an ELF for the NVIDIA CUDA machine ({EM_CUDA}), found machine {f.machine}", "cubin")
    names: list[str] = []
    for name, info, other, shndx in f.symbols():
        if info & 0xF != STT_FUNC or not other & STO_CUDA_ENTRY or not 0 < shndx < len(f.sections):
            continue
        if f.sections[shndx].name == f".text.{name}" and name not in names:
            names.append(name)
    return names


def cubin_arch(elf: bytes) -> int:
    """The SM a cubin's SASS is for (90 for sm_90), from its ELF header flags.

    From ELF ABI version 8 (CUDA 13) the SM sits in bits 8-15 of e_flags, before it in bits 0-7."""
    f = _ElfFile(bytes(elf), "cubin")
    return (f.flags >> 8) & 0xFF if f.abi_version >= 8 else f.flags & 0xFF


def extract_fatbins_from_elf(elf: bytes) -> list[bytes]:
    """The fatbin containers in the `.nv_fatbin` section(s) of a host executable or shared library, in order.

    nvcc places one or more containers per translation unit there, back to back; each is returned whole, ready for
    `parse_fatbin`."""
    f = _ElfFile(bytes(elf), "host ELF")
    out: list[bytes] = []
    for sec in f.sections:
        if sec.name != ".nv_fatbin":
            continue
        body = f.section_data(sec)
        try:
            out.extend(body[at : at + size] for at, size in iter_containers(body))
        except FatbinError as exc:
            raise FatbinError(sec.offset + exc.offset, f"{exc.expected} (in section .nv_fatbin)", "host ELF") from None
    return out


# ---------------------------------------------------------------------------------------------------------------------
# refusing SASS-only images


def _images(data: bytes) -> tuple[list[FatbinEntry], list[tuple[int | None, bytes]]]:
    """The PTX entries and the (arch, cubin) SASS images an image holds."""
    kind = classify_image(data)
    if kind == "cubin":
        return [], [(cubin_arch(data), data)]
    if kind == "fatbin_wrapper":
        raise FatbinError(0, "image bytes; a fatbin wrapper holds only a pointer (use read_wrapper)", "image")
    if kind == "fatbin":
        entries = parse_fatbin(data)
    elif data[:4] == b"\x7fELF":
        entries = [e for fb in extract_fatbins_from_elf(data) for e in parse_fatbin(fb)]
    else:
        return [], []
    return [e for e in entries if e.kind == "ptx"], [(e.arch, e.payload) for e in entries if e.kind == "elf"]


def describe_no_ptx(data: bytes, sm: int | None = None) -> str:
    """The message for CUDA_ERROR_NO_BINARY_FOR_GPU when an image holds no PTX ptxjit can use (none at all, or, given
    the device's compute capability `sm`, none `select_ptx` accepts): the kernels its SASS holds, for which SMs, and
    the nvcc flag that embeds PTX."""
    data = bytes(data)
    ptx, sass = _images(data)
    if not ptx and not sass:
        return (f"the image ({classify_image(data)}) holds neither PTX nor a cubin; ptxjit loads PTX text, "
                "or a cubin or fatbin that embeds PTX")  # fmt: skip
    kernels: list[str] = []
    archs: list[int] = []
    for arch, elf in sass:
        if arch is not None and arch not in archs:
            archs.append(arch)
        for name in kernel_names_of_cubin(elf):
            if name not in kernels:
                kernels.append(name)
    want = sm if sm is not None else max(archs, default=90)
    parts = []
    if ptx:
        targets = ", ".join(dict.fromkeys(e.target for e in ptx))
        parts.append(f"no PTX for sm_{want} in the image: its PTX is for {targets}")
    else:
        parts.append("no PTX in the image")
    if sass:
        listed = ", ".join(f"sm_{a}" for a in sorted(archs)) or "an unknown SM"
        shown = 8  # a library's image may hold thousands of kernels: the message names a few
        names = ", ".join(kernels[:shown]) if kernels else "no kernels"
        if len(kernels) > shown:
            names += f" and {len(kernels) - shown} more"
        lead = "its" if ptx else "it holds only"
        parts.append(f"{lead} SASS for {listed} (kernels: {names}), which ptxjit cannot run")
    flag = f"-gencode arch=compute_{want},code=compute_{want}"
    return "; ".join(parts) + f"; rebuild with PTX embedded, e.g. nvcc {flag}"
