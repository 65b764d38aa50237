"""CUresult codes, their names and strings, and the driver's log.

Every entry point returns a CUresult; inside the driver a failure is a CudaError carrying the code and a
sentence saying what was wrong, which goes to the log (stderr, or the file PTXJIT_DRIVER_LOG names) when
the code reaches the caller, so that a program that only sees `CUDA_ERROR_INVALID_VALUE` still has
ptxjit's explanation at hand.
"""

from __future__ import annotations

import sys
import threading

from ptxjit import config
from ptxjit.driver.abi_tables import CURESULT

NAMES: dict[int, str] = {}
for _name, _code in CURESULT.items():
    NAMES.setdefault(_code, _name)
CODES = CURESULT

SUCCESS = 0
INVALID_VALUE = CURESULT["CUDA_ERROR_INVALID_VALUE"]
OUT_OF_MEMORY = CURESULT["CUDA_ERROR_OUT_OF_MEMORY"]
NOT_INITIALIZED = CURESULT["CUDA_ERROR_NOT_INITIALIZED"]
DEINITIALIZED = CURESULT["CUDA_ERROR_DEINITIALIZED"]
INVALID_DEVICE = CURESULT["CUDA_ERROR_INVALID_DEVICE"]
INVALID_IMAGE = CURESULT["CUDA_ERROR_INVALID_IMAGE"]
INVALID_CONTEXT = CURESULT["CUDA_ERROR_INVALID_CONTEXT"]
CONTEXT_ALREADY_IN_USE = CURESULT["CUDA_ERROR_CONTEXT_ALREADY_IN_USE"]
NO_BINARY_FOR_GPU = CURESULT["CUDA_ERROR_NO_BINARY_FOR_GPU"]
INVALID_PTX = CURESULT["CUDA_ERROR_INVALID_PTX"]
UNSUPPORTED_PTX_VERSION = CURESULT["CUDA_ERROR_UNSUPPORTED_PTX_VERSION"]
FILE_NOT_FOUND = CURESULT["CUDA_ERROR_FILE_NOT_FOUND"]
INVALID_HANDLE = CURESULT["CUDA_ERROR_INVALID_HANDLE"]
NOT_FOUND = CURESULT["CUDA_ERROR_NOT_FOUND"]
NOT_READY = CURESULT["CUDA_ERROR_NOT_READY"]
ILLEGAL_ADDRESS = CURESULT["CUDA_ERROR_ILLEGAL_ADDRESS"]
LAUNCH_OUT_OF_RESOURCES = CURESULT["CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"]
LAUNCH_TIMEOUT = CURESULT["CUDA_ERROR_LAUNCH_TIMEOUT"]
LAUNCH_FAILED = CURESULT["CUDA_ERROR_LAUNCH_FAILED"]
ASSERT = CURESULT["CUDA_ERROR_ASSERT"]
ILLEGAL_INSTRUCTION = CURESULT["CUDA_ERROR_ILLEGAL_INSTRUCTION"]
COOPERATIVE_LAUNCH_TOO_LARGE = CURESULT["CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"]
NOT_SUPPORTED = CURESULT["CUDA_ERROR_NOT_SUPPORTED"]
NOT_PERMITTED = CURESULT["CUDA_ERROR_NOT_PERMITTED"]
PEER_ACCESS_UNSUPPORTED = CURESULT["CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"]
HOST_MEMORY_ALREADY_REGISTERED = CURESULT["CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"]
HOST_MEMORY_NOT_REGISTERED = CURESULT["CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"]
STREAM_CAPTURE_UNSUPPORTED = CURESULT["CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"]
UNKNOWN = CURESULT["CUDA_ERROR_UNKNOWN"]

# cuGetErrorString's sentences: ptxjit's own wording of what each code means
_STRINGS = {
    SUCCESS: "no error",
    INVALID_VALUE: "invalid argument",
    OUT_OF_MEMORY: "out of memory",
    NOT_INITIALIZED: "initialization error (cuInit has not been called)",
    DEINITIALIZED: "driver shutting down",
    INVALID_DEVICE: "invalid device ordinal",
    INVALID_IMAGE: "device kernel image is invalid",
    INVALID_CONTEXT: "invalid device context",
    CONTEXT_ALREADY_IN_USE: "context already in use",
    NO_BINARY_FOR_GPU: "no kernel image is available for execution on the device (the image holds no PTX)",
    INVALID_PTX: "a PTX JIT compilation failed",
    UNSUPPORTED_PTX_VERSION: "the provided PTX was compiled with an unsupported toolchain",
    FILE_NOT_FOUND: "file not found",
    INVALID_HANDLE: "invalid resource handle",
    NOT_FOUND: "named symbol not found",
    NOT_READY: "device not ready",
    ILLEGAL_ADDRESS: "an illegal memory access was encountered",
    LAUNCH_OUT_OF_RESOURCES: "too many resources requested for launch",
    LAUNCH_TIMEOUT: "the launch timed out and was terminated",
    LAUNCH_FAILED: "unspecified launch failure",
    ASSERT: "device-side assert triggered",
    ILLEGAL_INSTRUCTION: "an illegal instruction was encountered",
    NOT_SUPPORTED: "operation not supported",
    NOT_PERMITTED: "operation not permitted",
    UNKNOWN: "unknown error",
}

# a sticky error leaves the context unusable, as a GPU fault does: every later call returns it
STICKY = frozenset({ILLEGAL_ADDRESS, LAUNCH_FAILED, ASSERT, ILLEGAL_INSTRUCTION, LAUNCH_TIMEOUT,
                    CURESULT["CUDA_ERROR_HARDWARE_STACK_ERROR"], CURESULT["CUDA_ERROR_MISALIGNED_ADDRESS"],
                    CURESULT["CUDA_ERROR_INVALID_PC"], CURESULT["CUDA_ERROR_INVALID_ADDRESS_SPACE"]})


def error_name(code: int) -> str | None:
    """cuGetErrorName: the enumerator's name, None for a value CUDA does not define."""
    return NAMES.get(code)


def error_string(code: int) -> str | None:
    """cuGetErrorString: a description, None for a value CUDA does not define."""
    name = NAMES.get(code)
    if name is None:
        return None
    return _STRINGS.get(code) or name.removeprefix("CUDA_ERROR_").replace("_", " ").lower()


class CudaError(Exception):
    """A driver call's failure: `code` is the CUresult it returns, the message ptxjit's explanation."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        return f"{NAMES.get(self.code, self.code)}: {self.args[0]}"


_log_lock = threading.Lock()
_unsupported_named: set[str] = set()


def logs_to_file() -> bool:
    return bool(config.DRIVER_LOG.text())


def log(message: str) -> None:
    """One line (or a multi-line report) to PTXJIT_DRIVER_LOG, else stderr; never raises."""
    text = message if message.endswith("\n") else message + "\n"
    path = config.DRIVER_LOG.text()
    try:
        with _log_lock:
            if path:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(text)
            else:
                sys.stderr.write(text)
                sys.stderr.flush()
    except Exception:  # noqa: BLE001 - also while the interpreter shuts down (builtins such as open are gone)
        pass


def log_unsupported(name: str) -> int:
    """An entry point ptxjit does not implement: named once in the log; returns CUDA_ERROR_NOT_SUPPORTED."""
    if name not in _unsupported_named:
        _unsupported_named.add(name)
        log(f"ptxjit driver: {name} is not supported by ptxjit; it returns CUDA_ERROR_NOT_SUPPORTED")
    return NOT_SUPPORTED
