"""Choose the kernel backend once, at import: compiled Cython or the NumPy fallback.

``PYPROG_PURE_PYTHON=1`` forces the fallback. If the compiled extension is missing
(e.g. pyprog was installed on a machine without a C compiler), the fallback is used
and one warning says so.
"""

import os
import warnings
from types import ModuleType

from pyprog._ext import fallback

__all__ = ["backend", "kernels"]


def _pure_python_requested() -> bool:
    return os.environ.get("PYPROG_PURE_PYTHON", "").strip().lower() not in ("", "0", "false", "no")


def _load() -> tuple[ModuleType, str]:
    if _pure_python_requested():
        return fallback, "numpy"
    try:
        from pyprog._ext import _kernels
    except ImportError as exc:
        warnings.warn(
            f"pyprog's compiled kernels are not available ({exc}); using the NumPy fallback, "
            "which is several times slower. Reinstall with a C compiler to build them.",
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
