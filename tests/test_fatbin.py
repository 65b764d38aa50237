"""The fatbin reader against images nvcc 13 built (tests/data/fatbin/regen.sh).

References, none produced by the reader: the PTX `nvcc -ptx` writes for the same source and arch, the cubin
`nvcc -cubin` writes, the `.nv_fatbin` section binutils' objcopy extracts, the `.entry` / `.func` names of the
compiler's PTX, and the nvcc options each image was built with (tests/data/fatbin/regen.sh)."""

from __future__ import annotations

import ctypes
import random
import re
import struct
from pathlib import Path

import pytest

from ptxjit.driver import fatbin as F
from ptxjit.driver.fatbin import FatbinError

DATA = Path(__file__).parent / "data" / "fatbin"


def load(name: str) -> bytes:
    return (DATA / name).read_bytes()


def normalized(ptx: str) -> list[str]:
    """PTX modulo comments and whitespace: fatbinary strips both (comments, indentation) from the PTX it embeds,
    keeping the line structure; every token must survive."""
    text = re.sub(r"//[^\n]*", "", ptx)
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def ptx_target(ptx: str) -> str:
    return re.search(r"^\s*\.target\s+(\S+)", ptx, re.MULTILINE).group(1)


REF_PTX = {80: load("kernels.compute_80.ptx").decode(), 90: load("kernels.compute_90.ptx").decode()}
REF_CUBIN = load("kernels.sm_90.cubin")
REF_KERNELS = sorted(re.findall(r"\.entry\s+(\w+)", REF_PTX[90]))
REF_FUNCS = sorted(re.findall(r"\.func\s+(?:\([^)]*\)\s*)?(\w+)", REF_PTX[90]))
FATBINS = ["kernels.default.fatbin", "kernels.balance.fatbin", "kernels.size.fatbin", "kernels.speed.fatbin",
           "kernels.speed_all.fatbin", "kernels.none.fatbin", "kernels.debug.fatbin", "kernels.xptxas.fatbin",
           "kernels.sass_only.fatbin", "kernels.targets.fatbin"]  # fmt: skip


def test_references_are_what_regen_sh_says() -> None:
    # Guards the references themselves: two kernels and one out-of-line device function.
    assert REF_KERNELS == ["_Z5scalePffi", "saxpy"]
    assert REF_FUNCS == ["_Z5axpy1fff"]
    assert ptx_target(REF_PTX[80]) == "sm_80" and ptx_target(REF_PTX[90]) == "sm_90"


# --------------------------------------------------------------------------------------------------------------------
# classification


@pytest.mark.parametrize(
    ("name", "kind"),
    [("kernels.compute_80.ptx", "ptx"), ("kernels.sm_90.cubin", "cubin"), ("kernels.sm_90.rdc.cubin", "cubin"),
     *[(name, "fatbin") for name in FATBINS], ("host.exe", "unknown"), ("kernels.cu", "unknown"),
     ("regen.sh", "unknown")],
)  # fmt: skip
def test_classify_files(name: str, kind: str) -> None:
    assert F.classify_image(load(name)) == kind


def test_classify_edge_cases() -> None:
    ptx = REF_PTX[90].encode()
    assert F.classify_image(ptx + b"\0") == "ptx"  # cuModuleLoadData's NUL-terminated string
    assert F.classify_image(ptx + b"\0" * 7) == "ptx"
    assert F.classify_image(b"\0".join([ptx, ptx])) == "unknown"  # a NUL inside is not PTX text
    assert F.classify_image(b".version 8.5\n.target sm_90\n.address_size 64\n") == "ptx"
    assert F.classify_image(b"/* hdr */ // c\n  .version 9.0\n") == "ptx"
    assert F.classify_image(struct.pack("<iiQQ", F.WRAPPER_MAGIC, 1, 0x1000, 0)) == "fatbin_wrapper"
    assert F.classify_image(b"") == "unknown"
    assert F.classify_image(b"\x7fELF") == "unknown"  # a truncated ELF is no cubin
    assert F.classify_image(b"\xff\xfe.version 9.0") == "unknown"
    assert F.classify_image(b"hello world") == "unknown"


# --------------------------------------------------------------------------------------------------------------------
# containers, per compression mode


# (file, how nvcc stored the PTX, how it stored the SASS), from the nvcc modes regen.sh uses
MODES = [
    ("kernels.default.fatbin", "zstd", "none"),
    ("kernels.balance.fatbin", "zstd", "none"),
    ("kernels.size.fatbin", "zstd", "zstd"),
    ("kernels.speed.fatbin", "lz4", "none"),
    ("kernels.speed_all.fatbin", "lz4", "lz4"),
    ("kernels.none.fatbin", "none", "none"),
]


@pytest.mark.parametrize(("name", "ptx_compression", "elf_compression"), MODES)
def test_each_compression_mode(name: str, ptx_compression: str, elf_compression: str) -> None:
    entries = F.parse_fatbin(load(name))
    assert sorted(e.target for e in entries) == ["compute_80", "compute_90", "sm_90"]
    for e in entries:
        assert e.is_64bit and not e.is_debug
        if e.kind == "ptx":
            assert e.compression == ptx_compression
            assert normalized(e.ptx) == normalized(REF_PTX[e.arch])
            assert ptx_target(e.ptx) == f"sm_{e.arch}"
            assert e.ptx_version == (9, 0)  # `.version 9.0` of the reference PTX
            assert re.search(r"^\.version 9\.0$", REF_PTX[e.arch], re.MULTILINE)
            assert "\0" not in e.ptx
            assert e.payload == e.ptx.encode()
        else:
            assert e.kind == "elf" and e.kind_code == F.KIND_ELF
            assert e.compression == elf_compression
            assert e.payload == REF_CUBIN  # byte for byte what nvcc -cubin writes
            assert e.ptx is None and e.ptx_version is None
        assert e.compressed == (e.compression != "none")
        assert (F.FLAG_COMPRESSED_ZSTD & e.flags != 0) == (e.compression == "zstd")
        assert (F.FLAG_COMPRESSED_LZ4 & e.flags != 0) == (e.compression == "lz4")
        assert e.identifier is None and e.options is None


def test_compressed_payloads_are_the_library_formats() -> None:
    # The stored bytes themselves: a zstd frame opens with its magic 28 B5 2F FD; the LZ4 block format has no magic,
    # but a block of PTX text opens with a token whose literal run holds the text's first bytes.
    data = load("kernels.default.fatbin")
    e = F.parse_fatbin(data)[0]
    header = struct.unpack_from("<I", data, e.offset + 4)[0]
    assert data[e.offset + header : e.offset + header + 4] == bytes.fromhex("28b52ffd")
    data = load("kernels.speed.fatbin")
    e = F.parse_fatbin(data)[0]
    header = struct.unpack_from("<I", data, e.offset + 4)[0]
    stored = data[e.offset + header : e.offset + header + 64]
    literals = stored[0] >> 4
    assert e.ptx.encode().startswith(stored[1 : 1 + min(literals, 14)])


def test_debug_build_records_flag_identifier_and_options() -> None:
    entries = F.parse_fatbin(load("kernels.debug.fatbin"))
    assert sorted(e.target for e in entries) == ["compute_90", "sm_90"]
    for e in entries:
        assert e.is_debug and "debug" in e.flag_names
        assert e.identifier == "kernels.cu"  # nvcc -G records the source file
    (ptx,) = [e for e in entries if e.kind == "ptx"]
    assert "-g" in ptx.options.split()  # what -G hands ptxas
    # -G PTX carries line information the release PTX lacks
    assert ".loc" in ptx.ptx and ".loc" not in REF_PTX[90]


def test_xptxas_options_recorded() -> None:
    (e,) = F.parse_fatbin(load("kernels.xptxas.fatbin"))
    assert e.options is not None and e.options.split() == ["-O1"]
    assert normalized(e.ptx) == normalized(REF_PTX[90])


# --------------------------------------------------------------------------------------------------------------------
# choosing the PTX to JIT


@pytest.mark.parametrize(
    ("sm", "target"),
    [(75, None), (80, "sm_80"), (86, "sm_80"), (89, "sm_80"), (90, "sm_90a"), (100, "sm_100f"), (103, "sm_100f"),
     (110, "sm_90"), (120, "sm_120"), (121, "sm_120")],
)  # fmt: skip
def test_select_ptx_targets(sm: int, target: str | None) -> None:
    # compute_90a serves sm_90 only; compute_100f the 10.x family only (CUDA's arch- and family-specific targets)
    chosen = F.select_ptx(F.parse_fatbin(load("kernels.targets.fatbin")), sm)
    assert (ptx_target(chosen.ptx) if chosen else None) == target


def test_select_ptx_release_fatbin() -> None:
    entries = F.parse_fatbin(load("kernels.default.fatbin"))
    assert F.select_ptx(entries, 86).arch == 80
    assert ptx_target(F.select_ptx(entries, 90).ptx) == "sm_90"
    assert ptx_target(F.select_ptx(entries, 120).ptx) == "sm_90"
    assert F.select_ptx(entries, 70) is None
    assert F.select_ptx(F.parse_fatbin(load("kernels.sass_only.fatbin")), 90) is None
    assert F.select_ptx([], 90) is None


# --------------------------------------------------------------------------------------------------------------------
# cubins


def test_kernel_names_of_cubin() -> None:
    assert sorted(F.kernel_names_of_cubin(REF_CUBIN)) == REF_KERNELS
    # -rdc gives the device function its own .text section and FUNC symbol: still not a kernel
    rdc = F.kernel_names_of_cubin(load("kernels.sm_90.rdc.cubin"))
    assert sorted(rdc) == REF_KERNELS
    assert not set(rdc) & set(REF_FUNCS)
    assert F.cubin_arch(REF_CUBIN) == 90


def test_nvrtc_images() -> None:
    # nvrtcGetPTX's buffer ends in the NUL cuModuleLoadData expects; nvrtcGetCUBIN's cubin holds SASS only
    ptx = load("kernels.nvrtc.compute_90.ptx")
    assert ptx.endswith(b"\0") and F.classify_image(ptx) == "ptx"
    # the wheel's NVRTC may be a newer 13.x than nvcc and write a higher `.version`; the code itself is the same
    assert normalized(ptx.rstrip(b"\0").decode())[1:] == normalized(REF_PTX[90])[1:]
    cubin = load("kernels.nvrtc.sm_90.cubin")
    assert F.classify_image(cubin) == "cubin"
    assert sorted(F.kernel_names_of_cubin(cubin)) == REF_KERNELS
    assert F.cubin_arch(cubin) == 90
    assert "saxpy" in F.describe_no_ptx(cubin)


def test_kernel_names_refuses_a_host_elf() -> None:
    with pytest.raises(FatbinError, match="NVIDIA CUDA machine"):
        F.kernel_names_of_cubin(load("host.exe"))


@pytest.mark.parametrize("name", ["kernels.sass_only.fatbin", "kernels.sm_90.cubin"])
def test_describe_no_ptx(name: str) -> None:
    message = F.describe_no_ptx(load(name))
    for kernel in REF_KERNELS:
        assert kernel in message
    assert "sm_90" in message and "no PTX" in message
    assert "-gencode arch=compute_90,code=compute_90" in message


def test_describe_no_ptx_for_the_device() -> None:
    message = F.describe_no_ptx(load("host.exe"), sm=75)
    assert message.startswith("no PTX for sm_75 in the image: its PTX is for compute_80, compute_90;")
    assert "-gencode arch=compute_75,code=compute_75" in message
    assert "saxpy" in message
    assert "neither PTX nor a cubin" in F.describe_no_ptx(b"not an image")


# --------------------------------------------------------------------------------------------------------------------
# host executables


def test_extract_fatbins_from_host_executable() -> None:
    fatbins = F.extract_fatbins_from_elf(load("host.exe"))
    section = load("host.nv_fatbin.bin")  # objcopy --only-section=.nv_fatbin
    joined = b"".join(fatbins)
    assert section.startswith(joined) and not section[len(joined) :].strip(b"\0")
    entries = [e for fb in fatbins for e in F.parse_fatbin(fb)]
    ptx = [e for e in entries if e.kind == "ptx"]
    assert sorted(e.arch for e in ptx) == [80, 90]  # built with the same -gencode set as the fatbins
    for e in ptx:
        assert normalized(e.ptx) == normalized(REF_PTX[e.arch])
    assert any(e.kind == "elf" and e.payload == REF_CUBIN for e in entries)
    # the section read as one buffer of containers gives the same entries
    assert [e.payload for e in F.parse_fatbin(section)] == [e.payload for e in entries]


def test_extract_fatbins_one_per_translation_unit() -> None:
    fatbins = F.extract_fatbins_from_elf(load("host2.exe"))
    section = load("host2.nv_fatbin.bin")
    joined = b"".join(fatbins)
    assert section.startswith(joined) and not section[len(joined) :].strip(b"\0")
    cubins = [e.payload for fb in fatbins for e in F.parse_fatbin(fb) if e.kind == "elf"]
    kernels = {k for cubin in cubins for k in F.kernel_names_of_cubin(cubin)}
    assert kernels == {"saxpy", "_Z5scalePffi", "_Z4fillPii"}  # fill.cu's __global__ fill(int*, int)
    ptx = [e.ptx for fb in fatbins for e in F.parse_fatbin(fb) if e.kind == "ptx"]
    assert len(ptx) == 2 and any(".entry _Z4fillPii" in p for p in ptx)


def test_extract_from_elf_without_fatbin() -> None:
    assert F.extract_fatbins_from_elf(REF_CUBIN) == []


# --------------------------------------------------------------------------------------------------------------------
# the wrapper, from a live address


class _Wrapper(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_int), ("version", ctypes.c_int), ("data", ctypes.c_void_p),
                ("filename_or_fatbins", ctypes.c_void_p)]  # fmt: skip


def test_read_wrapper_from_live_memory() -> None:
    image = load("kernels.default.fatbin")
    # trailing bytes after the container must not be read: the size comes from the container header
    buf = ctypes.create_string_buffer(image + b"\xaa" * 64, len(image) + 64)
    wrapper = _Wrapper(F.WRAPPER_MAGIC, 1, ctypes.addressof(buf), None)
    assert ctypes.sizeof(wrapper) == F.WRAPPER_SIZE
    assert F.classify_image(bytes(wrapper)) == "fatbin_wrapper"
    got = F.read_wrapper(ctypes.addressof(wrapper))
    assert got == image
    assert F.read_fatbin_at(ctypes.addressof(buf)) == image
    w = F.parse_wrapper(bytes(wrapper))
    assert (w.version, w.data) == (1, ctypes.addressof(buf))


def test_read_wrapper_refuses_bad_wrappers() -> None:
    image = load("kernels.none.fatbin")
    buf = ctypes.create_string_buffer(image, len(image))
    bad = _Wrapper(0x12345678, 1, ctypes.addressof(buf), None)
    with pytest.raises(FatbinError, match="0x466243B1"):
        F.read_wrapper(ctypes.addressof(bad))
    null = _Wrapper(F.WRAPPER_MAGIC, 1, None, None)
    with pytest.raises(FatbinError, match="non-null"):
        F.read_wrapper(ctypes.addressof(null))
    with pytest.raises(FatbinError, match="non-null"):
        F.read_wrapper(0)
    text = ctypes.create_string_buffer(b"not a fatbin, just text....", 32)
    pointing = _Wrapper(F.WRAPPER_MAGIC, 1, ctypes.addressof(text), None)
    with pytest.raises(FatbinError, match="0xBA55ED50"):
        F.read_wrapper(ctypes.addressof(pointing))
    with pytest.raises(FatbinError, match="24-byte"):
        F.parse_wrapper(b"\xb1\x43\x62\x46")


# --------------------------------------------------------------------------------------------------------------------
# corrupt and truncated input


def _entry_at(data: bytes, index: int) -> int:
    return F.parse_fatbin(data)[index].offset


def _patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize("name", ["kernels.size.fatbin", "kernels.speed_all.fatbin", "kernels.debug.fatbin",
                                  "kernels.xptxas.fatbin"])  # fmt: skip
def test_every_truncation_is_a_fatbin_error(name: str) -> None:
    data = load(name)
    for n in range(len(data)):
        with pytest.raises(FatbinError) as info:
            F.parse_fatbin(data[:n])
        assert 0 <= info.value.offset <= len(data)


def test_truncations_of_larger_images() -> None:
    for name in ["kernels.default.fatbin", "kernels.none.fatbin", "kernels.speed.fatbin"]:
        data = load(name)
        for n in list(range(0, len(data), 97)) + [len(data) - 1]:
            with pytest.raises(FatbinError):
                F.parse_fatbin(data[:n])
    for name in ["kernels.sm_90.cubin", "kernels.sm_90.rdc.cubin"]:
        data = load(name)
        for n in range(0, len(data), 13):
            with pytest.raises(FatbinError):
                F.kernel_names_of_cubin(data[:n])
    data = load("host.exe")
    for n in range(0, len(data), 101):
        with pytest.raises(FatbinError):
            F.extract_fatbins_from_elf(data[:n])


def test_specific_corruptions_name_the_place() -> None:
    data = load("kernels.default.fatbin")
    with pytest.raises(FatbinError, match="magic 0xBA55ED50") as info:
        F.parse_fatbin(_patch(data, 0, "<I", 0xDEADBEEF))
    assert info.value.offset == 0
    with pytest.raises(FatbinError, match="version 1") as info:
        F.parse_fatbin(_patch(data, 4, "<H", 7))
    assert info.value.offset == 4
    with pytest.raises(FatbinError, match="ends at byte"):
        F.parse_fatbin(_patch(data, 8, "<Q", len(data)))  # container larger than the image
    first = _entry_at(data, 0)
    with pytest.raises(FatbinError, match="header size of 64 or more") as info:
        F.parse_fatbin(_patch(data, first + 4, "<I", 12))
    assert info.value.offset == first + 4
    with pytest.raises(FatbinError, match="payload of") as info:
        F.parse_fatbin(_patch(data, first + 8, "<Q", 1 << 40))
    assert info.value.offset == first + 8
    with pytest.raises(FatbinError, match="compressed size"):
        F.parse_fatbin(_patch(data, first + 16, "<I", 1 << 20))
    with pytest.raises(FatbinError, match="zstd"):
        F.parse_fatbin(_patch(data, first + 56, "<Q", 100))  # declared uncompressed size is wrong
    header = struct.unpack_from("<I", data, first + 4)[0]
    with pytest.raises(FatbinError, match="zstd"):
        F.parse_fatbin(_patch(data, first + header + 8, "<Q", 0xFFFFFFFFFFFFFFFF))  # damaged frame
    with pytest.raises(FatbinError, match="options"):
        F.parse_fatbin(_patch(data, first + 20, "<I", 0xFFFF))
    with pytest.raises(FatbinError, match="identifier"):
        F.parse_fatbin(_patch(_patch(data, first + 32, "<I", 64), first + 36, "<I", 4096))
    with pytest.raises(FatbinError, match="known compression flag"):
        flags = struct.unpack_from("<Q", data, first + 40)[0]
        F.parse_fatbin(_patch(data, first + 40, "<Q", (flags & ~F.FLAG_COMPRESSED_ZSTD) | F.FLAG_COMPRESSED_UNKNOWN))
    with pytest.raises(FatbinError, match="magic"):
        F.parse_fatbin(data + b"\x01" + b"\0" * 15)  # trailing bytes that are not a container
    assert len(F.parse_fatbin(data + b"\0" * 8)) == 3  # alignment padding after a container is fine


def test_lz4_corruption() -> None:
    data = load("kernels.speed.fatbin")
    first = _entry_at(data, 0)
    with pytest.raises(FatbinError, match="LZ4"):
        F.parse_fatbin(_patch(data, first + 56, "<Q", 10))
    header = struct.unpack_from("<I", data, first + 4)[0]
    with pytest.raises(FatbinError, match="LZ4"):
        F.parse_fatbin(_patch(data, first + header, "<B", 0xFF))  # a token promising more literals than exist


def test_random_damage_never_escapes_as_another_exception() -> None:
    rng = random.Random(1234)
    images = [load(n) for n in ["kernels.default.fatbin", "kernels.speed_all.fatbin", "kernels.debug.fatbin",
                                "kernels.size.fatbin"]]  # fmt: skip
    for _ in range(1500):
        data = bytearray(rng.choice(images))
        entries = F.parse_fatbin(bytes(data))
        # aim at the headers, where a wrong byte changes the structure, and now and then anywhere
        spots = [0, 8, *(e.offset for e in entries)]
        for _ in range(rng.randint(1, 3)):
            base = rng.choice(spots) if rng.random() < 0.8 else 0
            at = min(len(data) - 1, base + rng.randrange(96 if base else len(data)))
            data[at] = rng.randrange(256)
        try:
            F.parse_fatbin(bytes(data))
        except FatbinError:
            pass
    cubin = REF_CUBIN
    for _ in range(1500):
        data = bytearray(cubin)
        for _ in range(rng.randint(1, 4)):
            region = rng.choice([(0, 64), (len(cubin) - 1500, len(cubin)), (0, len(cubin))])
            data[rng.randrange(*region)] = rng.randrange(256)
        try:
            F.kernel_names_of_cubin(bytes(data))
            F.describe_no_ptx(bytes(data))
        except FatbinError:
            pass
