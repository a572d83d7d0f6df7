"""A grid of runs (env × algo × speed × seed) with one setting each, written to a folder.

``pyprog run`` uses this: every finished run is appended to ``DIR/results.csv`` as one
complete line (and its per-episode returns to ``DIR/returns/``) before the next one is
awaited, so an interrupted grid keeps what it finished, and re-running the same
command resumes it.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from pyprog.learn.hyperparams import SPEEDS, check_algo
from pyprog.runner.adapter import check_env_spec, is_builtin
from pyprog.runner.loop import RunResult, prepare, resolve_hyper, run
from pyprog.runner.parallel import execute
from pyprog.stats.summary import compare, mean_se

__all__ = [
    "CSV_COLUMNS",
    "MAX_EPISODES",
    "MAX_RUNS",
    "MAX_SETTINGS",
    "MAX_VALUES",
    "Task",
    "check_grid_size",
    "parse_list",
    "parse_range",
    "parse_seeds",
    "read_results",
    "regret_table",
    "run_grid",
    "write_regret_table",
]

#: Bounds of a grid given on the command line (a typo must not plan 10**9 runs): episodes
#: per run, values in one ``--seeds``/``--speeds`` list or count, settings of a sweep, and
#: runs in one command.
MAX_EPISODES = 100_000
MAX_VALUES = 10_000
MAX_SETTINGS = 10_000
MAX_RUNS = 1_000_000

#: Columns of ``results.csv``, one row per finished run.
CSV_COLUMNS = (
    "env",
    "algo",
    "speed",
    "seed",
    "episodes",
    "regret",
    "mean_return",
    "seconds",
    "updates",
    "skipped_updates",
    "skipped_steps",
    "returns_file",
)


@dataclasses.dataclass(frozen=True)
class Task:
    """One run of a grid."""

    env: str
    algo: str
    speed: float | None
    seed: int
    episodes: int
    hyper: Any = None

    @property
    def key(self) -> tuple[str, str, float | None, int]:
        speed = None if self.speed is None else float(self.speed)
        return (self.env, self.algo, speed, int(self.seed))

    @property
    def stem(self) -> str:
        env = re.sub(r"[^A-Za-z0-9._-]", "_", self.env)  # ids hold "/", factories ":"
        speed = "" if self.speed is None else f"-speed{self.speed:g}"
        return f"{env}-{self.algo}{speed}-seed{self.seed}"


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


def run_task(task: Any) -> RunResult:
    """:func:`pyprog.run` of a grid's or a sweep's task (anything with ``env``, ``algo``,
    ``speed``, ``seed``, ``episodes`` and ``hyper``); a module-level function, so that worker
    processes and Dask can import it."""
    return run(
        task.env,
        task.algo,
        speed=task.speed,
        seed=task.seed,
        episodes=task.episodes,
        hyper=task.hyper,
    )


def check_grid_envs(
    envs: Sequence[str],
    algos: Sequence[str],
    speeds: Sequence[float] | None,
    hyper: Any,
    settings: bool = True,
) -> dict[str, list[float | None]]:
    """Each environment's speeds, with every (env, algo) setting checked before any run.

    Built-in environments run at ``speeds`` (default: the paper's 0-4); any other runs
    once per (algo, seed) with speed None — pyprog does not set its drift, so ``speeds``
    with such an environment is an error. Each non-built-in environment is built once to
    check its spaces and horizon; with ``settings``, every (env, algo) setting of ``hyper``
    is checked too.
    """
    envs = [check_env_spec(e) for e in envs]
    others = [e for e in envs if not is_builtin(e)]
    if speeds is not None and others:
        raise ValueError(
            f"speeds are set only for the built-in environments (reco, reacher, diabetes); "
            f"{', '.join(others)} drift by themselves: drop --speed(s) or run them separately"
        )
    if speeds is not None and not speeds:
        raise ValueError("speeds is empty")
    out: dict[str, list[float | None]] = {}
    for e in envs:
        out[e] = list(SPEEDS if speeds is None else speeds) if is_builtin(e) else [None]
        if not settings:
            continue
        for a in algos:
            for s in out[e]:
                if is_builtin(e):
                    resolve_hyper(e, a, s, hyper)
                else:
                    setup = prepare(e, a, None, hyper, None, None)
                    if setup.resolved.owned:
                        setup.resolved.environment.close()
    return out


def read_results(out: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of ``out/results.csv`` (empty if absent), with numbers parsed."""
    path = Path(out) / "results.csv"
    if not path.exists():
        return []
    rows = []
    seen = set()
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            # one row per run: a run written twice (e.g. by an older pyprog racing itself)
            # counts once
            speed = float(row["speed"]) if row["speed"] else None  # None: the env's own drift
            key = (row["env"], row["algo"], speed, int(row["seed"]))
            if key in seen:
                continue
            seen.add(key)
            rows.append(
                {
                    **row,
                    "speed": speed,
                    "seed": int(row["seed"]),
                    "episodes": int(row["episodes"]),
                    "regret": float(row["regret"]) if row["regret"] else None,
                    "mean_return": float(row["mean_return"]),
                    "seconds": float(row["seconds"]),
                }
            )
    return rows


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "returns").mkdir(exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot write to --out {str(out)!r}: {exc.strerror}") from None
    if not os.access(out, os.W_OK):
        raise ValueError(f"cannot write to --out {str(out)!r}: permission denied")


@contextlib.contextmanager
def _folder_lock(out: Path):
    """Hold an exclusive lock on ``out`` while a grid writes it: a second ``pyprog run
    --out`` on the same folder stops at once instead of appending the same runs again.

    ``fcntl.flock`` on ``out/.pyprog-run.lock`` (released by the OS if the process dies);
    where ``fcntl`` does not exist (Windows) the folder is not locked.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(out / ".pyprog-run.lock", "a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ValueError(
                f"another pyprog run is writing to {str(out)!r}; wait for it to finish "
                "(re-running then resumes) or use another --out"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _check_manifest(out: Path, episodes: int, hyper: Any) -> None:
    """A folder holds one grid: the same episodes and hyper-parameters on every resume.

    ``grid.json`` records them on the first run; resuming with others is an error (the
    finished rows would not be comparable), so use another ``--out``.
    """
    if hyper is None:  # the default: the paper's settings on built-in environments
        hyper = "paper"
    setting = {
        "episodes": episodes,
        "hyper": hyper if isinstance(hyper, (str, dict)) else hyper.to_dict(),
    }
    path = out / "grid.json"
    if path.exists():
        stored = json.loads(path.read_text())
        if stored != json.loads(json.dumps(setting)):
            raise ValueError(
                f"{out} holds a grid run with {stored}; this command asks for {setting}: "
                "use another --out"
            )
    elif not (out / "results.csv").exists():
        path.write_text(json.dumps(setting, indent=1) + "\n")


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
) -> list[dict[str, Any]]:
    """Run every (env, algo, speed, seed) not yet in ``out/results.csv``; return all rows.

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
        Folder for ``results.csv`` and ``returns/<env>-<algo>-speed<s>-seed<k>.npy``.
    episodes : int
    hyper : None, "paper", dict or Hyper
        None: the paper's settings on built-in environments, pyprog's default elsewhere
        (see :func:`pyprog.run`).
    jobs : int, optional
        Worker processes (default: every core).
    progress : callable, optional
        ``progress(done, total)`` after each finished run; ``progress(0, total)`` first.

    Returns
    -------
    list of dict
        Every row of ``results.csv`` (finished earlier or now).
    """
    algos = [check_algo(a) for a in algos]
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds is empty")
    # validate the environments and settings here, before anything is written or any
    # worker starts
    env_speeds = check_grid_envs(envs, algos, speeds, hyper)
    check_grid_size(sum(len(s) for s in env_speeds.values()) * len(algos) * len(seeds))
    out = Path(out)
    _check_writable(out)
    with _folder_lock(out):
        return _run_locked(env_speeds, algos, seeds, out, episodes, hyper, jobs, progress)


def _run_locked(env_speeds, algos, seeds, out, episodes, hyper, jobs, progress):
    """The body of :func:`run_grid`, with the folder locked."""
    _check_manifest(out, episodes, hyper)
    done = {(r["env"], r["algo"], r["speed"], r["seed"]) for r in read_results(out)}
    tasks = [
        task
        for e, speeds_of_e in env_speeds.items()
        for s in speeds_of_e
        for a in algos
        for k in seeds
        if (task := Task(e, a, s, int(k), episodes, hyper)).key not in done
    ]
    path = out / "results.csv"
    new_file = not path.exists() or path.stat().st_size == 0
    total = len(tasks)
    if progress:
        progress(0, total)
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        if new_file:
            writer.writeheader()
            fh.flush()
        for finished, (task, result) in enumerate(execute(run_task, tasks, jobs), start=1):
            returns_file = Path("returns") / f"{task.stem}.npy"
            tmp = out / f"{returns_file}.tmp.npy"
            np.save(tmp, result.returns)
            os.replace(tmp, out / returns_file)  # whole file or none
            writer.writerow(
                {
                    "env": task.env,
                    "algo": task.algo,
                    "speed": "" if task.speed is None else f"{task.speed:g}",
                    "seed": task.seed,
                    "episodes": task.episodes,
                    "regret": "" if result.regret is None else repr(result.regret),
                    "mean_return": repr(result.mean_return),
                    "seconds": f"{result.seconds:.3f}",
                    "updates": result.updates,
                    "skipped_updates": result.skipped_updates,
                    "skipped_steps": result.skipped_steps,
                    "returns_file": str(returns_file),
                }
            )
            fh.flush()  # one complete line per finished run
            if progress:
                progress(finished, total)
    return read_results(out)


def regret_table(rows: Sequence[dict[str, Any]], out: str | os.PathLike) -> list[dict[str, Any]]:
    """Mean ± standard error over seeds of the regret per (env, algo, speed).

    Exact regret where the environment knows the optimum (NS-Reco), surrogate regret
    (paper §9, against the best of the algorithms in the rows) elsewhere.

    Returns
    -------
    list of dict
        ``env, algo, speed, metric ("regret" | "surrogate regret"), mean, se, seeds``.
    """
    out = Path(out)
    groups: dict[tuple[str, float], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        run = SimpleNamespace(
            seed=r["seed"],
            regret=r["regret"],
            returns=np.load(out / r["returns_file"]) if r["regret"] is None else None,
        )
        groups[(r["env"], r["speed"])][r["algo"]].append(run)
    table = []
    for (env, speed), by_algo in sorted(groups.items()):
        by_algo = {a: sorted(rs, key=lambda run: run.seed) for a, rs in by_algo.items()}
        lengths = {
            len(run.returns) for rs in by_algo.values() for run in rs if run.returns is not None
        }
        if len(lengths) > 1:
            continue  # different episode counts: not comparable
        metric, values = compare(by_algo)
        for algo, v in values.items():
            mean, se = mean_se(v)
            table.append(
                dict(env=env, algo=algo, speed=speed, metric=metric, mean=mean, se=se, seeds=len(v))
            )
    return table


#: Columns of ``regret.csv``, one row per (env, algo, speed).
REGRET_COLUMNS = ("env", "algo", "speed", "metric", "mean", "se", "seeds")


def write_regret_table(table: Sequence[dict[str, Any]], out: str | os.PathLike) -> Path:
    """Write :func:`regret_table`'s rows to ``out/regret.csv`` (replaced whole); its path.

    Examples
    --------
    >>> import tempfile
    >>> row = dict(env="reco", algo="onpg", speed=1.0, metric="regret", mean=2.5, se=0.5, seeds=3)
    >>> path = write_regret_table([row], tempfile.mkdtemp())
    >>> path.read_text().splitlines()
    ['env,algo,speed,metric,mean,se,seeds', 'reco,onpg,1.0,regret,2.5,0.5,3']
    """
    path = Path(out) / "regret.csv"
    tmp = path.with_name("regret.csv.tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=REGRET_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(table)
    os.replace(tmp, path)  # whole file or none
    return path
