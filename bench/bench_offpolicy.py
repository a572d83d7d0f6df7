"""Per-round contextual estimates (issue 33): cross-fitted DR against IS, side by side.

Run: ``taskset -c 0 pytest bench/bench_offpolicy.py --benchmark-columns=median,iqr,rounds``.
10⁴ rounds, 10 actions, 10 context features (tests/contextual_year.py), one BLAS thread.
IS is the baseline (a division and a product per round: no model); the candidate is DR with
the default reward model (ActionRidge, GCV) cross-fitted on 5 random folds, without and with
8 blocks of the year as a time feature. The "speed-up" column is then IS / DR (< 1: how many
times slower DR is); the target is DR under 1 s on one core.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from pyprog.offpolicy import round_estimates
from pyprog.timeseries import PeriodBlocks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from contextual_year import YEAR, YearOfRounds

N = 10_000
LOG = YearOfRounds("blocks").sample(N, np.random.default_rng(0))
KEYS = ("context", "times", "action", "reward", "pscore", "action_dist")
CASES = [("no-time-feature", None), ("8-blocks", PeriodBlocks(YEAR, 8))]


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@pytest.mark.parametrize("case, feature", CASES, ids=[c for c, _ in CASES])
@pytest.mark.parametrize("estimator, role", [("is", "baseline"), ("dr", "candidate")])
def bench_round_estimates(benchmark, case, feature, estimator, role):
    benchmark.group = f"offpolicy 10^4 rounds, {case}"
    benchmark.extra_info.update(role=role, impl=estimator)
    if role == "candidate":
        benchmark.extra_info.update(target_seconds=1.0)
    args = [LOG[k] for k in KEYS]
    est = benchmark(
        round_estimates, *args, estimator=estimator, time_feature=feature, random_state=0
    )
    assert est.values.shape == (N,)
