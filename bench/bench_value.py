"""``pyprog.forecast_value`` end to end (issues 33, 47): 10³ to 10⁶ rounds, one to ten years.

Run: ``taskset -c 0 pytest bench/bench_value.py --benchmark-columns=median,iqr,rounds``
(``-m slow`` for 10⁶ rounds and the ten-year log). A log of tests/contextual_year.py
(seasonal blocks, 10 actions, 10 context features), one target a month after the log, a
90 % interval, the defaults (estimator "auto": DR with and without q̂'s time inputs, and
IS; the 74 candidates averaged), one BLAS thread; the 1,000-round log with a callable
policy. The baseline in each group is the per-round DR estimates alone
(``round_estimates``), which ``forecast_value`` computes first: the "speed-up" column
(< 1) says how many times that step the whole forecast costs. The targets (issue 47):
under 1 s at 10³ (callable policy) and 10⁴ rounds, 20 s at 10⁶, 20 s for 10⁵ rounds
over ten years (3,650 day bins). Against the cascade it replaced: ``bench/value_speedup.py``.
Peak memory at 10⁶ is the whole run's, read with ``/usr/bin/time -v``.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from pyprog.offpolicy import round_estimates
from pyprog.value.candidates import default_reward_time_model
from pyprog.value.forecast import forecast_value

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from contextual_year import YEAR, YearOfRounds

SIZES = [
    pytest.param(1_000, 1.0, id="1e3-callable"),
    pytest.param(10_000, 1.0, id="1e4"),
    pytest.param(1_000_000, 1.0, id="1e6", marks=pytest.mark.slow),
    pytest.param(100_000, 10.0, id="1e5-ten-years", marks=pytest.mark.slow),
]
TARGET_SECONDS = {1_000: 1.0, 10_000: 1.0, 1_000_000: 20.0, 100_000: 20.0}
_LOGS: dict = {}


def log_of(n: int, years: float = 1.0) -> tuple:
    if (n, years) not in _LOGS:
        gen = YearOfRounds("blocks")
        d = gen.sample(n, np.random.default_rng(0), span=years * YEAR)
        frame = {"time": d["times"], "action": d["action"], "reward": d["reward"],
                 "pscore": d["pscore"]}  # fmt: skip
        frame.update({f"x{j}": d["context"][:, j] for j in range(d["context"].shape[1])})
        _LOGS[n, years] = (gen, d, frame)
    return _LOGS[n, years]


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@pytest.mark.parametrize("n, years", SIZES)
@pytest.mark.parametrize("role", ["baseline", "candidate"])
def bench_forecast_value(benchmark, n, years, role):
    gen, d, frame = log_of(n, years)
    benchmark.group = f"forecast_value, {n} rounds over {years:g} year(s)"
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
    benchmark.extra_info.update(impl="forecast_value", target_seconds=TARGET_SECONDS[n])
    policy, kw = d["action_dist"], {}
    if n == 1_000:  # a callable policy, as a user's
        policy, kw = gen.evaluation, {"n_actions": gen.n_actions}
    f = benchmark.pedantic(
        forecast_value, args=(frame, policy), kwargs={"at": d["times"].max() + 30.0, **kw},
        rounds=1 if n > 10**5 else 3,
    )  # fmt: skip
    assert f.low <= f.value <= f.high
