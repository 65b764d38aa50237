"""ptxjit: run NVIDIA PTX kernels on multi-core CPUs through LLVM."""

from ptxjit import cuda, numba, texture  # front doors: CUDA C++ via NVRTC, Numba kernels (numba imported on first use)
from ptxjit.api import Kernel, KernelInfo, Module, ParamInfo
from ptxjit.checking import check
from ptxjit.cuda import CompiledCuda, CudaCompileError, RawKernel, RawModule, compile_cuda
from ptxjit.errors import (
    KernelDeadlock,
    KernelError,
    KernelFault,
    KernelTimeout,
    KernelTrap,
    PTXError,
    PtxjitWarning,
    PTXSyntaxError,
    PTXValidationError,
    UnsupportedInstructionError,
)
from ptxjit.instrument.trace import Trace, TraceOverflow, trace
from ptxjit.jit.translate import cache_stats
from ptxjit.lower.rules.stack import set_stack_size, stack_size
from ptxjit.lower.rules.tma import encode_tensor_map
from ptxjit.runtime.clusters import ClusterLaunchError
from ptxjit.runtime.cooperative import (
    CooperativeLaunchTooLarge,
    max_active_blocks_per_multiprocessor,
    multiprocessor_count,
)
from ptxjit.runtime.heap import heap_leaks, heap_size, set_heap_size
from ptxjit.runtime.launch import set_workers, worker_count
from ptxjit.runtime.memory import DeviceArray, Pointer, empty, to_device, zeros
from ptxjit.streams import Event, Graph, Stream, copy_async, get_elapsed_time, synchronize
from ptxjit.tiers import stats

__version__ = "0.1.0"

__all__ = [
    "CompiledCuda", "CudaCompileError", "DeviceArray", "Kernel", "KernelDeadlock", "KernelError", "KernelFault",
    "KernelInfo", "KernelTimeout", "KernelTrap", "Module", "PTXError", "PTXSyntaxError", "PTXValidationError",
    "ParamInfo", "Pointer", "check",
    "PtxjitWarning", "RawKernel", "RawModule", "UnsupportedInstructionError", "cache_stats", "compile_cuda",
    "Trace", "TraceOverflow", "cuda", "empty", "numba", "texture", "set_workers", "to_device", "trace", "worker_count",
    "zeros",
    "heap_leaks", "heap_size", "set_heap_size", "set_stack_size", "stack_size",
    "Event", "Graph", "Stream", "copy_async", "get_elapsed_time", "synchronize", "stats", "encode_tensor_map",
    "ClusterLaunchError", "CooperativeLaunchTooLarge", "max_active_blocks_per_multiprocessor", "multiprocessor_count",
]
