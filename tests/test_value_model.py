"""The shrinkage model of the value in time (pyprog.value): its algebra, not its coverage.

What is checked here: the REML gradient against finite differences; a variance component
is recovered when present and shrunk to 0 when absent; the forecast is linear in the bins
(f = ζ ȳ at the mode); the walk's ramps, window averages and future increments; the
noise estimator; the prediction interval is wider than the mean's by the day's deviation;
bad input. The Monte Carlo of its coverage is docs/guides/value-model.md's.
"""

from __future__ import annotations

import numpy as np
import pytest

from pyprog.offpolicy.time_candidates import Binned, bin_estimates
from pyprog.offpolicy.time_features import DayOfWeek
from pyprog.value.bins import bin_noise
from pyprog.value.effects import (
    LevelsEffect,
    LevelWalk,
    SeasonEffect,
    TrendEffect,
    default_effects,
)
from pyprog.value.model import ValueModel
from pyprog.value.reml import MixedModel


def season_problem(amplitude: float, m: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(float(m))
    z = np.column_stack([np.cos(2 * np.pi * t / 50), np.sin(2 * np.pi * t / 50)])
    noise = rng.uniform(0.05, 0.2, m)
    y = 1.0 + amplitude * z[:, 0] + rng.normal(0, np.sqrt(noise))
    return t, z, y, noise


def test_reml_gradient_matches_finite_differences():
    t, z, y, noise = season_problem(0.5)
    dow = np.eye(7)[(t % 7).astype(int)]
    mm = MixedModel(y, noise, np.ones((t.size, 1)), [z, dow], 1.0)
    theta = np.array([0.2, 0.7, 0.3])
    _, grad = mm.objective_and_grad(theta)
    h = 1e-6
    numeric = [
        (mm.solve(theta + e).objective - mm.solve(theta - e).objective) / (2 * h)
        for e in np.eye(3) * h
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_a_present_effect_is_kept_and_an_absent_one_shrunk_to_zero():
    t, z, y, noise = season_problem(0.8)
    dow = np.eye(7)[(t % 7).astype(int)]  # absent from y
    fit = MixedModel(y, noise, np.ones((t.size, 1)), [z, dow], 1.0).fit()
    assert 0.3 < fit.theta[1] < 2.0
    assert fit.theta[2] < 0.05
    # the season's coefficients are recovered (the cosine 0.8, the sine 0)
    b = fit.coef[1:3] * fit.theta[1]
    np.testing.assert_allclose(b, [0.8, 0.0], atol=0.1)


def yearly_bins(shape, n_days: int = 365, noise_var: float = 0.05, seed: int = 0) -> Binned:
    rng = np.random.default_rng(seed)
    t = np.arange(float(n_days))
    y = shape(t) + rng.normal(0, np.sqrt(noise_var), n_days)
    return Binned(t, y, np.ones(n_days), 1.0)


@pytest.mark.parametrize("seed", [10, 11, 33])
def test_the_mode_is_not_a_stationary_point_at_zero(seed):
    # the objective is even in each s_k, so s_k = 0 is stationary: a search in s stopped
    # there on these logs (trend sd 0 though the value rises by 1 over the year)
    rng = np.random.default_rng(seed)
    t = np.arange(365.0)
    count = rng.poisson(3, 365) + 1.0
    y = 0.2 + t / 364 + rng.normal(0, 2.0, 365) / np.sqrt(count)
    effects = [TrendEffect(), LevelWalk(45.5), LevelsEffect(DayOfWeek())]
    blocks = [e.columns(t, 0.0, 364.0) for e in effects]
    mm = MixedModel(y, 4.0 / count, np.ones((365, 1)), blocks, float(np.std(y)))
    mode = mm.fit()
    assert mode.theta[1] > 0.3
    for start in ([0.0, 1.0, 0.0, 0.0], [0.1, 0.5, 0.1, 0.1], [0.0, 0.0, 0.3, 0.3]):
        assert mode.objective <= mm.fit(np.array(start)).objective + 1e-6


def test_the_forecast_is_linear_in_the_bins():
    b = yearly_bins(lambda t: np.sin(2 * np.pi * t / 365.25))
    model = ValueModel(b, np.full(b.m, 0.05), n_boot=0, random_state=0)
    targets = [("at", 400.0), ("over", 380.0, 420.0)]
    mean, _, _ = model.predict(targets, alpha=None)
    zeta = model.zeta(targets)
    assert zeta.shape == (2, b.m)
    np.testing.assert_allclose(zeta @ b.y, mean, rtol=1e-10)
    np.testing.assert_allclose(zeta.sum(axis=1), 1.0, atol=1e-8)  # the constant is unpenalized


def test_a_season_is_forecast_a_year_on():
    def truth(t):
        return 1 + np.sin(2 * np.pi * t / 365.25)

    b = yearly_bins(truth)
    model = ValueModel(b, np.full(b.m, 0.05), random_state=0)
    at = 365.25 + 91.3
    mean, low, high = model.predict([("at", at)], alpha=0.1)
    assert abs(mean[0] - truth(at)) < 0.15
    assert low[0] < truth(at) < high[0]
    again = model.predict([("at", at)], alpha=0.1)  # the same model, the same interval
    assert (again[1][0], again[2][0]) == (low[0], high[0])


def test_the_prediction_interval_holds_the_days_own_deviation():
    rng = np.random.default_rng(1)
    t = np.arange(365.0)
    y = 1 + rng.normal(0, 0.5, 365)  # the day deviates (τ = 0.5) beyond its noise (0.1)
    b = Binned(t, y, np.ones(365), 1.0)
    model = ValueModel(b, np.full(365, 0.01), random_state=0)
    assert model.sd["day"] == pytest.approx(0.5, rel=0.15)
    _, lp, hp = model.predict([("at", 380.0)], alpha=0.1, kind="prediction")
    _, lm, hm = model.predict([("at", 380.0)], alpha=0.1, kind="mean")
    _, lw, hw = model.predict([("over", 370.0, 470.0)], alpha=0.1, kind="prediction")
    assert hp[0] - lp[0] > 2 * (hm[0] - lm[0])
    assert hp[0] - lp[0] == pytest.approx(2 * 1.645 * 0.5, rel=0.2)
    assert hw[0] - lw[0] < 0.5 * (hp[0] - lp[0])  # a window's average: τ²/L


def test_walk_ramps_windows_and_future_increments():
    walk = LevelWalk(10.0)
    assert walk.n_knots(0.0, 95.0) == 10
    cols = walk.columns(np.array([0.0, 5.0, 10.0, 95.0]), 0.0, 95.0)
    np.testing.assert_allclose(cols[:, :2], [[0, 0], [0.5, 0], [1, 0], [1, 1]])
    # the exact window average agrees with a fine grid
    grid = 3.0 + (np.arange(200_000) + 0.5) * 24.0 / 200_000
    np.testing.assert_allclose(
        walk.window(3.0, 27.0, 0.0, 95.0), walk.columns(grid, 0.0, 95.0).mean(axis=0), atol=1e-5
    )
    rows = np.array([("at", 100.0), ("at", 130.0)], dtype=object)
    fut = walk.future_columns(rows, 0.0, 95.0)  # knots after the log: 100, 110, 120, ...
    np.testing.assert_allclose((fut**2).sum(axis=1), [0.0, 3.0])


def test_season_and_trend_windows_are_the_exact_averages():
    grid = 10.0 + (np.arange(400_000) + 0.5) * 190.0 / 400_000  # midpoints
    for effect in (SeasonEffect(365.25, 2), TrendEffect()):
        np.testing.assert_allclose(
            effect.window(10.0, 200.0, 0.0, 365.0),
            effect.columns(grid, 0.0, 365.0).mean(axis=0),
            atol=1e-6,
        )


def test_default_effects_follow_the_span():
    short = [e.name for e in default_effects(0.0, 10.0)]
    assert short == ["trend", "walk(7D)"]
    assert "dow" in [e.name for e in default_effects(0.0, 30.0)]
    assert len(default_effects(0.0, 365.0)) == 9


def test_bin_noise_is_the_pooled_variance_over_each_count():
    rng = np.random.default_rng(0)
    times = np.concatenate([np.full(200, 0.5), np.full(200, 1.5), [2.5]])
    values = np.concatenate([rng.normal(0, 1, 200), rng.normal(5, 3, 200), [0.0]])
    b = bin_estimates(values, times)
    noise = bin_noise(values, times, b)
    assert noise[0] * 200 == pytest.approx(5.0, rel=0.15)  # (1 + 9) / 2, not 1
    np.testing.assert_allclose(noise * b.count, noise[0] * 200)
    # fewer than 10 degrees of freedom within bins: consecutive differences (Rice 1984)
    t = np.arange(50.0) + 0.5
    v = rng.normal(0, 2, 50) + t / 50
    one_each = bin_noise(v, t, bin_estimates(v, t))
    assert one_each[0] == pytest.approx(4.0, rel=0.5)


def test_bad_kind_and_an_interval_without_worlds_are_refused():
    b = yearly_bins(lambda t: 0 * t, n_days=30)
    model = ValueModel(b, np.full(30, 0.05), n_boot=0)
    with pytest.raises(ValueError, match="kind must be 'prediction' or 'mean'"):
        model.predict([("at", 40.0)], kind="median")
    with pytest.raises(ValueError, match="n_boot=0"):
        model.predict([("at", 40.0)], alpha=0.1)
    assert model.predict([("at", 40.0)], alpha=None)[1] is None
