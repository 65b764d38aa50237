"""What runs inside a forked child for one case: (ptxas,) load, launch every kernel; report by pipe.

The child writes one JSON line per event to the pipe so that the parent still knows the phase and the
ptxas verdict when the child is killed by a signal or by the timeout.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import tempfile
import time
import traceback

import numpy as np

POINTER_BYTES = 1 << 20  # every 64-bit parameter gets a zeroed 1 MB buffer
LAUNCH_TIMEOUT = 3.0  # seconds per launch (ptxjit's own watchdog: KernelTimeout is a clean outcome)
MAX_PTXAS_VERSION = (9, 0)
MIN_PTXAS_SM = 75  # the oldest architecture CUDA 13's ptxas generates code for
OPTIMIZING = 3  # opt_level of the optimizing build (tier 1's level, and Module.translation's default)
_TARGET = re.compile(r"\.target\s+(sm_\d+[af]?)")


def ptxas_verdict(text: str, ptxas: str, timeout: float = 10.0) -> tuple[bool | None, str]:
    """(accepted, first error line) from ptxas for the architecture the PTX names (sm_90 otherwise)."""
    m = _TARGET.search(text)
    arch = m.group(1) if m else "sm_90"
    # this ptxas knows PTX ISA up to MAX_PTXAS_VERSION: judge newer files as that version
    text = re.sub(r"^(\s*)\.version\s+(\d+)\.(\d+)", lambda v: v.group(0) if (int(v.group(2)), int(v.group(3)))
                  <= MAX_PTXAS_VERSION else f"{v.group(1)}.version {MAX_PTXAS_VERSION[0]}.{MAX_PTXAS_VERSION[1]}",
                  text, count=1, flags=re.M)
    if int(re.sub(r"\D", "", arch)) < MIN_PTXAS_SM:  # PTX for an older target compiles for newer GPUs
        arch = f"sm_{MIN_PTXAS_SM}"
    with tempfile.TemporaryDirectory(prefix="ptxfuzz-") as d:
        src = os.path.join(d, "m.ptx")
        with open(src, "w") as f:
            f.write(text)
        try:
            r = subprocess.run([ptxas, "-arch", arch, src, "-o", os.path.join(d, "m.cubin")],
                               capture_output=True, text=True, timeout=timeout, errors="replace")
        except subprocess.TimeoutExpired:
            return None, "ptxas timed out"
        lines = r.stderr.splitlines()
        err = next((ln for ln in lines if ", line" in ln), next((ln for ln in lines if "rror" in ln), ""))
        return r.returncode == 0, err.replace(src, "m.ptx")


def _args_for(kernel) -> tuple:
    """A zeroed 1 MB buffer for every 64-bit parameter the kernel dereferences, 1 for scalars: sizes
    of 1 keep loops short, and divisors of 1 keep `out[i % m]` inside the buffer (with m = 0 the corpus
    kernels index out of bounds, which would be a fault of the arguments, not of ptxjit)."""
    from ptxjit.frontend import ir

    args = []
    for p, pa in zip(kernel.fn.params, kernel._access.params, strict=True):
        if p.dims:
            args.append(bytes(max(p.size, 0)))
        elif ir.type_size(p.type) == 8 and (pa.pointer or pa.may_write):
            args.append(np.zeros(POINTER_BYTES, dtype=np.uint8))
        elif ir.is_float_type(p.type):
            args.append(1.0)
        else:
            args.append(1)
    return tuple(args)


def _exc(e: BaseException) -> dict:
    tb = traceback.extract_tb(e.__traceback__)
    frame = next((f for f in reversed(tb) if "/ptxjit/" in f.filename), tb[-1] if tb else None)
    where = f"{frame.filename.split('/src/')[-1]}:{frame.lineno}:{frame.name}" if frame else "?"
    return {"type": type(e).__name__, "msg": str(e)[:300], "where": where}


def is_clean(e: BaseException, phase: str) -> bool:
    """A documented error: any PTXError, a KernelError at launch, TypeError/ValueError at the API
    boundary (the launch argument and shape checks raise those from ptxjit/runtime/args.py or api.py)."""
    import ptxjit
    from ptxjit.errors import KernelError, PTXError

    if isinstance(e, PTXError):
        return True
    if phase == "launch" and isinstance(e, KernelError | ptxjit.errors.KernelError):
        return True
    if phase == "launch" and type(e) in (TypeError, ValueError, KeyError):
        tb = traceback.extract_tb(e.__traceback__)
        return bool(tb) and any(f.filename.endswith(("runtime/args.py", "ptxjit/api.py")) and f is tb[-1]
                                for f in tb)
    return False


def run_case(text: str, fd: int, mem_bytes: int, ptxas: str | None, levels: tuple[int, ...] = (OPTIMIZING,),
             verdict: tuple[bool | None, str] | None = None) -> None:
    """Body of the forked child; never returns (os._exit).  Every kernel is translated (bounds-checked, as
    launched by default) and launched once per opt level in `levels`: the baseline (tier 0's build, what a
    first launch runs) and/or the optimizing level.  `verdict`: ptxas's, already known for this text."""
    out = os.fdopen(fd, "w", buffering=1)

    def emit(**kw) -> None:
        out.write(json.dumps(kw) + "\n")

    try:
        if verdict is not None:
            emit(ptxas=verdict[0], ptxas_err=verdict[1], ptxas_cached=True)
        elif ptxas:
            t = time.perf_counter()
            ok, err = ptxas_verdict(text, ptxas)
            emit(ptxas=ok, ptxas_err=err, t_ptxas=round(time.perf_counter() - t, 4))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # device printf would flood the terminal
        os.dup2(devnull, 2)
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        import warnings

        # tiers off: the launch runs the translation built below at the level asked for, and builds nothing
        # else (with tiers on it would add tier 0's counting build, and tier 1's in the background)
        os.environ["PTXJIT_TIERS"] = "0"
        import ptxjit

        warnings.simplefilter("ignore")  # width-mismatch warnings: zeroed uint8 buffers for every pointer
        emit(phase="load", levels=list(levels))
        t = time.perf_counter()
        try:
            mod = ptxjit.Module(text, "fuzz.ptx")
        except BaseException as e:  # noqa: BLE001 - classifying every exception is the point
            emit(outcome="clean" if is_clean(e, "load") else "internal", phase="load", **_exc(e))
            return
        emit(loaded=True, t_load=round(time.perf_counter() - t, 4))
        t_max = 0.0  # the longest translation of one kernel at one level
        for f in mod.ir.entries:
            for level in levels:
                emit(phase="launch", kernel=f.name, level=level, running=False)
                try:
                    k = mod.get_function(f.name)
                    args = _args_for(k)
                    # compile first, checked as launched: a crash here is no kernel fault
                    t = time.perf_counter()
                    tr = mod.translation(k.fn, (32, 1, 1), True, opt_level=level)
                    t_max = max(t_max, time.perf_counter() - t)
                    emit(running=True, t_translate_max=round(t_max, 4))
                    # the launch takes the translation it finds for its block shape and checking: this one
                    k._tcache[((32, 1, 1), True)] = tr
                    k(1, 32, args, shared_mem=1024 if k._access.dynamic_shared else 0, timeout=LAUNCH_TIMEOUT)
                except BaseException as e:  # noqa: BLE001
                    if not is_clean(e, "launch"):
                        emit(outcome="internal", phase="launch", kernel=f.name, level=level, **_exc(e))
                        return
        emit(outcome="ok")
    finally:
        out.flush()
        os._exit(0)
