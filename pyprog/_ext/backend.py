"""Choose the kernel backend once, at import: compiled Cython or the NumPy fallback.

``PYPROG_PURE_PYTHON=1`` forces the fallback. If the compiled extension is missing
(e.g. pyprog was installed on a machine without a C compiler), the fallback is used
and one warning says so.
"""

import os
import sys
import warnings
from pathlib import Path
from types import ModuleType

from pyprog._ext import fallback

__all__ = ["backend", "kernels", "missing_kernels_message", "shadowed_install", "source_tree"]

_EXTENSION_SUFFIXES = (".so", ".pyd")


def _pure_python_requested() -> bool:
    return os.environ.get("PYPROG_PURE_PYTHON", "").strip().lower() not in ("", "0", "false", "no")


def _has_kernels(ext_dir: Path) -> bool:
    try:
        return any(
            f.name.startswith("_kernels.") and f.name.endswith(_EXTENSION_SUFFIXES)
            for f in ext_dir.iterdir()
        )
    except OSError:
        return False


def source_tree(package_dir: Path) -> Path | None:
    """The source checkout ``package_dir`` sits in (it has ``setup.py`` beside it), or None."""
    root = package_dir.parent
    return root if (root / "setup.py").is_file() and (root / "pyproject.toml").is_file() else None


def shadowed_install(package_dir: Path, path: list[str] | None = None) -> Path | None:
    """Another pyprog on ``path`` (default ``sys.path``) that has compiled kernels, or None.

    When pyprog is imported from a source checkout (e.g. Python was started inside it,
    so ``''`` or ``.`` comes first on ``sys.path``), an installed copy further down the
    path is hidden: this finds it, to say so.
    """
    here = package_dir.resolve()
    for entry in sys.path if path is None else path:
        candidate = Path(entry or os.getcwd()) / "pyprog"
        try:
            if candidate.resolve() == here:
                continue
        except OSError:
            continue
        if _has_kernels(candidate / "_ext"):
            return candidate
    return None


def missing_kernels_message(
    error: object, *, source: Path | None = None, installed: Path | None = None
) -> str:
    """The warning shown when the compiled kernels cannot be imported.

    Parameters
    ----------
    error : object
        The import error (shown in parentheses).
    source : Path or None
        The source checkout pyprog was imported from, if it was.
    installed : Path or None
        An installed pyprog with compiled kernels that ``source`` shadows, if any.

    Returns
    -------
    str
        What happened and what to do about it.
    """
    slower = "pyprog uses its NumPy fallback, which is several times slower"
    if source is not None and installed is not None:
        return (
            f"pyprog was imported from its source folder {source} (Python puts the current "
            "folder first on sys.path), which has no compiled kernels; it shadows the installed "
            f"pyprog in {installed.parent}, which has them. Run Python from another folder, or "
            "install in place with `pip install -e .` so the source folder gets the kernels. "
            f"Until then {slower}."
        )
    if source is not None:
        return (
            f"pyprog was imported from its source folder {source}, where the compiled kernels are "
            f"not built ({error}). Build them there with `pip install -e .`, or run Python from "
            f"another folder after `pip install .`. Until then {slower}."
        )
    return (
        f"pyprog's compiled kernels are not available ({error}); {slower}. "
        "Reinstall with a C compiler to build them."
    )


def _load() -> tuple[ModuleType, str]:
    if _pure_python_requested():
        return fallback, "numpy"
    try:
        from pyprog._ext import _kernels
    except ImportError as exc:
        package_dir = Path(__file__).resolve().parents[1]
        source = source_tree(package_dir)
        installed = shadowed_install(package_dir) if source is not None else None
        warnings.warn(
            missing_kernels_message(exc, source=source, installed=installed),
            RuntimeWarning,
            stacklevel=3,
        )
        return fallback, "numpy"
    return _kernels, "cython"


kernels, _BACKEND = _load()


def backend() -> str:
    """The active kernel backend: ``"cython"`` or ``"numpy"``.

    Examples
    --------
    >>> import pyprog
    >>> pyprog.backend() in ("cython", "numpy")
    True
    """
    return _BACKEND
