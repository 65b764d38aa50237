"""Exceptions raised by ptxjit.  Every error names the place it comes from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourcePos:
    """A position in a PTX file (1-based line and column), and where known the CUDA source line the
    PTX's `.loc` names for it (`source`, "kernel.cu:12:5"): errors then name the user's line first."""

    file: str
    line: int
    col: int
    source: str = ""

    def __str__(self) -> str:
        ptx = f"{self.file}:{self.line}:{self.col}"
        return f"{self.source} (PTX {ptx})" if self.source else ptx


class PTXError(Exception):
    """Base class of every ptxjit error about a PTX program."""


class PTXSyntaxError(PTXError):
    """The PTX text does not parse."""

    def __init__(self, pos: SourcePos, message: str, text: str = "") -> None:
        self.pos = pos
        self.text = text
        detail = f"{pos}: syntax error: {message}"
        if text:
            detail += f" (at {text!r})"
        super().__init__(detail)


class PTXValidationError(PTXError):
    """The PTX parses but is not a valid program (undeclared register, unknown label, ...)."""

    def __init__(self, pos: SourcePos | None, message: str) -> None:
        self.pos = pos
        super().__init__(f"{pos}: {message}" if pos else message)


class UnsupportedInstructionError(PTXError):
    """The PTX uses an instruction (or modifier combination) ptxjit does not implement."""

    def __init__(self, pos: SourcePos | None, instruction: str, reason: str = "") -> None:
        self.pos = pos
        self.instruction = instruction
        msg = f"{pos}: unsupported instruction '{instruction}'"
        if reason:
            msg += f": {reason}"
        super().__init__(msg)


class InvalidInstructionError(PTXValidationError, UnsupportedInstructionError):
    """The instruction is not valid PTX: ptxas would reject it (unknown opcode or modifier, impossible
    type, wrong operand count, kind or register class, wrong state space, non-predicate guard).

    It is a PTXValidationError; it is also an UnsupportedInstructionError so that callers which catch
    "ptxjit cannot run this instruction" keep catching it."""

    def __init__(self, pos: SourcePos | None, instruction: str, reason: str = "") -> None:
        self.pos = pos
        self.instruction = instruction
        self.reason = reason
        PTXError.__init__(self, f"{pos}: invalid PTX: {instruction}: {reason}" if pos else
                          f"invalid PTX: {instruction}: {reason}")


class KernelError(RuntimeError):
    """A kernel failed while running (trap, deadlock, ...)."""


class KernelTrap(KernelError):
    """A thread executed `trap` (or an equivalent failure such as an illegal branch)."""

    def __init__(self, kernel: str, cta: tuple[int, int, int], thread: tuple[int, int, int],
                 where: str, reason: str = "trap") -> None:
        self.kernel = kernel
        self.cta = cta
        self.thread = thread
        self.where = where
        self.assertion: str | None = None  # a failed device assert: the line CUDA prints for it
        super().__init__(
            f"kernel '{kernel}' {reason} in block {cta} thread {thread}" + (f" at {where}" if where else "")
        )


class KernelFault(KernelError):
    """A thread accessed memory outside every range the launch gave it (an out-of-bounds index, a
    wild pointer, shared memory past its size).  The access was not executed: no other memory was
    touched, and the module stays usable.  `allocation` names the nearest allocation (an argument
    name, "globals", "shared", "local"); `address` is the faulting address (shared: the offset)."""

    def __init__(self, kernel: str, cta: tuple[int, int, int], thread: tuple[int, int, int], where: str,
                 address: int, allocation: str, detail: str) -> None:
        self.kernel = kernel
        self.cta = cta
        self.thread = thread
        self.where = where
        self.address = address
        self.allocation = allocation
        super().__init__(f"kernel '{kernel}' made an out-of-bounds memory access in block {cta} thread "
                         f"{thread}" + (f" at {where}" if where else "") + f": {detail}")


class KernelDeadlock(KernelError):
    """The threads of a CTA wait at barriers that can never complete."""


class KernelTimeout(KernelError):
    """A launch ran longer than its timeout (`timeout=` or PTXJIT_TIMEOUT); its workers were stopped."""

    def __init__(self, kernel: str, elapsed: float, timeout: float, detail: str = "") -> None:
        self.kernel = kernel
        self.elapsed = elapsed
        self.timeout = timeout
        super().__init__(f"kernel '{kernel}' timed out after {elapsed:.2f} s (timeout {timeout:g} s)"
                         + (f"; {detail}" if detail else ""))


class PtxjitWarning(UserWarning):
    """Something ptxjit works around but the user should know: an untrusted or unusable cache
    directory, a damaged cache entry, an array whose elements differ from what the kernel reads."""
