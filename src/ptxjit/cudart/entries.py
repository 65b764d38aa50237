"""The runtime API's entry points registered with cffi: what libcudart.so.13's init code calls (cudart/build.py).

Importing the modules that define entry points (capi, capi_pools, graphs, textures) fills cudart/base.py's
registries; `install` wraps each so that nothing escapes into the C++ program: a driver CudaError becomes its
cudaError_t (with the explanation in the driver log), a kernel error the sticky code of the context, anything
unexpected cudaErrorUnknown with a traceback in the log; the last error is kept for cudaGetLastError.
"""

from __future__ import annotations

import traceback

from ptxjit import accounting
from ptxjit.cudart import base as B
from ptxjit.cudart import capi, capi_pools, graphs, textures  # noqa: F401 - their entry points register on import
from ptxjit.cudart import errors as RE
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import errors as DE
from ptxjit.driver import streams as _streams
from ptxjit.driver.capi import install_exit_handler
from ptxjit.driver.context import DRIVER
from ptxjit.driver.errors import CudaError
from ptxjit.errors import KernelError


def _wrap(name: str, fn):
    quiet = name in B.QUIET
    name = B.SHOWN_AS.get(name, name)

    def call(*args):
        try:
            fn(*args)
            return 0
        except RuntimeError_ as exc:
            RE.log(f"ptxjit runtime: {name}: {exc}")
            code = exc.code
        except CudaError as exc:
            code = RE.from_curesult(exc.code)
            if quiet and exc.code == DE.NOT_READY:
                return code
            RE.log(f"ptxjit runtime: {name}: {RE.NAMES.get(code, code)}: {exc.args[0]}")
        except KernelError as exc:
            code = RE.from_curesult(_streams.make_sticky(DRIVER.top(), exc).code)
        except BaseException as exc:  # noqa: BLE001 - nothing may escape into C
            RE.log(f"ptxjit runtime: internal error in {name} ({type(exc).__name__}: {exc}); it returns "
                   f"cudaErrorUnknown\n" + traceback.format_exc())
            code = RE.UNKNOWN
        B.set_last(code)
        return code

    call.__name__ = name
    return call


# what a raw function returns when it fails: void ones nothing, the error getters cudaErrorUnknown
_FAILED = {"__cudaRegisterFatBinaryEnd": None, "__cudaUnregisterFatBinary": None, "__cudaRegisterFunction": None,
           "__cudaRegisterVar": None, "__cudaRegisterManagedVar": None, "cudaGetLastError": RE.UNKNOWN,
           "cudaPeekAtLastError": RE.UNKNOWN}


def _wrap_raw(name: str, fn):
    def call(*args):
        try:
            return fn(*args)
        except BaseException as exc:  # noqa: BLE001
            RE.log(f"ptxjit runtime: internal error in {name} ({type(exc).__name__}: {exc})\n"
                   + traceback.format_exc())
            return _FAILED.get(name, B.ffi.NULL)

    call.__name__ = name
    return call


def install(ffi_, lib) -> None:
    """Register every entry point with cffi (called by the library's init code)."""
    B.ffi = ffi = ffi_
    for name, fn in B.IMPLS.items():
        ffi.def_extern(name=name)(_wrap(name, fn))
    for name, fn in B.RAW.items():
        ffi.def_extern(name=name)(_wrap_raw(name, fn))
    install_exit_handler(ffi, lib)
    accounting.install_exit_report()

    @ffi.def_extern(name="ptxjit_unsupported")
    def _unsupported(cname):
        try:
            code = RE.log_unsupported(ffi.string(cname).decode())
        except BaseException:  # noqa: BLE001
            code = RE.NOT_SUPPORTED
        B.set_last(code)
        return code
