"""Would a looser drift gate let pyprog beat OPFV on a short log? Point forecasts per gate.

On the logs of :mod:`value_montecarlo` (the same truths and seeds), ``forecast_value``'s
point forecast (``alpha=None``: no interval) is made under each drift gate of
``SETTINGS``: ``gate``, the standard errors by which the best model must beat the constant
in cross-validation, and ``drift_level``, the level of the robust Wald test that also lets
drift through (:func:`pyprog.offpolicy.time_selection.choose_time_model`; the defaults are
2 and 0.01). The gate is loosened wherever ``forecast_value`` makes that choice: the
value's model, and the check whether the contexts drift (which decides pooling the direct
term). Per truth and gate it prints pyprog's MSE over (log, target) and the paired z
of its per-log MSE against OPFV with φ from the data (negative: pyprog better); on the
stationary logs also the ratio to stationary DR, the issue's other bar (at most 1.1×).

A gate loose enough to let a faint drift through also lets spurious drift through on logs
that have none; this measures both sides of that trade on one set of logs.

Run ``python tests/gate_sweep.py L n seed`` (2 jobs); the guide quotes ``60 1000 0``.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import YearOfRounds
from value_montecarlo import SHAPES, baselines_of, log_of, paired, per_log_mse, shape_key

import pyprog.forecast.value as value_module
from pyprog.offpolicy.time_selection import choose_time_model

#: (gate, drift_level): the default first, then looser.
SETTINGS = ((2.0, 0.01), (1.0, 0.05), (0.5, 0.2), (0.0, 0.5))


def sweep_log(gen: YearOfRounds, n: int, seed: int) -> dict:
    """One log's truth, its baselines (:func:`value_montecarlo.baselines_of`) and pyprog's
    point forecast per setting."""
    d, frame, targets = log_of(gen, n, seed)
    out = {"truth": gen.value(targets).tolist(), **baselines_of(gen, gen.shape, d, targets, seed)}
    for gate, level in SETTINGS:
        loose = functools.partial(choose_time_model, gate=gate, drift_level=level)
        with mock.patch.object(value_module, "choose_time_model", loose):
            res = value_module.forecast_value(
                frame, d["action_dist"], at=list(targets), alpha=None, random_state=seed
            )
        out[(gate, level)] = [r.value for r in res]
    return out


def sweep_shape(shape: str, kw: dict, L: int, n: int, seed: int) -> tuple[str, list[dict]]:
    from threadpoolctl import threadpool_limits

    gen = YearOfRounds(shape, **kw)
    with threadpool_limits(1):
        logs = [sweep_log(gen, n, 100_000 * seed + 1_000 * i + 7) for i in range(L)]
    return shape_key(shape, kw), logs


def report(key: str, logs: list[dict]) -> str:
    opfv, dr = per_log_mse(logs, "opfv"), per_log_mse(logs, "dr")
    cells = []
    for setting in SETTINGS:
        mine = per_log_mse(logs, setting)
        extra = f", {mine.mean() / dr.mean():.2f}× DR" if key == "stationary" else ""
        cells.append(f"{mine.mean():.4f} (z {paired(mine, opfv)['z']:+.1f}{extra})")
    return f"| {key} | {opfv.mean():.4f} | " + " | ".join(cells) + " |"


def main(L: int, n: int, seed: int) -> None:
    from joblib import Parallel, delayed

    parts = Parallel(n_jobs=2)(delayed(sweep_shape)(s, kw, L, n, seed) for s, kw in SHAPES)
    heads = " | ".join(f"gate {g:g}, Wald {lv:g}" for g, lv in SETTINGS)
    print(f"{L} logs of {n} rounds, seed {seed}; MSE (paired z against OPFV, φ from data)")
    print(f"| truth | OPFV, φ from data | {heads} |")
    print("|---" * (2 + len(SETTINGS)) + "|")
    for key, logs in parts:
        print(report(key, logs))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
