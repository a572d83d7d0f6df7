"""A least-recently-used cache of arrays, bounded in bytes as well as in entries.

``functools.lru_cache`` bounds the number of entries only: the forecast designs and weights
that ``basis="auto"`` caches per (candidate, origin) are each as long as the log, so 1,024
designs of a 10^4-episode log held 0.3 GB, and of a 10^6-episode log would hold 100 GB
(issue 35). :func:`array_cache` keeps the same least-recently-used policy within a byte
budget, and does not keep a value larger than an eighth of it (a long log's design is
recomputed instead: the computation is O(N), the memory kept would be too).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["array_cache"]


def _nbytes(value: Any) -> int:
    """Bytes of the arrays in ``value`` (an array, or a tuple of them and other objects)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return 0


def array_cache(maxsize: int, max_bytes: int) -> Callable[[Callable], Callable]:
    """Memoise a function of hashable arguments that returns arrays (read-only, by the caller's
    convention): at most ``maxsize`` results and ``max_bytes`` bytes of arrays, the least
    recently used evicted first; a result over ``max_bytes / 8`` is returned, not kept.

    Exceptions are not cached. The wrapper has ``cache_clear()`` and ``cache_info()``
    (``(entries, bytes)``).

    Examples
    --------
    >>> @array_cache(maxsize=2, max_bytes=1 << 20)
    ... def zeros(n):
    ...     return np.zeros(n)
    >>> zeros(3) is zeros(3), zeros(10**6) is zeros(10**6)  # 8 MB: not kept
    (True, False)
    >>> zeros.cache_info()
    (1, 24)
    """

    def decorate(func: Callable) -> Callable:
        entries: OrderedDict = OrderedDict()
        lock = threading.Lock()
        total = [0]

        @functools.wraps(func)
        def wrapper(*args):
            with lock:
                if args in entries:
                    entries.move_to_end(args)
                    return entries[args][0]
            value = func(*args)
            size = _nbytes(value)
            if size > max_bytes // 8:
                return value
            with lock:
                if args not in entries:
                    entries[args] = (value, size)
                    total[0] += size
                    while len(entries) > maxsize or total[0] > max_bytes:
                        _, (_, dropped) = entries.popitem(last=False)
                        total[0] -= dropped
            return value

        def cache_clear() -> None:
            with lock:
                entries.clear()
                total[0] = 0

        def cache_info() -> tuple[int, int]:
            with lock:
                return len(entries), total[0]

        wrapper.cache_clear = cache_clear  # type: ignore[attr-defined]
        wrapper.cache_info = cache_info  # type: ignore[attr-defined]
        return wrapper

    return decorate
