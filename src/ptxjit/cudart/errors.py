"""cudaError_t: the runtime's codes, their names and strings, and the CUresult each driver failure becomes.

The runtime is implemented on the driver's Python layer, whose failures are CudaErrors carrying a CUresult;
`from_curesult` turns one into the cudaError_t a CUDA program compiled against CUDA 13 expects (the mapping is
explicit: the two enums agree on many numbers but not all, e.g. CUDA_ERROR_NOT_FOUND 500 is
cudaErrorSymbolNotFound 500 but CUDA_ERROR_INVALID_CONTEXT 201 is cudaErrorDeviceUninitialized 201).
"""

from __future__ import annotations

from ptxjit.cudart.abi_tables import CUDA_ERROR
from ptxjit.driver import errors as DE
from ptxjit.driver.abi_tables import CURESULT

CODES = CUDA_ERROR
NAMES: dict[int, str] = {}
for _name, _code in CUDA_ERROR.items():
    NAMES.setdefault(_code, _name)

SUCCESS = 0
INVALID_VALUE = CUDA_ERROR["cudaErrorInvalidValue"]
MEMORY_ALLOCATION = CUDA_ERROR["cudaErrorMemoryAllocation"]
INVALID_DEVICE = CUDA_ERROR["cudaErrorInvalidDevice"]
INVALID_DEVICE_FUNCTION = CUDA_ERROR["cudaErrorInvalidDeviceFunction"]
INVALID_SYMBOL = CUDA_ERROR["cudaErrorInvalidSymbol"]
INVALID_MEMCPY_DIRECTION = CUDA_ERROR["cudaErrorInvalidMemcpyDirection"]
MISSING_CONFIGURATION = CUDA_ERROR["cudaErrorMissingConfiguration"]
INVALID_CONFIGURATION = CUDA_ERROR["cudaErrorInvalidConfiguration"]
NO_KERNEL_IMAGE = CUDA_ERROR["cudaErrorNoKernelImageForDevice"]
ILLEGAL_ADDRESS = CUDA_ERROR["cudaErrorIllegalAddress"]
NOT_SUPPORTED = CUDA_ERROR["cudaErrorNotSupported"]
UNSUPPORTED_LIMIT = CUDA_ERROR["cudaErrorUnsupportedLimit"]
UNKNOWN = CUDA_ERROR["cudaErrorUnknown"]

# CUresult name -> cudaError_t name, for every code the driver layer raises (and the rest of the kernel and
# launch errors); a CUresult missing here becomes cudaErrorUnknown
_FROM_DRIVER = {
    "CUDA_SUCCESS": "cudaSuccess",
    "CUDA_ERROR_INVALID_VALUE": "cudaErrorInvalidValue",
    "CUDA_ERROR_OUT_OF_MEMORY": "cudaErrorMemoryAllocation",
    "CUDA_ERROR_NOT_INITIALIZED": "cudaErrorInitializationError",
    "CUDA_ERROR_DEINITIALIZED": "cudaErrorCudartUnloading",
    "CUDA_ERROR_NO_DEVICE": "cudaErrorNoDevice",
    "CUDA_ERROR_INVALID_DEVICE": "cudaErrorInvalidDevice",
    "CUDA_ERROR_INVALID_IMAGE": "cudaErrorInvalidKernelImage",
    "CUDA_ERROR_INVALID_CONTEXT": "cudaErrorDeviceUninitialized",
    "CUDA_ERROR_CONTEXT_ALREADY_IN_USE": "cudaErrorDeviceAlreadyInUse",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "cudaErrorNoKernelImageForDevice",
    "CUDA_ERROR_INVALID_PTX": "cudaErrorInvalidPtx",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "cudaErrorUnsupportedPtxVersion",
    "CUDA_ERROR_JIT_COMPILER_NOT_FOUND": "cudaErrorJitCompilerNotFound",
    "CUDA_ERROR_INVALID_SOURCE": "cudaErrorInvalidSource",
    "CUDA_ERROR_FILE_NOT_FOUND": "cudaErrorFileNotFound",
    "CUDA_ERROR_OPERATING_SYSTEM": "cudaErrorOperatingSystem",
    "CUDA_ERROR_INVALID_HANDLE": "cudaErrorInvalidResourceHandle",
    "CUDA_ERROR_ILLEGAL_STATE": "cudaErrorIllegalState",
    "CUDA_ERROR_NOT_FOUND": "cudaErrorSymbolNotFound",
    "CUDA_ERROR_NOT_READY": "cudaErrorNotReady",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "cudaErrorIllegalAddress",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "cudaErrorLaunchOutOfResources",
    "CUDA_ERROR_LAUNCH_TIMEOUT": "cudaErrorLaunchTimeout",
    "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED": "cudaErrorPeerAccessUnsupported",
    "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED": "cudaErrorHostMemoryAlreadyRegistered",
    "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED": "cudaErrorHostMemoryNotRegistered",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED": "cudaErrorContextIsDestroyed",
    "CUDA_ERROR_ASSERT": "cudaErrorAssert",
    "CUDA_ERROR_HARDWARE_STACK_ERROR": "cudaErrorHardwareStackError",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "cudaErrorIllegalInstruction",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "cudaErrorMisalignedAddress",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE": "cudaErrorInvalidAddressSpace",
    "CUDA_ERROR_INVALID_PC": "cudaErrorInvalidPc",
    "CUDA_ERROR_LAUNCH_FAILED": "cudaErrorLaunchFailure",
    "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE": "cudaErrorCooperativeLaunchTooLarge",
    "CUDA_ERROR_NOT_PERMITTED": "cudaErrorNotPermitted",
    "CUDA_ERROR_NOT_SUPPORTED": "cudaErrorNotSupported",
    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED": "cudaErrorStreamCaptureUnsupported",
    "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED": "cudaErrorStreamCaptureInvalidated",
    "CUDA_ERROR_STREAM_CAPTURE_MERGE": "cudaErrorStreamCaptureMerge",
    "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED": "cudaErrorStreamCaptureUnmatched",
    "CUDA_ERROR_STREAM_CAPTURE_UNJOINED": "cudaErrorStreamCaptureUnjoined",
    "CUDA_ERROR_STREAM_CAPTURE_ISOLATION": "cudaErrorStreamCaptureIsolation",
    "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT": "cudaErrorStreamCaptureImplicit",
    "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD": "cudaErrorStreamCaptureWrongThread",
    "CUDA_ERROR_CAPTURED_EVENT": "cudaErrorCapturedEvent",
    "CUDA_ERROR_UNKNOWN": "cudaErrorUnknown",
}
FROM_CURESULT: dict[int, int] = {CURESULT[d]: CUDA_ERROR[r] for d, r in _FROM_DRIVER.items()
                                 if d in CURESULT and r in CUDA_ERROR}

# the codes whose strings the driver's wording serves (the same condition under another name)
_DRIVER_WORDING = {r: d for d, r in FROM_CURESULT.items()}
_STRINGS = {
    INVALID_DEVICE_FUNCTION: "invalid device function (no kernel is registered for this host function)",
    INVALID_SYMBOL: "invalid device symbol (no __device__ or __constant__ variable is registered at this address)",
    INVALID_MEMCPY_DIRECTION: "invalid copy direction for memcpy",
    MISSING_CONFIGURATION: "__global__ function call is not configured",
    CUDA_ERROR["cudaErrorInsufficientDriver"]: "CUDA driver version is insufficient for CUDA runtime version",
}


def from_curesult(code: int) -> int:
    return FROM_CURESULT.get(code, UNKNOWN)


def error_name(code: int) -> str | None:
    return NAMES.get(code)


def error_string(code: int) -> str | None:
    """cudaGetErrorString: a description, None for a value CUDA does not define."""
    name = NAMES.get(code)
    if name is None:
        return None
    if code in _STRINGS:
        return _STRINGS[code]
    d = _DRIVER_WORDING.get(code)
    if d is not None:
        text = DE.error_string(d)
        if text:
            return text
    words = name.removeprefix("cudaError")
    out = "".join(" " + c.lower() if c.isupper() else c for c in words).strip()
    return out or name


class RuntimeError_(Exception):
    """A runtime call's own failure (one the driver layer has no CUresult for): `code` is its cudaError_t."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        return f"{NAMES.get(self.code, self.code)}: {self.args[0]}"


def log(message: str) -> None:
    DE.log(message)


_unsupported_named: set[str] = set()


def log_unsupported(name: str) -> int:
    """A runtime function ptxjit does not implement: named once in the log; returns cudaErrorNotSupported."""
    if name not in _unsupported_named:
        _unsupported_named.add(name)
        log(f"ptxjit runtime: {name} is not supported by ptxjit; it returns cudaErrorNotSupported")
    return NOT_SUPPORTED
