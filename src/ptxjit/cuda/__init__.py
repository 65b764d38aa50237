"""CUDA C++ source -> ptxjit, through NVRTC (``pip install 'ptxjit[cuda]'``).

    compile_cuda(source, name_expressions=None, options=(), arch="compute_80") -> CompiledCuda
    RawModule(code=source, options=(), name_expressions=None).get_function(name) -> RawKernel
    RawKernel(source, name, options=())(grid, block, args, shared_mem=0)
    load_module("kernel.cu", options=()) -> ptxjit.Module
"""

from ptxjit.cuda._nvrtc import (
    CompiledCuda,
    CudaCompileError,
    NvrtcNotFoundError,
    compile_cuda,
    nvrtc_available,
    nvrtc_stats,
    nvrtc_version,
)
from ptxjit.cuda._raw import RawKernel, RawModule, load_module

__all__ = [
    "CompiledCuda", "CudaCompileError", "NvrtcNotFoundError", "RawKernel", "RawModule", "compile_cuda",
    "load_module", "nvrtc_available", "nvrtc_stats", "nvrtc_version",
]
