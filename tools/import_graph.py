"""The import structure of the ptxjit package, measured from its source with `ast` alone.

    .venv/bin/python tools/import_graph.py           # a readable report
    .venv/bin/python tools/import_graph.py --json    # the same numbers as JSON

What it reports:
  * the strongly connected components (import circles) of the graph of ptxjit modules importing ptxjit
    modules, with their sizes; the members of every circle over 3 modules are listed;
  * how many ptxjit imports run at module level (including class bodies and `if` blocks, which run at
    import time), how many inside functions (function-local imports, run at call time, mostly there to
    break a circle or to defer a heavy import) and how many only under `if TYPE_CHECKING:`;
  * imports that take a `_private` name from another ptxjit module
    (`from ptxjit.lower.module import _for_range`), the coupling a layer contract cannot see, with the
    most-taken names;
  * the largest functions (lines, `def` line to last line) and the functions with the most parameters
    (every declared parameter, *args and **kwargs included, a method's `self`/`cls` not).

The graph holds every ptxjit import, function-local and TYPE_CHECKING ones included, as import-linter's
graph does.  `from ptxjit.x import y` where `ptxjit.x.y` is a module is an import of `ptxjit.x.y`;
otherwise of `ptxjit.x`.  Imports of other packages are not in the graph.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "src" / "ptxjit"
PACKAGE = "ptxjit"

# circles of this many modules or fewer are reported by size only: a module and its helper importing
# each other is a local matter, a larger circle is a layering problem
LISTED_CIRCLE_OVER = 3
TOP = 5


@dataclass(frozen=True)
class ImportSite:
    importer: str
    target: str  # the ptxjit module imported
    line: int
    kind: str  # "module", "function" or "type_checking"
    private_name: str | None = None  # the `_name` taken from `target`, if any


@dataclass(frozen=True)
class FunctionSize:
    name: str  # module:Qual.name
    line: int
    lines: int
    params: int


@dataclass
class Report:
    modules: int
    edges: int
    components: list[list[str]]  # the strongly connected components over one module, largest first
    circle_sizes: list[int]
    listed_circles: list[list[str]]  # those over LISTED_CIRCLE_OVER modules
    imports_module_level: int
    imports_function_local: int
    imports_type_checking: int
    private_imports: int
    private_offenders: list[tuple[str, int]]  # ("module._name", count)
    largest_functions: list[FunctionSize] = field(default_factory=list)
    most_parameters: list[FunctionSize] = field(default_factory=list)

    @property
    def circles_over_listed(self) -> int:
        return len(self.listed_circles)


def module_name(path: Path, package_dir: Path = PACKAGE_DIR) -> str:
    rel = path.relative_to(package_dir.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _in_package(path: Path, package_dir: Path) -> bool:
    """Whether every directory from the package down to `path` is a regular package: a folder without
    __init__.py (cudart/site, copied onto a program's sys.path) is not part of ptxjit's import graph,
    as import-linter's graph leaves it out too."""
    folder = path.parent
    while True:
        if not (folder / "__init__.py").is_file():
            return False
        if folder == package_dir:
            return True
        folder = folder.parent


def discover(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))
            if "__pycache__" not in p.parts and _in_package(p, package_dir)}


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _Scanner(ast.NodeVisitor):
    """One module's ptxjit imports and functions."""

    def __init__(self, module: str, is_package: bool, modules: set[str]) -> None:
        self.module = module
        # the package relative imports resolve against
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules = modules
        self.sites: list[ImportSite] = []
        self.functions: list[FunctionSize] = []
        self._scope: list[str] = []  # qualified-name parts
        self._function_depth = 0
        self._type_checking_depth = 0
        self._class_depth: list[bool] = []  # per scope part: is it a class

    def _kind(self) -> str:
        if self._function_depth:
            return "function"
        return "type_checking" if self._type_checking_depth else "module"

    def _resolve(self, name: str) -> str | None:
        """The ptxjit module `name` refers to, or its longest prefix that is a module."""
        while name:
            if name in self.modules:
                return name
            name = name.rpartition(".")[0]
        return None

    def _add(self, target: str | None, line: int, private_name: str | None = None) -> None:
        if target is None or target == self.module:
            return
        self.sites.append(ImportSite(self.module, target, line, self._kind(), private_name))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                self._add(self._resolve(alias.name), node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self.package.split(".")
            if node.level > 1:
                base_parts = base_parts[:-(node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
            return
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in self.modules:
                self._add(sub, node.lineno)
            else:
                target = self._resolve(base)
                private = alias.name if _private(alias.name) else None
                self._add(target, node.lineno, private)

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_checking_depth += 1
            for child in node.body:
                self.visit(child)
            self._type_checking_depth -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scope.append(node.name)
        self._class_depth.append(True)
        self.generic_visit(node)
        self._scope.pop()
        self._class_depth.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        a = node.args
        params = [*a.posonlyargs, *a.args]
        count = len(params) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
        in_class = bool(self._class_depth) and self._class_depth[-1]
        is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
        if in_class and not is_static and params and params[0].arg in ("self", "cls"):
            count -= 1
        qual = ".".join([*self._scope, node.name])
        end = node.end_lineno or node.lineno
        self.functions.append(FunctionSize(f"{self.module}:{qual}", node.lineno, end - node.lineno + 1, count))
        self._scope.append(node.name)
        self._class_depth.append(False)
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1
        self._scope.pop()
        self._class_depth.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit to meet); components in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                succ = todo.pop()
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, sorted(graph.get(succ, ()))))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def analyse(package_dir: Path = PACKAGE_DIR) -> Report:
    paths = discover(package_dir)
    modules = set(paths)
    sites: list[ImportSite] = []
    functions: list[FunctionSize] = []
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        scanner = _Scanner(name, path.name == "__init__.py", modules)
        scanner.visit(tree)
        sites += scanner.sites
        functions += scanner.functions

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for s in sites:
        graph[s.importer].add(s.target)
    circles = sorted((c for c in strongly_connected(graph) if len(c) > 1), key=lambda c: (-len(c), c))

    kinds = Counter(s.kind for s in sites)
    private = [s for s in sites if s.private_name]
    offenders = Counter(f"{s.target}.{s.private_name}" for s in private)
    return Report(
        modules=len(modules),
        edges=sum(len(t) for t in graph.values()),
        components=circles,
        circle_sizes=[len(c) for c in circles],
        listed_circles=[c for c in circles if len(c) > LISTED_CIRCLE_OVER],
        imports_module_level=kinds["module"],
        imports_function_local=kinds["function"],
        imports_type_checking=kinds["type_checking"],
        private_imports=len(private),
        private_offenders=sorted(offenders.items(), key=lambda kv: (-kv[1], kv[0])),
        largest_functions=sorted(functions, key=lambda f: (-f.lines, f.name))[:TOP],
        most_parameters=sorted(functions, key=lambda f: (-f.params, f.name))[:TOP],
    )


def _text(r: Report) -> str:
    out = [f"{r.modules} modules, {r.edges} import edges between them",
           f"import circles (strongly connected components over 1 module): {len(r.components)}, "
           f"sizes {r.circle_sizes}"]
    for c in r.listed_circles:
        out.append(f"  circle of {len(c)}: {', '.join(c)}")
    out.append(f"ptxjit imports: {r.imports_module_level} at module level, {r.imports_function_local} "
               f"function-local, {r.imports_type_checking} under TYPE_CHECKING")
    out.append(f"private names imported from another ptxjit module: {r.private_imports}")
    for name, n in r.private_offenders[:10]:
        out.append(f"  {name} ×{n}")
    out.append("largest functions (lines):")
    out += [f"  {f.lines:5d}  {f.name}" for f in r.largest_functions]
    out.append("most parameters:")
    out += [f"  {f.params:5d}  {f.name}" for f in r.most_parameters]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = ap.parse_args(argv)
    report = analyse()
    if args.json:
        print(json.dumps(asdict(report), indent=2, ensure_ascii=False))
    else:
        print(_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
