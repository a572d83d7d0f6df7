"""The mixed model's variance components (:mod:`pyprog.value.reml`) and the bins' noise."""

from __future__ import annotations

import numpy as np
import pytest

from pyprog.value.bins import bin_estimates, bin_noise
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


@pytest.mark.parametrize("seed", [10, 11, 33])
def test_the_mode_is_not_a_stationary_point_at_zero(seed):
    # the objective is even in each s_k, so s_k = 0 is stationary: a search in s stopped
    # there on these logs (trend sd 0 though the value rises by 1 over the year)
    rng = np.random.default_rng(seed)
    t = np.arange(365.0)
    count = rng.poisson(3, 365) + 1.0
    y = 0.2 + t / 364 + rng.normal(0, 2.0, 365) / np.sqrt(count)
    walk = np.clip((t[:, None] - 45.5 * np.arange(8)) / 45.5, 0.0, 1.0)  # a level's 8 ramps
    blocks = [t[:, None] / 364, walk, np.eye(7)[t.astype(int) % 7]]
    mm = MixedModel(y, 4.0 / count, np.ones((365, 1)), blocks, float(np.std(y)))
    mode = mm.fit()
    assert mode.theta[1] > 0.3
    for start in ([0.0, 1.0, 0.0, 0.0], [0.1, 0.5, 0.1, 0.1], [0.0, 0.0, 0.3, 0.3]):
        assert mode.objective <= mm.fit(np.array(start)).objective + 1e-6


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


@pytest.mark.parametrize("day_sd", [0.0, 0.15, 0.5])
def test_the_tau_grid_holds_the_confidence_distribution(day_sd):
    # from no day's deviation (v̂ at or below 0) to a clear one: the grid's masses give
    # E[τ²] and the predictions' mean as a fine quadrature of H(v) does
    t, z, y, noise = season_problem(0.5, m=300, seed=2)
    y = y + np.random.default_rng(5).normal(0, day_sd, t.size) if day_sd else y
    mm = MixedModel(y, noise, np.ones((t.size, 1)), [z], float(np.std(y)))
    mode = mm.fit()
    thetas, p = mm.tau_distribution(mode)
    assert p.sum() == pytest.approx(1.0) and (p >= 0).all()
    np.testing.assert_array_equal(
        thetas[:, 1:], np.broadcast_to(mode.theta[1:], thetas[:, 1:].shape)
    )
    v = np.linspace(0.0, 1.5 * thetas[-1, 0] ** 2, 20001)
    H = mm.tau_cdf(mode, v)
    assert (np.diff(H) >= -1e-12).all() and H[-1] > 1 - 1e-4
    mass = np.diff(np.concatenate([[0.0], H]))  # H(0) is the mass at v = 0
    mass /= mass.sum()
    assert p @ thetas[:, 0] ** 2 == pytest.approx(mass @ v, rel=0.03, abs=1e-5)
    rows = np.concatenate([[1.0], z[0]])[None, :]
    fine = np.repeat(mode.theta[None, :], 401, axis=0)
    every = np.linspace(0, v.size - 1, 401).astype(int)  # 401 of the fine points
    fine[:, 0] = np.sqrt(v[every])
    cells = np.add.reduceat(mass, every)  # each point's cell of the fine grid
    grid_mean = p @ mm.predictions(thetas, rows)[0][:, 0]
    assert grid_mean == pytest.approx(cells @ mm.predictions(fine, rows)[0][:, 0], abs=1e-4)
    if day_sd == 0.5:  # a deviation the log resolves: no mass at 0, centred near day_sd²
        assert p[0] < 0.01 and H[0] < 1e-3
        assert p @ thetas[:, 0] ** 2 == pytest.approx(0.25, rel=0.3)


def test_bins_that_spread_less_than_their_noise_put_tau_at_zero():
    # noise stated 16 times its variance (sd 4 times) puts v̂ far below 0, past CD_REACH:
    # every grid point at τ = 0 with all the mass, and finite predictions (they were NaN
    # from √ of a negative grid once: an ε-greedy π_e at 2,000 rounds)
    t, z, y, noise = season_problem(0.5, m=300, seed=2)
    mm = MixedModel(y, 16.0 * noise, np.ones((t.size, 1)), [z], float(np.std(y)))
    mode = mm.fit()
    thetas, p = mm.tau_distribution(mode)
    assert float(mm.tau_cdf(mode, np.array([0.0]))[0]) > 1 - 1e-4
    np.testing.assert_array_equal(thetas[:, 0], 0.0)
    assert p.sum() == pytest.approx(1.0) and (p >= 0).all()
    rows = np.concatenate([[1.0], z[0]])[None, :]
    mean, var = mm.predictions(thetas, rows)[:2]
    assert np.isfinite(mean).all() and np.isfinite(var).all()


def test_tau_confidence_distribution_is_a_pivot():
    # H(τ²) at the true τ² is uniform over repeated logs (Monte Carlo, 300 logs of 200
    # bins; Kolmogorov-Smirnov test at level 10⁻³), the effects' variances at their mode
    import scipy.stats

    u = []
    for seed in range(300):
        t, z, y, noise = season_problem(0.5, seed=seed)
        y = y + np.random.default_rng([seed, 1]).normal(0, 0.2, t.size)  # τ² = 0.04
        mm = MixedModel(y, noise, np.ones((t.size, 1)), [z], float(np.std(y)))
        u.append(float(mm.tau_cdf(mm.fit(), np.array([0.04]))[0]))
    assert scipy.stats.kstest(u, "uniform").pvalue > 1e-3


def test_predictions_are_linear_in_the_bins():
    t, z, y, noise = season_problem(0.5)
    mm = MixedModel(y, noise, np.ones((t.size, 1)), [z], 1.0)
    thetas = np.array([[0.1, 0.4], [0.0, 0.8]])
    rows = np.array([[1.0, 0.3, -0.2], [1.0, 0.0, 1.0]])
    means, variances, zeta = mm.predictions(thetas, rows, zeta=True)
    np.testing.assert_allclose(zeta @ y, means, rtol=1e-10)
    for g, theta in enumerate(thetas):
        sol = mm.solve(theta)
        np.testing.assert_allclose(means[g], sol.mean_at(rows), rtol=1e-10)
        assert (variances[g] > 0).all()
