"""The benchmark harness's soak mode (bench/ptxbench/soak.py) in miniature: a few hundred launches of two
kernels from two threads (synchronous and stream launches, tiers on, the second input size now and
then), every result checked against NumPy by the soak itself; a wrong reference is reported with the
kernel's name."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from ptxbench import soak  # noqa: E402

KERNELS = r"^(bench:empty|corpus:elementwise\.vadd)$"


def test_soak_smoke(tmp_path):
    rep = soak.run(launches=300, kernels=KERNELS, threads=2, out=tmp_path, log=lambda _m: None)
    assert rep["errors"] == []
    assert [k["name"] for k in rep["kernels"]] == ["bench:empty", "corpus:elementwise.vadd"]
    for k in rep["kernels"]:
        assert k["launches"] == 300 and not k["stopped"]
        assert k["checks"] >= 2 * len(soak.all_cases()[0].sizes)  # at the end: both sizes, both threads
        assert sum(k["tiers"]["launches"]) == 300 + k["checks"]  # the checks' launches are launches too
    mem = rep["memory"]
    assert mem["rss_kib"]["max"] >= mem["rss_kib"]["first"] > 0 and mem["fds"]["first"] > 0
    assert mem["threads"]["max"] >= 3  # the launching threads and the sampler were seen
    md = (tmp_path / "soak.md").read_text()
    assert "corpus:elementwise.vadd" in md and "## Errors" in md and (tmp_path / "soak.json").exists()


def test_soak_reports_a_wrong_result():
    case = next(c for c in soak.all_cases() if c.name == "corpus:elementwise.vadd")

    def wrong(d):
        c = (d["a"] + d["b"]).copy()
        c[7] = np.float32(123.0)
        return {"c": c}

    bad = dataclasses.replace(case, reference=wrong)
    rep = soak.run(launches=20, threads=1, out=None, log=lambda _m: None, cases=[bad])
    assert rep["errors"] and all(e.startswith("corpus:elementwise.vadd: ") for e in rep["errors"])
    assert "c: 1 elements differ" in rep["errors"][0]
