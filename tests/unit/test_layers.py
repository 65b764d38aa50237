"""The package's import layers: import-linter's contracts in pyproject.toml ([tool.importlinter]) must
be kept, and the couplings the contracts cannot see (import circles over 3 modules, `_private` names
taken from another module) must not grow.  docs/layout.md ("Import structure") explains the numbers;
`python tools/import_graph.py` prints them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The current counts.  Lower them when the code improves (a circle broken, a private name made public), so
# that the improvement is kept; raising them needs a reason written here.
MAX_CIRCLES_OVER_3 = 0
MAX_PRIVATE_IMPORTS = 0


def _import_graph():
    spec = importlib.util.spec_from_file_location("ptxjit_import_graph", ROOT / "tools" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building the classes
    spec.loader.exec_module(module)
    return module


def test_import_contracts_kept():
    if importlib.util.find_spec("importlinter") is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    # the console script's own entry point, run by this interpreter: no dependence on where bin/ is;
    # --no-cache: no cache folder left in the checkout
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    proc = subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"import-linter contracts broken:\n{proc.stdout}\n{proc.stderr}"


def test_couplings_do_not_grow():
    report = _import_graph().analyse()
    circles = "\n".join(f"  {len(c)}: {', '.join(c)}" for c in report.listed_circles)
    assert report.circles_over_listed <= MAX_CIRCLES_OVER_3, f"a new import circle over 3 modules:\n{circles}"
    offenders = ", ".join(f"{name} ×{n}" for name, n in report.private_offenders)
    assert report.private_imports <= MAX_PRIVATE_IMPORTS, (
        f"{report.private_imports} imports of private names across modules (at most {MAX_PRIVATE_IMPORTS}): "
        f"make the name public instead\n{offenders}")


def test_tarjan_finds_circles():
    g = _import_graph()
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    components = sorted(sorted(c) for c in g.strongly_connected(graph))
    assert components == [["a", "b", "c"], ["d"], ["e"]]
