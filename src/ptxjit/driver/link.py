"""cuLink*: the JIT linker over PTX inputs (what numba-cuda and cuda.core use when nvJitLink is absent).

ptxjit links at the PTX level: the inputs' PTX texts become one module — the first input's header, every
other input's body, and `.extern` declarations dropped where another input defines the symbol.  The
"linked image" cuLinkComplete hands back is that PTX text, which cuModuleLoadData then loads.  Inputs that
hold only SASS (cubins, fatbins without PTX) are refused with CUDA_ERROR_NO_BINARY_FOR_GPU; device-runtime
libraries (libcudadevrt) add nothing ptxjit needs and are accepted and skipped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ptxjit import config
from ptxjit.driver import errors as E
from ptxjit.driver.errors import CudaError

# CUjitInputType
INPUT_CUBIN, INPUT_PTX, INPUT_FATBINARY, INPUT_OBJECT, INPUT_LIBRARY, INPUT_NVVM = 0, 1, 2, 3, 4, 5

_HEADER = re.compile(r"^\s*\.(version|target|address_size)\b[^\n]*\n?", re.M)
_DEFINED = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(?[^;]*?\{",
                      re.M | re.S)
_ENTRY_HEAD = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+[\w$]+\s*\([^)]*\)[^{;]*\{", re.M | re.S)
# a function definition's head: its return parameters (group 1, absent for a void function) and its name
_FUNC_HEAD = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.func\s+(\([^)]*\)\s*)?([\w$]+)\s*\(", re.M)
# a call that receives a return value: `call.uni (retval0), name, (args)` (NVVM writes it across lines)
_CALL_WITH_RETURN = re.compile(r"(call(?:\.uni)?)\s+\(\s*[\w$]+\s*\)\s*,(\s*)([\w$]+)(\s*[,;])", re.S)
# a weak variable (a C++ inline variable or template static: libcu++'s integral_constant<bool>::value) or a
# .common one (numba's environment pointer with debug=True, in every input) and its name
_WEAK_VAR = re.compile(
    r"^[ \t]*\.(?:weak|common)\s+\.(?:global|const)\b[^;{]*?([\w$]+)\s*(?:\[[^\]]*\]\s*)*(?:=[^;]*)?;[ \t]*\n?", re.M)
_EXTERN = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([\w$]+)[^;]*;\s*\n?", re.M | re.S)


@dataclass
class LinkState:
    handle: int = 0
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (name, PTX text)
    buffer: object = None
    max_registers: int = 0  # CU_JIT_MAX_REGISTERS, 0 when not given

    def add(self, kind: int, data: bytes, name: str) -> None:
        from ptxjit.driver.context import DRIVER
        from ptxjit.driver.modules import image_to_ptx

        if kind == INPUT_LIBRARY and b".nv_fatbin" not in data and not data.lstrip().startswith(b"//"):
            if name.endswith(("cudadevrt.a", "cudadevrt.lib")):
                return  # the device runtime: nothing ptxjit links
        if kind in (INPUT_PTX, INPUT_FATBINARY, INPUT_CUBIN):
            text, _ = image_to_ptx(data, DRIVER.model.sm, name)
            self.inputs.append((name, text))
            return
        raise CudaError(E.NOT_SUPPORTED if kind != INPUT_NVVM else E.INVALID_VALUE,
                        f"cuLinkAddData({name}): input type {kind} is not supported (ptxjit links PTX, and "
                        f"fatbins that hold PTX)")

    def complete(self) -> bytes:
        if not self.inputs:
            raise CudaError(E.INVALID_VALUE, "cuLinkComplete: nothing was added")
        text = self._limit_registers(self._merged())
        dump_dir = config.DUMP_DIR.raw()
        if dump_dir:  # the linked image, for looking at what the module load gets
            os.makedirs(dump_dir, exist_ok=True)
            with open(os.path.join(dump_dir, f"linked-{self.handle:x}.ptx"), "w") as f:
                f.write(text)
        return text.encode() + b"\0"

    def _merged(self) -> str:
        if len(self.inputs) == 1:
            return self.inputs[0][1]
        defined = set()
        void_in: list[set[str]] = []  # per input: the void functions it defines
        for _, text in self.inputs:
            defined |= set(_DEFINED.findall(text))
            void_in.append({name for rets, name in _FUNC_HEAD.findall(text) if not rets})
        parts = []
        weak_seen: set[str] = set()
        weak_func_seen: set[str] = set()
        for k, (_, text) in enumerate(self.inputs):
            body = text if k == 0 else _HEADER.sub("", text)
            body = _EXTERN.sub(lambda m: "" if m.group(1) in defined else m.group(0), body)
            # Separately compiled inputs are linked by symbol, without comparing prototypes: a call that
            # expects a return value from a void function of another input (numba's C-ABI declarations
            # of a void function do) links, and the value it reads is undefined.  Calls within one input
            # keep their check (ptxas refuses a mismatch there).
            void_elsewhere = set().union(*(v for j, v in enumerate(void_in) if j != k)) - void_in[k]
            if void_elsewhere:
                body = _CALL_WITH_RETURN.sub(lambda m, void=void_elsewhere: _without_return(m, void), body)
            # a weak or common variable defined by several inputs is one variable, and a weak function one
            # function (numba's device functions with debug=True, compiled into each caller's input): the
            # first definition stays
            body = _WEAK_VAR.sub(lambda m: m.group(0) if _first(m.group(1), weak_seen) else "", body)
            body = _drop_weak_functions(body, weak_func_seen)
            parts.append(body)
        return "\n".join(parts)

    def _limit_registers(self, text: str) -> str:
        """CU_JIT_MAX_REGISTERS as PTX says it: `.maxnreg N` on each kernel that does not set its own (the
        linked image is PTX text, so the option travels with it to the module load)."""
        if not self.max_registers:
            return text

        def add(m: re.Match) -> str:
            head = m.group(0)
            if ".maxnreg" in head:
                return head
            return head[:-1].rstrip() + f"\n.maxnreg {self.max_registers}\n{{"

        return _ENTRY_HEAD.sub(add, text)


_WEAK_FUNC_HEAD = re.compile(r"^[ \t]*\.weak\s+\.func\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(", re.M)


def _drop_weak_functions(text: str, seen: set[str]) -> str:
    """`text` without the bodies of weak functions already defined by an earlier input (a weak function's
    declaration, without a body, stays)."""
    out, at = [], 0
    for m in _WEAK_FUNC_HEAD.finditer(text):
        if m.start() < at:
            continue
        end = _definition_end(text, m.end())
        if end is None:  # a declaration: `...);`
            continue
        if not _first(m.group(1), seen):
            out.append(text[at:m.start()])
            at = end
    out.append(text[at:])
    return "".join(out)


def _definition_end(text: str, i: int) -> int | None:
    """From inside a function's header: the index after its body's closing brace, or None when the
    header ends with `;` (a declaration).  Braces in `//` and `/* */` comments do not count."""
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if c == "/" and text.startswith("/*", i):
            i = text.find("*/", i)
            i = n if i < 0 else i + 2
            continue
        if c == ";" and depth == 0:
            return None
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _first(name: str, seen: set[str]) -> bool:
    """Is this the first time `name` is seen (then remember it)?"""
    if name in seen:
        return False
    seen.add(name)
    return True


def _without_return(m: re.Match, void: set[str]) -> str:
    """The call of _CALL_WITH_RETURN `m` without its return operand when its callee is in `void`."""
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{m.group(4)}" if m.group(3) in void else m.group(0)
