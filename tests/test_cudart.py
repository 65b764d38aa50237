"""ptxjit's libcudart.so.13 under unmodified CUDA C++ programs built with `nvcc -cudart shared`.

The programs (tests/cudart/, built by tests/cudart/build.sh, committed) check their own results and print
one result line; each runs in a child process with ptxjit's library folder first on LD_LIBRARY_PATH (as
`ptxjit exec` puts it), the driver log in a file.  Error paths follow the CUDA Runtime API reference:
cudaDeviceSynchronize after a faulting kernel returns cudaErrorIllegalAddress and the error is sticky; a
launch of a kernel with no image for the device returns cudaErrorNoKernelImageForDevice.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptxjit.cudart import errors as RE
from ptxjit.cudart.abi_tables import (
    CUDA_ERROR,
    DEVICE_PROP_FIELDS,
    FUNC_ATTRIBUTES_FIELDS,
    POINTER_ATTRIBUTES_FIELDS,
    RUNTIME_FUNCTIONS,
)

HERE = Path(__file__).resolve().parent / "cudart"
CUDA_INCLUDE = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"

if not sys.platform.startswith("linux"):
    pytest.skip("the test programs are x86-64 Linux executables", allow_module_level=True)


@pytest.fixture(scope="module")
def libdir() -> str:
    from ptxjit.cudart.build import ensure_built as cudart_built
    from ptxjit.driver.build import ensure_built as driver_built

    driver_built()
    return str(cudart_built().parent)


def _env(libdir: str, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PTXJIT_DRIVER_LOG"] = str(tmp_path / "driver.log")
    return env


def _run(name: str, libdir: str, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    r = subprocess.run([str(HERE / name), *args], env=_env(libdir, tmp_path), capture_output=True, text=True,
                       timeout=600)
    log = tmp_path / "driver.log"
    return r, log.read_text() if log.exists() else ""


PROGRAMS = {
    "vector_add": r"vector_add: ok 1048576 elements",
    "matmul_tiled": r"matmul_tiled: ok 192x192, 12x12 blocks",
    "reduce": r"reduce: ok sum 523764400 over 2048 blocks",
    "constant_symbol": r"constant_symbol: ok 4096 elements, hits 2048",
    "streams_events": r"streams_events: ok 2 streams, elapsed \d+\.\d+ ms",
    "streams_events_ptds": r"streams_events: ok 2 streams, elapsed \d+\.\d+ ms",  # --default-stream per-thread
    "device_props": r"device_props: ok NVIDIA H100 80GB HBM3 \(ptxjit\), compute capability 9\.0, 132 SMs",
    "oob_write": r"oob_write: ok cudaErrorIllegalAddress \(an illegal memory access was encountered\), sticky",
    "no_ptx": r"no_ptx: ok cudaErrorNoKernelImageForDevice",
    "api_misc": r"api_misc: ok managed, mapped, async memset, queries, attributes, reset",
    "managed_var": r"managed_var: ok total 189",
    "grid_sync": r"grid_sync: ok 8 blocks synchronized \(cooperative launch supported\)",
    "host_threads": r"host_threads: ok 4 threads",
    "rdc_main": r"rdc_main: ok 2 translation units, 5000 elements",  # -rdc=true: the units' PTX linked
    "api_samples": r"api_samples: ok occupancy \d+ blocks/SM, 80000 bytes of dynamic shared memory, pitch 512",
    "driver_and_runtime": r"driver_and_runtime: ok one context, 1024 elements",
    # in the style of the CUDA samples, each checked against the host
    "scan": r"scan: ok 65536 elements, 128 blocks, total 557050",
    "histogram": r"histogram: ok 256 bins, 1048576 bytes counted",
    "transpose": r"transpose: ok 384x256 naive and tiled",
    "bitonic_sort": r"bitonic_sort: ok 32768 keys, 21 launches",
    "nbody": r"nbody: ok 1024 bodies, 2 steps, max error \d\.\de-\d\d",
    "graphs": r"graphs: ok captured 7 nodes across 2 streams, 3 launches; explicit 5 nodes, updated",
    "textures": r"textures: ok point, linear \(max error \S+\), normalized wrap, 8-bit normalized, pitched, surface",
    "smem_optin": r"smem_optin: ok 65536 bytes refused \(cudaErrorInvalidValue\), then opted in",
    "black_scholes": r"black_scholes: ok 65536 options, max error \d\.\de-\d\d, L1 \d\.\de-\d\d",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program(name, libdir, tmp_path):
    r, log = _run(name, libdir, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr + log
    assert re.search(PROGRAMS[name], r.stdout), r.stdout
    if name == "oob_write":  # the fault report names the kernel and the access
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in log and "_Z7overrunPii" in log and "out-of-bounds" in log
        assert "oob_write.cu:9" in log  # built with -lineinfo: the line of the write
    elif name == "no_ptx":  # the driver's message names the kernel and the flag that embeds PTX
        assert "_Z5touchPi" in log and "code=compute_90" in log
    elif name == "api_misc":  # its two deliberate errors, explained
        assert "cudaErrorInvalidConfiguration" in log and "exceeds CUDA's limit of 1024" in log
        assert "cudaFree: cudaErrorInvalidValue" in log
    elif name == "graphs":  # the capture rules it breaks on purpose, explained
        assert "cudaStreamSynchronize on a stream that is capturing" in log
        assert "cudaErrorStreamCaptureUnjoined" in log
    assert "internal error" not in log, log


def _device_printf_lines() -> list[str]:
    """What printf_assert's `report` kernel prints on a GPU (3 blocks of 4 threads, base 100, scale 1.5)."""
    lines = []
    for b in range(3):
        lines.append(f"block {b}: says hi")
        for t in range(4):
            gid = b * 4 + t
            f = 1.5 * gid
            lines.append(f"thread {b}.{t}: d={100 - gid} u={4_000_000_000 + gid} ld={-10_000_000_000 * (gid + 1)} "
                         f"f={f:f} e={f * 1234.5:e} x={0xBEEF00 + gid:x}")
    return lines


def test_device_printf_reaches_c_stdout_at_the_synchronization(libdir, tmp_path):
    """Device printf output is written to the program's C stdout when the host synchronizes: after the
    host's line before the launch and before its line after, even through a pipe (C's stdout fully
    buffered), every thread's line once; the order across threads is free, as on a GPU."""
    r, log = _run("printf_assert", libdir, tmp_path, "printf")
    assert r.returncode == 0, r.stdout + r.stderr + log
    lines = r.stdout.splitlines()
    assert lines[0] == "printf_assert: launching 3 blocks of 4 threads", r.stdout
    assert lines[-1] == "printf_assert: ok printf from 12 threads of 3 blocks", r.stdout
    assert sorted(lines[1:-1]) == sorted(_device_printf_lines()), r.stdout
    assert "internal error" not in log, log


def test_device_assert_is_sticky_cuda_error_assert_with_cudas_message(libdir, tmp_path):
    """A failed device assert: cudaDeviceSynchronize returns cudaErrorAssert, which sticks (the program
    checks), and stderr holds the line CUDA prints for the failing thread: file:line: function: block:
    [x,y,z], thread: [x,y,z] Assertion `expr` failed."""
    r, log = _run("printf_assert", libdir, tmp_path, "assert")
    assert r.returncode == 0, r.stdout + r.stderr + log
    assert "printf_assert: ok cudaErrorAssert (device-side assert triggered), sticky" in r.stdout, r.stdout
    src = (HERE / "printf_assert.cu").read_text().splitlines()
    line = next(i + 1 for i, s in enumerate(src) if "assert(x[i] < limit);" in s)
    bad, block = 45, 32  # the one element at the limit, in blocks of 32 threads
    expected = (f"printf_assert.cu:{line}: void check_limit(const int *, int): block: [{bad // block},0,0], "
                f"thread: [{bad % block},0,0] Assertion `x[i] < limit` failed.")
    assert [s for s in r.stderr.splitlines() if "Assertion" in s] == [expected], r.stderr
    assert "CUDA_ERROR_ASSERT" in log and "internal error" not in log, log


def test_ptxjit_exec_runs_a_runtime_program(libdir, tmp_path):
    """`ptxjit exec -- ./vector_add`: the CLI's library folder holds libcudart.so.13 beside libcuda.so.1."""
    env = _env(libdir, tmp_path)
    env.pop("LD_LIBRARY_PATH")
    exe = shutil.which("ptxjit", path=str(Path(sys.executable).parent)) or "ptxjit"
    r = subprocess.run([exe, "exec", "--", str(HERE / "vector_add")], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vector_add: ok" in r.stdout


def test_static_runtime_is_refused_with_a_rebuild_hint(libdir, tmp_path):
    """nvcc's default links NVIDIA's runtime statically; it asks libcuda.so.1 for private export tables, which
    ptxjit refuses: the program gets a CUDA error (no crash) and the log says how to rebuild it."""
    r, log = _run("vector_add_static", libdir, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr + log
    assert "vector_add: FAIL" in r.stdout
    assert "links the CUDA runtime statically" in log and "nvcc -cudart shared" in log
    assert log.count("cuGetExportTable") == 1


def test_error_table():
    assert CUDA_ERROR["cudaSuccess"] == 0
    assert CUDA_ERROR["cudaErrorInvalidValue"] == 1
    assert CUDA_ERROR["cudaErrorMemoryAllocation"] == 2
    assert CUDA_ERROR["cudaErrorNoKernelImageForDevice"] == 209
    assert CUDA_ERROR["cudaErrorIllegalAddress"] == 700
    assert CUDA_ERROR["cudaErrorLaunchFailure"] == 719
    assert CUDA_ERROR["cudaErrorNotSupported"] == 801
    assert CUDA_ERROR["cudaErrorUnknown"] == 999
    for code in CUDA_ERROR.values():
        assert RE.error_name(code) and RE.error_string(code)
    assert RE.error_name(123456) is None
    from ptxjit.driver.abi_tables import CURESULT

    assert RE.from_curesult(CURESULT["CUDA_ERROR_ILLEGAL_ADDRESS"]) == 700
    assert RE.from_curesult(CURESULT["CUDA_ERROR_INVALID_CONTEXT"]) == CUDA_ERROR["cudaErrorDeviceUninitialized"]
    assert RE.from_curesult(CURESULT["CUDA_ERROR_NOT_FOUND"]) == CUDA_ERROR["cudaErrorSymbolNotFound"]
    assert RE.from_curesult(CURESULT["CUDA_ERROR_OUT_OF_MEMORY"]) == CUDA_ERROR["cudaErrorMemoryAllocation"]


_CHILD = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.cudaGetErrorName.restype = lib.cudaGetErrorString.restype = ctypes.c_char_p
for code in (0, 1, 209, 700, 801, 424242):
    print(code, lib.cudaGetErrorName(code).decode(), "|", lib.cudaGetErrorString(code).decode())
v = ctypes.c_int()
print("version", lib.cudaRuntimeGetVersion(ctypes.byref(v)), v.value)
print("stub", lib.cudaIpcGetMemHandle(None, None), lib.cudaIpcGetMemHandle(None, None))
print("last", lib.cudaGetLastError(), lib.cudaGetLastError())
class Desc(ctypes.Structure):
    _fields_ = [(c, ctypes.c_int) for c in "xyzwf"]
lib.cudaCreateChannelDesc.restype = Desc
d = lib.cudaCreateChannelDesc(32, 32, 0, 0, 2)
print("desc", d.x, d.y, d.z, d.w, d.f)
missing = [n for n in sys.argv[2:] if not hasattr(lib, n)]
print("missing", len(missing), " ".join(missing[:5]))
"""


def test_names_strings_and_stubs_through_the_library(libdir, tmp_path):
    """Loaded by ctypes into a Python process (it joins that interpreter): the error names and strings for the
    header's numbers, every function cuda_runtime_api.h declares exported, an unimplemented one returning
    cudaErrorNotSupported (named once in the log), which cudaGetLastError returns and clears."""
    r = subprocess.run([sys.executable, "-c", _CHILD, str(Path(libdir) / "libcudart.so.13"), *RUNTIME_FUNCTIONS],
                       env=_env(libdir, tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "0 cudaSuccess | no error" in out
    assert "1 cudaErrorInvalidValue | invalid argument" in out
    assert "209 cudaErrorNoKernelImageForDevice | no kernel image is available" in out
    assert "700 cudaErrorIllegalAddress | an illegal memory access was encountered" in out
    assert "801 cudaErrorNotSupported | operation not supported" in out
    assert "424242 unrecognized error code | unrecognized error code" in out
    assert "version 0 13000" in out
    assert "stub 801 801" in out and "last 801 0" in out
    assert "desc 32 32 0 0 2" in out  # the one function returning a structure is a real constructor
    assert "missing 0 " in out
    log = (tmp_path / "driver.log").read_text()
    assert log.count("cudaIpcGetMemHandle is not supported by ptxjit") == 1


def _fields(decls: str) -> list[str]:
    return [re.sub(r"\[.*", "", d.split()[-1]).rstrip(";").lstrip("*") for d in decls.strip().splitlines()]


@pytest.mark.skipif(not (CUDA_INCLUDE / "driver_types.h").exists() or shutil.which("gcc") is None,
                    reason="needs CUDA's headers and gcc")
def test_struct_layouts_match_the_header(tmp_path):
    """cudaDeviceProp, cudaFuncAttributes, cudaPointerAttributes and cudaLaunchConfig_t as the library declares
    them, field by field against CUDA's own header, by the C compiler."""
    checks = []
    for ours, theirs, decls in (("struct ptxjit_prop", "struct cudaDeviceProp", DEVICE_PROP_FIELDS),
                                ("struct ptxjit_func_attributes", "struct cudaFuncAttributes",
                                 FUNC_ATTRIBUTES_FIELDS),
                                ("struct ptxjit_pointer_attributes", "struct cudaPointerAttributes",
                                 POINTER_ATTRIBUTES_FIELDS)):
        checks.append(f"{ours} {{\n{decls}}};")
        checks.append(f'_Static_assert(sizeof({ours}) == sizeof({theirs}), "size of {theirs}");')
        for f in _fields(decls):
            checks.append(f'_Static_assert(offsetof({ours}, {f}) == offsetof({theirs}, {f}), "{theirs}.{f}");')
    from ptxjit.cudart.build import TYPES

    checks.append(re.search(r"typedef struct \{[^}]*\} ptxjit_rt_launch_config;", TYPES).group(0))
    checks.append('_Static_assert(sizeof(ptxjit_rt_launch_config) == sizeof(cudaLaunchConfig_t), "config");')
    for f in ("dynamicSmemBytes", "stream", "attrs", "numAttrs"):
        checks.append(f'_Static_assert(offsetof(ptxjit_rt_launch_config, {f}) == offsetof(cudaLaunchConfig_t, {f}), '
                      f'"cudaLaunchConfig_t.{f}");')
    checks.append('_Static_assert(sizeof(cudaLaunchAttribute) == 72 && offsetof(cudaLaunchAttribute, val) == 8, '
                  '"cudaLaunchAttribute");')
    src = tmp_path / "layout.c"
    src.write_text("#include <stddef.h>\n#include <driver_types.h>\n"
                   "typedef struct { char bytes[16]; } ptxjit_cuda_uuid;\n" + "\n".join(checks) + "\n")
    r = subprocess.run(["gcc", "-fsyntax-only", f"-I{CUDA_INCLUDE}", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
