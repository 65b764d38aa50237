"""Triton ``@triton.jit`` kernels on ptxjit (``pip install 'ptxjit[triton]'``).

    import triton, triton.language as tl, ptxjit.triton

    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)

    ptxjit.triton.jit(add)[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)     # NumPy arrays

Triton compiles the kernel to PTX for a GPU target (sm_80 by default, ``target="sm_90"`` or ``arch=90``)
without a GPU, specializing it on the arguments exactly as its own launcher does (argument types,
16-divisibility of integers and 16-byte alignment of pointers, integer 1 as a constant); ptxjit runs the
PTX.  One compile per specialization, cached.  Arguments: NumPy arrays, ``ptxjit.to_device`` arrays
(DeviceArray), Python/NumPy scalars, constexpr keywords, Triton's ``num_warps``/``num_stages``/... options;
the grid is a tuple or a callable of the meta-parameters, as in Triton.
"""

from __future__ import annotations

_INSTALL_HINT = "pip install 'ptxjit[triton]'"

try:
    import triton as _triton  # noqa: F401
    import triton.language as _tl  # noqa: F401
    from triton.backends.compiler import GPUTarget as _GPUTarget  # noqa: F401
except ImportError as _e:  # pragma: no cover - depends on the installation
    raise ImportError(f"ptxjit.triton needs Triton (3.9): {_INSTALL_HINT} ({_e})") from _e

from ptxjit.triton.kernel import TritonKernel, jit, reinterpret, triton_stats  # noqa: E402

__all__ = ["TritonKernel", "jit", "reinterpret", "triton_stats"]
