"""A time term is one class: a new one (a ramp that starts at a stated time) subclasses
``Term`` and works in the least-squares forecast, in the model average and in
``forecast_value``, which ask a term only through its methods and its ``reading``."""

from dataclasses import dataclass

import numpy as np
import pytest
from contextual_year import YEAR, YearOfRounds

import pyprog
from pyprog.timeseries import DayOfWeek, Term, TimeModel, blocks, season, step, time_forecast
from pyprog.timeseries import trend as linear_trend
from pyprog.value import ModelAverage, bin_estimates, bin_noise, reading


@dataclass(frozen=True)
class Ramp(Term):
    """max(0, t − at) / 100: a trend that starts at a stated time."""

    at: float
    reading = "continues"

    @property
    def name(self) -> str:
        return f"ramp({self.at:g})"

    def n_columns(self, t0, t1):
        return 1

    def labels_names(self, t0, t1):
        return [self.name]

    def columns(self, t, t0, t1):
        return (np.maximum(0.0, np.asarray(t, float) - self.at) / 100.0)[:, None]

    def window(self, a, b, t0, t1, n_points):
        lo, hi = max(a, self.at), max(b, self.at)  # ∫ max(0, t − at) dt over [a, b]
        area = ((hi - self.at) ** 2 - (lo - self.at) ** 2) / 2.0
        return np.array([area / (b - a) / 100.0])


def test_the_built_in_terms_say_what_they_read():
    assert [t.reading for t in (linear_trend(), step(3.0), season(7))] == [
        "continues",
        "persists",
        "returns",
    ]
    assert blocks(DayOfWeek()).reading is None  # the day of the week says nothing of it
    assert reading(TimeModel((step(1.0), blocks(DayOfWeek())))) == "persists"


def test_a_new_term_is_fit_exactly_by_least_squares():
    t = np.linspace(0.0, 300.0, 301)
    y = 2.0 + 0.03 * np.maximum(0.0, t - 150.0)
    f = time_forecast(y, t, Ramp(150.0), at=330.0, alpha=None)
    assert f.value == pytest.approx(2.0 + 0.03 * 180.0, rel=1e-10)
    window = time_forecast(y, t, Ramp(150.0), over=(310.0, 350.0), alpha=None)
    assert window.value == pytest.approx(2.0 + 0.03 * 180.0, rel=1e-10)  # the midpoint's
    assert f.model == "const+ramp(150)"


def test_a_new_term_takes_part_in_the_model_average():
    rng = np.random.default_rng(0)
    t = rng.uniform(0.0, YEAR, 4000)
    y = 1.0 + 0.004 * np.maximum(0.0, t - 200.0) + rng.normal(0.0, 0.3, t.size)
    binned = bin_estimates(y, t)
    models = [TimeModel(()), TimeModel((Ramp(200.0),)), TimeModel((linear_trend(),))]
    avg = ModelAverage(binned, bin_noise(y, t, binned), models)
    assert avg.top == "const+ramp(200)"
    value, low, high, _ = avg.forecast([("at", YEAR + 30)], 0.1)
    truth = 1.0 + 0.004 * (YEAR + 30 - 200.0)
    assert low[0] < truth < high[0] and abs(value[0] - truth) < 0.2


def test_forecast_value_takes_a_new_term_as_a_candidate():
    gen = YearOfRounds("trend")
    d = gen.sample(3000, np.random.default_rng(1))
    frame = {
        "time": d["times"],
        "action": d["action"],
        "reward": d["reward"],
        "pscore": d["pscore"],
    }
    out = pyprog.forecast_value(
        frame, d["action_dist"], at=YEAR + 20, context=None, candidates=[Ramp(0.0), linear_trend()]
    )
    assert out.model in ("const+ramp(0)", "const+trend")
    assert np.isfinite(out.value) and out.low < out.value < out.high


def test_a_term_that_is_not_a_term_is_refused():
    with pytest.raises(ValueError, match=r"or another pyprog.timeseries.Term; got .trend."):
        TimeModel(("trend",))
