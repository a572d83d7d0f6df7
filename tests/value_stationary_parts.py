"""Where the forecast's error on stationary logs comes from: the forecast with parts of its
machinery held fixed, against stationary DR (the mean of the per-round estimates).

On ``tests/value_montecarlo.py``'s stationary logs (seed 0: the same logs as its first
``L``, 8 targets 1-360 days ahead each), the mean squared error over targets of:

* ``default``: ``forecast_value`` as a user calls it;
* ``dr``: the estimator fixed to DR (no choice among DR, DR with q̂ untimed and IS);
* ``dr untimed``: DR with q̂ without time inputs;
* ``dr untimed, const``: and the constant as the only candidate;
* ``dr untimed, const + trend``: the constant and a linear trend as the candidates.

Each row prints its mean MSE, its ratio to stationary DR's and the paired z of the per-log
difference (one-sided). Run ``python tests/value_stationary_parts.py L n`` (default 20 1000).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import YearOfRounds
from value_montecarlo import log_of

from pyprog.offpolicy import round_estimates
from pyprog.timeseries.terms import trend
from pyprog.value.forecast import forecast_value

PARTS = {
    "default": {},
    "dr": {"estimator": "dr"},
    "dr untimed": {"estimator": "dr", "time_feature": None},
    "dr untimed, const": {"estimator": "dr", "time_feature": None, "models": [None]},
    "dr untimed, const + trend": {
        "estimator": "dr", "time_feature": None, "models": [None, trend()]
    },
}  # fmt: skip


def errors(L: int, n: int) -> dict:
    """Each part's per-log MSE, and stationary DR's: {name: (L,)}."""
    gen = YearOfRounds("stationary")
    out = {name: [] for name in [*PARTS, "stationary DR"]}
    for i in range(L):
        seed = 1_000 * i + 7  # value_montecarlo's seeds for seed 0
        d, frame, targets = log_of(gen, n, seed)
        truth = gen.value(targets)
        for name, kw in PARTS.items():
            res = forecast_value(frame, d["action_dist"], at=list(targets), random_state=seed, **kw)
            out[name].append(np.mean((np.array([r.value for r in res]) - truth) ** 2))
        args = [d[k] for k in ("context", "times", "action", "reward", "pscore", "action_dist")]
        dr = round_estimates(*args, estimator="dr", random_state=seed).value
        out["stationary DR"].append(np.mean((dr - truth) ** 2))
    return {name: np.array(v) for name, v in out.items()}


def main(argv: list[str]) -> None:
    from threadpoolctl import threadpool_limits

    L = int(argv[1]) if len(argv) > 1 else 20
    n = int(argv[2]) if len(argv) > 2 else 1000
    with threadpool_limits(1):
        err = errors(L, n)
    base = err["stationary DR"]
    for name, e in err.items():
        diff = e - base
        se = diff.std(ddof=1) / np.sqrt(L)
        z = diff.mean() / se if se > 0 else 0.0
        print(f"{name:28s} MSE {e.mean():.5f}  {e.mean() / base.mean():.2f}x DR  z {z:+.1f}")


if __name__ == "__main__":
    main(sys.argv)
