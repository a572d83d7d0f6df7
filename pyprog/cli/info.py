"""``pyprog info``: versions, the kernel backend, the CPU, optional dependencies, numba's cache."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import platform

from pyprog._ext.backend import backend
from pyprog._version import __version__
from pyprog.utils.machine import cpu_model

__all__ = ["add_parser", "cmd"]


def _package_version(name: str) -> str | None:
    """Installed version of a distribution, or None; never imports it."""
    if importlib.util.find_spec(name) is None:
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def cmd(args: argparse.Namespace) -> int:
    rows = [
        ("pyprog", __version__),
        ("kernel backend", backend()),
        ("python", platform.python_version()),
        ("platform", platform.platform()),
        ("cpu", cpu_model()),
    ]
    for name in ("numpy", "scipy", "numba", "gymnasium", "simglucose", "distributed"):
        version = _package_version(name)
        rows.append((name, version if version else "not installed"))
    from pyprog.utils.cache import numba_cache_dir

    cache = numba_cache_dir()
    rows.append(("numba cache", str(cache) if cache else "none writable: uncached"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    info = sub.add_parser("info", help="versions, kernel backend, optional dependencies")
    info.set_defaults(func=cmd)
