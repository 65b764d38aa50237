"""The command line: info and run on PTX and CUDA C++ files, outputs written to .npy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from ptxjit.cli import main, parse_arg

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_info_lists_kernels_params_and_mix():
    r = CliRunner().invoke(main, ["info", str(EXAMPLES / "demo_kernels.ptx")])
    assert r.exit_code == 0, r.output
    for k in ("saxpy", "sum_reduce", "matmul", "hello"):
        assert f"kernel {k}" in r.output
    assert "static shared: 2048 B" in r.output and "all instructions supported" in r.output


def test_run_writes_outputs(tmp_path):
    out = tmp_path / "y.npy"
    r = CliRunner().invoke(main, ["run", str(EXAMPLES / "demo_kernels.ptx"), "saxpy", "--grid", "4", "--block",
                                  "256", "--arg", "1000", "--arg", "2.0", "--arg", "arange:float32:1000",
                                  "--arg", "ones:float32:1000", "--out", f"3:{out}"])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(out), 2 * np.arange(1000, dtype=np.float32) + 1)


def test_run_cuda_source(tmp_path):
    out = tmp_path / "y.npy"
    r = CliRunner().invoke(main, ["run", str(EXAMPLES / "demo_kernels.cu"), "saxpy", "--grid", "1", "--block",
                                  "64", "--arg", "50", "--arg", "3", "--arg", "ones:float32:50",
                                  "--arg", "arange:float32:50", "--out", f"3:{out}"])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(out), 3 + np.arange(50, dtype=np.float32))


def test_arg_specs(tmp_path):
    assert parse_arg("zeros:int16:4x3").shape == (4, 3)
    assert parse_arg("full:float64:5:2.5").tolist() == [2.5] * 5
    assert parse_arg("0x10") == 16 and parse_arg("-3") == -3 and parse_arg("1e3") == 1000.0
    np.save(tmp_path / "a.npy", np.arange(3))
    assert parse_arg(str(tmp_path / "a.npy")).tolist() == [0, 1, 2]
    r = CliRunner().invoke(main, ["run", str(EXAMPLES / "demo_kernels.ptx"), "saxpy", "--arg", "bogus:x"])
    assert r.exit_code != 0 and "bogus" in r.output
