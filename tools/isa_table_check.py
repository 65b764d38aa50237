"""Run the ISA table (src/ptxjit/isa) over every PTX corpus that ptxas accepts and report false
rejections; optionally cross-check generated negative/positive cases against ptxas itself.

    .venv/bin/python tools/isa_table_check.py                 # all corpora, false-rejection counts
    .venv/bin/python tools/isa_table_check.py --tests         # also the PTX the test suite builds
    .venv/bin/python tools/isa_table_check.py --ptxas         # cross-check generated cases with ptxas
    .venv/bin/python tools/isa_table_check.py -v              # list every rejection

Corpora: /work/shared/gpu-golden/isa/ptx and tc/ptx (PTX accepted by ptxas for sm_90), corpus/**,
examples/, tests/data/**.  `--tests` runs the unit tests with kernel launches stubbed out and collects
every PTX text they load (tests/unit snippets, tests/*.py modules).  A rejection is a false rejection:
all these inputs are valid PTX.  Files the parser cannot read are listed separately (not a table
matter).  Exit status 1 if there is any false rejection or ptxas disagreement.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ptxjit.errors import PTXError  # noqa: E402
from ptxjit.frontend import ir  # noqa: E402
from ptxjit.frontend.parser import parse  # noqa: E402
from ptxjit.isa import Context, check, fmt_instr, lookup  # noqa: E402

GOLDEN = Path(os.environ.get("PTXJIT_GOLDEN", "/work/shared/gpu-golden"))
PTXAS = shutil.which("ptxas") or "/usr/local/bin/ptxas"


def corpora() -> dict[str, list[str]]:
    return {
        "gpu-golden/isa": sorted(glob.glob(str(GOLDEN / "isa/ptx/*.ptx"))),
        "gpu-golden/tc": sorted(glob.glob(str(GOLDEN / "tc/ptx/*.ptx"))),
        "corpus": sorted(glob.glob(str(ROOT / "corpus/**/*.ptx"), recursive=True)),
        "examples": sorted(glob.glob(str(ROOT / "examples/*.ptx"))),
        "tests/data": sorted(glob.glob(str(ROOT / "tests/data/**/*.ptx"), recursive=True)),
    }


def table_rejections(module: ir.Module) -> list[str]:
    """Every instruction of `module` the table refuses, as 'file:line:col: text: reason'."""
    out = []
    for fn in module.functions.values():
        if fn.body is None:
            continue
        ctx = Context.for_function(module, fn)
        for ins in fn.instructions:
            sp = lookup(ins.opcode)
            if sp is None:
                out.append(f"{ins.pos}: {fmt_instr(ins)}: unknown opcode")
                continue
            v = check(sp, ins, ctx)
            if not v.ok:
                out.append(f"{ins.pos}: {fmt_instr(ins)}: {v.reason}")
    return out


def check_text(text: str, name: str) -> tuple[int, list[str], str | None]:
    """(instructions, rejections, parse error)."""
    try:
        m = parse(text, name)
    except PTXError as e:
        return 0, [], str(e)
    n = sum(len(f.instructions) for f in m.functions.values())
    return n, table_rejections(m), None


def run_corpora(extra: dict[str, list[tuple[str, str]]], verbose: bool) -> int:
    bad_total = 0
    print(f"{'corpus':18s} {'files':>6s} {'instrs':>8s} {'false rej.':>10s} {'parse err':>9s}")
    sets: dict[str, list[tuple[str, str]]] = {
        k: [(f, Path(f).read_text()) for f in v] for k, v in corpora().items()}
    sets.update(extra)
    for name, items in sets.items():
        n_ins = 0
        rejected: list[str] = []
        parse_errors: list[str] = []
        confirmed = 0
        for fname, text in items:
            n, rej, perr = check_text(text, fname)
            n_ins += n
            if (rej or perr) and os.path.exists(PTXAS) and not ptxas_verdict(text)[0]:
                confirmed += 1  # ptxas rejects it too (a negative test's input): not a false rejection
                continue
            rejected += rej
            if perr:
                parse_errors.append(perr)
        bad_total += len(rejected)
        print(f"{name:18s} {len(items):6d} {n_ins:8d} {len(rejected):10d} {len(parse_errors):9d}" +
              (f"   ({confirmed} invalid modules, ptxas rejects them too)" if confirmed else ""))
        for r in rejected[: None if verbose else 10]:
            print("    REJECTED", r)
        for p in parse_errors[: None if verbose else 3]:
            print("    PARSE", p)
    return bad_total


# ---------------------------------------------------------------- the test suite's PTX

_PLUGIN = r'''
import os, hashlib, pytest
OUT = os.environ["ISA_CAPTURE_DIR"]

def _save(text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    h = hashlib.sha1(text.encode()).hexdigest()[:16]
    with open(os.path.join(OUT, h + ".ptx"), "w") as fh:
        fh.write(text)

@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    import ptxjit.api as api
    orig = api.Module.__init__
    def init(self, ptx, *a, **k):
        if isinstance(ptx, (str, bytes)):
            _save(ptx)
        return orig(self, ptx, *a, **k)
    api.Module.__init__ = init
    # launches are not needed to see the PTX: make them no-ops
    api.Kernel.__call__ = lambda self, *a, **k: None
'''


def collect_test_ptx() -> list[tuple[str, str]]:
    """Run tests/unit and tests/test_*.py with launches stubbed, capturing every PTX text loaded."""
    out = tempfile.mkdtemp(prefix="isa_capture_")
    plug_dir = tempfile.mkdtemp(prefix="isa_plugin_")
    Path(plug_dir, "isa_capture_plugin.py").write_text(_PLUGIN)
    env = dict(os.environ, ISA_CAPTURE_DIR=out, PYTHONPATH=f"{plug_dir}:{ROOT / 'src'}:{ROOT}")
    tests = ["tests/unit", *[t for t in glob.glob("tests/test_*.py", root_dir=ROOT)
                             if not t.endswith(("test_bench_quick.py", "test_numba.py", "test_nvrtc.py"))]]
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-x" if False else "-q", "-p", "isa_capture_plugin",
                    "-p", "no:cacheprovider", *tests], cwd=ROOT, env=env, capture_output=True, text=True,
                   timeout=3000)
    files = sorted(glob.glob(os.path.join(out, "*.ptx")))
    return [(f"<test:{Path(f).stem}>", Path(f).read_text()) for f in files]


# ---------------------------------------------------------------- ptxas cross-check

_CACHE = Path(os.environ.get("PTXJIT_CACHE_DIR", Path.home() / ".cache" / "ptxjit")) / "isa_ptxas"


def ptxas_verdict(ptx: str, arch: str = "sm_90a") -> tuple[bool, str]:
    """ptxas's accept/reject of a module (cached on disk by content)."""
    key = hashlib.sha1(f"{arch}\n{ptx}".encode()).hexdigest()
    cached = _CACHE / f"{key}.json"
    if cached.exists():
        ok, msg = json.loads(cached.read_text())
        return ok, msg
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
        fh.write(ptx)
        path = fh.name
    try:
        r = subprocess.run([PTXAS, f"-arch={arch}", path, "-o", os.devnull], capture_output=True, text=True)
    finally:
        os.unlink(path)
    msg = " | ".join(line.split("error   : ")[-1].split("fatal   : ")[-1] for line in r.stderr.splitlines()
                     if "error" in line or "fatal" in line)
    _CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps([r.returncode == 0, msg]))
    return r.returncode == 0, msg


def crosscheck(n_mutations: int, verbose: bool) -> int:
    """Table vs ptxas on hand-written cases, the register-class matrix and mutated golden kernels."""
    from isa_table_cases import CASES, kernel, matrix_cases, mutations  # tools/isa_table_cases.py

    groups = {
        "hand-written": [(b, b, kernel(b)) for b in CASES],
        "register matrix": [(b, b, kernel(b)) for b in matrix_cases()],
        "golden mutations": mutations(corpora()["gpu-golden/isa"], n_mutations),
        "tensor-core mutations": mutations(corpora()["gpu-golden/tc"], max(n_mutations // 8, 50), seed=2),
    }
    false_rej_total = 0
    for gname, items in groups.items():
        with cf.ThreadPoolExecutor(4) as ex:
            verdicts = list(ex.map(lambda it: ptxas_verdict(it[2]), items))
        counts: Counter[str] = Counter()
        false_rej, false_acc = [], []
        for (desc, line, text), (ok, msg) in zip(items, verdicts, strict=True):
            _, rej, perr = check_text(text, "case.ptx")
            table_ok = not rej and perr is None
            counts[(ok, table_ok)] += 1
            if ok and not table_ok:
                false_rej.append((desc, line, (rej or [perr])[0]))
            elif table_ok and not ok:
                false_acc.append((desc, line, msg))
        agree = counts[(True, True)] + counts[(False, False)]
        print(f"{gname}: {len(items)} cases, ptxas accepts {counts[(True, True)] + counts[(True, False)]}; "
              f"table agrees on {agree}; false rejections {len(false_rej)}; "
              f"false acceptances (ptxas rejects, table accepts) {len(false_acc)}")
        for _desc, line, why in false_rej:
            print(f"    FALSE REJECTION {line}\n        table: {why[:220]}")
        for _desc, line, msg in false_acc[: None if verbose else 15]:
            print(f"    lenient: {line}\n        ptxas: {msg[:160]}")
        false_rej_total += len(false_rej)
    return false_rej_total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", action="store_true", help="also collect the PTX the test suite loads")
    ap.add_argument("--ptxas", action="store_true", help="cross-check generated cases against ptxas")
    ap.add_argument("--mutations", type=int, default=600, help="golden-kernel mutations for --ptxas")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    extra = {}
    if args.tests:
        extra["tests (captured)"] = collect_test_ptx()
    bad = run_corpora(extra, args.verbose)
    print(f"false rejections over all corpora: {bad}")
    if args.ptxas:
        sys.path.insert(0, str(Path(__file__).parent))
        bad += crosscheck(args.mutations, args.verbose)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
