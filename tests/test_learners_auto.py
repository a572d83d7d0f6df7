"""Pro-OLS / Pro-WLS with ``basis="auto"``: the forecaster chosen by backtests drives the
gradient, re-chosen every ``select_every`` episodes, and the gradient is the chosen
forecast's gradient for every kind of forecaster (basis, window, EWMA)."""

import functools
import itertools

import numpy as np
import pytest
from test_agents import fill, finite_difference, objective

import pyprog.learn.learners as learners_module
from pyprog.forecast.forecasters import parse_forecaster
from pyprog.forecast.selection import min_episodes_auto, select_forecaster
from pyprog.learn.hyperparams import Hyper
from pyprog.learn.learners import ProOLS, ProWLS
from pyprog.learn.policies import SoftmaxLinear


def play_episode(learner, rng):
    """One episode of a two-armed bandit, arm a paying a + N(0, 0.1²); the learner updates."""
    action, log_prob = learner.act(np.ones(1), rng)
    learner.observe(np.ones(1), action, log_prob, float(action) + rng.normal(0, 0.1))
    learner.end_episode()


def forced(monkeypatch, name):
    """Make the learners' selection choose ``name`` (a one-candidate set)."""
    only = functools.partial(select_forecaster, candidates=[name])
    monkeypatch.setattr(learners_module, "select_forecaster", only)


@pytest.mark.parametrize("cls", [ProOLS, ProWLS])
@pytest.mark.parametrize("name", ["fourier(d=3)", "window(k=6)", "ewma(halflife=4)"])
def test_gradient_is_the_chosen_forecasts_gradient(monkeypatch, cls, name):
    forced(monkeypatch, name)
    rng = np.random.default_rng(3)
    policy = SoftmaxLinear(1, 3)
    policy.theta = rng.normal(0, 0.3, policy.n_params)
    learner = cls(policy, Hyper(lr=0.1, delta=2, basis="auto", clip=50.0), horizon=3)
    fill(learner, rng, 24, horizon=3)
    grad = learner.gradient()
    assert learner.selection is not None and learner.selection.model == name
    fd = finite_difference(
        lambda t: objective(learner, t, parse_forecaster(name)), policy.theta.copy()
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cls", [ProOLS, ProWLS])
def test_a_chosen_basis_gives_the_fixed_basis_update(monkeypatch, cls):
    forced(monkeypatch, "fourier(d=3)")
    grads = []
    for basis in ("auto", "fourier"):
        rng = np.random.default_rng(5)
        learner = cls(SoftmaxLinear(1, 3), Hyper(lr=0.1, delta=2, basis=basis, d=3), horizon=2)
        fill(learner, rng, 30, horizon=2)
        grads.append(learner.gradient())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls", [ProOLS, ProWLS])
def test_updates_wait_for_the_backtests_then_reselect_every_select_every(cls):
    delta, every = 2, 6
    hyper = Hyper(lr=0.05, delta=delta, inner_steps=2, basis="auto", select_every=every)
    learner = cls(SoftmaxLinear(1, 2), hyper, horizon=1)
    rng = np.random.default_rng(0)
    need = min_episodes_auto(delta)
    for _ in range(40):
        play_episode(learner, rng)
        if learner.episodes < need:
            assert learner.updates == 0 and learner.selection is None
    episodes = [e for e, _ in learner.models]
    assert episodes[0] == need + (-need) % delta  # the first update with enough episodes
    assert all(b - a == every + (-every) % delta for a, b in itertools.pairwise(episodes))
    assert learner.updates == learner.episodes // delta - (need - 1) // delta
    assert all(isinstance(m, str) and m for _, m in learner.models)


@pytest.mark.parametrize("cls", [ProOLS, ProWLS])
def test_reselection_offers_the_last_choice_as_incumbent(monkeypatch, cls):
    seen = []

    def spy(*args, incumbent=None, **kwargs):
        sel = select_forecaster(*args, incumbent=incumbent, **kwargs)
        seen.append((None if incumbent is None else str(incumbent), sel.model))
        return sel

    monkeypatch.setattr(learners_module, "select_forecaster", spy)
    hyper = Hyper(lr=0.05, delta=2, inner_steps=2, basis="auto", select_every=4)
    learner = cls(SoftmaxLinear(1, 2), hyper, horizon=1)
    rng = np.random.default_rng(1)
    for _ in range(60):
        play_episode(learner, rng)
    assert len(seen) >= 5 and seen[0][0] is None
    # every later selection is offered the one before it
    assert all(inc == prev for (inc, _), (_, prev) in zip(seen[1:], seen[:-1], strict=True))


@pytest.mark.parametrize("cls", [ProOLS, ProWLS])
def test_auto_learns_a_stationary_bandit(cls):
    hyper = Hyper(lr=0.05, delta=2, inner_steps=5, basis="auto")
    learner = cls(SoftmaxLinear(1, 2), hyper, horizon=1)
    rng = np.random.default_rng(0)
    for _ in range(200):
        play_episode(learner, rng)
    probs = np.exp(learner.policy.evaluate(np.ones((1, 1)), np.array([1])).log_prob)
    assert probs[0] > 0.9 and learner.models


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"basis": "splines"}, "basis .*auto"),
        ({"select_every": 0}, "select_every"),
        ({"select_every": 2.5}, "select_every"),
    ],
)
def test_bad_auto_settings_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        Hyper(lr=0.1, **changes)


@pytest.mark.parametrize("cls", [ProOLS, ProWLS])
@pytest.mark.parametrize("name", ["fourier(d=3)", "window(k=6)"])
def test_compiled_and_python_updates_agree_with_auto(monkeypatch, cls, name):
    """A basis runs in the compiled update, a window Pro-WLS falls back to the Python loop."""
    forced(monkeypatch, name)
    thetas = []
    for compiled in (False, None):
        rng = np.random.default_rng(7)
        hyper = Hyper(lr=0.05, delta=2, inner_steps=4, basis="auto", clip=50.0)
        learner = cls(SoftmaxLinear(1, 3), hyper, horizon=3, compiled=compiled)
        fill(learner, rng, 24, horizon=3)
        assert learner.update()
        thetas.append(learner.policy.theta.copy())
    np.testing.assert_allclose(thetas[0], thetas[1], rtol=1e-12, atol=1e-14)
