"""Tables of stored runs: mean ± standard error over seeds, per group.

:func:`store_summary` summarises a result store per (env, algo, speed, setting);
:func:`regret_table` gives the (surrogate) regret per (env, algo, speed) of a grid's runs,
as ``pyprog run`` prints it and writes it to ``regret.csv``. The numbers come from
:mod:`pyprog.stats.summary` (one definition of mean ± s.e. and of surrogate regret).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from pyprog.results.store import ResultStore
from pyprog.stats.summary import compare, mean_se

__all__ = ["REGRET_COLUMNS", "regret_table", "store_summary"]

#: Columns of :func:`regret_table`'s rows (and of ``regret.csv``).
REGRET_COLUMNS = ("env", "algo", "speed", "metric", "mean", "se", "seeds")


def store_summary(
    store: ResultStore,
    env: str | None = None,
    algo: str | None = None,
    speed: float | None = None,
    sweep: str | None = None,
) -> list[dict[str, Any]]:
    """Mean and standard error over seeds, per (env, algo, speed, setting_hash) of a store.

    The metric is the regret where every seed of the group has one (NS-Reco), else the mean
    return (surrogate regret compares algorithms with each other: compute it from
    :meth:`~pyprog.results.store.ResultStore.rows` with
    :func:`pyprog.stats.summary.surrogate_regret`, or use :func:`regret_table`). Reads no
    arrays.

    Parameters
    ----------
    store : ResultStore
    env, algo, speed, sweep : optional
        Only the runs with these values.

    Returns
    -------
    list of dict
        One dict per group, ordered by key, with keys ``env, algo, speed, setting_hash,
        hyper, metric`` (``"regret"`` or ``"mean_return"``), ``mean``, ``stderr``
        (``std(ddof=1) / sqrt(seeds)``; NaN for a single seed) and ``seeds``.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from pyprog.runner.loop import RunResult
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
    >>> with ResultStore(path) as store:
    ...     for seed, regret in enumerate([1.0, 2.0, 3.0]):
    ...         _ = store.add(RunResult("reco", "onpg", 2.0, seed, {"lr": 0.01}, np.ones(5),
    ...                                 regret, None, None, 0.1, 5, 0, 0))
    ...     [(s["metric"], s["mean"], round(s["stderr"], 3), s["seeds"])
    ...      for s in store_summary(store)]
    [('regret', 2.0, 0.577, 3)]
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in store.records(env, algo, speed, sweep):
        groups.setdefault((r["env"], r["algo"], r["speed"], r["setting_hash"]), []).append(r)
    out = []
    for (g_env, g_algo, g_speed, g_hash), members in groups.items():
        use_regret = all(m["regret"] is not None for m in members)
        column = "regret" if use_regret else "mean_return"
        values = [math.nan if m[column] is None else m[column] for m in members]
        mean, stderr = mean_se(values)
        out.append(
            {
                "env": g_env,
                "algo": g_algo,
                "speed": g_speed,
                "setting_hash": g_hash,
                "hyper": json.loads(members[0]["hyper"]),
                "metric": column,
                "mean": mean,
                "stderr": stderr,
                "seeds": len(values),
            }
        )
    return out


def regret_table(runs: Sequence[Any]) -> list[dict[str, Any]]:
    """Mean ± standard error over seeds of the regret per (env, algo, speed).

    Exact regret where the environment knows the optimum (NS-Reco), surrogate regret
    (paper §9, against the best of the algorithms in ``runs``) elsewhere; with one algorithm
    and no exact regret, the mean return per episode (a surrogate regret against itself would
    be zero up to noise). Groups are ordered
    by (env, speed), algorithms in the order they first appear in ``runs``; an (env, speed)
    whose runs without regret differ in length is left out (not comparable).

    Parameters
    ----------
    runs : sequence
        Objects with ``env, algo, speed, seed, regret`` and ``returns`` attributes
        (:class:`~pyprog.results.rows.StoredRun`, :class:`~pyprog.runner.loop.RunResult`).

    Returns
    -------
    list of dict
        ``env, algo, speed, metric ("regret" | "surrogate regret" | "mean return"), mean, se,
        seeds``.

    Examples
    --------
    >>> from types import SimpleNamespace as Run
    >>> runs = [Run(env="reco", algo="onpg", speed=1.0, seed=k, regret=r, returns=None)
    ...         for k, r in enumerate([2.0, 3.0])]
    >>> [(t["algo"], t["metric"], t["mean"], t["seeds"]) for t in regret_table(runs)]
    [('onpg', 'regret', 2.5, 2)]
    """
    groups: dict[tuple[str, Any], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        groups[(run.env, run.speed)][run.algo].append(run)
    table = []
    for (env, speed), by_algo in sorted(groups.items(), key=lambda kv: _group_order(kv[0])):
        by_algo = {a: sorted(rs, key=lambda run: run.seed) for a, rs in by_algo.items()}
        lengths = {len(run.returns) for rs in by_algo.values() for run in rs if run.regret is None}
        if len(lengths) > 1:
            continue  # different episode counts: not comparable
        if len(by_algo) == 1 and any(run.regret is None for rs in by_algo.values() for run in rs):
            # surrogate regret against itself is 0 ± noise: show what the runs returned
            metric = "mean return"
            values = {
                a: np.array([np.mean(run.returns) for run in rs]) for a, rs in by_algo.items()
            }
        else:
            metric, values = compare(by_algo)
        for algo, v in values.items():
            mean, se = mean_se(v)
            table.append(
                dict(env=env, algo=algo, speed=speed, metric=metric, mean=mean, se=se, seeds=len(v))
            )
    return table


def _group_order(group: tuple[str, Any]) -> tuple:
    env, speed = group
    return (env, speed is not None, speed or 0.0)
