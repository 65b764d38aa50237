"""Compile kernels.cu with NVRTC (the nvidia-cuda-nvrtc wheel) into the images a program hands cuModuleLoadData:
PTX as nvrtcGetPTX returns it (NUL-terminated) and a SASS-only cubin from nvrtcGetCUBIN. Run by regen.sh."""

import ctypes
import sys
from pathlib import Path

here = Path(__file__).parent
lib = ctypes.CDLL(sys.argv[1])
vp, sz = ctypes.c_void_p, ctypes.c_size_t


def check(rc: int, what: str) -> None:
    if rc:
        raise SystemExit(f"{what} failed: {rc}")


def compile_with(arch: str) -> ctypes.c_void_p:
    prog = vp()
    src = (here / "kernels.cu").read_bytes()
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"kernels.cu", 0, None, None), "nvrtcCreateProgram")
    opts = (ctypes.c_char_p * 1)(f"-arch={arch}".encode())
    check(lib.nvrtcCompileProgram(prog, 1, opts), "nvrtcCompileProgram")
    return prog


def fetch(prog: ctypes.c_void_p, size_fn: str, get_fn: str) -> bytes:
    size = sz()
    check(getattr(lib, size_fn)(prog, ctypes.byref(size)), size_fn)
    buf = ctypes.create_string_buffer(size.value)
    check(getattr(lib, get_fn)(prog, buf), get_fn)
    return buf.raw


(here / "kernels.nvrtc.compute_90.ptx").write_bytes(fetch(compile_with("compute_90"), "nvrtcGetPTXSize", "nvrtcGetPTX"))
(here / "kernels.nvrtc.sm_90.cubin").write_bytes(fetch(compile_with("sm_90"), "nvrtcGetCUBINSize", "nvrtcGetCUBIN"))
