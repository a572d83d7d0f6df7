"""Run many independent runs in parallel: joblib on local cores, or a Dask cluster.

:func:`execute` yields each result in the coordinating process as soon as its run
finishes, so the caller can write it down (CSV row, store row) before the next one:
an interrupted study loses only the runs that were still going.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["connect", "default_jobs", "execute"]

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """All the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _call(fn: Callable[[T], R], task: T) -> tuple[T, R]:
    return task, fn(task)


def connect(scheduler: str, timeout: float = 5.0):
    """A ``distributed.Client`` for the Dask scheduler at ``scheduler`` (e.g. tcp://host:8786).

    Raises
    ------
    ValueError
        Within ``timeout`` seconds if the scheduler cannot be reached, or if the
        ``distributed`` package is missing (``pip install "pyprog[dask]"``).
    """
    try:
        from distributed import Client
    except ImportError:
        raise ValueError(
            "--scheduler needs the 'distributed' package: pip install \"pyprog[dask]\""
        ) from None
    _check_address(scheduler)
    try:
        return Client(scheduler, timeout=f"{timeout}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None


def _check_address(scheduler: str) -> None:
    """A malformed address is refused before a ``Client`` exists: a Client whose
    construction failed on it would print a traceback from its ``__del__`` 10 s later."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(scheduler)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"--scheduler must be a Dask scheduler address like tcp://host:8786; got "
            f"{scheduler!r} ({exc})"
        ) from None


def execute(
    fn: Callable[[T], R],
    tasks: Iterable[T],
    jobs: int | None = None,
    scheduler: Any = None,
) -> Iterator[tuple[T, R]]:
    """Compute ``fn(task)`` for every task; yield ``(task, result)`` in completion order.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled to the workers).
    tasks : iterable
    jobs : int, optional
        Local worker processes (joblib); default, and at most: every core this process
        may use (:func:`default_jobs`). 1 runs in this process.
    scheduler : str or distributed.Client, optional
        Run on a Dask cluster instead (an address, or a connected client).

    Examples
    --------
    >>> sorted(r for _, r in execute(abs, [-2, 1, -3], jobs=1))
    [1, 2, 3]
    """
    tasks = list(tasks)
    if not tasks:
        return
    if scheduler is not None:
        yield from _execute_dask(fn, tasks, scheduler)
        return
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1; got {jobs!r}")
    jobs = min(jobs, default_jobs())  # more processes than cores only compete for them
    if jobs == 1 or len(tasks) == 1:
        for task in tasks:
            yield task, fn(task)
        return
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=min(jobs, len(tasks)), return_as="generator_unordered")
    results = parallel(delayed(_call)(fn, task) for task in tasks)
    try:
        yield from results
    finally:
        results.close()  # on an early exit (Ctrl-C, error), stop the workers


def _execute_dask(fn, tasks, scheduler):
    from distributed import as_completed

    own = isinstance(scheduler, str)
    client = connect(scheduler) if own else scheduler
    futures = client.map(_call, [fn] * len(tasks), tasks, pure=False)
    try:
        for future in as_completed(futures, loop=client.loop):
            yield future.result()
    finally:
        for future in futures:
            future.cancel()
        if own:
            client.close()
