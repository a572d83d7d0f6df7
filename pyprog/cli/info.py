"""``pyprog info``: versions, the kernel backend, the CPU, optional dependencies (NS-Gym and
MuJoCo among them), numba's cache."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import platform

from pyprog._ext.backend import backend
from pyprog._version import __version__
from pyprog.utils.machine import cpu_model

__all__ = ["add_parser", "cmd"]


def _package_version(name: str, module: str | None = None) -> str | None:
    """Installed version of a distribution, or None; never imports it."""
    if importlib.util.find_spec(module or name) is None:
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


#: Optional simulators: (row, distribution, module, what is missing without it).
_SIMULATORS = (
    (
        "ns-gym",
        "ns-gym",
        "ns_gym",
        "NS-Gym environments unavailable (docs: training guide, NS-Gym)",
    ),
    ("mujoco", "mujoco", "mujoco", "MuJoCo environments unavailable (pip install 'pyprog[nsgym]')"),
)


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
    for row, dist, module, missing in _SIMULATORS:
        version = _package_version(dist, module)
        rows.append((row, version if version else f"not installed: {missing}"))
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
