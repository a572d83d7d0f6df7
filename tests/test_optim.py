"""Optimisers: PyTorch's update rules, state across steps, per-parameter rates, errors.

The references below restate ``torch.optim`` (``_single_tensor_rmsprop`` and
``_single_tensor_adam``, defaults: no momentum / weight decay / amsgrad) element by
element in plain Python floats, independently of the vectorised code under test.
"""

import doctest
import math

import numpy as np
import pytest

import pyprog.learn.optim
from pyprog.learn.optim import SGD, Adam, RMSprop, make_optimizer
from pyprog.learn.policies import SoftmaxMLP

P = 5
STEPS = 6


def gradients(seed: int = 0) -> np.ndarray:
    """A sequence of gradients spanning several orders of magnitude, with a 0 entry."""
    g = np.random.default_rng(seed).normal(size=(STEPS, P)) * np.array([1e-4, 1e-2, 1, 1e2, 1])
    g[2, 4] = 0.0
    return g


def torch_rmsprop(theta, grads, lr, alpha=0.99, eps=1e-8):
    """square_avg.mul_(alpha).addcmul_(g, g, value=1 − alpha);
    param.addcdiv_(g, square_avg.sqrt().add_(eps), value=−lr)"""
    theta = [float(x) for x in theta]
    lr = np.broadcast_to(lr, (len(theta),))
    v = [0.0] * len(theta)
    for g in grads:
        for i, gi in enumerate(g):
            v[i] = v[i] * alpha + (1 - alpha) * gi * gi
            theta[i] -= lr[i] * gi / (math.sqrt(v[i]) + eps)
    return np.array(theta), np.array(v)


def torch_adam(theta, grads, lr, betas=(0.9, 0.999), eps=1e-8):
    """exp_avg.lerp_(g, 1 − β1); exp_avg_sq.mul_(β2).addcmul_(g, g, value=1 − β2);
    step_size = lr / (1 − β1ᵗ); denom = exp_avg_sq.sqrt() / √(1 − β2ᵗ) + eps;
    param.addcdiv_(exp_avg, denom, value=−step_size)"""
    beta1, beta2 = betas
    theta = [float(x) for x in theta]
    lr = np.broadcast_to(lr, (len(theta),))
    m = [0.0] * len(theta)
    v = [0.0] * len(theta)
    for t, g in enumerate(grads, start=1):
        for i, gi in enumerate(g):
            m[i] = m[i] + (1 - beta1) * (gi - m[i])
            v[i] = v[i] * beta2 + (1 - beta2) * gi * gi
            denom = math.sqrt(v[i]) / math.sqrt(1 - beta2**t) + eps
            theta[i] -= lr[i] / (1 - beta1**t) * m[i] / denom
    return np.array(theta), np.array(m), np.array(v)


def run(opt, grads):
    for g in grads:
        opt.step(g)
    return opt.theta


@pytest.mark.parametrize("lr", [1e-3, np.array([1e-3, 1e-3, 5e-2, 5e-2, 5e-2])])
@pytest.mark.parametrize(("alpha", "eps"), [(0.99, 1e-8), (0.9, 1e-6)])
def test_rmsprop_matches_torch_recurrence(lr, alpha, eps):
    theta0 = np.linspace(-1, 1, P)
    grads = gradients()
    opt = RMSprop(theta0.copy(), lr=lr, alpha=alpha, eps=eps)
    expected, v = torch_rmsprop(theta0, grads, lr, alpha, eps)
    np.testing.assert_allclose(run(opt, grads), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(opt.square_avg, v, rtol=1e-13)


@pytest.mark.parametrize("lr", [1e-2, np.array([1e-3, 1e-3, 5e-2, 5e-2, 5e-2])])
@pytest.mark.parametrize(("betas", "eps"), [((0.9, 0.999), 1e-8), ((0.5, 0.9), 1e-4)])
def test_adam_matches_torch_recurrence(lr, betas, eps):
    theta0 = np.linspace(-1, 1, P)
    grads = gradients(1)
    opt = Adam(theta0.copy(), lr=lr, betas=betas, eps=eps)
    expected, m, v = torch_adam(theta0, grads, lr, betas, eps)
    np.testing.assert_allclose(run(opt, grads), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(opt.exp_avg, m, rtol=1e-12)
    np.testing.assert_allclose(opt.exp_avg_sq, v, rtol=1e-13)
    assert opt.step_count == STEPS


def test_sgd_and_hand_computed_first_steps():
    theta = np.array([1.0, 2.0])
    SGD(theta, lr=np.array([0.1, 0.01])).step(np.array([1.0, -3.0]))
    np.testing.assert_allclose(theta, [0.9, 2.03], rtol=1e-15)
    # RMSprop, step 1: v = 0.01 g², Δ = lr g / (0.1 |g| + 1e-8)
    theta = np.zeros(2)
    RMSprop(theta, lr=1e-3).step(np.array([2.0, -0.5]))
    np.testing.assert_allclose(theta, [-2e-3 / (0.2 + 1e-8), 0.5e-3 / (0.05 + 1e-8)], rtol=1e-14)
    # Adam, step 1: m̂ = g, v̂ = g², Δ = lr g / (|g| + 1e-8)
    theta = np.zeros(2)
    Adam(theta, lr=1e-3).step(np.array([2.0, -0.5]))
    np.testing.assert_allclose(theta, [-2e-3 / (2 + 1e-8), 0.5e-3 / (0.5 + 1e-8)], rtol=1e-14)


@pytest.mark.parametrize("cls", [RMSprop, Adam])
def test_state_persists_across_steps_and_reset_clears_it(cls):
    g1, g2 = np.array([1.0, -2.0, 0.5]), np.array([0.1, 3.0, -0.5])
    one = cls(np.zeros(3), lr=1e-2)
    one.step(g1)
    after_first = one.theta.copy()
    one.step(g2)
    second_move = one.theta - after_first
    # a fresh optimiser at the same point moves differently: the first step left state behind
    fresh = cls(after_first.copy(), lr=1e-2)
    fresh.step(g2)
    fresh_move = fresh.theta - after_first
    assert not np.allclose(second_move, fresh_move, rtol=1e-3)
    one.reset()  # after a reset, the next step is a first step again
    before = one.theta.copy()
    one.step(g2)
    np.testing.assert_allclose(one.theta - before, fresh_move, rtol=1e-12)


@pytest.mark.parametrize("name", ["rmsprop", "adam", "sgd"])
def test_updates_in_place_and_minimises(name):
    target = np.array([3.0, -1.0, 0.5])
    theta = np.zeros(3)
    opt = make_optimizer(name, theta, lr=0.05)
    assert opt.theta is theta
    for _ in range(2000):
        opt.step(theta - target)  # gradient of ½‖θ − target‖²
    np.testing.assert_allclose(theta, target, atol=0.05)


def test_per_parameter_learning_rates_reach_a_policy_views():
    policy = SoftmaxMLP(obs_dim=2, n_actions=4, hidden=8, rng=np.random.default_rng(0))
    before = policy.theta.copy()
    opt = make_optimizer("sgd", policy.theta, policy.learning_rates(0.1))
    opt.step(np.ones(policy.n_params))
    hidden, output = (sl for _, sl in policy.param_groups())
    np.testing.assert_allclose(before[hidden] - policy.theta[hidden], 1e-3)
    np.testing.assert_allclose(before[output] - policy.theta[output], 0.1)
    np.testing.assert_allclose(policy.W, -0.1)  # the named weights saw the update


def test_lr_is_copied_and_can_be_changed():
    lr = np.full(2, 0.1)
    theta = np.zeros(2)
    opt = SGD(theta, lr)
    lr[:] = 100.0  # the caller's array is not the optimiser's
    opt.step(np.ones(2))
    np.testing.assert_allclose(theta, -0.1)
    opt.lr = 0.5
    opt.step(np.ones(2))
    np.testing.assert_allclose(theta, -0.6)
    with pytest.raises(ValueError, match="lr must be"):
        opt.lr = 0.0


def test_make_optimizer_names_and_kwargs():
    theta = np.zeros(2)
    assert isinstance(make_optimizer("RMSprop", theta, 1e-3), RMSprop)
    assert isinstance(make_optimizer("ADAM", theta, 1e-3), Adam)
    opt = make_optimizer("rmsprop", theta, 1e-3, alpha=0.9)
    assert opt.alpha == 0.9 and opt.eps == 1e-8
    assert make_optimizer("adam", theta, 1e-3).betas == (0.9, 0.999)
    with pytest.raises(ValueError, match=r"unknown optimizer 'lbfgs'; choose one of \['adam'"):
        make_optimizer("lbfgs", theta, 1e-3)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: SGD(np.zeros(2), 0.0), "lr must be a finite number > 0; got 0.0"),
        (lambda: SGD(np.zeros(2), -1e-3), "lr must be a finite number > 0"),
        (lambda: SGD(np.zeros(2), float("nan")), "lr must be a finite number > 0"),
        (lambda: SGD(np.zeros(2), True), r"lr must be a number or an array of shape \(2,\)"),
        (lambda: SGD(np.zeros(2), np.ones(3)), r"lr must be a number or an array of shape \(2,\)"),
        (lambda: SGD(np.zeros(2), [0.1, 0.0]), "lr must be finite and > 0 everywhere; got 0.0 at"),
        (lambda: SGD([0.0, 0.0], 0.1), "theta must be a 1-D float64 ndarray.*got list"),
        (lambda: SGD(np.zeros(2, np.float32), 0.1), "theta must be .* got a float32 array"),
        (lambda: SGD(np.zeros((2, 2)), 0.1), r"theta must be .* of shape \(2, 2\)"),
        (lambda: RMSprop(np.zeros(2), 0.1, alpha=1.0), r"alpha must be a number in \[0, 1\)"),
        (lambda: RMSprop(np.zeros(2), 0.1, eps=0.0), "eps must be a finite number > 0"),
        (lambda: Adam(np.zeros(2), 0.1, betas=(0.9,)), "betas must be a pair"),
        (lambda: Adam(np.zeros(2), 0.1, betas=(0.9, -0.1)), r"betas\[1\] must be"),
    ],
)
def test_constructor_errors(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_read_only_theta_is_rejected():
    theta = np.zeros(2)
    theta.flags.writeable = False
    with pytest.raises(ValueError, match="theta must be writeable"):
        Adam(theta, 0.1)


@pytest.mark.parametrize("cls", [SGD, RMSprop, Adam])
def test_step_errors_leave_state_untouched(cls):
    theta = np.zeros(3)
    opt = cls(theta, 0.1)
    with pytest.raises(ValueError, match=r"grad must have shape \(3,\)"):
        opt.step(np.ones(4))
    with pytest.raises(ValueError, match="grad must be finite; got nan at index 1"):
        opt.step(np.array([0.0, np.nan, 1.0]))
    assert not theta.any()
    opt.step(np.ones(3))  # still usable, and the bad steps left no trace in the state
    reference = cls(np.zeros(3), 0.1)
    reference.step(np.ones(3))
    np.testing.assert_array_equal(theta, reference.theta)


def test_docstring_examples():
    result = doctest.testmod(pyprog.learn.optim)
    assert result.attempted > 0 and result.failed == 0
