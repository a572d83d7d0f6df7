"""Issue 35, item 10's remainder: the compiled update and the Python loop agree at extremes.

A Gaussian policy on observations of 1e300 made the compiled update raise (a NaN log π:
its ``W s`` summed to inf − inf where BLAS's fused sums gave ±inf) while the Python loop
went on, and a float32 softmax policy the reverse (the NumPy float32 pass got NaN where the
compiled one, whose π came from ``e / Σe``, did not). Now both check the same bound before
each pass (``Policy.layer_bound``, ``LAYER_BOUND_MAX``): they raise the same
``LayerOverflowError``, naming the cause, at the same inner step, or both run, with the
same parameters (1e-9 relative in float64; to float32's rounding in float32). These run on
either backend (the CI runs the suite on both): the Python loop's outcome is asserted, and
the compiled update's against it where it exists.
"""

import re

import numpy as np
import pytest

import pyprog
from pyprog._ext import fallback
from pyprog._ext.backend import kernels
from pyprog.learn.hyperparams import Hyper
from pyprog.learn.learners import LEARNERS, LayerOverflowError, NonFiniteParametersError
from pyprog.learn.policies import GaussianPolicy, SoftmaxLinear, SoftmaxMLP
from pyprog.learn.policies.base import LAYER_BOUND_MAX

compiled_backend = pyprog.backend() == "cython"


def filled(policy, algo, hyper, obs_of, episodes, horizon, seed=7, compiled=False):
    learner = LEARNERS[algo](policy, hyper, horizon, compiled=compiled)
    rng = np.random.default_rng(seed)
    for ep in range(episodes):
        for _ in range(horizon):
            obs = obs_of(ep, rng)
            a, lp = learner.act(obs, rng)
            learner.observe(obs, a, lp, float(np.sum(a)) + rng.normal())
        learner.buffer.end_episode()
        learner.buffer.start_episode()
        learner.episodes += 1
    return learner


def outcome(make, compiled):
    """``("ok", θ)`` after one update, or the error's class and message (sans hyper)."""
    learner = make(compiled)
    try:
        learner.update()
    except NonFiniteParametersError as err:
        return type(err).__name__, re.sub(r"; hyper-parameters: .*", "", str(err))
    return "ok", learner.policy.theta.copy()


def both_paths(make):
    """The Python loop's outcome, after checking the compiled update's is the same."""
    python = outcome(make, False)
    if compiled_backend:
        fast = outcome(make, True)
        assert fast[0] == python[0]
        if python[0] == "ok":
            np.testing.assert_allclose(fast[1], python[1], rtol=1e-9, atol=1e-300)
        else:
            assert fast[1] == python[1]
    return python


def gaussian(scale, lr, algo="pro-ols", steps=3, seed=0):
    """A bounded Gaussian policy, 3 inputs of mixed signs up to ``scale``, W s ~ O(1)."""

    def make(compiled):
        rng = np.random.default_rng(seed)
        policy = GaussianPolicy(3, low=[-1.0], high=[2.0], std=0.7)
        policy.theta[:] = rng.normal(size=policy.n_params) / scale
        policy.b[:] = 0.3
        hyper = Hyper(lr=lr, delta=2, inner_steps=steps, d=2, optimizer="sgd")

        def obs_of(ep, rng):
            return scale * rng.uniform(-1.0, 1.0, 3)

        return filled(policy, algo, hyper, obs_of, 6, 2, seed=seed, compiled=compiled)

    return make


@pytest.mark.parametrize("algo", ["pro-ols", "pro-wls", "onpg", "ftrl-pg"])
def test_gaussian_at_1e300_raises_the_same_error_on_both_paths(algo):
    """The first step makes W ~ 1e300 · lr: the second pass's W s is beyond float64."""
    kind, message = both_paths(gaussian(1e300, 1.0, algo))
    assert kind == "LayerOverflowError"
    assert message.startswith(f"{algo}: a float64 pass of the policy could overflow at episode 6")
    assert "inner step 2" in message
    assert re.search(r"observations up to \d(\.\d+)?e\+299", message)
    assert "scale the observations or lower lr" in message


@pytest.mark.parametrize("scale", [1.0, 1e100, 1e150])
def test_gaussian_at_any_scale_takes_the_same_steps_on_both_paths(scale):
    """A step small enough for the observations (lr ~ 1/scale²): both paths run, to the
    same θ."""
    kind, theta = both_paths(gaussian(scale, 1e-3 / scale**2 if scale > 1 else 1e-3))
    assert kind == "ok" and np.isfinite(theta).all()


def test_gaussian_gradient_beyond_the_bound_is_non_finite():
    """Σ_i |dx_i s_i| above LAYER_BOUND_MAX: inf (a finite sum depended on its order)."""
    policy = GaussianPolicy(2, low=[-1.0], high=[1.0], std=0.1)
    obs = np.array([[1.5e308, -1.5e308], [-1.5e308, 1.5e308]])
    ev = policy.evaluate(obs, np.array([[0.9], [-0.9]]))
    with np.errstate(over="ignore"):
        grad = policy.backward(ev, coef_log_prob=np.array([1.0, 1.0]))
    assert np.isinf(grad[:2]).all() and np.isfinite(grad[2:]).all()
    small = policy.backward(ev, coef_log_prob=np.array([1e-300, 1e-300]))
    assert np.isfinite(small).all()


def softmax_f32(algo, lr=1e-3, steps=3):
    """The float32 case: a softmax-linear policy at θ = 0.3, observations of 1e20."""

    def make(compiled):
        policy = SoftmaxLinear(2, 3)
        policy.theta[:] = 0.3
        hyper = Hyper(lr=lr, delta=2, inner_steps=steps, d=2, optimizer="sgd", dtype="float32")

        def obs_of(ep, rng):
            return np.array([1e20, -0.5e20]) * (1 + 0.1 * ep)

        return filled(policy, algo, hyper, obs_of, 10, 2, compiled=compiled)

    return make


@pytest.mark.parametrize("algo", ["pro-ols", "onpg"])
def test_float32_pass_beyond_float32_raises_the_same_error_on_both_paths(algo):
    python = outcome(softmax_f32(algo), False)
    assert python[0] == "LayerOverflowError"
    assert "a float32 pass of the policy could overflow" in python[1]
    assert "beyond 8.51e+37" in python[1] and "or use dtype='float64'" in python[1]
    if compiled_backend:
        assert outcome(softmax_f32(algo), True) == python


@pytest.mark.parametrize("algo, steps", [("ftrl-pg", 1), ("ftrl-pg", 3), ("pro-wls", 3)])
def test_float32_pass_takes_the_same_steps_on_both_paths(algo, steps):
    """From θ = 0.3 (equal logits of 1.5e19) the NumPy float32 pass took π = 1 for every
    action (exp of a log π that lost log 3): a gradient 3 times the compiled one's, then a
    NaN log π at the second step where the compiled update went on. Now both run (their
    steps keep the layers within float32), to the same θ up to float32's rounding."""
    kind, theta = outcome(softmax_f32(algo, steps=steps), False)
    assert kind == "ok" and np.abs(theta).max() > 1e16
    if compiled_backend:
        fast = outcome(softmax_f32(algo, steps=steps), True)
        assert fast[0] == "ok"
        np.testing.assert_allclose(fast[1], theta, rtol=1e-6)  # float32 rounding


def test_float32_twin_probabilities_sum_to_one_at_large_logits():
    obs = np.array([[1e20, -0.5e20]], dtype=np.float32)
    W = np.full((3, 2), 0.3, dtype=np.float32)
    b = np.full(3, 0.3, dtype=np.float32)
    none = np.zeros((0, 2), dtype=np.float32), np.zeros(0, dtype=np.float32)
    _, _, probs, _, _ = fallback.softmax_forward(obs, np.zeros(1, np.int64), *none, W, b)
    np.testing.assert_allclose(probs, 1 / 3, rtol=1e-6)


def test_layer_bound_is_the_affine_bound_and_max_theta():
    policy = SoftmaxLinear(2, 3)
    policy.theta[:] = np.arange(9.0) - 4.0
    obs = np.array([[1.0, -2.0], [3.0, 0.5]])
    # Σ_j c_j |W_kj| + |b_k| with c = (3, 2), the largest |s_j| over the samples
    sums = np.abs(policy.W) @ np.array([3.0, 2.0]) + np.abs(policy.b)
    assert policy.layer_bound(obs) == max(sums.max(), 4.0)
    assert np.all(np.abs(obs) @ np.abs(policy.W).T + np.abs(policy.b) <= sums.max())
    assert GaussianPolicy(1, [0.0], [1.0], 1.0).layer_bound(np.array([[1e308]])) == 0.0
    mlp = SoftmaxMLP(2, 3, 4, rng=np.random.default_rng(0))
    W1, b1 = mlp._hidden_layer()
    hidden = (np.abs(W1) @ np.array([3.0, 2.0]) + np.abs(b1)).max()
    output = (np.abs(mlp.W).sum(axis=1) + np.abs(mlp.b)).max()  # on |tanh| <= 1
    top = np.abs(mlp.theta).max()
    assert mlp.layer_bound(obs) == max(hidden, output, top)


@pytest.mark.skipif(not compiled_backend, reason="compiled kernels not built or not in use")
def test_the_compiled_update_uses_the_same_bounds():
    assert kernels.LAYER_BOUND_MAX == LAYER_BOUND_MAX[np.dtype(np.float64)]
    assert kernels.LAYER_BOUND_MAX_F32 == LAYER_BOUND_MAX[np.dtype(np.float32)]
    with pytest.raises(LayerOverflowError):
        gaussian(1e300, 1.0)(True).update()
