"""The package's shape: small modules, and no private name used outside its own module.

The layers themselves (which folder may import which) are checked by import-linter's
contract in pyproject.toml (`lint-imports`, run in CI).
"""

import ast
from pathlib import Path

import pytest

import pyprog

ROOT = Path(pyprog.__file__).parent
SOURCES = sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)
MAX_LINES = 600
# Private by name but shared by design: the compiled kernels' package (its name is fixed by
# the design card, as scikit-learn's private Cython modules are) and the version module.
SHARED_PRIVATE = ("pyprog._ext", "pyprog._version")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_over_600_lines(path):
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
                    if owner not in (package, here) and not inside:
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
