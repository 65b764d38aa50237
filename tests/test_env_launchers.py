"""PTXJIT_BACKEND=ray and PTXJIT_CHECK as launch hooks (src/ptxjit/env_launchers.py): installed by `import
ptxjit` only when set, under the hooks a program installs; a stream launch under PTXJIT_CHECK runs at once,
checked; cooperative and cluster launches are not distributed (ValueError) nor checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit import env_launchers

DATA = Path(__file__).parent / "data" / "check"
BENCH = Path(__file__).parent.parent / "bench" / "kernels" / "ptx"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PTXJIT_CHECK", "PTXJIT_BACKEND")}
    return {**env, **extra}


def _run(code: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(**extra),
                          timeout=120)


def test_import_installs_nothing_without_the_variables():
    r = _run("import sys, ptxjit; print(sorted(m for m in ('numpy', 'ptxjit.api', 'ptxjit.env_launchers') "
             "if m in sys.modules))")
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_import_installs_the_launchers_the_variables_ask_for():
    code = "import ptxjit; print([h.__qualname__ for h in ptxjit.launch_hooks()])"
    r = _run(code, PTXJIT_CHECK="memcheck", PTXJIT_BACKEND="Ray")
    assert r.returncode == 0, r.stderr
    # Ray's first: a launch it takes is not checked
    assert r.stdout.strip() == "['distributed_launcher', 'check_launcher.<locals>.check']"
    r = _run(code, PTXJIT_CHECK="memcheck")
    assert r.stdout.strip() == "['check_launcher.<locals>.check']", r.stderr
    r = _run(code, PTXJIT_BACKEND="ray")
    assert r.stdout.strip() == "['distributed_launcher']", r.stderr


def test_ray_launcher_refuses_cooperative_and_cluster_launches_and_leaves_streams_local():
    k = ptxjit.Module.from_file(BENCH / "vadd.ptx").get_function("vadd")
    n = 256
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    c = np.zeros(n, np.float32)
    seen = []
    remove = env_launchers.install(backend="ray")
    try:
        with ptxjit.launch_hook(lambda launch, proceed: (seen.append(launch.kernel.name), proceed())[1]):
            for kw in ({"cooperative": True}, {"cluster": (1, 1, 1)}):
                with pytest.raises(ValueError, match="cannot be instrumented or distributed"):
                    k(1, n, (a, b, c, np.int32(n)), **kw)
            s = ptxjit.Stream()
            k(1, n, (a, b, c, np.int32(n)), stream=s)  # on a stream: ptxjit runs it, here
            s.synchronize()
    finally:
        remove()
    np.testing.assert_array_equal(c, a + b)
    assert seen == ["vadd"] * 3  # the program's hook saw every launch first
    assert env_launchers.distributed_launcher not in ptxjit.launch_hooks()


def test_check_launcher_under_a_programs_hook_and_on_a_stream():
    code = f"""
import numpy as np, ptxjit
seen = []
def hook(launch, proceed):
    seen.append(launch.stream is not None)
    return proceed()
ptxjit.add_launch_hook(hook)
k = ptxjit.Module.from_file({str(DATA / 'race_shared_raw.ptx')!r}).get_function('race_shared_raw')
out = np.zeros(128, np.float32)
s = ptxjit.Stream()
k(1, 128, (np.arange(128, dtype=np.float32), out), stream=s)
print('at once', int(out[0]), int(out[127]))  # checked launches run synchronously
k(1, 128, (np.arange(128, dtype=np.float32), out), unchecked=True)  # not checked: no second report
print('seen', seen, [h is hook for h in ptxjit.launch_hooks()])
"""
    r = _run(code, PTXJIT_CHECK="racecheck")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["at once 1 0", "seen [True, False] [True, False]"]
    assert r.stderr.count("Error: Race reported") == 1
    assert r.stderr.rstrip().endswith("========= ERROR SUMMARY: 1 error")
