"""Public estimators: the paper's properties, and clear errors for bad input."""

import numpy as np
import pytest

import pyprog
from pyprog import (
    BASES,
    ForecastError,
    episode_ratios,
    forecast_design,
    nis_forecast,
    nwis_forecast,
    ols_weights,
    pdis,
    time_basis,
    time_index,
)


def logged_bandit(rng, n, h=1, n_actions=2):
    """Episodes of a uniform behaviour policy; returns what a user would have logged."""
    actions = rng.integers(n_actions, size=(n, h))
    log_beta = np.full((n, h), -np.log(n_actions))
    return actions, log_beta


class TestBases:
    def test_time_index_normalisation(self):
        x, x_future = time_index(100, delta=3)
        scale = 100 + 3 + 5  # N + δ + ⌊0.05 N⌋
        np.testing.assert_allclose(x, np.arange(1, 101) / scale)
        np.testing.assert_allclose(x_future, np.arange(101, 104) / scale)
        assert x_future[-1] < 1.0

    @pytest.mark.parametrize("basis", BASES)
    def test_every_basis_contains_the_constant(self, basis):
        phi = time_basis(np.linspace(0.01, 0.99, 30), basis, 4)
        coef, *_ = np.linalg.lstsq(phi, np.ones(30), rcond=None)
        np.testing.assert_allclose(phi @ coef, 1.0, atol=1e-10)

    def test_bases_as_spec(self):
        x = np.array([0.1, 0.7])
        np.testing.assert_allclose(
            time_basis(x, "fourier", 3), np.cos(np.pi * np.outer(x, [0, 1, 2]))
        )
        np.testing.assert_allclose(time_basis(x, "poly", 3), np.stack([x**0, x, x**2], axis=1))
        np.testing.assert_allclose(time_basis(x, "linear", 7), np.stack([x, [1, 1]], axis=1))

    def test_forecast_target_is_mean_of_next_delta(self):
        phi, phi_star = forecast_design(50, delta=4, basis="fourier", d=3)
        _, x_future = time_index(50, 4)
        np.testing.assert_allclose(phi_star, time_basis(x_future, "fourier", 3).mean(axis=0))
        assert not phi.flags.writeable  # cached: callers must not modify it


class TestOLSWeights:
    @pytest.mark.parametrize("basis", BASES)
    @pytest.mark.parametrize("n, delta, d", [(10, 1, 3), (99, 1, 5), (500, 5, 7), (7, 3, 7)])
    def test_sum_to_one(self, basis, n, delta, d):
        zeta = ols_weights(n, delta, basis, d)
        # rounding grows with the weights' size (poly d = 7 at n = 7: |ζ_i| ~ 400)
        assert zeta.sum() == pytest.approx(1.0, abs=1e-9 * np.abs(zeta).sum())

    def test_shape_of_paper_fig4(self):
        # identity basis: negative weights on old episodes, positive on recent ones
        zeta = ols_weights(99, 1, "linear")
        assert zeta[0] < 0 < zeta[-1]
        assert np.all(np.diff(zeta) > 0)
        # one feature (the constant): plain average
        np.testing.assert_allclose(ols_weights(99, 1, "fourier", 1), np.full(99, 1 / 99))


class TestNIS:
    @pytest.mark.parametrize("delta", [1, 3, 5])
    def test_exact_linear_trend_is_forecast_exactly(self, delta):
        n = 40
        x, x_future = time_index(n, delta)
        past = 3.0 - 7.0 * x
        forecast = nis_forecast(past, delta=delta, basis="linear")
        assert forecast.value == pytest.approx(np.mean(3.0 - 7.0 * x_future), rel=1e-12)
        np.testing.assert_allclose(forecast.grad, ols_weights(n, delta, "linear"))

    def test_polynomial_trend_is_forecast_exactly_by_poly_basis(self):
        x, x_future = time_index(30, 2)
        past = 1 + x - 4 * x**2 + x**3
        f = nis_forecast(past, delta=2, basis="poly", d=4)
        assert f.value == pytest.approx(
            np.mean(1 + x_future - 4 * x_future**2 + x_future**3), rel=1e-9
        )

    def test_unbiased_under_stationarity(self):
        """Appendix A, Thm 1: E[NIS forecast] = J(π) in a stationary bandit.

        π plays action 1 w.p. 0.8, β is uniform; rewards N(μ_a, 1) with μ = (0, 1), so
        J(π) = 0.8. 4000 buffers of 30 episodes; the mean of the forecasts must lie
        within 4 standard errors of J(π) (fails by chance with probability < 1e-4).
        """
        rng = np.random.default_rng(2020)
        n_runs, n, pi = 4000, 30, np.array([0.2, 0.8])
        forecasts = np.empty(n_runs)
        for k in range(n_runs):
            actions, log_beta = logged_bandit(rng, n)
            rewards = actions + rng.normal(size=actions.shape)
            J_hat = pdis(np.log(pi[actions]), log_beta, rewards).J
            forecasts[k] = nis_forecast(J_hat, delta=1, basis="fourier", d=3).value
        se = forecasts.std(ddof=1) / np.sqrt(n_runs)
        assert abs(forecasts.mean() - 0.8) < 4 * se
        # and the estimator is not trivially constant
        assert se > 1e-3


class TestNWIS:
    def test_d1_is_weighted_importance_sampling(self):
        rng = np.random.default_rng(0)
        G, lam = rng.normal(size=25), rng.random(25) * 3
        f = nwis_forecast(G, lam, delta=2, basis="fourier", d=1)
        wis = (lam * G).sum() / lam.sum()
        assert f.value == pytest.approx(wis, rel=1e-12)
        # ∂WIS/∂λ_i = (G_i − WIS) / Σλ
        np.testing.assert_allclose(f.grad, (G - wis) / lam.sum(), rtol=1e-10, atol=1e-14)

    def test_exact_linear_trend_whatever_the_weights(self):
        rng = np.random.default_rng(1)
        x, x_future = time_index(60, 1)
        f = nwis_forecast(5 * x - 2, rng.random(60) + 0.01, basis="linear")
        assert f.value == pytest.approx(5 * x_future[0] - 2, rel=1e-10)

    def test_equals_nis_with_unit_ratios(self):
        G = np.sin(np.arange(40))
        assert nwis_forecast(G, np.ones(40)).value == pytest.approx(
            nis_forecast(G).value, rel=1e-12
        )

    def test_gradient_by_finite_differences(self):
        rng = np.random.default_rng(3)
        G, lam = rng.normal(size=15), rng.random(15) + 0.5
        grad = nwis_forecast(G, lam, delta=3, basis="poly", d=3).grad
        for i in range(15):
            e = np.zeros(15)
            e[i] = 1e-6
            fd = (
                nwis_forecast(G, lam + e, 3, "poly", 3).value
                - nwis_forecast(G, lam - e, 3, "poly", 3).value
            ) / 2e-6
            assert fd == pytest.approx(grad[i], rel=1e-6, abs=1e-10)

    def test_rank_deficient_raises_forecast_error(self):
        lam = np.zeros(20)
        lam[[2, 9]] = 1.0
        with pytest.raises(ForecastError, match=r"rank-deficient .*\(2 of 20 episodes"):
            nwis_forecast(np.ones(20), lam, basis="fourier", d=3)
        assert issubclass(ForecastError, ValueError)


class TestPDIS:
    def test_small_example_by_hand(self):
        log_pi = np.log([[0.5, 0.25, 0.9]])
        log_beta = np.log([[0.25, 0.5, 0.5]])
        rewards = np.array([[1.0, 2.0, 4.0]])
        rho = np.array([2.0, 1.0, 1.8])
        res = pdis(log_pi, log_beta, rewards, gamma=0.5, clip=1.5)
        terms = np.minimum(1.5, rho) * 0.5 ** np.arange(3) * rewards[0]
        assert res.J[0] == pytest.approx(terms.sum())
        np.testing.assert_allclose(res.g[0], np.cumsum(terms[::-1])[::-1])

    def test_ragged_episodes_and_default_mask(self):
        rng = np.random.default_rng(4)
        log_pi, log_beta, rewards = (rng.normal(size=(6, 5)) for _ in range(3))
        full = pdis(log_pi, log_beta, rewards, gamma=0.9)
        np.testing.assert_allclose(full.J, pdis(log_pi, log_beta, rewards, np.ones((6, 5)), 0.9).J)
        mask = np.ones((6, 5))
        mask[:, 3:] = 0
        short = pdis(log_pi, log_beta, rewards, mask, gamma=0.9)
        np.testing.assert_allclose(
            short.J, pdis(log_pi[:, :3], log_beta[:, :3], rewards[:, :3], gamma=0.9).J
        )

    def test_nan_in_padding_is_allowed(self):
        mask = np.array([[1.0, 0.0]])
        res = pdis([[0.0, np.nan]], [[0.0, np.inf]], [[1.0, np.nan]], mask)
        assert res.J[0] == 1.0

    def test_long_episodes_do_not_overflow(self):
        # 2000 steps of ratio 2: the product is 2^2000 (inf in double) but the clip holds
        log_pi = np.full((1, 2000), np.log(2.0))
        res = pdis(log_pi, np.zeros((1, 2000)), np.ones((1, 2000)), clip=10.0)
        assert np.isfinite(res.J[0])
        lam, unclipped = episode_ratios(log_pi, np.zeros((1, 2000)), clip=10.0)
        assert lam[0] == pytest.approx(10.0) and not unclipped[0]


class TestBadInput:
    good = (np.zeros((3, 4)), np.zeros((3, 4)), np.ones((3, 4)))

    @pytest.mark.parametrize("position, name", [(0, "log_pi"), (1, "log_beta"), (2, "rewards")])
    @pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
    def test_non_finite_values_name_argument_and_index(self, position, name, value):
        args = [a.copy() for a in self.good]
        args[position][1, 2] = value
        with pytest.raises(
            ValueError, match=rf"{name} must be finite; got .* at episode 1, step 2"
        ):
            pdis(*args)

    def test_mask_must_be_binary(self):
        mask = np.ones((3, 4))
        mask[2, 0] = 0.5
        with pytest.raises(
            ValueError, match=r"mask must contain only 0 .* got 0.5 at episode 2, step 0"
        ):
            pdis(*self.good, mask=mask)

    def test_shape_mismatch(self):
        with pytest.raises(
            ValueError, match=r"rewards must have the shape of log_pi \(3, 4\); got \(3, 5\)"
        ):
            pdis(np.zeros((3, 4)), np.zeros((3, 4)), np.ones((3, 5)))
        with pytest.raises(
            ValueError, match=r"log_pi must be a 2-D array of shape \(N, H\); got shape \(4,\)"
        ):
            pdis(np.zeros(4), np.zeros(4), np.ones(4))
        with pytest.raises(ValueError, match=r"ratios must have the shape of returns"):
            nwis_forecast(np.ones(10), np.ones(9))

    @pytest.mark.parametrize("clip", [0, -1.0, np.nan, "10"])
    def test_clip(self, clip):
        with pytest.raises(ValueError, match="clip must be a number > 0"):
            pdis(*self.good, clip=clip)

    @pytest.mark.parametrize("gamma", [-0.1, 1.01, np.nan])
    def test_gamma(self, gamma):
        with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\]"):
            pdis(*self.good, gamma=gamma)

    def test_unknown_basis_lists_valid(self):
        with pytest.raises(
            ValueError, match=r"basis must be one of 'fourier', 'poly', 'linear'; got 'cosine'"
        ):
            nis_forecast(np.ones(10), basis="cosine")

    @pytest.mark.parametrize("d", [0, -2, 2.5, True])
    def test_d(self, d):
        with pytest.raises(ValueError, match="d must be an integer >= 1"):
            nis_forecast(np.ones(10), basis="fourier", d=d)

    def test_delta(self):
        with pytest.raises(ValueError, match="delta must be an integer >= 1"):
            ols_weights(10, delta=0)

    def test_fewer_episodes_than_features(self):
        with pytest.raises(
            ValueError, match=r"at least as many episodes as basis features: got 4 episodes for 5"
        ):
            nis_forecast(np.ones(4), basis="fourier", d=5)
        with pytest.raises(ValueError, match="got 1 episodes for 2 features"):
            nwis_forecast([1.0], [1.0], basis="linear")

    @pytest.mark.parametrize("bad", [np.nan, np.inf])
    def test_non_finite_weights(self, bad):
        ratios = np.ones(10)
        ratios[7] = bad
        with pytest.raises(ValueError, match=r"ratios must be finite; got .* at episode 7"):
            nwis_forecast(np.ones(10), ratios)

    def test_negative_ratios(self):
        with pytest.raises(ValueError, match=r"ratios must be >= 0; got -1.0 at episode 3"):
            nwis_forecast(np.ones(5), [1, 1, 1, -1.0, 1], basis="fourier", d=2)

    def test_non_numeric(self):
        with pytest.raises(ValueError, match=r"J_hat must be an array of (real )?numbers"):
            nis_forecast(["a", "b", "c"])


def test_backend_is_reported():
    assert pyprog.backend() in ("cython", "numpy")
