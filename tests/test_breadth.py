"""The breadth check: every instruction form of PTX ISA 8.x valid for sm_90 either runs or
is refused at load with its name and file:line (tools/breadth; corpus tests/data/breadth).

The corpus is independent of ptxjit: each kernel was accepted by `ptxas -arch=sm_90a` when generated
(tools/breadth/gen.py), and test_corpus_is_valid_ptx re-checks a sample with ptxas where it is
installed.  Which forms are refused is not fixed here (textures, clusters and wgmma move from refused
to runs as they land); the check is that nothing falls into the third class: refused as invalid,
refused elsewhere or only at launch, an internal exception, a failed launch or a crash."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "breadth"))

import check as breadth  # noqa: E402
import gen  # noqa: E402
from forms import FORMS  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "breadth"


def test_corpus_matches_forms():
    """tests/data/breadth is what gen.py writes from forms.py (regenerate after editing forms.py)."""
    want = {gen.slug(f[0]) + ".ptx": gen.kernel(*f) for f in FORMS}
    have = {p.name: p.read_text() for p in CORPUS.glob("*.ptx")}
    assert sorted(have) == sorted(want)
    stale = [n for n in want if have[n] != want[n]]
    assert not stale, f"regenerate with tools/breadth/gen.py: {stale[:5]}"
    # every PTX ISA 8.x instruction chapter is represented, by opcode
    ops = {breadth.opcode_of(breadth.form_info(CORPUS / n)[3]) for n in want}
    for op in ("add", "fma", "cvt", "ld", "st", "atom", "red", "bar", "barrier", "mbarrier", "cp", "mma", "wmma",
               "wgmma", "ldmatrix", "tex", "suld", "vadd", "vote", "shfl", "tensormap", "multimem", "alloca",
               "createpolicy", "mapa", "setmaxnreg", "griddepcontrol", "elect", "redux", "fence", "trap"):
        assert op in ops, op


def test_corpus_is_valid_ptx():
    """A sample of the corpus (every 8th kernel) still assembles with ptxas for sm_90a."""
    try:
        ptxas = gen.ptxas_path()
    except SystemExit:
        pytest.skip("ptxas not installed")
    if not shutil.which(ptxas) and not Path(ptxas).exists():
        pytest.skip("ptxas not installed")
    for p in sorted(CORPUS.glob("*.ptx"))[::8]:
        r = subprocess.run([ptxas, "-arch=sm_90a", "-o", "/dev/null", str(p)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"{p.name}: {r.stderr}"


@pytest.fixture(scope="module")
def verdicts() -> dict[str, breadth.Verdict]:
    """Every form classified once (in child processes, tools/breadth/check.py), by corpus file name."""
    found = breadth.check_all()
    assert len(found) == len(FORMS)
    return {v.file: v for v in found}


@pytest.mark.parametrize("form", FORMS, ids=[f[0] for f in FORMS])
def test_form_runs_or_is_refused_at_load_by_name_and_place(verdicts, form):
    v = verdicts[gen.slug(form[0]) + ".ptx"]
    assert v.cls != "other", f"neither runs nor is refused at load by name and place: {v.file}:{v.line}: {v.detail}"
    if v.cls == "refused":  # the message names the instruction; the place was checked by classify()
        assert f"'{v.opcode}" in v.detail, v


def test_most_forms_run(verdicts):
    runs = sum(v.cls == "runs" for v in verdicts.values())
    # a floor, not the current count: 494 of 495 run (only alloca.u32, a 32-bit local address, is refused)
    assert runs >= 490, f"only {runs} of {len(verdicts)} forms run"
    md = breadth.markdown(list(verdicts.values()))
    assert f"**{runs} run**" in md


def test_refusal_must_name_the_form_line(tmp_path):
    """The classifier itself: a kernel whose form line is fine but whose set-up line is refused is
    'other' unless the form line is among the refused places."""
    # a form ptxjit refuses (alloca.u32: a 32-bit local address)
    src = (CORPUS / "alloca.u32.align.ptx").read_text()
    form = "  alloca.u32 %r4, %r1, 16;"
    bad = src.replace(form + "  // form", form + "\n  add.u32 %r4, %r1, %r2;  // form")
    p = tmp_path / "moved.ptx"
    p.write_text(bad)
    v = breadth.classify(p)
    assert v.cls == "other" and "not at moved.ptx" in v.detail, v
