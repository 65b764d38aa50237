"""Kernel plumbing shared by tests/unit/floatutil.py and tests/unit/intutil.py.

`run_ptx` compiles PTX text with ptxjit (cached per text) and launches it.

Setting PTXJIT_TEST_PTXAS=1 makes `run_ptx` also assemble every kernel with `ptxas -arch=sm_XX` (its own
.target; when ptxas is on PATH), which is how the snippets were validated; PTXJIT_TEST_PTXAS=only assembles
without running (the tests then fail on their sentinel outputs; useful only while developing the tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

_MODULE_CACHE: dict[str, object] = {}


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, int):
        return (v, 1, 1)
    v = tuple(v)
    return v + (1,) * (3 - len(v))  # type: ignore[return-value]


def ptxas_check(ptx: str) -> None:
    """Assemble `ptx` with ptxas for its own .target (only when PTXJIT_TEST_PTXAS is 1/only and ptxas exists)."""
    if os.environ.get("PTXJIT_TEST_PTXAS") not in ("1", "only") or shutil.which("ptxas") is None:
        return
    target = "sm_80"
    for line in ptx.splitlines():
        if line.strip().startswith(".target"):
            target = line.split()[1].strip().rstrip(";").split(",")[0]
            break
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
        fh.write(ptx)
        path = fh.name
    try:
        res = subprocess.run(["ptxas", f"-arch={target}", path, "-o", os.devnull],
                             capture_output=True, text=True)
    finally:
        os.unlink(path)
    if res.returncode != 0:
        raise AssertionError(f"ptxas rejected the test kernel:\n{res.stderr}\n{ptx}")


def run_ptx(ptx: str, args, grid=1, block=1, shared_mem: int = 0, name: str = "k") -> None:
    """Compile `ptx` with ptxjit (cached per text) and launch kernel `name`."""
    ptxas_check(ptx)
    if os.environ.get("PTXJIT_TEST_PTXAS") == "only":  # development aid: validate the PTX, do not run it
        return
    import ptxjit

    mod = _MODULE_CACHE.get(ptx)
    if mod is None:
        mod = ptxjit.Module(ptx)
        _MODULE_CACHE[ptx] = mod
    fn = mod.get_function(name)
    fn(_dim3(grid), _dim3(block), list(args), shared_mem=shared_mem)
