"""Every result with an interval answers the same questions, on both paths (issue 49)."""

import math

import numpy as np
import pytest

import pyprog
from pyprog.forecast.logged import forecast_logs
from pyprog.forecast.safety import difference_safety_test
from pyprog.timeseries import INTERVAL_ALPHA, TEST_ALPHA, IntervalResult, time_forecast
from pyprog.value import ModelAverage
from pyprog.value.forecast import forecast_value


def _rounds(n=600, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 120.0, n))
    a = rng.integers(0, 2, n)
    r = rng.normal(0.5 + 0.3 * a, 0.2)
    return {
        "time": t,
        "x": rng.normal(size=(n, 1)),
        "action": a,
        "reward": r,
        "pscore": 0.5 + 0 * t,
    }


def _episode_log(n=60):
    rng = np.random.default_rng(1)
    return {
        "reward": rng.normal(1.0 + np.arange(n) / n, 0.3),
        "log_pi": np.full(n, -0.5),
        "log_beta": np.full(n, -0.7),
    }


@pytest.fixture(scope="module")
def results():
    y = np.sin(np.arange(40) / 5.0) + np.random.default_rng(0).normal(0, 0.1, 40)
    episode = pyprog.nis_forecast(y, 1, "linear", alpha=0.2, random_state=0)
    timed = time_forecast(y, np.arange(40.0), at=45.0, alpha=0.2)
    value = forecast_value(_rounds(), np.tile([0.0, 1.0], (600, 1)), at=130.0, alpha=0.2)
    safety = difference_safety_test(y - 0.5, delta=1, basis="linear", alpha=0.2, random_state=0)
    return {
        "Forecast": episode,
        "TimeForecast": timed,
        "ValueForecast": value,
        "SafetyTest": safety,
    }


@pytest.mark.parametrize("kind", ["Forecast", "TimeForecast", "ValueForecast", "SafetyTest"])
def test_every_result_is_an_interval_result_with_the_same_answers(results, kind):
    r = results[kind]
    assert isinstance(r, IntervalResult) and type(r).__name__ == kind
    assert r.level == pytest.approx(0.8) and r.alpha == 0.2
    assert r.covers(r.value) and r.covers(r.low) and not r.covers(r.low - 1e-9 - abs(r.low))
    assert r.width == r.high - r.low >= 0
    d = r.interval_dict()
    assert set(d) == {"value", "low", "high", "alpha"} and d["value"] == r.value
    assert set(d) <= set(r.as_dict())


def test_a_one_sided_bound_has_no_upper_end(results):
    s = results["SafetyTest"]
    assert s.high == math.inf and s.covers(1e300) and s.width == math.inf
    assert s.interval_text() == f">= {s.low:.4g} (80% lower bound)"
    assert s.interval_dict()["high"] is None  # JSON has no infinity


def test_the_text_names_the_level_and_the_kind(results):
    v = results["ValueForecast"]
    assert v.interval_text("prediction") == f"[{v.low:.4g}, {v.high:.4g}] (80% prediction interval)"
    assert "(80% prediction interval)" in str(v)


def test_no_interval_is_said_not_guessed():
    f = pyprog.nis_forecast(np.arange(20.0), 1, "linear")
    assert f.level is None and f.width is None and f.interval_text() == ""
    with pytest.raises(
        ValueError, match="Forecast has no interval: it was computed with alpha=None"
    ):
        f.covers(1.0)
    value, grad, *_ = f  # still a named tuple
    assert value == f.value and f.alpha is None


def test_one_default_level_per_kind_of_call():
    import inspect

    def default(fn, name="alpha"):
        return inspect.signature(fn).parameters[name].default

    assert (INTERVAL_ALPHA, TEST_ALPHA) == (0.1, 0.05)
    for fn in (forecast_value, time_forecast, forecast_logs, ModelAverage.predict):
        assert default(fn) == INTERVAL_ALPHA, fn.__qualname__
    assert default(forecast_logs, "safety_alpha") == TEST_ALPHA
    for fn in (pyprog.safety_test, difference_safety_test):
        assert default(fn) == TEST_ALPHA, fn.__qualname__
    from pyprog.stats.verdicts import ALPHA

    assert ALPHA == TEST_ALPHA


def test_forecast_logs_tests_at_its_own_size():
    out = forecast_logs(_episode_log(), basis="linear", alpha=0.3, safety_alpha=0.01, n_boot=200)
    assert out.nis.alpha == 0.3 and out.safety.alpha == 0.01
    assert out.options["alpha"] == 0.3 and out.options["safety_alpha"] == 0.01
    with pytest.raises(ValueError, match=r"safety_alpha must be a number in \(0, 1\)"):
        forecast_logs(_episode_log(), basis="linear", safety_alpha=1.5)
