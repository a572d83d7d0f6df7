"""The non-stationary safety test: its numbers, its errors, its size and power."""

import numpy as np
import pytest
import scipy.stats
from forecast_montecarlo import acceptance, safety_episodes

import pyprog
from pyprog.forecast.bases import forecast_design
from pyprog.forecast.intervals import forecast_interval

ARGS = dict(delta=5, basis="fourier", d=3, alpha=0.05)


@pytest.fixture
def logged():
    return safety_episodes(np.random.default_rng(0), 400, future_diff=-0.3, drift=1.0)


class TestNumbers:
    def test_difference_forecast_and_decision(self, logged):
        log_pi, log_beta, rewards = logged
        test = pyprog.safety_test(log_pi, log_beta, rewards, **ARGS, gamma=0.9, random_state=3)
        J = pyprog.pdis(log_pi, log_beta, rewards, gamma=0.9).J
        G = (rewards * 0.9 ** np.arange(rewards.shape[1])).sum(axis=1)
        np.testing.assert_allclose(test.differences, J - G)
        phi, phi_star = forecast_design(400, 5, "fourier", 3)
        ci = forecast_interval(
            phi, np.ones(400), J - G, phi_star, alpha=0.05, random_state=3, one_sided=True
        )
        assert (test.value, test.low, test.se) == pytest.approx(
            (ci.value, ci.low, ci.se), rel=1e-12
        )
        assert test.accept == (test.low > 0)
        assert test.episodes == 400 and test.alpha == 0.05

    def test_stationary_t_test_numbers(self, logged):
        test = pyprog.safety_test(*logged, **ARGS, random_state=0)
        D = test.differences
        ref = scipy.stats.ttest_1samp(D, 0.0, alternative="greater")
        assert test.stationary_p == pytest.approx(ref.pvalue, rel=1e-10)
        assert test.past_mean == pytest.approx(D.mean())
        low = ref.confidence_interval(0.95).low
        assert test.stationary_low == pytest.approx(low, rel=1e-10)
        assert test.stationary_accept == (low > 0)

    def test_past_better_future_worse_refused_where_stationary_test_accepts(self, logged):
        # in the past π did better than β by ≈ 0.76 on average; over the next 5 episodes by −0.3
        test = pyprog.safety_test(*logged, **ARGS, random_state=0)
        assert test.past_mean > 0 and test.stationary_accept
        assert not test.accept and test.value < 0

    def test_seeded_and_mask_respected(self, logged):
        log_pi, log_beta, rewards = logged
        a = pyprog.safety_test(log_pi, log_beta, rewards, **ARGS, random_state=5)
        b = pyprog.safety_test(log_pi, log_beta, rewards, **ARGS, random_state=5)
        assert a == b and a.low == b.low
        # padding past each episode's end changes nothing
        pad = np.full((400, 2), 1e9)
        mask = np.hstack([np.ones_like(rewards), np.zeros((400, 2))])
        c = pyprog.safety_test(
            np.hstack([log_pi, -pad]),
            np.hstack([log_beta, -pad]),
            np.hstack([rewards, pad]),
            mask,
            **ARGS,
            random_state=5,
        )
        assert c.low == pytest.approx(a.low, rel=1e-12)

    @pytest.mark.parametrize("basis", ["fourier", "auto"])
    def test_as_dict_is_json_ready(self, logged, basis):
        import json

        test = pyprog.safety_test(*logged, **{**ARGS, "basis": basis, "d": None}, random_state=0)
        d = test.as_dict()
        assert {"accept", "value", "low", "stationary_accept", "episodes"} <= set(d)
        json.dumps(d)
        # plain floats, not NumPy scalars: a repr that reads as the numbers it holds
        assert all(type(getattr(test, k)) is float for k in ("value", "low", "se", "past_mean"))
        assert "np.float64" not in repr(test)


class TestErrors:
    @pytest.mark.parametrize("alpha", [0.0, 1.0, -1, None])
    def test_alpha(self, logged, alpha):
        with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\)"):
            pyprog.safety_test(*logged, delta=5, basis="fourier", d=3, alpha=alpha)

    def test_n_boot(self, logged):
        with pytest.raises(ValueError, match="n_boot must be an integer >= 100"):
            pyprog.safety_test(*logged, **ARGS, n_boot=50)

    def test_nan_rewards(self, logged):
        log_pi, log_beta, rewards = logged
        rewards = rewards.copy()
        rewards[7, 1] = np.nan
        with pytest.raises(
            ValueError, match="rewards must be finite; got nan at episode 7, step 1"
        ):
            pyprog.safety_test(log_pi, log_beta, rewards, **ARGS)

    def test_too_few_episodes(self, logged):
        log_pi, log_beta, rewards = (a[:3] for a in logged)
        with pytest.raises(ValueError, match="safety_test needs at least as many episodes"):
            pyprog.safety_test(log_pi, log_beta, rewards, delta=1, basis="fourier", d=5, alpha=0.1)

    def test_d_is_refused_with_auto(self, logged):
        with pytest.raises(ValueError, match=r"^safety_test: d sets the features"):
            pyprog.safety_test(*logged, delta=5, basis="auto", d=3, alpha=0.1)

    def test_keywords_are_required(self, logged):
        with pytest.raises(TypeError):
            pyprog.safety_test(*logged, alpha=0.05)


class TestSizeAndPower:
    """Monte Carlo on forecast_montecarlo.safety_episodes (true future advantage known).

    Acceptance of a candidate that is worse, or no better, in the future must stay
    below alpha + 3 binomial standard errors of the Monte Carlo estimate.
    """

    def test_worse_candidate_rarely_accepted(self):
        reps = 200
        rate, stationary = acceptance(200, -0.2, reps, alpha=0.05, seed=1)
        assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
        assert stationary > 0.5  # the stationary test is fooled by the past

    @pytest.mark.slow
    def test_size_at_the_boundary_and_power(self):
        reps = 1500
        rate, _ = acceptance(200, 0.0, reps, alpha=0.05, seed=2)
        assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
        rate, _ = acceptance(1000, 0.0, 500, alpha=0.05, seed=3)
        assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 500)
        power, _ = acceptance(1000, 1.0, 300, alpha=0.05, seed=4)
        assert power >= 0.8
