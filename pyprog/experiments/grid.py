"""A grid of runs (env × algo × speed × seed) with one setting each, kept in a folder.

``pyprog run --out DIR`` uses this. Every run goes to the result store ``DIR/runs.sqlite``
(:data:`STORE_NAME`) through the writer that ``pyprog sweep`` and ``pyprog reproduce`` use
(:func:`pyprog.experiments.runs.run_tasks`): one committed row per finished run, so a grid
interrupted at any moment (Ctrl-C, SIGKILL) keeps what it finished, and re-running the same
command computes only the runs not in the store. After the runs (and on Ctrl-C),
``DIR/results.csv`` is exported from the store: one row per run of the grid. The per-episode
returns of a run are in the store (:func:`read_runs`, or
:meth:`~pyprog.results.store.ResultStore.rows`).

A folder may hold several grids (other episodes, settings or seeds) and sweeps
(``pyprog sweep --store DIR/runs.sqlite``): runs are keyed by their full setting, so they
never mix; ``results.csv`` and ``regret.csv`` show the runs of the last command.
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pyprog.envs.registry import ENVS
from pyprog.experiments.runs import RunsFailedError, RunTask, run_tasks
from pyprog.learn.hyperparams import SPEEDS, Hyper, check_algo
from pyprog.results.export import CSV_COLUMNS, export_csv, write_csv
from pyprog.results.rows import StoredRun
from pyprog.results.schema import StoreError
from pyprog.results.store import ResultStore
from pyprog.runner.adapter import check_env_spec, is_builtin
from pyprog.runner.loop import prepare, resolve_hyper
from pyprog.stats.tables import REGRET_COLUMNS

__all__ = [
    "CSV_COLUMNS",
    "GRID_TAG",
    "MAX_EPISODES",
    "MAX_RUNS",
    "MAX_SETTINGS",
    "MAX_VALUES",
    "STORE_NAME",
    "check_grid_envs",
    "check_grid_size",
    "export_results",
    "grid_tasks",
    "parse_list",
    "parse_range",
    "parse_seeds",
    "read_results",
    "read_runs",
    "run_grid",
    "with_dtype",
    "write_regret_table",
]

#: The result store of a ``pyprog run --out DIR`` folder (the name ``pyprog reproduce`` uses).
STORE_NAME = "runs.sqlite"
#: Tag (``sweep`` column) of the runs a grid stores.
GRID_TAG = "run"

#: Bounds of a grid given on the command line (a typo must not plan 10**9 runs): episodes
#: per run, values in one ``--seeds``/``--speeds`` list or count, settings of a sweep, and
#: runs in one command.
MAX_EPISODES = 100_000
MAX_VALUES = 10_000
MAX_SETTINGS = 10_000
MAX_RUNS = 1_000_000


def parse_range(text: str, name: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"0,2,4"`` → [0, 2, 4]; ``"3"`` → [3].

    Examples
    --------
    >>> parse_range("0-2,5", "speed")
    [0, 1, 2, 5]
    """
    if not text.strip():
        raise ValueError(f"{name} is empty; give e.g. 0-4")
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                lo_i, hi_i = int(lo), int(hi)
                if hi_i < lo_i:
                    raise ValueError
                _check_count(name, len(values) + hi_i - lo_i + 1, text)
                values.extend(range(lo_i, hi_i + 1))
            else:
                values.append(int(part))
                _check_count(name, len(values), text)
        except ValueError as exc:
            if str(exc).startswith(name):
                raise
            raise ValueError(
                f"{name} must be integers or ranges like 0-4 or 0,2,4; got {text!r}"
            ) from None
    if max(values) >= 2**63:
        raise ValueError(f"{name} must be below 2**63; got {text!r}")
    if min(values) < 0:
        raise ValueError(f"{name} must be >= 0; got {text!r}")
    return sorted(set(values))


def _check_count(name: str, count: int, text: str) -> None:
    if count > MAX_VALUES:
        raise ValueError(f"{name} holds at most {MAX_VALUES} values; got {count} in {text!r}")


def check_grid_size(runs: int, what: str = "the command") -> None:
    """At most :data:`MAX_RUNS` runs in one command (checked before any is planned)."""
    if runs > MAX_RUNS:
        raise ValueError(
            f"{what} asks for {runs} runs, more than {MAX_RUNS}; split it into smaller "
            "commands (fewer seeds, speeds or settings)"
        )


def parse_seeds(text: str) -> list[int]:
    """``"10"`` → seeds 0..9 (a count); ``"3-7"`` or ``"1,5"`` → exactly those seeds.

    Examples
    --------
    >>> parse_seeds("3"), parse_seeds("3-5")
    ([0, 1, 2], [3, 4, 5])
    """
    if "-" in text.strip()[1:] or "," in text:
        return parse_range(text, "--seeds")
    count = parse_range(text, "--seeds")[0]
    if count < 1:
        raise ValueError(f"--seeds must be a count >= 1 or a range like 0-9; got {text!r}")
    _check_count("--seeds", count, text)
    return list(range(count))


def parse_list(text: str, name: str, check: Callable[[str], str]) -> list[str]:
    """Comma-separated names, each validated by ``check`` (which lists the valid ones)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"{name} is empty")
    return [check(n) for n in dict.fromkeys(names)]


def check_grid_envs(
    envs: Sequence[str], speeds: Sequence[float] | None, horizon: int | None = None
) -> dict[str, list[float | None]]:
    """Each environment's speeds: ``speeds`` (default: the paper's 0-4) for the built-in
    environments, ``[None]`` for any other (pyprog does not set its drift, so ``speeds``
    with such an environment is an error).

    Only names and speeds are checked here; :func:`grid_tasks` checks every (env, algo)
    setting, building each non-built-in environment once per algorithm to check its spaces
    and horizon against the setting.
    """
    envs = [check_env_spec(e, horizon) for e in envs]
    others = [e for e in envs if not is_builtin(e)]
    if speeds is not None and others:
        raise ValueError(
            f"speeds are set only for the built-in environments ({', '.join(ENVS)}); "
            f"{', '.join(others)} "
            f"{'drifts by itself' if len(others) == 1 else 'drift by themselves'}"
            ": drop --speed(s) or run them separately"
        )
    if speeds is not None and not speeds:
        raise ValueError("speeds is empty")
    return {
        e: list(SPEEDS if speeds is None else speeds) if is_builtin(e) else [None] for e in envs
    }


def grid_tasks(
    envs: Sequence[str],
    algos: Sequence[str],
    speeds: Sequence[float] | None,
    seeds: Iterable[int],
    episodes: int = 1000,
    hyper: Any = None,
    horizon: int | None = None,
    dtype: str | None = None,
) -> list[RunTask]:
    """Every (env, speed, algo, seed) of a grid, with its full setting resolved (so its store
    key is known before it runs); every setting is checked before any run.

    ``hyper`` is what :func:`pyprog.run` accepts (None: the paper's settings on built-in
    environments, pyprog's default elsewhere). Environments and speeds are checked by
    :func:`check_grid_envs`, every setting before any run. ``dtype`` (``"float64"`` or
    ``"float32"``), when given, replaces every setting's ``Hyper.dtype``.

    Examples
    --------
    >>> tasks = grid_tasks(["reco"], ["onpg", "pro-wls"], [1, 2], [0, 1], episodes=50)
    >>> len(tasks), [(t.speed, t.algo, t.seed) for t in tasks][:3]
    (8, [(1.0, 'onpg', 0), (1.0, 'onpg', 1), (1.0, 'pro-wls', 0)])
    """
    algos = [check_algo(a) for a in algos]
    seeds = [int(k) for k in seeds]
    if not seeds:
        raise ValueError("seeds is empty")
    env_speeds = check_grid_envs(envs, speeds, horizon)
    check_grid_size(sum(len(s) for s in env_speeds.values()) * len(algos) * len(seeds))
    settings: dict[tuple[str, str, float | None], Hyper] = {}
    for e, speeds_of_e in env_speeds.items():
        for a in algos:
            for s in speeds_of_e:
                if is_builtin(e):
                    settings[(e, a, s)] = resolve_hyper(e, a, s, hyper)
                else:  # built once, to check the setting against its spaces
                    setup = prepare(e, a, None, hyper, horizon, None)
                    if setup.resolved.owned:
                        setup.resolved.environment.close()
                    settings[(e, a, s)] = setup.hyper
    if dtype is not None:
        settings = {k: with_dtype(h, dtype, k[0]) for k, h in settings.items()}
    return [
        RunTask(e, a, None if s is None else float(s), 0, settings[(e, a, s)], k, episodes, horizon)
        for e, speeds_of_e in env_speeds.items()
        for s in speeds_of_e
        for a in algos
        for k in seeds
    ]


def read_results(out: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of ``out/results.csv`` (empty if absent), with numbers parsed.

    ``speed`` is None for an environment that drifts by itself, ``regret`` None where the
    environment does not know it; the other columns are as
    :data:`~pyprog.results.export.CSV_COLUMNS` (``hyper`` as its JSON text).
    """
    path = Path(out) / "results.csv"
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            {
                **row,
                "speed": float(row["speed"]) if row["speed"] else None,
                "seed": int(row["seed"]),
                "episodes": int(row["episodes"]),
                "regret": float(row["regret"]) if row["regret"] else None,
                "mean_return": float(row["mean_return"]),
                "seconds": float(row["seconds"]),
                "updates": int(row["updates"]),
                "skipped_updates": int(row["skipped_updates"]),
                "skipped_steps": int(row["skipped_steps"]),
            }
            for row in csv.DictReader(fh)
        ]


def read_runs(out: str | os.PathLike, tasks: Sequence[RunTask] | None = None) -> list[StoredRun]:
    """The stored runs of ``out/runs.sqlite`` (with their returns): those of ``tasks``, in
    their order (missing ones left out), or every run of the store, ordered by key.

    Examples
    --------
    >>> # curves = [r.returns for r in read_runs("runs/reco")]
    """
    with ResultStore(Path(out) / STORE_NAME, readonly=True) as store:
        return store.rows() if tasks is None else _runs_of(store, tasks)


def _runs_of(store: ResultStore, tasks: Sequence[RunTask]) -> list[StoredRun]:
    by_key = {}
    for env in dict.fromkeys(t.env for t in tasks):
        by_key.update({r.key: r for r in store.rows(env=env)})
    return [by_key[t.key] for t in tasks if t.key in by_key]


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot write to --out {str(out)!r}: {exc.strerror}") from None
    if not os.access(out, os.W_OK):
        raise ValueError(f"cannot write to --out {str(out)!r}: permission denied")


def _remove_if_no_runs(store_path: Path, created: list[Path]) -> None:
    """After a failed grid: the store this call created, and the folders, if no run finished.

    A store with finished runs stays (a re-run resumes from it); ``created`` lists the
    folders that did not exist before, innermost first, removed only if empty.
    """
    with contextlib.suppress(StoreError, OSError), ResultStore(store_path) as store:
        if len(store):
            return
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(f"{store_path}{suffix}")
    for folder in created:
        with contextlib.suppress(OSError):
            folder.rmdir()


def export_results(store: ResultStore, out: str | os.PathLike, tasks: Sequence[RunTask]) -> int:
    """Write ``out/results.csv`` from ``store``: one row per stored run of ``tasks`` (ordered
    by key), replaced whole; the number of rows."""
    return export_csv(store, Path(out) / "results.csv", keys={t.key for t in tasks})


def with_dtype(hyper: Hyper, dtype: str, env: str) -> Hyper:
    """``hyper`` with ``dtype`` (a ValueError naming ``env`` for float32 with a Gaussian policy).

    Examples
    --------
    >>> from pyprog.learn.hyperparams import paper_hyper
    >>> with_dtype(paper_hyper("reco", "onpg", 2), "float32", "reco").dtype
    'float32'
    """
    changed = hyper.replace(dtype=dtype)
    if changed.dtype != "float64" and hyper.gauss_std is not None:
        raise ValueError(
            f"dtype {dtype!r} needs a softmax policy (discrete actions); {env} has a Gaussian "
            "policy: use dtype float64"
        )
    return changed


def run_grid(
    envs: Sequence[str],
    algos: Sequence[str],
    speeds: Sequence[float] | None,
    seeds: Iterable[int],
    out: str | os.PathLike,
    episodes: int = 1000,
    hyper: Any = None,
    jobs: int | None = None,
    progress: Callable[[int, int], Any] | None = None,
    horizon: int | None = None,
    dtype: str | None = None,
) -> list[StoredRun]:
    """Run every (env, algo, speed, seed) not yet in ``out/runs.sqlite``; export
    ``out/results.csv``; return the grid's runs.

    Parameters
    ----------
    envs : sequence of str
        Built-in names, Gymnasium ids or ``module:function`` factories.
    algos : sequence of str
    speeds : sequence of float, or None
        Speeds of the built-in environments (None: 0-4). Other environments run once per
        (algo, seed), with speed None; giving speeds with them is an error.
    seeds : iterable of int
    out : path
        Folder of the store ``runs.sqlite`` (:data:`STORE_NAME`) and of ``results.csv``
        (created with its parents if missing).
    episodes : int
    hyper : None, "paper", dict, Hyper, or a settings table or its JSON file
        None: the paper's settings on built-in environments, pyprog's default elsewhere
        (see :func:`pyprog.run`).
    jobs : int, optional
        Worker processes (default: every core).
    progress : callable, optional
        ``progress(done, total)`` after each finished run; ``progress(0, total)`` first
        (``total``: the runs not yet stored).
    horizon : int, optional
        Most steps per episode, for environments that declare no episode length (see
        :func:`pyprog.run`); part of each run's store key.
    dtype : {"float64", "float32"}, optional
        Precision of the policies' passes (``Hyper.dtype``) for every run; None keeps each
        setting's own (float64 unless a setting says otherwise).

    Returns
    -------
    list of StoredRun
        Every run of the grid (stored earlier or now), in the grid's order (env, speed,
        algo, seed).

    Examples
    --------
    >>> # runs = run_grid(["reco"], ["onpg"], [2], range(3), "runs/reco", episodes=200)
    """
    # validate the environments and settings here, before anything is written or any
    # worker starts
    if not str(out).strip():  # Path("") is ".": the files would land where nobody asked
        raise ValueError("--out must name a folder, e.g. runs/reco; got an empty path")
    tasks = grid_tasks(envs, algos, speeds, seeds, episodes, hyper, horizon, dtype)
    out = Path(out)
    created = [p for p in (out, *out.parents) if not p.exists()]
    new_store = not (out / STORE_NAME).exists()
    _check_writable(out)
    try:
        run_tasks(tasks, out / STORE_NAME, name=GRID_TAG, jobs=jobs, progress=progress)
    except RunsFailedError:
        # the other runs finished: results.csv shows them; the failures are in the error.
        # If none finished (e.g. every run met a string reward), leave no files behind.
        if new_store:
            _remove_if_no_runs(out / STORE_NAME, created)
        if (out / STORE_NAME).exists():
            with ResultStore(out / STORE_NAME) as store:
                export_results(store, out, tasks)
        raise
    except KeyboardInterrupt:
        # results.csv shows what finished (the store holds it whatever happens)
        with contextlib.suppress(StoreError, OSError), ResultStore(out / STORE_NAME) as store:
            export_results(store, out, tasks)
        raise
    except BaseException:
        if new_store:
            _remove_if_no_runs(out / STORE_NAME, created)
        raise
    # opened for writing, as the last connection it checkpoints and removes -wal and -shm
    with ResultStore(out / STORE_NAME) as store:
        export_results(store, out, tasks)
        return _runs_of(store, tasks)


def write_regret_table(table: Sequence[dict[str, Any]], out: str | os.PathLike) -> Path:
    """Write :func:`pyprog.stats.tables.regret_table`'s rows to ``out/regret.csv`` (replaced
    whole); its path.

    Examples
    --------
    >>> import tempfile
    >>> row = dict(env="reco", algo="onpg", speed=1.0, metric="regret", mean=2.5, se=0.5, seeds=3)
    >>> path = write_regret_table([row], tempfile.mkdtemp())
    >>> path.read_text().splitlines()
    ['env,algo,speed,metric,mean,se,seeds', 'reco,onpg,1.0,regret,2.5,0.5,3']
    """
    return write_csv(Path(out) / "regret.csv", REGRET_COLUMNS, table)
