"""Bayesian model averaging of shrinkage models (:class:`pyprog.value.ModelAverage`)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from pyprog.timeseries.features import DayOfWeek, PeriodBlocks
from pyprog.timeseries.terms import TimeModel, blocks, trend
from pyprog.value import ModelAverage, TermEffect
from pyprog.value.averaging import _mixture_quantile
from pyprog.value.bins import Binned
from pyprog.value.reml import MixedModel


def year_of_bins(truth, sd: float = 0.3, seed: int = 0) -> Binned:
    rng = np.random.default_rng(seed)
    t = np.arange(365.0)
    return Binned(t, truth(t) + rng.normal(0, sd, t.size), np.ones(t.size), 1.0)


def test_the_weights_favour_the_form_of_the_truth():
    trend_log = ModelAverage(year_of_bins(lambda t: t / 365), np.full(365, 0.09))
    assert sum(trend_log.w) == pytest.approx(1.0)
    top = max(trend_log.weights, key=trend_log.weights.get)
    assert top.startswith("const+trend")
    # on a flat log every effect is shrunk to 0: each candidate is then the constant
    b = year_of_bins(lambda t: 0 * t, seed=1)
    flat = ModelAverage(b, np.full(365, 0.09))
    assert max(float(f.mode.theta[1:].max(initial=0.0)) for f in flat.fits) < 0.05
    mean, _, _ = flat.predict([("at", 400.0), ("at", 600.0)], alpha=None)
    np.testing.assert_allclose(mean, b.y.mean(), atol=0.01)


def test_the_forecast_is_linear_in_the_bins():
    b = year_of_bins(lambda t: np.sin(2 * np.pi * t / 365.25))
    avg = ModelAverage(b, np.full(b.m, 0.09))
    targets = [("at", 400.0), ("over", 380.0, 420.0)]
    mean, _, _ = avg.predict(targets, alpha=None)
    zeta = avg.zeta(targets)
    assert zeta.shape == (2, b.m)
    np.testing.assert_allclose(zeta @ b.y, mean, rtol=1e-10)
    np.testing.assert_allclose(zeta.sum(axis=1), 1.0, atol=1e-8)  # the constant is unpenalized


def test_one_candidate_gives_its_normal_interval_mixed_over_tau():
    # the constant alone: given τ the interval for the mean is ȳ ± z·sqrt((σ² + τ²)/m);
    # over τ's posterior it is that mixture, here against a fine quadrature of it
    b = year_of_bins(lambda t: 1.0 + 0 * t)
    avg = ModelAverage(b, np.full(b.m, 0.09), candidates=[TimeModel(())])
    mean, low, high = avg.predict([("at", 400.0)], alpha=0.1, kind="mean")
    mm = avg.fits[0].mm
    taus = np.linspace(0.0, 3.0 * mm.prior_scale, 4001)
    log_p = -mm.objectives(taus[:, None])
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    sd = np.sqrt((0.09 + taus**2) / b.m)[:, None]
    ends = [
        _mixture_quantile(p, np.full((taus.size, 1), b.y.mean()), sd, q)[0] for q in (0.05, 0.95)
    ]
    np.testing.assert_allclose(mean[0], b.y.mean(), rtol=1e-12)
    np.testing.assert_allclose([low[0], high[0]], ends, atol=2e-3 * (ends[1] - ends[0]))
    plug = scipy.stats.norm.ppf(0.95) * np.sqrt((0.09 + avg.fits[0].mode.theta[0] ** 2) / b.m)
    assert high[0] - low[0] >= 2 * plug  # τ's values above its mode widen it


def test_the_interval_carries_the_days_deviation_and_the_shared_error():
    rng = np.random.default_rng(2)
    t = np.arange(365.0)
    y = 1 + rng.normal(0, 0.5, 365)  # noise 0.1², the day's own deviation ~0.49²
    b, noise = Binned(t, y, np.ones(365), 1.0), np.full(365, 0.01)
    avg = ModelAverage(b, noise, candidates=[TimeModel(())])
    _, lo_m, hi_m = avg.predict([("at", 400.0)], kind="mean")
    _, lo_p, hi_p = avg.predict([("at", 400.0)], kind="prediction")
    _, lo_w, hi_w = avg.predict([("over", 400.0, 430.0)], kind="prediction")
    assert (hi_m - lo_m)[0] < 0.1 < 1.4 < (hi_p - lo_p)[0] < 1.8  # 2·1.645·0.49 = 1.61
    assert (hi_m - lo_m)[0] < (hi_w - lo_w)[0] < (hi_p - lo_p)[0] / 4  # τ²/30 over a month
    shared = ModelAverage(b, noise, candidates=[TimeModel(())], shared_var=0.04)
    _, lo_s, hi_s = shared.predict([("at", 400.0)], kind="mean")
    assert (hi_s - lo_s)[0] > 2 * 1.64 * 0.2


def test_blocks_keep_every_level_under_a_shared_variance():
    term = blocks(PeriodBlocks(365.25, 4))
    cols = TermEffect(term).columns(np.arange(365.0), 0.0, 364.0)
    assert cols.shape == (365, 4)
    np.testing.assert_array_equal(cols.sum(axis=1), 1.0)
    assert term.columns(np.arange(365.0), 0.0, 364.0).shape == (365, 3)
    dow = TermEffect(blocks(DayOfWeek())).window(0.0, 7.0, 0.0, 364.0)
    np.testing.assert_allclose(dow, np.full(7, 1 / 7), atol=1e-3)
    np.testing.assert_allclose(TermEffect(trend()).window(0.0, 364.0, 0.0, 364.0), [0.5])


def test_mixture_quantiles_match_the_mixture_cdf():
    w = np.array([0.3, 0.7])
    means = np.array([[0.0], [2.0]])
    sd = np.array([[1.0], [0.5]])
    for q in (0.05, 0.5, 0.95):
        x = _mixture_quantile(w, means, sd, q)[0]
        cdf = w @ scipy.stats.norm.cdf((x - means[:, 0]) / sd[:, 0])
        assert cdf == pytest.approx(q, abs=1e-9)


def test_bad_kind_and_shared_variance_are_refused():
    b = year_of_bins(lambda t: 0 * t)
    with pytest.raises(ValueError, match="shared_var must be a finite variance >= 0"):
        ModelAverage(b, np.full(b.m, 0.09), candidates=[TimeModel(())], shared_var=-1.0)
    avg = ModelAverage(b, np.full(b.m, 0.09), candidates=[TimeModel(())])
    with pytest.raises(ValueError, match="kind must be 'prediction' or 'mean'"):
        avg.predict([("at", 400.0)], kind="median")


def test_the_evidence_is_the_integral_over_the_variances():
    # one season and the day's deviation: the product of 1-D integrals against a 2-D grid
    rng = np.random.default_rng(3)
    t = np.arange(120.0)
    z = np.column_stack([np.cos(2 * np.pi * t / 30), np.sin(2 * np.pi * t / 30)])
    y = 1 + z @ [0.5, 0.2] + rng.normal(0, 0.4, 120)
    mm = MixedModel(y, np.full(120, 0.16), np.ones((120, 1)), [z], float(np.std(y)))
    c = mm.prior_scale
    grid = np.concatenate([[0.0], c * np.logspace(-4, 1.5, 400)])
    log_f = np.array([[-mm.solve(np.array([a, b])).objective for b in grid] for a in grid])
    top = log_f.max()
    inner = scipy.integrate.trapezoid(np.exp(log_f - top), grid, axis=1)
    brute = top + np.log(scipy.integrate.trapezoid(inner, grid)) + 2 * np.log(2 / (np.pi * c))
    assert mm.log_evidence(mm.fit()) == pytest.approx(brute, abs=0.15)


def test_an_effect_the_log_does_not_show_costs_evidence():
    b = year_of_bins(lambda t: 0 * t, seed=4)
    avg = ModelAverage(b, np.full(365, 0.09), candidates=[TimeModel(()), TimeModel((trend(),))])
    const, with_trend = (f.log_evidence for f in avg.fits)
    assert with_trend < const - 1.0  # at the mode's density alone the two tie
    assert avg.top == "const"
