"""How often the log alone can show a block-shaped drift: the power of one test fixed in advance.

For each of ``L`` logs of ``n`` rounds of a truth of :mod:`contextual_year` (the day of
week, 8 blocks of the year, both, and the stationary logs against each), the per-round
cross-fitted DR estimates (direct term pooled) are binned by day, and the robust Wald test
of :mod:`pyprog.offpolicy.drift_test` asks whether the truth's own model beats the
constant, the model named in advance: the most a test can do when it need not search among
44 candidates. It prints the share of logs rejected at 5 %, 1 % and at the drift gate's
own level (1 %/43 = 2.3·10⁻⁴).

Run ``python tests/weekday_power.py L n seed``; the guide quotes ``60 2000 0`` and ``60
1000 0`` (the Monte Carlo's own logs: the same seeds as ``value_montecarlo.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import YEAR, YearOfRounds

from pyprog.offpolicy import DayOfWeek, PeriodBlocks, TimeModel, blocks, round_estimates
from pyprog.offpolicy.drift_test import drift_statistic, smooth_variance
from pyprog.offpolicy.time_candidates import bin_estimates
from pyprog.offpolicy.time_cv import candidate, hc2_variance, stretches

LEVELS = (0.05, 0.01, 0.01 / 43)
WEEKDAY = TimeModel((blocks(DayOfWeek()),))
BLOCKS = TimeModel((blocks(PeriodBlocks(YEAR, 8)),))
BOTH = TimeModel((blocks(PeriodBlocks(YEAR, 8)), blocks(DayOfWeek())))
#: (truth, the model the test names): each block truth, and the stationary logs against it.
PAIRS = (("weekday", WEEKDAY), ("stationary", WEEKDAY), ("blocks", BLOCKS),
         ("stationary", BLOCKS), ("blocks_weekday", BOTH))  # fmt: skip


def drift_p_value(gen: YearOfRounds, n: int, seed: int, model: TimeModel = WEEKDAY) -> float:
    """The p-value of "``model`` against the constant" on one log (seeded as the Monte
    Carlo's); by default the day of the week."""
    d = gen.sample(n, np.random.default_rng(seed))
    keys = ("context", "times", "action", "reward", "pscore")
    est = round_estimates(*[d[k] for k in keys], d["action_dist"], estimator="dr",
                          pool_contexts=True, random_state=seed)  # fmt: skip
    b = bin_estimates(est.values, d["times"])
    c = candidate(model, b, stretches(b.m, 10))
    sw = np.sqrt(b.count)
    var = smooth_variance(b.count * hc2_variance(c, b.y, sw * b.y, sw))
    stat = drift_statistic(c.drift, (sw * b.y)[:, None], var)[0]
    return float(stats.f.sf(stat, c.drift.shape[1], b.m - c.p))


def main(L: int, n: int, seed: int) -> None:
    print(f"{L} logs of {n} rounds, seed {seed}; share of logs rejected at 5 %, 1 %, 2.3e-4:")
    for shape, model in PAIRS:
        gen = YearOfRounds(shape)
        seeds = [100_000 * seed + 1_000 * i + 7 for i in range(L)]
        p = np.array([drift_p_value(gen, n, s, model) for s in seeds])
        shares = ", ".join(f"{np.mean(p < a):.2f}" for a in LEVELS)
        print(f"{shape:15s} {model.name:36s} {shares}   median p {np.median(p):.2g}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
