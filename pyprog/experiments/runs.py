"""Run tasks into a result store: the one writer of ``pyprog run``, ``sweep`` and ``reproduce``.

A :class:`RunTask` is one run with its full setting, so its store key is known before it
runs. :func:`run_tasks` skips the tasks whose key is already stored (resume), runs the others
on local processes or a Dask cluster, and commits each finished run to the store as it
arrives, in this (the coordinating) process only. What the store guarantees then holds for
every command: a run killed at any moment, even by SIGKILL, leaves whole, unique rows, and
the same command computes only what is missing.
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
from pyprog.runner.loop import RunResult, run
from pyprog.runner.parallel import connect, execute

__all__ = ["RunTask", "run_task", "run_tasks"]


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

    @property
    def key(self) -> RunKey:
        """The store key of the run (:func:`pyprog.results.keys.run_key`)."""
        return run_key(
            self.env, self.algo, self.speed, self.hyper.to_dict(), self.seed, self.episodes
        )


def run_task(task: Any) -> RunResult:
    """:func:`pyprog.run` of a task (anything with ``env``, ``algo``, ``speed``, ``seed``,
    ``episodes`` and ``hyper``); a module-level function, so that worker processes and Dask
    can import it."""
    return run(
        task.env,
        task.algo,
        speed=task.speed,
        seed=task.seed,
        episodes=task.episodes,
        hyper=task.hyper,
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

    Examples
    --------
    >>> # run_tasks(tasks, "out/runs.sqlite", name="fig3", jobs=4)  # again: "ran" == 0
    """
    for env, algo in {(t.env, t.algo) for t in tasks}:
        check_env_spec(env)
        check_algo(algo)
    client = connect(scheduler) if scheduler is not None else None
    ran, todo = 0, []
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
                store.add(result, sweep=name)
                ran += 1
                if progress:
                    progress(ran, len(todo))
    finally:
        if client is not None:
            client.close()
    return {"total": len(tasks), "already_stored": len(tasks) - len(todo), "ran": ran}
