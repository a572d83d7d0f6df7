"""The mixed model's variance components (:mod:`pyprog.value.reml`) and the bins' noise."""

from __future__ import annotations

import numpy as np
import pytest

from pyprog.offpolicy.time_candidates import bin_estimates
from pyprog.value.bins import bin_noise
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
