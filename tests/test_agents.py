"""Learners: their gradients are the gradients of their objectives; bookkeeping; errors."""

import math

import numpy as np
import pytest

from pyprog import episode_ratios, nwis_forecast, ols_weights, pdis
from pyprog.learn.hyperparams import Hyper
from pyprog.learn.learners import FTRLPG, LEARNERS, ONPG, NonFiniteParametersError, ProOLS, ProWLS
from pyprog.learn.policies import GaussianPolicy, SoftmaxLinear, SoftmaxMLP


def fill(learner, rng, episodes, horizon=1, reward=lambda obs, a, rng: np.sum(a) + rng.normal()):
    """Play ``episodes`` episodes of a context-free task without updating."""
    buf = learner.buffer
    for _ in range(episodes):
        for _ in range(rng.integers(1, horizon + 1)):
            obs = np.array([rng.random(), rng.random()])[: learner.policy.obs_dim]
            a, lp = learner.act(obs, rng)
            learner.observe(obs, a, lp, reward(obs, a, rng))
        buf.end_episode()
        buf.start_episode()
        learner.episodes += 1


def objective(learner, theta, forecaster=None):
    """The learner's objective (without entropy) at θ, from the definitions in pyprog.

    ``forecaster`` (a :class:`pyprog.forecast.forecasters.Forecaster`) replaces the
    hyper-parameters' basis for Pro-OLS / Pro-WLS (``basis="auto"``'s choice).
    """
    policy, buf, h = learner.policy, learner.buffer, learner.hyper
    old = policy.theta.copy()
    policy.theta = theta
    steps = buf.flat_valid()
    log_pi = steps.scatter(policy.evaluate(steps.obs, steps.actions).log_prob)
    policy.theta = old
    n = len(buf)
    if isinstance(learner, ProWLS):
        lam, _ = episode_ratios(log_pi, buf.log_beta, buf.mask, clip=h.clip)
        G = (buf.rewards * buf.mask * h.gamma ** np.arange(buf.rewards.shape[1])).sum(axis=1)
        if forecaster is not None:
            return forecaster.nwis(G, lam, h.delta)[0]
        return nwis_forecast(G, lam, h.delta, h.basis, h.d).value
    J = pdis(log_pi, buf.log_beta, buf.rewards, buf.mask, gamma=h.gamma, clip=h.clip).J
    if isinstance(learner, ProOLS):
        if forecaster is not None:
            return forecaster.weights(n, h.delta) @ J
        return ols_weights(n, h.delta, h.basis, h.d) @ J
    return J.mean()


def finite_difference(f, theta, eps=1e-6):
    out = np.empty_like(theta)
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = eps
        out[k] = (f(theta + e) - f(theta - e)) / (2 * eps)
    return out


POLICIES = {
    "linear": lambda rng: SoftmaxLinear(1, 3),
    "mlp": lambda rng: SoftmaxMLP(2, 4, 8, rng),
    "gaussian": lambda rng: GaussianPolicy(1, [3.0, 5.0], [30.0, 50.0], std=2.0),
}


@pytest.mark.parametrize("cls", [ProOLS, ProWLS, FTRLPG, ONPG])
@pytest.mark.parametrize("policy_name, horizon", [("linear", 1), ("mlp", 6), ("gaussian", 1)])
def test_gradient_is_the_objectives_gradient(cls, policy_name, horizon):
    """Property 1 and the NWIS chain rule: the learner's step direction is ∇ objective.

    Unclipped ratios (clip = inf) and γ < 1; the policy is moved away from the behaviour
    policy so that the ratios are not all 1.
    """
    rng = np.random.default_rng([len(cls.__name__), len(policy_name), horizon])
    policy = POLICIES[policy_name](rng)
    hyper = Hyper(lr=0.01, delta=3, inner_steps=2, d=3, clip=np.inf, gamma=0.9, basis="fourier")
    learner = cls(policy, hyper, horizon=horizon)
    fill(learner, rng, 12 if cls is not ONPG else 3, horizon)
    policy.theta = policy.theta + rng.normal(size=policy.n_params) * 0.3
    grad = learner.gradient()
    fd = finite_difference(lambda t: objective(learner, t), policy.theta.copy())
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7 * np.abs(fd).max())


@pytest.mark.parametrize("cls", [ProOLS, FTRLPG])
def test_entropy_term_is_the_mean_entropy_gradient(cls):
    rng = np.random.default_rng(5)
    policy = SoftmaxMLP(2, 3, 4, rng)
    learner = cls(policy, Hyper(lr=0.01, delta=1, d=2, entropy_lambda=0.5), horizon=4)
    fill(learner, rng, 10, horizon=4, reward=lambda *args: 0.0)  # zero rewards: only entropy
    policy.theta = policy.theta + rng.normal(size=policy.n_params)

    def mean_entropy(theta):
        old = policy.theta.copy()
        policy.theta = theta
        steps = learner.buffer.flat_valid()
        h = policy.evaluate(steps.obs, steps.actions).entropy.mean()
        policy.theta = old
        return 0.5 * h

    fd = finite_difference(mean_entropy, policy.theta.copy())
    np.testing.assert_allclose(learner.gradient(), fd, rtol=1e-6, atol=1e-9)


def test_prowls_gradient_with_clipped_ratios_is_zero_on_clipped_episodes():
    rng = np.random.default_rng(6)
    policy = SoftmaxLinear(1, 2)
    learner = ProWLS(policy, Hyper(lr=0.01, delta=1, d=2, clip=1.2, gamma=1.0), horizon=1)
    fill(learner, rng, 30)
    policy.b[:] = [0.0, 2.0]  # π(1) = 0.88 vs β = 0.5: episodes with a = 1 have λ > 1.2
    fd = finite_difference(lambda t: objective(learner, t), policy.theta.copy())
    np.testing.assert_allclose(learner.gradient(), fd, rtol=1e-6, atol=1e-10)


def test_too_few_episodes_skips_and_counts():
    rng = np.random.default_rng(7)
    learner = ProOLS(SoftmaxLinear(1, 2), Hyper(lr=0.1, delta=1, inner_steps=3, d=5), horizon=1)
    for _ in range(6):
        a, lp = learner.act(np.ones(1), rng)
        learner.observe(np.ones(1), a, lp, 1.0)
        learner.end_episode()
    # episodes 1..4 have fewer than 5 episodes for 5 features; 5 and 6 update
    assert learner.stats() == {
        "episodes": 6,
        "updates": 2,
        "skipped_updates": 4,
        "skipped_steps": 12,
    }
    assert np.isfinite(learner.policy.theta).all()


def test_prowls_forecast_gradient_is_exactly_zero_on_as_many_episodes_as_features():
    """On as many episodes as features the WLS fit interpolates them whatever the weights
    λ_i(θ): the forecast does not depend on θ, so its gradient is exactly 0 (computed, it
    was rounding noise, which RMSprop scaled to full steps) and only the entropy term
    moves θ. With more episodes the forecast's gradient is back."""
    rng = np.random.default_rng(9)
    learner = ProWLS(SoftmaxLinear(1, 2), Hyper(lr=0.1, delta=10, d=3, entropy_lambda=0.0), 1)
    for n in range(1, 6):
        obs = rng.normal(size=1)
        a, lp = learner.act(obs, rng)
        learner.observe(obs, a, lp, float(a) + rng.normal())
        learner.end_episode()  # δ = 10: no update, the gradient is read below
        grad = learner.gradient()
        if n == 3:
            np.testing.assert_array_equal(grad, 0.0)
        if n == 5:
            assert np.abs(grad).max() > 1e-6


def test_rank_deficient_forecast_skips_and_counts(monkeypatch):
    rng = np.random.default_rng(8)
    learner = ProWLS(SoftmaxLinear(1, 2), Hyper(lr=0.1, delta=2, inner_steps=4, d=2), horizon=1)
    theta = learner.policy.theta.copy()
    monkeypatch.setattr(ProWLS, "_coefficients", lambda self, *args: None)
    for _ in range(4):
        a, lp = learner.act(np.ones(1), rng)
        learner.observe(np.ones(1), a, lp, 1.0)
        learner.end_episode()
    assert learner.stats()["skipped_updates"] == 2 and learner.stats()["skipped_steps"] == 8
    np.testing.assert_array_equal(learner.policy.theta, theta)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_non_finite_step_raises_naming_learner_episode_and_hyper():
    rng = np.random.default_rng(9)
    hyper = Hyper(lr=10, delta=1, inner_steps=2, d=1, optimizer="sgd")
    learner = FTRLPG(SoftmaxLinear(1, 2), hyper, horizon=1)
    a, lp = learner.act(np.ones(1), rng)
    learner.observe(np.ones(1), a, lp, 1e308)  # rewards at float64's edge: a step of inf
    with pytest.raises(NonFiniteParametersError, match=r"ftrl-pg: .* at episode 1 .*'lr': 10\.0"):
        learner.end_episode()


@pytest.mark.parametrize(
    "key, value",
    [
        ("lr", 1e308),
        ("lr", 11.0),
        ("hidden_lr", 1e308),
        ("entropy_lambda", 1e308),
        ("clip", 1e308),
        ("gauss_std", 1e308),
        ("lr", math.inf),
    ],
)
def test_hyper_refuses_values_that_make_any_run_diverge(key, value):
    """Issue 19 item 2: lr 1e308 was accepted and every run died of NonFiniteParametersError."""
    changes = {"lr": 1e-3, key: value}
    with pytest.raises(ValueError, match=rf"^{key} must be"):
        Hyper(**changes)


def test_onpg_discards_its_data_after_each_update():
    rng = np.random.default_rng(10)
    learner = ONPG(SoftmaxLinear(1, 2), Hyper(lr=0.1, delta=3, inner_steps=50), horizon=1)
    sizes = []
    for _ in range(7):
        a, lp = learner.act(np.ones(1), rng)
        learner.observe(np.ones(1), a, lp, 1.0)
        learner.end_episode()
        sizes.append(len(learner.buffer))
    assert sizes == [1, 2, 0, 1, 2, 0, 1]
    assert learner.updates == 2  # δ steps each, not inner_steps


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learner_learns_a_stationary_bandit(name):
    """Arm 1 pays 1, arm 0 pays 0: after 150 episodes every learner prefers arm 1."""
    rng = np.random.default_rng(11)
    policy = SoftmaxLinear(1, 2)
    learner = LEARNERS[name](policy, Hyper(lr=0.05, delta=3, inner_steps=6, d=2), horizon=1)
    for _ in range(150):
        a, lp = learner.act(np.ones(1), rng)
        learner.observe(np.ones(1), a, lp, float(a))
        learner.end_episode()
    probs = np.exp(policy.evaluate(np.ones((1, 1)), [1]).log_prob)
    assert probs[0] > 0.7


def test_non_finite_gradient_raises_before_the_step(monkeypatch):
    rng = np.random.default_rng(12)
    learner = FTRLPG(SoftmaxLinear(1, 2), Hyper(lr=0.1, delta=1, inner_steps=2), horizon=1)
    theta = learner.policy.theta.copy()
    monkeypatch.setattr(
        FTRLPG, "_coefficients", lambda self, log_pi, *a: np.full_like(log_pi, np.inf)
    )
    a, lp = learner.act(np.ones(1), rng)
    learner.observe(np.ones(1), a, lp, 1.0)
    with pytest.raises(NonFiniteParametersError, match="ftrl-pg: the gradient became non-finite"):
        learner.end_episode()
    np.testing.assert_array_equal(learner.policy.theta, theta)
