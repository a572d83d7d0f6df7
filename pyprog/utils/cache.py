"""Where numba caches pyprog's compiled functions: a per-user directory, never the package.

numba's own ``cache=True`` writes next to the source file, into
``site-packages/pyprog/envs/__pycache__``. That fails on a read-only install (a system-wide
or container install used by a non-root user), and pip, which does not own those files,
leaves them behind on uninstall: the remaining ``site-packages/pyprog/`` folder is then an
empty namespace package that shadows an editable install of pyprog.

pyprog's jitted functions are therefore decorated with :func:`cached_njit`, which gives
them a cache that lives in the first writable directory of

1. ``$PYPROG_CACHE_DIR/numba`` (pyprog's cache root, if set);
2. ``$NUMBA_CACHE_DIR`` (numba's own setting, if set; laid out as numba lays it out);
3. the platform's per-user cache directory: ``$XDG_CACHE_HOME/pyprog/numba`` or
   ``~/.cache/pyprog/numba`` on Linux, ``~/Library/Caches/pyprog/numba`` on macOS,
   ``%LOCALAPPDATA%\\pyprog\\Cache\\numba`` on Windows.

If none is writable, the functions run uncached (compiled once per process), with one
warning. Only pyprog's functions are affected: numba's global settings and the caching of
any other code stay as they were.

numba checks a cached function against its own source file only, not against the files of
the jitted functions it calls: the whole NS-Diabetes day (``_diabetes_day.py``) would keep
calling an older patient model (``patient.py``) after an edit of the latter, and crash or
compute the old model. So each folder's entries live under a digest of every Python file in
that folder (:func:`sources_digest`): any change to any of them starts a new cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numba
from numba.core import caching

__all__ = ["cache_candidates", "cached_njit", "numba_cache_dir", "sources_digest"]


def _platform_cache_root(environ: Mapping[str, str]) -> Path:
    """The user's cache directory for pyprog, by the platform's convention."""
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    if sys.platform == "win32":
        base = environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "pyprog" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "pyprog"
    xdg = environ.get("XDG_CACHE_HOME", "")
    # XDG: a relative path is invalid and must be ignored
    return (Path(xdg) if os.path.isabs(xdg) else home / ".cache") / "pyprog"


def cache_candidates(environ: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """Where pyprog may keep numba's cache, in order of preference, with their source.

    Parameters
    ----------
    environ : mapping, optional
        The environment variables to read (default: ``os.environ``).

    Returns
    -------
    list of (str, Path)
        ``(source, directory)`` pairs; ``source`` is ``"PYPROG_CACHE_DIR"``,
        ``"NUMBA_CACHE_DIR"`` or ``"default"``.

    Examples
    --------
    >>> env = {"HOME": "/home/ada", "PYPROG_CACHE_DIR": "/scratch/pyprog"}
    >>> [(source, path.as_posix()) for source, path in cache_candidates(env)][0]
    ('PYPROG_CACHE_DIR', '/scratch/pyprog/numba')
    """
    environ = os.environ if environ is None else environ
    out = []
    if environ.get("PYPROG_CACHE_DIR"):
        out.append(("PYPROG_CACHE_DIR", Path(environ["PYPROG_CACHE_DIR"]) / "numba"))
    if environ.get("NUMBA_CACHE_DIR"):
        out.append(("NUMBA_CACHE_DIR", Path(environ["NUMBA_CACHE_DIR"])))
    out.append(("default", _platform_cache_root(environ) / "numba"))
    return out


def _writable(path: Path) -> bool:
    """Create ``path`` if needed and check that a file can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def numba_cache_dir() -> Path | None:
    """The directory of pyprog's numba cache in this process, or None (uncached).

    Resolved once per process from :func:`cache_candidates`: the first writable one. When
    none is writable, or a directory set by ``PYPROG_CACHE_DIR`` / ``NUMBA_CACHE_DIR`` is
    not, one :class:`RuntimeWarning` says so.

    Examples
    --------
    >>> where = numba_cache_dir()  # e.g. ~/.cache/pyprog/numba
    >>> where is None or where.is_dir()
    True
    """
    candidates = cache_candidates()
    chosen = next((path for _, path in candidates if _writable(path)), None)
    if chosen is None:
        tried = ", ".join(str(path) for _, path in candidates)
        warnings.warn(
            f"pyprog: no writable cache directory (tried {tried}); numba compiles the patient "
            "model in every process instead of once (set PYPROG_CACHE_DIR to cache it)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    source, first = candidates[0]
    if chosen != first:
        warnings.warn(
            f"pyprog: the cache directory {source}={first} is not writable; "
            f"numba's cache goes to {chosen}",
            RuntimeWarning,
            stacklevel=3,
        )
    return chosen


@functools.cache
def sources_digest(folder: str | os.PathLike) -> str:
    """A digest of the names and contents of every Python file in ``folder`` (16 hex digits).

    Examples
    --------
    >>> from pathlib import Path
    >>> import pyprog.envs
    >>> len(sources_digest(Path(pyprog.envs.__file__).parent))
    16
    """
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


class _PyprogLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's cache locator for pyprog's functions: inside :func:`numba_cache_dir`.

    The sub-folder per source directory is numba's own (its name and a hash of its path),
    so two installations never share entries; below it, a digest of the folder's sources
    (see the module's docstring), and the entries are keyed, as always, by their own source
    file's stamp.
    """

    def __init__(self, py_func: Callable, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        root = numba_cache_dir()
        # numba's sub-folder per source folder, then the digest of that folder's sources
        subpath = self.get_suitable_cache_subpath(py_file)
        digest = sources_digest(Path(py_file).parent)
        self._cache_path = str(Path(str(root)) / subpath / digest)

    def get_cache_path(self) -> str:
        return self._cache_path


class _PyprogCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_PyprogLocator]  # noqa: RUF012  (numba's class attribute)


class _PyprogFunctionCache(caching.FunctionCache):
    _impl_class = _PyprogCacheImpl


def cached_njit(**options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(**options)`` with its cache in :func:`numba_cache_dir` (or uncached).

    ``cache`` must not be given. A function without a source file (typed at the prompt,
    or in a doctest) cannot be cached and runs uncached.

    Examples
    --------
    >>> @cached_njit(error_model="numpy")
    ... def twice(x):
    ...     return 2.0 * x
    >>> twice(1.5)
    3.0
    """
    if "cache" in options:
        raise ValueError("cached_njit sets the cache itself; do not pass cache=")

    def decorate(func: Callable) -> Any:
        dispatcher = numba.njit(**options)(func)
        if numba_cache_dir() is not None:
            try:
                dispatcher._cache = _PyprogFunctionCache(dispatcher.py_func)
            except RuntimeError:  # no locator: the directory vanished since it was checked
                pass
        return dispatcher

    return decorate
