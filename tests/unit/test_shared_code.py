"""The baseline build's shared worker loop and warp scheduler (lower/shared_code.py, jit/shared_code.py):
symbols name their shapes, a tier-0 launch links them (also from the disk cache in a fresh process),
and results and fault reports stay those of the kernel's own copies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxjit.lower.module import build_shared_module
from ptxjit.lower.shared_code import WarpScheduler, WorkerLoop, shape_of

ROOT = Path(__file__).resolve().parents[2]
REDUCE = ROOT / "corpus" / "ptx_nvrtc" / "reduce.ptx"

# reduce_tree_f32 (corpus/reduce.cu: barriers in a loop, warp mode) at its first launch, which tier 0's
# baseline build runs; then the same with n past the end of the input (a checked read out of bounds)
_PROGRAM = """
import json, sys
import numpy as np
import ptxjit
from ptxjit.jit import shared_code
mod = ptxjit.Module.from_file(sys.argv[1])
k = mod.get_function("reduce_tree_f32")
x = np.random.default_rng(7).random(5000, dtype=np.float32)
out = np.zeros(1, np.float32)
k(((x.size + 511) // 512,), (256,), (x, out, np.int32(x.size)))
fault = ""
try:
    k((1,), (256,), (x[:100], out, np.int32(300)))
except ptxjit.KernelFault as e:
    fault = str(e)
print(json.dumps({"sum": float(out[0]), "want": float(x.astype(np.float64).sum()),
                  "bound": shared_code.bound(), "fault": fault}))
"""


@pytest.mark.parametrize("shape", [WorkerLoop(False, False), WorkerLoop(True, False), WorkerLoop(True, True),
                                   WorkerLoop(True, False, 4096, 1024), WarpScheduler(False),
                                   WarpScheduler(True)])
def test_symbols_name_their_shapes(shape):
    assert shape_of(shape.symbol()) == shape
    text = str(build_shared_module(shape.symbol()))
    assert f'define {"void" if isinstance(shape, WorkerLoop) else "i32"} @"{shape.symbol()}"' in text


def test_not_a_shared_symbol():
    with pytest.raises(ValueError, match="not a shared-code symbol"):
        shape_of("__ptxjit_worker_x")


def test_tier0_links_shared_code_also_from_the_disk_cache(tmp_path):
    env = dict(os.environ, PTXJIT_CACHE_DIR=str(tmp_path), PTXJIT_TIERS="1")
    runs = []
    for _ in range(2):  # cold, then a fresh process whose translations come from the disk cache
        r = subprocess.run([sys.executable, "-c", _PROGRAM, str(REDUCE)], env=env, capture_output=True,
                           text=True, timeout=300, check=False)
        assert r.returncode == 0, r.stderr[-2000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    for run in runs:
        assert run["sum"] == pytest.approx(run["want"], rel=1e-5)
        assert "__ptxjit_warp_cta_c" in run["bound"], run["bound"]
        assert any(s.startswith("__ptxjit_worker_c") for s in run["bound"]), run["bound"]
        # the lowest thread whose read is out of bounds: thread 0 reads in[256] (i + blockDim.x), past x[:100]
        assert "reduce_tree_f32" in run["fault"] and "thread (0, 0, 0)" in run["fault"], run["fault"]
