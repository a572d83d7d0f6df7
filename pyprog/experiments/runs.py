"""Run tasks into a result store: the one writer of ``pyprog run``, ``sweep`` and ``reproduce``.

A :class:`RunTask` is one run with its full setting, so its store key is known before it
runs. :func:`run_tasks` skips the tasks whose key is already stored (resume), runs the others
on local processes or a Dask cluster, and commits each finished run to the store as it
arrives, in this (the coordinating) process only. What the store guarantees then holds for
every command: a run killed at any moment, even by SIGKILL, leaves whole, unique rows, and
the same command computes only what is missing.

A run that fails on its own — its learner diverges (:class:`NonFiniteParametersError`, a
``FloatingPointError``), its environment returns something unusable
(:class:`~pyprog.runner.checks.EnvironmentReturnError`), or its update raises for any reason
(:class:`~pyprog.runner.checks.UpdateError`) — does not stop the others: it
is reported, with its key and hyper-parameters, after they finish, as a
:class:`RunsFailedError` (a ``ValueError``; the CLI prints one line per failed run and exits
2). A failed run is **not** written to the store: the store holds only whole results, so a
resume runs it again and reports it again (runs are deterministic given their seed): never
silently skipped, never silently counted as done.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyprog.learn.hyperparams import Hyper, check_algo
from pyprog.results.keys import RunKey, run_key
from pyprog.results.store import ResultStore
from pyprog.runner.adapter import check_env_spec
from pyprog.runner.checks import EnvironmentReturnError, UpdateError
from pyprog.runner.loop import RunResult, run
from pyprog.runner.parallel import connect, execute

__all__ = ["RunFailure", "RunTask", "RunsFailedError", "run_task", "run_tasks"]


@dataclasses.dataclass(frozen=True)
class RunTask:
    """One run: (env, algo, speed, setting, seed) with its full hyper-parameters.

    Attributes
    ----------
    env, algo : str
    speed : float or None
        None for an environment that drifts by itself.
    setting : int
        Index of the setting in its study (a sweep's drawn settings; 0 for a grid).
    hyper : Hyper
        The full setting (what :attr:`RunResult.hyper` will hold).
    seed, episodes : int
    horizon : int or None
        The ``horizon=`` of :func:`pyprog.run` (None: the environment's own length).

    Examples
    --------
    >>> from pyprog.learn.hyperparams import paper_hyper
    >>> task = RunTask("reco", "onpg", 2.0, 0, paper_hyper("reco", "onpg", 2), 0, 50)
    >>> task.key[:3], task.key[4]
    (('reco', 'onpg', 2.0), 0)
    """

    env: str
    algo: str
    speed: float | None
    setting: int
    hyper: Hyper
    seed: int
    episodes: int
    horizon: int | None = None

    @property
    def key(self) -> RunKey:
        """The store key of the run (:func:`pyprog.results.keys.run_key`)."""
        return run_key(
            self.env,
            self.algo,
            self.speed,
            self.hyper.to_dict(),
            self.seed,
            self.episodes,
            self.horizon,
        )


@dataclasses.dataclass(frozen=True)
class RunFailure:
    """A run that failed on its own: which one, and why (one line).

    Examples
    --------
    >>> from pyprog.learn.hyperparams import Hyper
    >>> f = RunFailure("reco", "onpg", 2.0, 0, {"lr": 10.0}, "FloatingPointError: ...")
    >>> f.line()
    "reco onpg speed=2.0 seed=0 hyper={'lr': 10.0}: FloatingPointError: ..."
    """

    env: str
    algo: str
    speed: float | None
    seed: int
    hyper: dict[str, Any]
    error: str

    def line(self) -> str:
        """The failure on one line: the run's key, its hyper-parameters, the error."""
        speed = "-" if self.speed is None else self.speed
        return (
            f"{self.env} {self.algo} speed={speed} seed={self.seed} hyper={self.hyper}: "
            f"{self.error}"
        )


class RunsFailedError(ValueError):
    """Some runs failed (the others finished and are stored); one line per failed run.

    Attributes
    ----------
    failures : list of RunFailure
    report : dict
        What :func:`run_tasks` would have returned, with ``"failed"`` the count.
    """

    def __init__(self, failures: Sequence[RunFailure], report: dict[str, int]) -> None:
        self.failures = list(failures)
        self.report = report
        lines = "\n".join(f"  failed: {f.line()}" for f in self.failures)
        super().__init__(
            f"{len(self.failures)} of {report['total']} runs failed (not stored, so a resume "
            f"runs them again; {report['ran']} others finished and are stored):\n{lines}"
        )


def run_task(task: Any) -> RunResult | RunFailure:
    """:func:`pyprog.run` of a task (anything with ``env``, ``algo``, ``speed``, ``seed``,
    ``episodes`` and ``hyper``); a module-level function, so that worker processes and Dask
    can import it. A run that diverges, whose environment returns something unusable, or
    whose update raises for any reason (e.g. a NaN log π in a float32 pass) gives a
    :class:`RunFailure` naming the run and the cause instead of raising: the other runs go
    on. (An environment that raises by itself still stops the command.)"""
    try:
        return run(
            task.env,
            task.algo,
            speed=task.speed,
            seed=task.seed,
            episodes=task.episodes,
            hyper=task.hyper,
            horizon=getattr(task, "horizon", None),
        )
    except (FloatingPointError, EnvironmentReturnError, UpdateError) as exc:
        return RunFailure(
            task.env,
            task.algo,
            task.speed,
            task.seed,
            task.hyper.to_dict(),
            f"{type(exc).__name__}: {exc}",
        )


def run_tasks(
    tasks: Sequence[RunTask],
    store_path: str | os.PathLike[str],
    name: str | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, int]:
    """Run the tasks whose key is not in the store; commit each finished run as it ends.

    Parameters
    ----------
    tasks : sequence of RunTask
    store_path : path
        The SQLite result store (created, with its parent folders, if absent).
    name : str, optional
        Tag stored with every new run (``sweep`` column; not part of the key).
    jobs : int, optional
        Local worker processes (default: every core).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): run there instead. It is reached
        before the store is touched, so an unreachable scheduler writes nothing.
    progress : callable, optional
        ``progress(done, total)`` after each run (and ``progress(0, total)`` first), counting
        the runs to compute.

    Returns
    -------
    dict
        ``{"total": ..., "already_stored": ..., "ran": ...}``.

    Raises
    ------
    RunsFailedError
        After every other run finished, if some runs failed on their own (diverged, their
        environment returned something unusable, or their update raised); they are not
        stored.

    Examples
    --------
    >>> # run_tasks(tasks, "out/runs.sqlite", name="fig3", jobs=4)  # again: "ran" == 0
    """
    for env, algo, horizon in {(t.env, t.algo, getattr(t, "horizon", None)) for t in tasks}:
        check_env_spec(env, horizon)
        check_algo(algo)
    client = connect(scheduler) if scheduler is not None else None
    ran, todo, failures = 0, [], []
    try:
        try:  # missing parent folders are created (as for every output of pyprog)
            Path(store_path).parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # e.g. a parent that is a file: ResultStore says what is wrong
        with ResultStore(store_path) as store:
            done = store.keys()
            todo = [t for t in tasks if t.key not in done]
            if progress:
                progress(0, len(todo))
            for _, result in execute(run_task, todo, jobs=jobs, scheduler=client):
                if isinstance(result, RunFailure):
                    failures.append(result)
                else:
                    store.add(result, sweep=name)
                    ran += 1
                if progress:
                    progress(ran + len(failures), len(todo))
    finally:
        if client is not None:
            client.close()
    report = {"total": len(tasks), "already_stored": len(tasks) - len(todo), "ran": ran}
    if failures:
        raise RunsFailedError(failures, {**report, "failed": len(failures)})
    return report
