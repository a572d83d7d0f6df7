"""``pyprog.forecast_value`` end to end (issue 33): 10⁴ and 10⁶ rounds of a year.

Run: ``taskset -c 0 pytest bench/bench_value.py --benchmark-columns=median,iqr,rounds``.
A log of tests/contextual_year.py (seasonal blocks, 10 actions, 10 context features), one
target a month after the log, the defaults (estimator "auto": DR, with and without q̂'s
time inputs, and IS; 44 candidate models; 400 bootstrap draws), one BLAS thread. The
baseline in each group is the per-round DR estimates alone (``round_estimates``), which
``forecast_value`` computes first: the "speed-up" column (< 1) says how many times that
step the whole forecast costs. The targets are 2 s at 10⁴ rounds and 60 s at 10⁶ (issue
33, on 2 cores; here one). The 10⁶ case is ``-m slow`` (a 10⁶-round log takes about 1 GB
to draw); its peak memory is the whole run's, read with ``/usr/bin/time -v`` (2.0 GB on
29 Nov 2026, the README's number).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from pyprog.forecast.value import forecast_value
from pyprog.offpolicy import round_estimates
from pyprog.offpolicy.time_candidates import default_reward_time_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from contextual_year import YEAR, YearOfRounds

SIZES = [pytest.param(10_000, id="1e4"), pytest.param(1_000_000, id="1e6", marks=pytest.mark.slow)]
_LOGS: dict = {}


def log_of(n: int) -> dict:
    if n not in _LOGS:
        d = YearOfRounds("blocks").sample(n, np.random.default_rng(0))
        frame = {"time": d["times"], "action": d["action"], "reward": d["reward"],
                 "pscore": d["pscore"]}  # fmt: skip
        frame.update({f"x{j}": d["context"][:, j] for j in range(d["context"].shape[1])})
        _LOGS[n] = (d, frame)
    return _LOGS[n]


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("role", ["baseline", "candidate"])
def bench_forecast_value(benchmark, n, role):
    d, frame = log_of(n)
    benchmark.group = f"forecast_value, {n} rounds"
    benchmark.extra_info.update(role=role)
    if role == "baseline":
        benchmark.extra_info.update(impl="round_estimates (DR)")
        tf = default_reward_time_model(float(d["times"].min()), float(d["times"].max()))
        keys = ("context", "times", "action", "reward", "pscore", "action_dist")
        out = benchmark.pedantic(
            round_estimates, args=[d[k] for k in keys],
            kwargs={"time_feature": tf, "random_state": 0}, rounds=1 if n > 10**5 else 3,
        )  # fmt: skip
        assert out.values.shape == (n,)
        return
    benchmark.extra_info.update(impl="forecast_value", target_seconds=2.0 if n <= 10**4 else 60.0)
    f = benchmark.pedantic(
        forecast_value, args=(frame, d["action_dist"]), kwargs={"at": YEAR + 30.0},
        rounds=1 if n > 10**5 else 3,
    )  # fmt: skip
    assert f.low <= f.value <= f.high
