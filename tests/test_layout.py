"""The package's shape: modules of one idea (about 1,000 lines at most; the size of functions
is ruff's C901 / PLR09xx rules), no private name used outside its own folder, no import cycle,
and each folder saying what it may import.

The layers themselves (which folder may import which) are checked by import-linter's
contract in pyproject.toml (`lint-imports`, run in CI).
"""

import ast
from pathlib import Path

import pytest

import pyprog

ROOT = Path(pyprog.__file__).parent
SOURCES = sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)
#: A module's budget: one idea, split by idea when it grows past this (not by line count).
MAX_LINES = 1000
# Private by name but shared by design: the compiled kernels' package (its name is fixed by
# the design card, as scikit-learn's private Cython modules are) and the version module.
SHARED_PRIVATE = ("pyprog._ext", "pyprog._version")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_over_its_budget(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it by idea"


def _private_imports(source: str, here: str, is_package: bool = False) -> list[str]:
    """``from pyprog.x import _name`` (or of a private module ``pyprog.x._y``) in the source
    of module ``here``, where ``here`` is not in the package that owns the private name."""
    package = here if is_package else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("pyprog"):
            continue
        for alias in node.names:
            target = f"{node.module}.{alias.name}"
            parts = target.split(".")
            for i, part in enumerate(parts[1:], start=1):
                private = ".".join(parts[: i + 1])
                if private in SHARED_PRIVATE:
                    continue
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])  # the package or module that hides the name
                    inside = here == private or here.startswith(private + ".")
                    folder = ".".join(parts[:2])  # pyprog.<folder>: its private helpers
                    if (
                        owner not in (package, here)
                        and not inside
                        and not (here == folder or here.startswith(folder + "."))
                    ):
                        found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                    break
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_crosses_a_module(path):
    source = path.read_text(encoding="utf-8")
    found = _private_imports(source, _module_name(path), path.name == "__init__.py")
    assert found == [], (
        f"{path.relative_to(ROOT)} imports another module's private names: make them public "
        f"in their own module (no leading underscore): {found}"
    )


def test_the_checker_finds_a_private_import():
    here = "pyprog.runner.probe"
    bad = "from pyprog.forecast.estimators import _solve\n"
    assert _private_imports(bad, here) == ["line 1: from pyprog.forecast.estimators import _solve"]
    assert _private_imports("from pyprog.learn import _hidden\n", here) != []
    # a package's private modules are its own business (pyprog._ext.backend loads _kernels)
    assert _private_imports("from pyprog.runner import _probe\n", here) == []
    assert _private_imports("from pyprog._version import __version__\n", here) == []
    # helpers private to a folder may cross its modules (issue 49), not the folder
    assert _private_imports("from pyprog.runner.loop import _step\n", here) == []
    assert _private_imports("from pyprog.learn.buffer import _ring\n", here) != []


# --- no import cycles, and every folder says what it may import (issue 49) ---------------

MODULES = {_module_name(p): p for p in SOURCES}


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks (imports for type checkers only)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, child.end_lineno + 1))
    return lines


def _imports(name: str) -> set[str]:
    """The pyprog modules that module ``name`` imports, deferred imports included."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # ``from pkg import sub`` imports the submodule pkg.sub when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]  # fmt: skip
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # pyprog.x.y.name -> pyprog.x.y
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    edges = [(index[a], index[b]) for a in names for b in graph[a] if b in index]
    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    adjacency = csr_matrix(([1] * len(edges), (rows, cols)), shape=(len(names),) * 2)
    n, labels = connected_components(adjacency, directed=True, connection="strong")
    groups = [[names[i] for i in range(len(names)) if labels[i] == c] for c in range(n)]
    return [g for g in groups if len(g) > 1]


def test_no_import_cycle_anywhere():
    graph = {name: _imports(name) for name in MODULES}
    assert _cycles(graph) == [], "modules that import each other (directly or around a loop)"


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_a_deferred_import_counts():
    # the arrays <-> logs cycle of issue 49 hid behind an import inside a method
    here = "pyprog.logs.episodes"
    assert "pyprog.logs.times" in _imports(here)
    assert "pyprog.logs.episodes_csv" not in _imports(here)


FOLDERS = sorted(p.parent for p in ROOT.glob("*/__init__.py"))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_each_folder_says_what_it_holds_and_may_import(folder):
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"pyprog/{folder.name}/__init__.py has no docstring: say what the folder holds"
    assert "May import" in doc, f"pyprog/{folder.name}'s docstring does not say what it may import"
