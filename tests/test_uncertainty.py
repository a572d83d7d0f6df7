"""Wild-bootstrap forecast intervals: the definition, both backends, errors, coverage."""

import numpy as np
import pytest
from forecast_montecarlo import coverage

import pyprog
from pyprog._ext import fallback
from pyprog.forecast import intervals as uncertainty
from pyprog.forecast.bases import forecast_design
from pyprog.forecast.intervals import forecast_interval, rademacher_signs

try:
    from pyprog._ext import _kernels as compiled
except ImportError:
    compiled = None


def reference_interval(phi, weights, y, phi_star, alpha, signs):
    """SPEC §2b written out: refit every pseudo-sample y* = ŷ + σ*⊙ξ̃ by weighted lstsq."""
    n, k = phi.shape
    root = np.sqrt(weights)

    def fit(target):
        w, *_ = np.linalg.lstsq(root[:, None] * phi, root * target, rcond=None)
        return w

    A_inv = np.linalg.inv(phi.T @ (weights[:, None] * phi))
    zeta = weights * (phi @ A_inv @ phi_star)
    h = weights * np.einsum("ij,jk,ik->i", phi, A_inv, phi)
    w = fit(y)
    fitted = phi @ w
    f = phi_star @ w
    adjusted = (y - fitted) / np.sqrt(1 - h)
    se = np.sqrt(np.sum(zeta**2 * adjusted**2))
    t = []
    for row in signs:
        sigma = np.where(np.unpackbits(row, count=n, bitorder="little") == 1, 1.0, -1.0)
        y_star = fitted + sigma * adjusted
        w_star = fit(y_star)
        resid_star = (y_star - phi @ w_star) / np.sqrt(1 - h)
        se_star = np.sqrt(np.sum(zeta**2 * resid_star**2))
        t.append((phi_star @ w_star - f) / se_star)
    hi_q, lo_q = np.quantile(t, [1 - alpha / 2, alpha / 2])
    return f, f - se * hi_q, f - se * lo_q, se, f - se * np.quantile(t, 1 - alpha)


def noisy_trend(n, seed=0, weights=False):
    rng = np.random.default_rng(seed)
    phi, phi_star = forecast_design(n, 3, "fourier", 3)
    y = 1.0 + phi[:, 1] - 0.5 * phi[:, 2] + rng.normal(0, 0.2 + np.linspace(0, 1, n))
    lam = rng.exponential(size=n) if weights else np.ones(n)
    return phi, lam, y, phi_star


class TestDefinition:
    @pytest.mark.parametrize("weighted", [False, True], ids=["ols", "wls"])
    def test_interval_is_the_refitting_bootstrap(self, weighted):
        phi, lam, y, phi_star = noisy_trend(40, seed=1, weights=weighted)
        signs = rademacher_signs(40, 300, random_state=7)
        f, low, high, se, low1 = reference_interval(phi, lam, y, phi_star, 0.1, signs)
        ci = forecast_interval(phi, lam, y, phi_star, alpha=0.1, n_boot=300, random_state=7)
        np.testing.assert_allclose(
            [ci.value, ci.low, ci.high, ci.se], [f, low, high, se], rtol=1e-9
        )
        one = forecast_interval(
            phi, lam, y, phi_star, alpha=0.1, n_boot=300, random_state=7, one_sided=True
        )
        assert one.low == pytest.approx(low1, rel=1e-9)
        assert one.high == np.inf

    def test_nwis_se_is_the_sandwich_variance(self):
        # Σ ζ² ξ̂²/(1−h) with ζ the WLS weights: A⁻¹BA⁻¹ with B = Σ λ² ξ̃² φφᵀ
        phi, lam, y, phi_star = noisy_trend(60, seed=2, weights=True)
        A = phi.T @ (lam[:, None] * phi)
        w = np.linalg.solve(A, phi.T @ (lam * y))
        h = lam * np.einsum("ij,ij->i", phi @ np.linalg.inv(A), phi)
        xi = (y - phi @ w) / np.sqrt(1 - h)
        B = (phi * (lam * xi)[:, None] ** 2).T @ phi
        sandwich = phi_star @ np.linalg.solve(A, B) @ np.linalg.solve(A, phi_star)
        ci = forecast_interval(phi, lam, y, phi_star, alpha=0.05, random_state=0)
        assert ci.se == pytest.approx(np.sqrt(sandwich), rel=1e-10)

    def test_public_functions_use_it(self):
        phi, lam, y, phi_star = noisy_trend(50, seed=3, weights=True)
        nis = pyprog.nis_forecast(y, 3, "fourier", 3, alpha=0.2, n_boot=500, random_state=1)
        ci = forecast_interval(phi, np.ones(50), y, phi_star, alpha=0.2, n_boot=500, random_state=1)
        assert (nis.low, nis.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
        nwis = pyprog.nwis_forecast(y, lam, 3, "fourier", 3, alpha=0.2, n_boot=500, random_state=1)
        ci = forecast_interval(phi, lam, y, phi_star, alpha=0.2, n_boot=500, random_state=1)
        assert (nwis.low, nwis.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
        assert nwis.low < nwis.value < nwis.high

    def test_wider_at_higher_confidence(self):
        phi, lam, y, phi_star = noisy_trend(80)
        a = forecast_interval(phi, lam, y, phi_star, alpha=0.2, random_state=0)
        b = forecast_interval(phi, lam, y, phi_star, alpha=0.02, random_state=0)
        assert b.low < a.low < a.value < a.high < b.high

    def test_perfect_fit_gives_a_point(self):
        phi, phi_star = forecast_design(30, 1, "linear", 2)
        y = 2.0 - phi[:, 0]
        ci = forecast_interval(phi, np.ones(30), y, phi_star, alpha=0.1, random_state=0)
        assert ci.se < 1e-12 and ci.low == pytest.approx(ci.value) == ci.high


class TestBackwardCompatible:
    def test_without_alpha_no_interval_and_no_bootstrap(self, monkeypatch):
        def forbidden(*args):
            raise AssertionError("the bootstrap ran without alpha")

        monkeypatch.setattr(uncertainty, "forecast_interval", forbidden)
        monkeypatch.setattr(pyprog.forecast.estimators, "forecast_interval", forbidden)
        f = pyprog.nis_forecast(np.arange(20.0), 1, "linear")
        assert f.low is None and f.high is None
        value, grad, *_ = f
        assert (value, grad) == (f.value, f.grad) == (f[0], f[1])
        g = pyprog.nwis_forecast(np.arange(20.0), np.ones(20), 1, "linear")
        assert g.low is None and g.high is None


class TestReproducible:
    def test_same_seed_same_interval(self):
        y = noisy_trend(100)[2]
        a = pyprog.nis_forecast(y, 3, "fourier", 3, alpha=0.1, random_state=42)
        b = pyprog.nis_forecast(y, 3, "fourier", 3, alpha=0.1, random_state=42)
        c = pyprog.nis_forecast(y, 3, "fourier", 3, alpha=0.1, random_state=43)
        assert (a.low, a.high) == (b.low, b.high)
        assert (a.low, a.high) != (c.low, c.high)
        gen = pyprog.nis_forecast(
            y, 3, "fourier", 3, alpha=0.1, random_state=np.random.default_rng(42)
        )
        assert (gen.low, gen.high) == (a.low, a.high)

    @pytest.mark.skipif(compiled is None, reason="compiled kernels not built")
    def test_both_backends_give_the_same_interval(self, monkeypatch):
        phi, lam, y, phi_star = noisy_trend(300, seed=5, weights=True)
        got = {}
        for K in (fallback, compiled):
            monkeypatch.setattr(uncertainty, "kernels", K)
            got[K.__name__] = forecast_interval(phi, lam, y, phi_star, alpha=0.05, random_state=9)
        a, b = got.values()
        np.testing.assert_allclose(a, b, rtol=1e-10)


class TestErrors:
    @pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, np.nan, "0.1", True])
    def test_alpha_outside_unit_interval(self, alpha):
        with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\)"):
            pyprog.nis_forecast(np.arange(20.0), alpha=alpha)
        with pytest.raises(ValueError, match="alpha"):
            pyprog.nwis_forecast(np.arange(20.0), np.ones(20), alpha=alpha)

    @pytest.mark.parametrize("n_boot", [99, 0, -5, 500.0, True])
    def test_n_boot_too_small(self, n_boot):
        with pytest.raises(ValueError, match="n_boot must be an integer >= 100"):
            pyprog.nis_forecast(np.arange(20.0), alpha=0.1, n_boot=n_boot)
        with pytest.raises(ValueError, match="n_boot"):
            pyprog.nwis_forecast(np.arange(20.0), np.ones(20), alpha=0.1, n_boot=n_boot)

    def test_nan_data(self):
        y = np.arange(20.0)
        y[4] = np.nan
        with pytest.raises(ValueError, match="J_hat must be finite; got nan at episode 4"):
            pyprog.nis_forecast(y, alpha=0.1)
        with pytest.raises(ValueError, match="returns must be finite"):
            pyprog.nwis_forecast(y, np.ones(20), alpha=0.1)
        with pytest.raises(ValueError, match="ratios must be finite"):
            pyprog.nwis_forecast(np.ones(20), y, alpha=0.1)

    @pytest.mark.parametrize("seed", [-1, 1.5, "x"])
    def test_bad_seed(self, seed):
        with pytest.raises(ValueError, match="random_state must be None, an integer >= 0"):
            pyprog.nis_forecast(np.arange(20.0), alpha=0.1, random_state=seed)

    def test_no_more_episodes_than_features(self):
        with pytest.raises(ValueError, match="a confidence interval needs at least 7 episodes"):
            pyprog.nis_forecast(np.arange(5.0), basis="fourier", d=5, alpha=0.1)
        with pytest.raises(ValueError, match=r"at least 7 .* got 5"):  # weight 0 does not count
            pyprog.nwis_forecast(
                np.arange(9.0), [1, 1, 0, 1, 0, 0, 1, 1, 0.0], basis="fourier", d=5, alpha=0.1
            )


class TestCoverage:
    """Monte Carlo: synthetic off-policy data with a known future (forecast_montecarlo.py).

    The fast test has 300 replications: its binomial standard error at 90 % is 1.7
    points, so it fails if coverage is off by more than 3 points + 3 standard errors.
    The slow test holds NIS to 3 points at N = 50, 200, 1000 and 90 %, 95 % with 1000
    replications (standard error <= 0.95 points).
    """

    def test_nis_covers_at_n_200(self):
        result = coverage(200, (0.10,), reps=300, seed=11)[0.10]
        assert abs(result["coverage"] - 0.90) <= 0.03 + 3 * np.sqrt(0.9 * 0.1 / 300)

    @pytest.mark.slow
    @pytest.mark.parametrize("n", [50, 200, 1000])
    def test_nis_covers_within_3_points(self, n):
        for alpha, result in coverage(n, (0.10, 0.05), reps=1000, seed=100 + n).items():
            assert abs(result["coverage"] - (1 - alpha)) <= 0.03, (alpha, result)
