"""Public names loaded on first use (PEP 562), so a package costs only what is used of it.

::

    # pyprog/logs/__init__.py
    from pyprog.utils.lazy import lazy_names

    _SOURCES = {"pyprog.logs.episodes_csv": ("read_logs",), ...}
    __getattr__, __dir__ = lazy_names(__name__, _SOURCES)

A name is imported from its module the first time it is asked for, then kept in the
package's namespace (so later lookups are ordinary attribute reads).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, sources: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` that import ``sources``' names on first use.

    Parameters
    ----------
    package : str
        The module's ``__name__``.
    sources : mapping of str to tuple of str
        Each defining module and the public names it gives ``package``.

    Returns
    -------
    (__getattr__, __dir__)

    Examples
    --------
    >>> import pyprog.logs
    >>> "read_logs" in dir(pyprog.logs)
    True
    """
    where = {name: module for module, names in sources.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
