"""The command line: info and run on PTX and CUDA C++ files, outputs written to .npy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ptxjit import PtxjitWarning
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


# ------------------------------------------------------------------ bad input: one line, exit 2, no traceback
DATA = Path(__file__).parent / "data"
DEMO = str(EXAMPLES / "demo_kernels.ptx")
SAXPY_OK = ["--grid", "4", "--block", "256", "--arg", "1000", "--arg", "2.0", "--arg", "ones:float32:1000",
            "--arg", "ones:float32:1000"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("cli")
    (d / "malformed.ptx").write_text(".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k( {\n")
    (d / "binary.ptx").write_bytes(bytes(range(256)) * 4)
    (d / "unsupported.ptx").write_text(
        # stacksave.u32: valid PTX (7.3+) that ptxjit does not run (a 32-bit local address)
        ".version 7.3\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
        "  .reg .b32 %r<2>;\n  stacksave.u32 %r1;\n  ret;\n}\n")
    (d / "bad.cu").write_text('extern "C" __global__ void k(float* x) { x[0] = undeclared; }\n')
    (d / "garbage.npy").write_text("not an array")
    np.save(d / "objects.npy", np.array([object(), 1], dtype=object), allow_pickle=True)
    (d / "adir.npy").mkdir()
    return {k: str(d / k) for k in ("malformed.ptx", "binary.ptx", "unsupported.ptx", "bad.cu", "garbage.npy",
                                     "objects.npy", "adir.npy")} | {"dir": str(d)}


def _saxpy(*extra: str, args: list[str] | None = None) -> list[str]:
    base = ["run", DEMO, "saxpy", "--grid", "4", "--block", "256"]
    a = args if args is not None else ["--arg", "1000", "--arg", "2.0", "--arg", "ones:float32:1000",
                                       "--arg", "ones:float32:1000"]
    return base + a + list(extra)


def _with_arg(spec: str) -> list[str]:  # one bad --arg in the x slot of saxpy
    return _saxpy(args=["--arg", "1000", "--arg", "2.0", "--arg", spec, "--arg", "ones:float32:1000"])


BAD = {
    # files and commands
    "info missing file": lambda f: ["info", "/nonexistent/k.ptx"],
    "info directory": lambda f: ["info", f["dir"]],
    "info malformed PTX": lambda f: ["info", f["malformed.ptx"]],
    "info binary file": lambda f: ["info", f["binary.ptx"]],
    "info bad CUDA": lambda f: ["info", f["bad.cu"]],
    "info no file": lambda f: ["info"],
    "info unknown option": lambda f: ["info", DEMO, "--frob"],
    "unknown command": lambda f: ["frob"],
    "cache unknown subcommand": lambda f: ["cache", "frob"],
    "cache clear unknown option": lambda f: ["cache", "clear", "--frob"],
    "run missing file": lambda f: ["run", "/nonexistent/k.ptx", "k"],
    "run directory": lambda f: ["run", f["dir"], "k"],
    "run no kernel": lambda f: ["run", DEMO],
    "run unknown kernel": lambda f: ["run", DEMO, "nokernel"],
    "run malformed PTX": lambda f: ["run", f["malformed.ptx"], "k"],
    "run binary file": lambda f: ["run", f["binary.ptx"], "k"],
    "run unsupported instruction": lambda f: ["run", f["unsupported.ptx"], "k", "--arg", "zeros:float32:4"],
    "run bad CUDA": lambda f: ["run", f["bad.cu"], "k", "--arg", "zeros:float32:4"],
    # launch shape
    "grid letters": lambda f: _saxpy("--grid", "abc"),
    "grid zero": lambda f: _saxpy("--grid", "0"),
    "grid negative": lambda f: _saxpy("--grid", "-1"),
    "grid four dims": lambda f: _saxpy("--grid", "1,2,3,4"),
    "grid empty": lambda f: _saxpy("--grid", ""),
    "grid huge": lambda f: _saxpy("--grid", "99999999999999999999"),
    "grid huge 2d": lambda f: _saxpy("--grid", f"{2 ** 40},{2 ** 40}"),
    "grid.y over limit": lambda f: _saxpy("--grid", "1,70000"),
    "block too many threads": lambda f: _saxpy("--block", "2048"),
    "block zero": lambda f: _saxpy("--block", "0"),
    "block.z over limit": lambda f: _saxpy("--block", "1,1,65"),
    "block letters": lambda f: _saxpy("--block", "x"),
    "shared-mem negative": lambda f: _saxpy("--shared-mem", "-1"),
    "shared-mem letters": lambda f: _saxpy("--shared-mem", "abc"),
    "shared-mem over limit": lambda f: _saxpy("--shared-mem", "999999999"),
    "missing dynamic shared": lambda f: ["run", str(DATA / "launch_checks.ptx"), "dyn_sum", "--grid", "1",
                                         "--block", "32", "--arg", "ones:float32:32", "--arg", "zeros:float32:1",
                                         "--arg", "32"],
    "workers zero": lambda f: _saxpy("--workers", "0"),
    "workers negative": lambda f: _saxpy("--workers", "-3"),
    "workers letters": lambda f: _saxpy("--workers", "abc"),
    "repeat zero": lambda f: _saxpy("--repeat", "0"),
    "repeat letters": lambda f: _saxpy("--repeat", "abc"),
    # --arg specs
    "arg unknown kind": lambda f: _with_arg("bogus:x"),
    "arg missing shape": lambda f: _with_arg("zeros:float32"),
    "arg unknown dtype": lambda f: _with_arg("zeros:notatype:4"),
    "arg shape letters": lambda f: _with_arg("zeros:float32:abc"),
    "arg negative shape": lambda f: _with_arg("zeros:float32:-4"),
    "arg float shape": lambda f: _with_arg("zeros:float32:1e10"),
    "arg huge shape": lambda f: _with_arg("ones:float32:100000000000x100000000"),
    "arange letters": lambda f: _with_arg("arange:float32:abc"),
    "arange float": lambda f: _with_arg("arange:float32:1e3"),
    "full missing value": lambda f: _with_arg("full:float32:4"),
    "full bad int": lambda f: _with_arg("full:int32:4:abc"),
    "full int overflow": lambda f: _with_arg("full:uint8:4:300"),
    "full float for int": lambda f: _with_arg("full:int32:4:1.5"),
    "rand bad seed": lambda f: _with_arg("rand:float32:4:seed"),
    "rand negative seed": lambda f: _with_arg("rand:float32:4:-1"),
    "arg missing npy": lambda f: _with_arg("/nonexistent/a.npy"),
    "arg garbage npy": lambda f: _with_arg(f["garbage.npy"]),
    "arg pickled npy": lambda f: _with_arg(f["objects.npy"]),
    "arg directory npy": lambda f: _with_arg(f["adir.npy"]),
    "arg object dtype": lambda f: _with_arg("zeros:object:4"),
    "arg empty": lambda f: _with_arg(""),
    "arg int for pointer": lambda f: _with_arg("12345"),
    "arg scalar out of range": lambda f: _saxpy(args=["--arg", "99999999999999999999", "--arg", "2.0", "--arg",
                                                      "ones:float32:1000", "--arg", "ones:float32:1000"]),
    "arg nan for int": lambda f: _saxpy(args=["--arg", "nan", "--arg", "2.0", "--arg", "ones:float32:1000",
                                              "--arg", "ones:float32:1000"]),
    "too few args": lambda f: _saxpy(args=["--arg", "1000"]),
    "too many args": lambda f: _saxpy("--arg", "1"),
    # --out
    "out no path": lambda f: _saxpy("--out", "3"),
    "out bad index": lambda f: _saxpy("--out", "x:y.npy"),
    "out index out of range": lambda f: _saxpy("--out", "9:y.npy"),
    "out of a scalar": lambda f: _saxpy("--out", "0:y.npy"),
    "out missing directory": lambda f: _saxpy("--out", "3:/nonexistent/dir/y.npy"),
    "out is a directory": lambda f: _saxpy("--out", f"3:{f['adir.npy']}"),
    "out unwritable": lambda f: _saxpy("--out", "3:/proc/ptxjit-cli-test.npy"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2(files, case):
    r = CliRunner().invoke(main, BAD[case](files))
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, (r.exit_code, r.output)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error")]
    assert len(errors) == 1, r.output


def test_enough_bad_inputs_are_covered():
    assert len(BAD) >= 50


def test_bad_workers_environment(monkeypatch):
    monkeypatch.setenv("PTXJIT_WORKERS", "abc")
    r = CliRunner().invoke(main, _saxpy())
    assert r.exit_code == 2 and "PTXJIT_WORKERS must be a positive integer" in r.output
    assert "Traceback" not in r.output


def test_kernel_trap_exits_1_without_traceback():
    r = CliRunner().invoke(main, ["run", str(DATA / "errors.ptx"), "trap_at", "--grid", "2", "--block", "32",
                                  "--arg", "zeros:int32:64", "--arg", "1", "--arg", "3"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "Error: kernel 'trap_at' executed trap in block (1, 0, 0) thread (3, 0, 0)" in r.output


def test_internal_error_is_one_line(monkeypatch):
    import ptxjit.api

    def boom(*a, **k):
        raise AssertionError("something inside broke")

    monkeypatch.setattr(ptxjit.api.Kernel, "__call__", boom)
    r = CliRunner().invoke(main, _saxpy())
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "Error: internal error in ptxjit: something inside broke (set PTXJIT_DEBUG=1" in r.output


def test_element_width_warning_is_not_an_error():
    from ptxjit.runtime import args

    args._warned.clear()
    with pytest.warns(PtxjitWarning, match="float64 array"):
        r = CliRunner().invoke(main, _with_arg("ones:float64:1000"))
    assert r.exit_code == 0 and "ran saxpy" in r.output


def test_real_process_prints_no_traceback(files):
    import subprocess
    import sys

    for args in (["run", DEMO, "nokernel"], _with_arg("zeros:float32:-4"), ["info", files["binary.ptx"]]):
        p = subprocess.run([sys.executable, "-m", "ptxjit.cli", *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout, p.stderr
        assert p.stderr.strip().splitlines()[-1].startswith("Error")


def test_run_fmad_switch(tmp_path, monkeypatch):
    """--no-fmad rounds the product separately (as ptxas --fmad=false); the default fuses like the GPU."""
    monkeypatch.setenv("PTXJIT_FMAD", "1")  # restored after the test: the CLI sets it for --no-fmad
    probes = Path(__file__).parent / "data" / "fmad" / "probes.ptx"
    inp = np.zeros(64, np.uint8)
    inp[:16] = np.array([1.0000001, 1.0000001, -1.0000002, 0.5], np.float32).view(np.uint8)
    np.save(tmp_path / "in.npy", inp)
    results = {}
    for flag in ("--fmad", "--no-fmad"):
        out = tmp_path / f"out{flag}.npy"
        r = CliRunner().invoke(main, ["run", str(probes), "single_use", "--grid", "1", "--block", "1",
                                      "--arg", str(tmp_path / "in.npy"), "--arg", "zeros:uint8:16", "--arg", "1",
                                      "--out", f"1:{out}", flag])
        assert r.exit_code == 0, r.output
        results[flag] = np.load(out)[:4].view(np.float32)[0]
    a, b, c = (np.float64(np.float32(v)) for v in (1.0000001, 1.0000001, -1.0000002))
    assert results["--fmad"] == np.float32(a * b + c)  # exact in f64 here, then rounded once
    assert results["--no-fmad"] == np.float32(np.float32(a * b) + np.float32(c))
    assert results["--fmad"] != results["--no-fmad"]


_CONST_PTX = """.version 8.0
.target sm_80
.address_size 64
.const .align 4 .b8 coef[16];
.visible .entry scale4(.param .u64 x, .param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  mov.u64 %rd4, coef;
  add.s64 %rd5, %rd4, %rd3;
  ld.const.f32 %f1, [%rd5];
  add.s64 %rd6, %rd1, %rd3;
  ld.global.f32 %f2, [%rd6];
  mul.rn.f32 %f3, %f1, %f2;
  add.s64 %rd7, %rd2, %rd3;
  st.global.f32 [%rd7], %f3;
  ret;
}
"""


def _const_run(tmp_path, *extra: str):
    src = tmp_path / "scale4.ptx"
    src.write_text(_CONST_PTX)
    return CliRunner().invoke(main, ["run", str(src), "scale4", "--grid", "1", "--block", "4", "--arg",
                                     "arange:float32:4", "--arg", "zeros:float32:4", *extra])


def test_run_sets_constant_memory_from_npy(tmp_path):
    """--const NAME=PATH.npy fills a __constant__ variable (nvcc's .const .b8 array) before the launch."""
    coef = np.array([0.5, -2.0, 3.25, 1e10], dtype=np.float32)
    np.save(tmp_path / "coef.npy", coef)
    out = tmp_path / "y.npy"
    r = _const_run(tmp_path, "--const", f"coef={tmp_path / 'coef.npy'}", "--out", f"1:{out}")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(out), coef * np.arange(4, dtype=np.float32))
    # without --const the variable is zero (an uninitialized __constant__)
    r = _const_run(tmp_path, "--out", f"1:{out}")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(out), np.zeros(4, np.float32))


def test_run_const_errors_name_the_problem(tmp_path):
    np.save(tmp_path / "big.npy", np.zeros(5, np.float32))
    np.save(tmp_path / "ok.npy", np.zeros(4, np.float32))
    r = _const_run(tmp_path, "--const", f"nope={tmp_path / 'ok.npy'}")
    assert r.exit_code == 2 and "no .global/.const variable named 'nope'" in r.output and "coef" in r.output
    r = _const_run(tmp_path, "--const", f"coef={tmp_path / 'big.npy'}")
    assert r.exit_code == 2 and "coef: the array has 20 bytes" in r.output and "has 16" in r.output, r.output
    r = _const_run(tmp_path, "--const", f"coef={tmp_path / 'missing.npy'}")
    assert r.exit_code == 2 and "cannot read a NumPy array" in r.output, r.output
    r = _const_run(tmp_path, "--const", "coef")
    assert r.exit_code == 2 and "expected NAME=PATH.npy" in r.output, r.output


def test_run_help_lists_the_argument_forms():
    """`--arg` says "see below": the forms are in `ptxjit run --help`, each one parse_arg accepts."""
    r = CliRunner().invoke(main, ["run", "--help"])
    assert r.exit_code == 0
    forms = r.output.split("Argument forms", 1)[1]
    for spec in ("zeros:float32:8", "ones:int32:2x2", "rand:float32:4:1", "arange:int64:5", "full:float32:3:2.5"):
        assert spec.split(":")[0] + ":DTYPE" in forms
        assert parse_arg(spec) is not None


def test_exec_entry_point_loads_no_command_line_libraries():
    """The installed `ptxjit` script's module starts `ptxjit exec` without click's other commands, rich or
    NumPy: what a program under exec pays before it starts."""
    code = ("import sys, ptxjit.cli.entry; "
            "print(sorted(m for m in ('rich', 'numpy', 'ptxjit.cli.app', 'ptxjit.api') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr
