"""ptxjit's libcuda.so.1 under unmodified clients: a C program linked with -lcuda, and cuda-python.

The clients check their own results (the C program against its host loops, cuda-python's against NumPy)
and the error paths against the codes the CUDA Driver API reference gives, e.g. cuMemFree: "CUDA_ERROR_INVALID_VALUE"
for a pointer not returned by cuMemAlloc; cuModuleLoadData: "CUDA_ERROR_NO_BINARY_FOR_GPU" when no image fits
the device; cuCtxSynchronize after a faulting kernel: "CUDA_ERROR_ILLEGAL_ADDRESS ... the context cannot be used,
so it must be destroyed" (sticky).  Each client runs in a child process: the dynamic loader reads
LD_LIBRARY_PATH only at process start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxjit.driver import errors
from ptxjit.driver.abi_tables import CURESULT, DEVICE_ATTRIBUTE, FUNCTION_ATTRIBUTE, POINTER_ATTRIBUTE
from tests.markers import slow

HERE = Path(__file__).resolve().parent / "driver"


@pytest.fixture(scope="module")
def libdir() -> str:
    from ptxjit.driver.build import ensure_built

    return str(ensure_built().parent)


def _env(libdir: str, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PTXJIT_DRIVER_LOG"] = str(tmp_path / "driver.log")
    return env


def test_abi_numbers_match_cuda_python():
    """The committed tables (generated from CUDA 13.0's cuda.h) against cuda-python's enums, an independent copy."""
    cu = pytest.importorskip("cuda.bindings.driver")
    for table, enum in ((CURESULT, cu.CUresult), (DEVICE_ATTRIBUTE, cu.CUdevice_attribute),
                        (FUNCTION_ATTRIBUTE, cu.CUfunction_attribute), (POINTER_ATTRIBUTE, cu.CUpointer_attribute)):
        theirs = {e.name: int(e) for e in enum}
        common = [n for n in table if n in theirs and not n.endswith("_MAX")]
        assert len(common) > 0.8 * len(table)
        assert {n: table[n] for n in common} == {n: theirs[n] for n in common}


def test_every_cuda_error_has_a_name_and_string():
    for code in CURESULT.values():
        assert errors.error_name(code) in CURESULT and CURESULT[errors.error_name(code)] == code
        assert errors.error_string(code)
    assert errors.error_name(123456) is None and errors.error_string(123456) is None


def test_c_program_linked_with_lcuda(libdir, tmp_path):
    """tests/driver/driver_vecadd.c (built by tests/driver/build.sh): vectorAdd with kernelParams and with
    `extra`, streams, events, a struct parameter, a matmul from a fatbin with a __constant__, bad input and a
    faulting kernel — each check printed by the program itself."""
    exe = HERE / "driver_vecadd"
    r = subprocess.run([str(exe), str(HERE / "kernels.ptx"), str(HERE / "kernels.fatbin")], env=_env(libdir, tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 checks failed" in r.stdout
    assert r.stdout.count("\nok ") >= 20, r.stdout
    log = (tmp_path / "driver.log").read_text()
    # the fault report names the kernel, block, thread and CUDA source line
    assert "vec_add_off_by_one" in log and "kernels.cu:10" in log and "block (390, 0, 0)" in log


def test_stream_capture_across_streams(libdir, tmp_path):
    """tests/driver/driver_capture.c: a fork into two streams and a join through events captured into one graph
    (its nodes, types and edges checked through cuGraph*, replayed with new inputs against the program's own
    arithmetic), capture into an existing graph, a graph launched inside a capture, the dependency set, capture
    modes, and the capture rules of the driver API documentation: a fork not joined back is
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED, synchronizing or querying a capturing stream or captured event
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (and the capture then ends CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), the
    legacy stream beside a capturing blocking stream CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, a wait for uncaptured
    work CUDA_ERROR_STREAM_CAPTURE_ISOLATION, two captures joined CUDA_ERROR_STREAM_CAPTURE_MERGE."""
    r = subprocess.run([str(HERE / "driver_capture"), str(HERE / "kernels.ptx")], env=_env(libdir, tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 checks failed" in r.stdout and "FAIL" not in r.stdout
    assert r.stdout.count("\nok ") >= 40, r.stdout
    log = (tmp_path / "driver.log").read_text()
    assert "were not joined back into the origin stream" in log  # the explanation behind the bare code


def test_cuda_python_program(libdir, tmp_path):
    pytest.importorskip("cuda.bindings.driver")
    pytest.importorskip("cuda.bindings.nvrtc")
    r = subprocess.run([sys.executable, str(HERE / "cuda_python_saxpy.py")], env=_env(libdir, tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cuda-python saxpy OK 9 0" in r.stdout


def test_cuda_python_bad_input(libdir, tmp_path):
    pytest.importorskip("cuda.bindings.driver")
    r = subprocess.run([sys.executable, str(HERE / "cuda_python_errors.py")], env=_env(libdir, tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads(r.stdout)
    wrong = {k: v for k, v in results.items() if v[0] != v[1]}
    assert not wrong
    assert len(results) >= 40
    log = (tmp_path / "driver.log").read_text()
    assert "-gencode arch=compute_90,code=compute_90" in log  # what to do about a SASS-only image


def test_ptxjit_exec_and_libdir(libdir, tmp_path):
    from click.testing import CliRunner

    from ptxjit.cli import main

    out = CliRunner().invoke(main, ["driver", "--libdir"])
    assert out.exit_code == 0 and out.output.strip() == libdir
    code = "import ctypes; lib = ctypes.CDLL('libcuda.so.1'); v = ctypes.c_int(); " \
           "assert lib.cuInit(0) == 0 and lib.cuDriverGetVersion(ctypes.byref(v)) == 0; print(v.value)"
    r = subprocess.run([sys.executable, "-m", "ptxjit.cli", "exec", "--", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "13000"


def test_numba_cuda_real_target(libdir, tmp_path):
    """numba-cuda's CUDA target (not NUMBA_ENABLE_CUDASIM) compiles with NVVM and drives ptxjit's libcuda.so.1
    through cuda.core: cuLibraryLoadData, cuLaunchKernelEx, streams."""
    pytest.importorskip("numba.cuda")
    env = _env(libdir, tmp_path)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-W", "ignore", str(HERE / "numba_cuda_app.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "numba-cuda OK NVIDIA H100" in r.stdout


@pytest.mark.parametrize("dev", ["CUDA", "CUDA:PTX"])
def test_tinygrad_cuda_backend(libdir, tmp_path, dev):
    """tinygrad's CUDA backend unchanged: DEV=CUDA renders CUDA C and compiles it with NVRTC, DEV=CUDA:PTX
    uses tinygrad's own PTX renderer (shared-memory reductions address `local0[0]` elements)."""
    pytest.importorskip("tinygrad")
    from ptxjit.cli.driver import nvrtc_dirs

    env = _env(libdir, tmp_path)
    env["LD_LIBRARY_PATH"] += "".join(":" + d for d in nvrtc_dirs())
    env["DEV"] = dev
    r = subprocess.run([sys.executable, str(HERE / "tinygrad_app.py")], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    renderer = "CUDARenderer" if dev == "CUDA" else "PTXRenderer"
    assert f"{renderer} tinygrad OK" in r.stdout


def _tinygrad_sdist_test() -> Path | None:
    """tinygrad's test/test_tiny.py from its source distribution (scripts/setup_venv.sh downloads it), as the
    benchmark harness's tinygrad section takes it."""
    sys.path.insert(0, str(HERE.parent.parent / "bench"))
    from ptxbench.tinygrad import tiny_test_file

    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"ptxjit-tinygrad-{os.getpid()}"
    out.mkdir(parents=True, exist_ok=True)
    return tiny_test_file(out)


@pytest.mark.parametrize("dev", ["CUDA:PTX", pytest.param("CUDA", marks=slow)])
def test_tinygrad_test_tiny(libdir, tmp_path, dev):
    """tinygrad's own test/test_tiny.py, unchanged, on its CUDA backend.  PARALLEL=0: tinygrad's BEAM search
    otherwise compiles candidates in a pool of forked workers, which on 2 cores only slows it down.  DEV=CUDA
    (NVRTC) with PTXJIT_TEST_SLOW=1: the two renderers share every driver path, and the suite's time is bounded."""
    pytest.importorskip("tinygrad")
    test = _tinygrad_sdist_test()
    if test is None:
        pytest.skip("tinygrad's source distribution is not in .venv/sdist (scripts/setup_venv.sh downloads it)")
    from ptxjit.cli.driver import nvrtc_dirs

    env = _env(libdir, tmp_path)
    env["LD_LIBRARY_PATH"] += "".join(":" + d for d in nvrtc_dirs())
    env.update(DEV=dev, PARALLEL="0")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)], env=env,
                       capture_output=True, text=True, timeout=1800, cwd=test.parent)
    tail = r.stdout[-3000:]
    assert r.returncode == 0, tail + r.stderr[-2000:]
    assert " passed" in tail and "failed" not in tail
