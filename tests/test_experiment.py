"""pyprog.run, the paper's settings, surrogate regret, and bad input."""

import numpy as np
import pytest

import pyprog
from pyprog.learn.hyperparams import ALGOS, ENVS, Hyper, paper_hyper
from pyprog.runner.loop import run
from pyprog.stats.summary import surrogate_regret


def test_run_is_reproducible_from_its_seed():
    a = run("reco", "pro-wls", speed=3, seed=7, episodes=150)
    b = run("reco", "pro-wls", speed=3, seed=7, episodes=150)
    c = run("reco", "pro-wls", speed=3, seed=8, episodes=150)
    np.testing.assert_array_equal(a.returns, b.returns)
    assert a.regret == b.regret
    assert not np.array_equal(a.returns, c.returns)


def test_reco_regret_is_exact():
    r = run("reco", "ftrl-pg", speed=2, seed=0, episodes=120)
    assert r.regret == pytest.approx(np.sum(r.optimal - r.expected))
    assert np.all(r.optimal >= r.expected)
    # the noise-free truth is what the environment says
    from pyprog.envs.reco import NSReco

    np.testing.assert_allclose(
        r.optimal, NSReco(speed=2).expected_rewards(np.arange(120)).max(axis=1)
    )


def test_reacher_run_has_no_exact_regret():
    r = run("reacher", "onpg", speed=1, seed=0, episodes=10)
    assert r.regret is None and r.optimal is None
    assert r.returns.shape == (10,) and np.all(r.returns <= 100)


def test_paper_setting_is_used_and_recorded():
    r = run("reco", "pro-ols", speed=4, seed=0, episodes=5)
    assert r.hyper == paper_hyper("reco", "pro-ols", 4).to_dict()
    assert r.hyper["d"] == 5 and r.hyper["lr"] == pytest.approx(0.006330904637554062)


def test_custom_hyper_dict():
    r = run("reco", "onpg", speed=0, seed=0, episodes=6, hyper={"lr": 0.01, "delta": 2})
    assert r.hyper["delta"] == 2 and r.updates == 3


def test_paper_table_is_complete():
    for env in ENVS:
        for algo in ALGOS:
            for speed in range(5):
                h = paper_hyper(env, algo, speed)
                assert (h.hidden is not None) == (env == "reacher")
                assert (h.gauss_std is not None) == (env == "diabetes")


class TestBadInput:
    def test_unknown_env_lists_valid(self):
        with pytest.raises(
            ValueError, match=r"unknown env 'cartpole': not a built-in \(reco, reacher, diabetes\)"
        ):
            run("cartpole", "pro-ols", seed=0)

    def test_unknown_algo_lists_valid(self):
        with pytest.raises(
            ValueError, match="unknown algo 'ppo'; valid: pro-ols, pro-wls, onpg, ftrl-pg"
        ):
            run("reco", "ppo", speed=1, seed=0)

    @pytest.mark.parametrize(
        "changes, message",
        [
            ({"lr": 0}, "lr must be a number > 0"),
            ({"lr": -1e-3}, "lr must be a number > 0"),
            ({"clip": 0.0}, "clip must be a number > 0"),
            ({"delta": 0}, "delta must be an integer >= 1"),
            ({"d": 0}, "d must be an integer >= 1"),
            ({"hidden": 0}, "hidden must be an integer >= 1"),
            ({"gauss_std": 0.0}, "gauss_std must be a number > 0"),
            ({"gamma": 1.5}, r"gamma must be a number >= 0 and <= 1"),
            ({"basis": "wavelet"}, "unknown basis 'wavelet'; valid: fourier, poly, linear"),
            ({"optimizer": "lbfgs"}, "unknown optimizer 'lbfgs'; valid: rmsprop, adam, sgd"),
            ({"inner_steps": 0}, "inner_steps must be an integer >= 1"),
            ({"entropy_lambda": -0.1}, "entropy_lambda must be a number >= 0"),
        ],
    )
    def test_invalid_hyper_parameters_raise_before_any_work(self, changes, message):
        with pytest.raises(ValueError, match=message):
            run("reco", "pro-ols", speed=1, seed=0, hyper={"lr": 1e-3, **changes})

    def test_unknown_hyper_key(self):
        with pytest.raises(ValueError, match=r"unknown hyper-parameter.*learning_rate; valid:"):
            Hyper.from_dict({"lr": 1e-3, "learning_rate": 1})

    @pytest.mark.parametrize("episodes", [0, -5, 2.5])
    def test_episodes(self, episodes):
        with pytest.raises(ValueError, match="episodes must be an integer >= 1"):
            run("reco", "pro-ols", speed=1, seed=0, episodes=episodes)

    def test_paper_setting_needs_a_paper_speed(self):
        with pytest.raises(ValueError, match="covers speeds 0-4 only"):
            run("reco", "pro-ols", speed=2.5, seed=0, hyper="paper")

    def test_a_speed_without_paper_settings_says_where_the_settings_came_from(self):
        """Issue 19: `hyper='paper' covers speeds 0-4` to someone who passed no hyper."""
        with pytest.raises(
            ValueError, match=r"reco at speed 7: without hyper, .* pass hyper="
        ) as e:
            run("reco", "pro-ols", speed=7, seed=0)
        assert "hyper='paper'" not in str(e.value)
        assert run("reco", "onpg", speed=7, episodes=2, hyper={"lr": 1e-3}).speed == 7.0

    def test_negative_speed(self):
        with pytest.raises(ValueError, match="speed must be a finite number >= 0"):
            run("reco", "pro-ols", speed=-1, seed=0, hyper={"lr": 1e-3})

    @pytest.mark.parametrize("speed", [-1, float("nan"), float("inf")])
    def test_bad_speed_is_named_with_the_paper_setting_too(self, speed):
        """Not "hyper='paper' covers speeds 0-4": the speed itself is wrong."""
        with pytest.raises(ValueError, match="speed must be a finite number >= 0"):
            run("reco", "pro-ols", speed=speed, seed=0)


class TestSurrogateRegret:
    def test_definition(self):
        r = surrogate_regret({"a": [1.0, 4.0, 2.0], "b": [2.0, 3.0, 2.0]})
        best = np.array([2.0, 4.0, 2.0])
        assert r["a"] == pytest.approx((best - [1, 4, 2]).sum() / best.sum())
        assert r["b"] == pytest.approx((best - [2, 3, 2]).sum() / best.sum())

    def test_per_seed_against_the_best_mean_curve(self):
        a = np.array([[1.0, 2.0], [3.0, 2.0]])
        b = np.array([[2.0, 2.0], [2.0, 2.0]])
        r = surrogate_regret({"a": a, "b": b})
        best = np.array([2.0, 2.0])  # max of the mean curves
        np.testing.assert_allclose(r["a"], (best - a).sum(axis=1) / best.sum())
        assert r["b"].shape == (2,) and np.allclose(r["b"], 0)

    def test_errors(self):
        with pytest.raises(ValueError, match="same number of episodes"):
            surrogate_regret({"a": [1.0, 2.0], "b": [1.0]})
        with pytest.raises(ValueError, match="must be finite"):
            surrogate_regret({"a": [np.nan]})
        with pytest.raises(ValueError, match="at least one algorithm"):
            surrogate_regret({})


def test_top_level_api():
    assert pyprog.run is run and pyprog.surrogate_regret is surrogate_regret
