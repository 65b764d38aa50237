"""Where a process's time went: translations, kernel runs, copies (`ptxjit exec --stats`, PTXJIT_STATS).

Always counted (a few additions under a lock per launch, copy or translation); reported at exit only when
PTXJIT_STATS is set: `1` writes one line to the driver log, a path ending in `.json` appends one JSON
record to that file (the benchmark's sample-program table reads them).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import asdict, dataclass

from ptxjit import config

_START = time.perf_counter()


@dataclass
class Totals:
    translations: int = 0  # fresh translations the program waited for (a first launch, a stream's first launch)
    translate_s: float = 0.0
    disk_loads: int = 0  # translations loaded from the disk cache instead (their time is in translate_s)
    background_translations: int = 0  # the tiers' builds on their own threads (overlapping the program)
    background_translate_s: float = 0.0
    launches: int = 0
    kernel_s: float = 0.0  # launches from start to end of their CTAs (synchronous and stream launches)
    copies: int = 0  # copies, 2D copies and fills of memory (memcpy, memset)
    copy_bytes: int = 0
    copy_s: float = 0.0


TOTALS = Totals()
_lock = threading.Lock()


def translated(seconds: float, background: bool, from_disk: bool = False) -> None:
    with _lock:
        if from_disk:
            TOTALS.disk_loads += 1
            TOTALS.translate_s += seconds
        elif background:
            TOTALS.background_translations += 1
            TOTALS.background_translate_s += seconds
        else:
            TOTALS.translations += 1
            TOTALS.translate_s += seconds


def ran(seconds: float) -> None:
    with _lock:
        TOTALS.launches += 1
        TOTALS.kernel_s += seconds


def copied(nbytes: int, seconds: float) -> None:
    with _lock:
        TOTALS.copies += 1
        TOTALS.copy_bytes += nbytes
        TOTALS.copy_s += seconds


def snapshot() -> dict:
    """The totals so far, with the process's wall time since ptxjit was imported."""
    with _lock:
        rec = asdict(TOTALS)
    rec["wall_s"] = time.perf_counter() - _START
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in rec.items()}


def summary(rec: dict, program: str) -> str:
    rest = rec["wall_s"] - rec["translate_s"] - rec["kernel_s"] - rec["copy_s"]
    bg = (f" (and {rec['background_translations']} background builds, {rec['background_translate_s']:.2f} s, "
          "overlapping)") if rec["background_translations"] else ""
    return (f"ptxjit stats: {program}: {rec['wall_s']:.2f} s since ptxjit started: "
            f"{rec['translations']} translations and {rec['disk_loads']} from the disk cache "
            f"{rec['translate_s']:.2f} s{bg}; "
            f"{rec['launches']} launches {rec['kernel_s']:.2f} s; "
            f"{rec['copies']} copies and fills {rec['copy_s']:.3f} s ({rec['copy_bytes'] / 1e6:.1f} MB); "
            f"the rest (start-up, the program's own work, waits) {max(0.0, rest):.2f} s")


def _program() -> str:
    try:
        return os.path.basename(os.readlink("/proc/self/exe")) + " " + " ".join(sys.argv[1:])[:80]
    except OSError:
        return " ".join(sys.argv)[:80] or "the program"


def report() -> None:
    """Write the report PTXJIT_STATS asks for (at exit); never raises."""
    where = config.stats()
    if where is None:
        return
    try:
        rec = snapshot()
        rec["program"] = _program().strip()
        if where.endswith(".json"):
            with open(where, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        else:
            from ptxjit.driver import errors as E

            E.log(summary(rec, rec["program"]))
    except Exception:  # noqa: BLE001 - at exit, with parts of the interpreter gone
        pass


_installed = False


def install_exit_report() -> None:
    """Report at exit when PTXJIT_STATS is set (the driver and runtime libraries call this as they load)."""
    global _installed
    if not _installed and config.stats() is not None:
        import atexit

        _installed = True
        atexit.register(report)
