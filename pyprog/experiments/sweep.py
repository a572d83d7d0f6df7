"""Hyper-parameter sweeps into a result store, and the best setting per (env, algo, speed).

``pyprog sweep`` draws settings from the paper's search ranges (appendix D.2, SPEC §6)
with a seeded generator — the same command draws the same settings — and runs every
(env, algo, speed, setting, seed) not yet in the store, on local cores (joblib) or on a
Dask cluster. Only this coordinating process writes to the store, one committed row per
finished run, so a sweep killed at any moment resumes where it stopped.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from pyprog.experiments.grid import check_grid_envs, check_grid_size, with_dtype
from pyprog.experiments.runs import RunTask, run_tasks
from pyprog.learn.hyperparams import ENVS, Hyper
from pyprog.results.store import ResultStore
from pyprog.runner.adapter import check_env_spec, default_gauss_std, is_builtin, resolve_env
from pyprog.stats.summary import mean_se

__all__ = [
    "SEARCH_SPACE",
    "SweepTask",
    "best_settings",
    "draw_settings",
    "run_sweep",
    "sweep_tasks",
]

#: The paper's search ranges (appendix D.2), as SPEC §6 states them.
SEARCH_SPACE: dict[str, Any] = {
    "lr": ("log-uniform", 5e-5, 5e-2),
    "entropy_lambda": ("log-uniform or 0", 1e-4, 1e-2),
    "delta": ("choice", (1, 3, 5)),
    "inner_steps": ("choice × delta", (10, 20, 30)),
    "clip": ("choice", (5.0, 10.0, 15.0)),
    "d": ("choice", (3, 5, 7)),
    "gauss_std": ("uniform", 0.5, 2.5),  # NS-Diabetes; other Box actions: × their default / 1.5
    "hidden": ("choice", (16, 32, 64)),  # NS-Reacher
    "gamma": ("fixed", 0.99),
}
#: Probability that a drawn setting has no entropy bonus (λ_H = 0).
P_NO_ENTROPY = 0.1


def _env_stream(env: str) -> int:
    """A stable number per environment string (the built-ins keep their index 0, 1, 2)."""
    if env in ENVS:
        return ENVS.index(env)
    return int.from_bytes(hashlib.sha256(env.encode("utf-8")).digest()[:4], "little")


def _continuous_default_std(env: str) -> float | None:
    """The default Gaussian std of a non-built-in environment (None: discrete actions)."""
    resolved = resolve_env(env)
    try:
        return default_gauss_std(resolved.environment.action_space)
    finally:
        resolved.environment.close()


def draw_settings(env: str, n: int, seed: int = 0, basis: str = "fourier") -> list[Hyper]:
    """``n`` settings for ``env`` drawn from :data:`SEARCH_SPACE`, reproducibly from ``seed``.

    Learning rates and λ_H are log-uniform (λ_H is 0 with probability
    :data:`P_NO_ENTROPY`), the rest uniform over their sets or ranges; the same
    (env, n, seed, basis) always gives the same settings, and a larger ``n`` extends a
    smaller one. Every algorithm of a sweep is run with the same settings.

    Any other environment (a Gymnasium id or ``module:function``) gets linear policies;
    with ``Box`` actions, ``gauss_std`` is drawn from the paper's range scaled to the
    action space (× :func:`pyprog.runner.adapter.default_gauss_std` / 1.5, the range's middle).

    Examples
    --------
    >>> a = draw_settings("reacher", 3, seed=1)
    >>> a == draw_settings("reacher", 3, seed=1), a[:2] == draw_settings("reacher", 2, seed=1)
    (True, True)
    >>> {h.hidden in (16, 32, 64) for h in a}
    {True}
    """
    check_env_spec(env)
    std_scale = None if is_builtin(env) else _continuous_default_std(env)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of settings must be an integer >= 1; got {n!r}")
    settings = []
    for k in range(n):
        # one stream per (seed, env, setting): settings do not depend on n
        rng = np.random.default_rng([seed, _env_stream(env), k])
        delta = int(rng.choice([1, 3, 5]))
        values: dict[str, Any] = {
            "lr": float(np.exp(rng.uniform(np.log(5e-5), np.log(5e-2)))),
            "entropy_lambda": float(np.exp(rng.uniform(np.log(1e-4), np.log(1e-2)))),
            "delta": delta,
            "inner_steps": int(rng.choice([10, 20, 30])) * delta,
            "clip": float(rng.choice([5.0, 10.0, 15.0])),
            "d": int(rng.choice([3, 5, 7])),
            "basis": basis,
            "gamma": 0.99,
        }
        if rng.random() < P_NO_ENTROPY:
            values["entropy_lambda"] = 0.0
        gauss_std = float(rng.uniform(0.5, 2.5))
        hidden = int(rng.choice([16, 32, 64]))
        if env == "diabetes":
            values["gauss_std"] = gauss_std
        if env == "reacher":
            values["hidden"] = hidden
        if std_scale is not None:
            values["gauss_std"] = gauss_std * std_scale / 1.5
        settings.append(Hyper(**values))
    return settings


#: One run of a sweep: a :class:`~pyprog.experiments.runs.RunTask` (the name sweeps used).
SweepTask = RunTask


def sweep_tasks(
    envs: Sequence[str],
    algos: Sequence[str],
    speeds: Sequence[float] | None,
    settings: int | dict[str, list[Hyper]],
    seeds: Iterable[int],
    episodes: int,
    setting_seed: int = 0,
    basis: str = "fourier",
    dtype: str | None = None,
) -> list[SweepTask]:
    """Every (env, setting, algo, speed, seed) of a sweep, settings first so that a partial
    sweep has whole settings.

    ``speeds`` apply to the built-in environments (None: 0-4); any other environment runs
    with speed None, and giving speeds with it is an error. ``dtype``, when given, replaces
    every setting's ``Hyper.dtype`` (float32 policies: ``"float32"``).
    """
    seeds = list(seeds)
    env_speeds = check_grid_envs(envs, speeds)
    n_settings = settings if isinstance(settings, int) else max(map(len, settings.values()))
    n_speeds = sum(len(s) for s in env_speeds.values())
    check_grid_size(n_settings * len(algos) * n_speeds * len(seeds), "the sweep")
    tasks = []
    for env in envs:
        drawn = (
            settings[env]
            if isinstance(settings, dict)
            else draw_settings(env, settings, setting_seed, basis)
        )
        for s, hyper in enumerate(drawn):
            if dtype is not None:
                hyper = with_dtype(hyper, dtype, env)
            for algo in algos:
                for speed in env_speeds[env]:
                    speed = None if speed is None else float(speed)
                    for seed in seeds:
                        tasks.append(SweepTask(env, algo, speed, s, hyper, int(seed), episodes))
    return tasks


def run_sweep(
    tasks: Sequence[SweepTask],
    store_path: str,
    name: str | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, int]:
    """Run a sweep's tasks into the store: :func:`pyprog.experiments.runs.run_tasks` (the
    writer every command shares: same parameters, same result), after checking that the
    sweep has runs at all. ``name`` tags the sweep's rows for ``pyprog best --name``.
    """
    if name is not None and not name.strip():
        raise ValueError("--name must name the sweep; got an empty name (omit it for no tag)")
    if not tasks:
        raise ValueError("the sweep has no runs (check --speeds, --seeds and --settings)")
    return run_tasks(
        tasks, store_path, name=name, jobs=jobs, scheduler=scheduler, progress=progress
    )


def best_settings(store_path: str, sweep: str | None = None) -> tuple[dict, list[dict]]:
    """The best stored setting per (env, algo, speed), over its seeds.

    NS-Reco: the lowest mean regret. Elsewhere: the lowest mean surrogate regret, against
    ``J̃*_k``, the best mean return any compared (algo, setting) got in episode k at that
    (env, speed) — which ranks the settings of one algorithm as their mean return does.

    Settings are compared on equal footing only: runs of the same length (per (env, speed),
    the most common one; on a tie, the longest) and, per algorithm, the same seeds (the
    seed set that most settings have; on a tie, the larger). Settings with other seeds or
    lengths — an interrupted sweep, a trial with fewer episodes — are left out and counted.
    The stored returns are read one (env, speed) at a time.

    Returns
    -------
    table : dict
        ``{env: {algo: {speed: hyper-parameters}}}``, the format of the shipped paper
        settings (``pyprog/data/hyperparams.json``), which :func:`pyprog.run` and
        ``pyprog run --hyper`` accept.
    rows : list of dict
        One per (env, algo, speed): ``metric``, ``mean``, ``se``, ``seeds`` (of every
        compared setting), ``episodes``, ``settings`` (how many were compared),
        ``left_out`` (how many were not), ``setting_hash`` and ``hyper`` (the winning
        setting).
    """
    if sweep is not None and not sweep.strip():
        raise ValueError("--name must name a sweep; got an empty name (omit it for every run)")
    with ResultStore(store_path, readonly=True) as store:
        lengths = store.lengths(sweep=sweep)
        if not lengths:
            if sweep is None:
                raise ValueError(f"the store {store_path} has no runs")
            tags = store.sweeps()
            known = ", ".join(
                f"{'untagged' if t is None else repr(t)} ({n} runs)" for t, n in tags.items()
            )
            raise ValueError(
                f"the store {store_path} has no runs of sweep {sweep!r}; it holds "
                f"{known or 'no runs'}. A run keeps the tag of the sweep that first stored "
                "it: a sweep over settings already stored runs nothing new and tags nothing"
            )
        table: dict[str, dict[str, dict[str, Any]]] = {}
        rows: list[dict] = []
        # one (env, speed) in memory at a time: a large sweep's returns need not fit at once
        for (env, speed), counts in sorted(lengths.items(), key=_group_order):
            common = max(counts, key=lambda n: (counts[n], n))  # most common; ties: longest
            by_setting: dict[tuple[str, str], list] = defaultdict(list)
            every: dict[str, set[str]] = defaultdict(set)
            for r in store.rows(env=env, speed=speed, sweep=sweep):
                every[r.algo].add(r.setting_hash)
                if r.episodes == common:
                    by_setting[(r.algo, r.setting_hash)].append(r)
            compared = _same_seeds(by_setting)
            left_out = {
                a: len(hashes) - sum(k[0] == a for k in compared) for a, hashes in every.items()
            }
            _best_of_group(env, speed, compared, table, rows, left_out)
    return table, rows


def _group_order(item: tuple) -> tuple:
    (env, speed), _ = item
    return (env, speed is not None, speed or 0.0)


def _same_seeds(by_setting: dict[tuple[str, str], list]) -> dict[tuple[str, str], list]:
    """Per algorithm, the settings run on its most common seed set (ties: the larger)."""
    seeds = {k: tuple(sorted(r.seed for r in rs)) for k, rs in by_setting.items()}
    keep = {}
    for algo in {a for a, _ in by_setting}:
        sets = Counter(v for k, v in seeds.items() if k[0] == algo)
        reference = max(sets, key=lambda v: (sets[v], len(v), v))
        keep.update(
            {k: rs for k, rs in by_setting.items() if k[0] == algo and seeds[k] == reference}
        )
    return keep


def _best_of_group(
    env: str,
    speed: float,
    by_setting: dict[tuple[str, str], list],
    table: dict,
    rows: list,
    left_out: dict[str, int],
) -> None:
    """Rank one (env, speed)'s settings per algorithm; add each winner to table and rows."""
    exact = all(r.regret is not None for rs in by_setting.values() for r in rs)
    if exact:
        scores = {k: np.array([r.regret for r in rs]) for k, rs in by_setting.items()}
        metric = "regret"
    else:
        curves = {k: np.mean([r.returns for r in rs], axis=0) for k, rs in by_setting.items()}
        best_curve = np.max(np.stack(list(curves.values())), axis=0)
        # |Σ J̃*|: negative returns (NS-Reacher) must not flip the ranking
        total = abs(best_curve.sum()) or 1.0
        scores = {
            k: np.array([(best_curve - r.returns).sum() / total for r in rs])
            for k, rs in by_setting.items()
        }
        metric = "surrogate regret"
    for algo in sorted({a for a, _ in by_setting}):
        candidates = {k: v for k, v in scores.items() if k[0] == algo}
        key = min(candidates, key=lambda k: candidates[k].mean())
        mean, se = mean_se(candidates[key])
        hyper = by_setting[key][0].hyper
        label = "-" if speed is None else f"{speed:g}"  # "-": the drift is not pyprog's
        table.setdefault(env, {}).setdefault(algo, {})[label] = hyper
        rows.append(
            {
                "env": env,
                "algo": algo,
                "speed": speed,
                "metric": metric,
                "mean": mean,
                "se": se,
                "seeds": len(candidates[key]),
                "settings": len(candidates),
                "left_out": left_out.get(algo, 0),
                "setting_hash": key[1],
                "episodes": by_setting[key][0].episodes,
                "hyper": hyper,
            }
        )
