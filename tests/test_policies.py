"""Policies: analytic gradients against finite differences, sampling, validation."""

import copy
import doctest
import pickle

import numpy as np
import pytest
import scipy.special
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import pyprog.learn.policies
from pyprog.learn.policies import GaussianPolicy, SoftmaxLinear, SoftmaxMLP

M = 12
CASES = ["linear", "linear20", "mlp", "gaussian", "gaussian_unbounded"]


def make_case(name: str, seed: int = 0):
    """A policy at a random θ with M random (state, action) pairs."""
    rng = np.random.default_rng(seed)
    if name == "linear":
        policy = SoftmaxLinear(obs_dim=3, n_actions=4)
    elif name == "linear20":  # more actions than the column-wise row max handles
        policy = SoftmaxLinear(obs_dim=2, n_actions=20)
    elif name == "mlp":
        policy = SoftmaxMLP(obs_dim=3, n_actions=4, hidden=6, rng=rng)
    elif name == "gaussian":
        policy = GaussianPolicy(obs_dim=3, low=[3.0, 5.0], high=[30.0, 50.0], std=[1.5, 4.0])
    else:  # one dimension of each kind: bounded, unbounded, low only, high only
        low, high = [3.0, -np.inf, 0.0, -np.inf], [30.0, np.inf, np.inf, 1.0]
        policy = GaussianPolicy(obs_dim=3, low=low, high=high, std=[1.5, 2.0, 0.5, 0.7])
    policy.theta = rng.normal(scale=0.8, size=policy.n_params)
    obs = rng.normal(size=(M, policy.obs_dim))
    if policy.discrete:
        actions = rng.integers(0, policy.n_actions, size=M)
    else:
        actions = np.stack([policy.sample(s, rng)[0] for s in obs])
    return policy, obs, actions, rng


def central_differences(f, theta: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """∂f/∂θ by central differences; ``f`` reads θ through the policy's views."""
    columns = []
    for i in range(theta.size):
        old = theta[i]
        theta[i] = old + h
        up = np.array(f(), dtype=float)
        theta[i] = old - h
        down = np.array(f(), dtype=float)
        theta[i] = old
        columns.append((up - down) / (2 * h))
    return np.stack(columns, axis=-1)


def assert_gradient_close(analytic: np.ndarray, numeric: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(numeric).max()))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-6 * scale)


# --------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_log_prob_vjp_matches_finite_differences(name):
    policy, obs, actions, rng = make_case(name)
    coef = rng.normal(size=M)
    grad = policy.backward(policy.evaluate(obs, actions), coef_log_prob=coef)
    numeric = central_differences(
        lambda: coef @ policy.evaluate(obs, actions).log_prob, policy.theta
    )
    assert_gradient_close(grad, numeric)
    # every parameter group (the MLP's hidden layer too) gets a non-trivial gradient
    for group, sl in policy.param_groups():
        assert np.abs(grad[sl]).max() > 1e-3, group


@pytest.mark.parametrize("name", CASES)
def test_entropy_vjp_matches_finite_differences(name):
    policy, obs, actions, rng = make_case(name, seed=1)
    coef = rng.normal(size=M)
    grad = policy.backward(policy.evaluate(obs, actions), coef_entropy=coef)
    numeric = central_differences(
        lambda: coef @ policy.evaluate(obs, actions).entropy, policy.theta
    )
    assert_gradient_close(grad, numeric)
    if policy.discrete:
        assert np.abs(grad).max() > 1e-3
    else:  # fixed std: the entropy does not depend on θ
        assert not grad.any()


@pytest.mark.parametrize("name", CASES)
def test_combined_vjp_matches_finite_differences(name):
    policy, obs, actions, rng = make_case(name, seed=2)
    c, e = rng.normal(size=M), rng.normal(size=M)

    def objective():
        ev = policy.evaluate(obs, actions)
        return c @ ev.log_prob + e @ ev.entropy

    grad = policy.backward(policy.evaluate(obs, actions), c, e)
    assert_gradient_close(grad, central_differences(objective, policy.theta))


@pytest.mark.parametrize("name", CASES)
def test_jacobian_matches_finite_differences(name):
    policy, obs, actions, rng = make_case(name, seed=3)
    log_prob, jac = policy.log_prob_and_grad(obs, actions)
    assert jac.shape == (M, policy.n_params)
    np.testing.assert_array_equal(log_prob, policy.evaluate(obs, actions).log_prob)
    numeric = central_differences(lambda: policy.evaluate(obs, actions).log_prob, policy.theta)
    assert_gradient_close(jac, numeric)
    # the weighted form is the Jacobian contracted with the weights
    coef = rng.normal(size=M)
    _, grad = policy.log_prob_and_grad(obs, actions, coef=coef)
    np.testing.assert_allclose(grad, coef @ jac, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_backward_coefficient_edge_cases(name):
    policy, obs, actions, rng = make_case(name)
    ev = policy.evaluate(obs, actions)
    out = np.full(policy.n_params, np.nan)
    assert policy.backward(ev, None, None, out=out) is out
    assert not out.any()
    # a coefficient of zeros is the same as None; the gradient is linear in the coefficients
    c, e = rng.normal(size=M), rng.normal(size=M)
    np.testing.assert_array_equal(
        policy.backward(ev, c, np.zeros(M)), policy.backward(ev, coef_log_prob=c)
    )
    both = policy.backward(ev, c, e)
    np.testing.assert_allclose(
        both, policy.backward(ev, coef_log_prob=c) + policy.backward(ev, coef_entropy=e), atol=1e-12
    )
    with pytest.raises(ValueError, match="coef_log_prob must have shape"):
        policy.backward(ev, np.ones(M + 1))
    with pytest.raises(ValueError, match="coef_entropy must have shape"):
        policy.backward(ev, None, np.ones((M, 1)))
    with pytest.raises(ValueError, match="out must be"):
        policy.backward(ev, c, out=np.empty(policy.n_params + 1))


@settings(max_examples=40, deadline=None)
@given(
    logits=arrays(np.float64, 6, elements=st.floats(-30, 30)),
    state=arrays(np.float64, 2, elements=st.floats(-3, 3)),
)
def test_score_function_has_zero_mean(logits, state):
    """Σ_a π(a|s) ∇ log π(a|s) = ∇ Σ_a π(a|s) = 0, for any logits."""
    policy = SoftmaxLinear(obs_dim=2, n_actions=6)
    policy.b[:] = logits
    policy.W[:] = np.outer(logits[::-1], [0.1, -0.2])
    obs = np.tile(state, (6, 1))
    ev = policy.evaluate(obs, np.arange(6))
    np.testing.assert_allclose(ev.probs.sum(axis=1), 1.0, rtol=1e-12)
    grad = policy.backward(ev, coef_log_prob=np.exp(ev.log_prob))
    assert np.abs(grad).max() < 1e-12 * max(1.0, np.abs(state).max())


# --------------------------------------------------------------------------------------
# Forward pass and sampling
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["linear", "linear20", "mlp"])
def test_softmax_forward_matches_scipy(name):
    policy, obs, actions, _ = make_case(name)
    ev = policy.evaluate(obs, actions)
    features = obs if name != "mlp" else np.tanh(obs @ policy.W1.T + policy.b1)
    probs = scipy.special.softmax(features @ policy.W.T + policy.b, axis=1)
    np.testing.assert_allclose(ev.probs, probs, rtol=1e-12)
    np.testing.assert_allclose(ev.probs.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.exp(ev.log_probs), ev.probs, rtol=1e-12)
    np.testing.assert_allclose(ev.log_prob, np.log(probs[np.arange(M), actions]), rtol=1e-12)
    np.testing.assert_allclose(ev.entropy, scipy.stats.entropy(probs, axis=1), rtol=1e-12)


def test_softmax_is_stable_for_huge_logits():
    policy, obs, actions, rng = make_case("linear")
    policy.theta *= 1e4  # logits of order 1e4: exp would overflow without the shift
    ev = policy.evaluate(obs, actions)
    for arr in (ev.log_prob, ev.entropy, ev.probs):
        assert np.isfinite(arr).all()
    np.testing.assert_allclose(ev.probs.sum(axis=1), 1.0, rtol=1e-14)
    assert (ev.log_prob <= 0).all() and (ev.entropy >= -1e-12).all()
    assert np.isfinite(policy.backward(ev, np.ones(M), np.ones(M))).all()
    action, log_prob = policy.sample(obs[0], rng)
    assert log_prob == pytest.approx(ev.log_probs[0, action], abs=1e-9)


@pytest.mark.parametrize("name", ["linear", "mlp"])
def test_sampling_frequencies_match_probabilities(name):
    policy, obs, _, rng = make_case(name, seed=4)
    state = obs[0]
    probs = policy.evaluate(state[None, :], [0]).probs[0]
    n = 40_000
    counts = np.bincount([policy.sample(state, rng)[0] for _ in range(n)], minlength=4)
    # each frequency within 5 standard errors of its probability (fixed seed)
    tolerance = 5 * np.sqrt(probs * (1 - probs) / n)
    assert (np.abs(counts / n - probs) <= tolerance).all(), (counts / n, probs)


def test_zero_probability_action_is_never_sampled():
    policy = SoftmaxLinear(obs_dim=1, n_actions=3)
    policy.b[:] = [0.0, -1e4, 0.0]  # π(1|s) underflows to exactly 0
    rng = np.random.default_rng(0)
    actions = {policy.sample(np.array([0.0]), rng)[0] for _ in range(2000)}
    assert actions == {0, 2}


def test_sampling_with_the_largest_uniform_draw():
    class AlmostOne:
        def random(self) -> float:
            return 1.0 - 2.0**-53  # the largest value Generator.random() returns

    policy = SoftmaxLinear(obs_dim=1, n_actions=4)
    policy.b[:] = [0.0, 0.0, 0.0, -1e4]  # masses 1, 1, 1, 0: total 3
    action, log_prob = policy.sample(np.array([0.0]), AlmostOne())
    assert action == 2  # the last action with mass, never the one of probability 0
    assert log_prob == pytest.approx(np.log(1 / 3))


@pytest.mark.parametrize("name", CASES)
def test_sample_log_prob_matches_evaluate(name):
    policy, obs, _, rng = make_case(name, seed=5)
    for state in obs:
        action, log_prob = policy.sample(state, rng)
        if policy.discrete:
            assert type(action) is int and 0 <= action < policy.n_actions
        else:
            assert isinstance(action, np.ndarray) and action.shape == (policy.act_dim,)
        assert isinstance(log_prob, float)
        ev = policy.evaluate(state[None, :], np.asarray([action]))
        assert log_prob == pytest.approx(ev.log_prob[0], rel=1e-12, abs=1e-12)


def test_gaussian_log_density_and_entropy_match_scipy():
    policy, obs, actions, _ = make_case("gaussian")
    ev = policy.evaluate(obs, actions)
    # the spec's form of the mean: low + sigmoid(W s + b)(high − low)
    mean = policy.low + scipy.special.expit(obs @ policy.W.T + policy.b) * (
        policy.high - policy.low
    )
    expected = scipy.stats.norm.logpdf(actions, loc=mean, scale=policy.std).sum(axis=1)
    np.testing.assert_allclose(ev.log_prob, expected, rtol=1e-12)
    np.testing.assert_allclose(policy.mean(obs), mean, rtol=1e-12)
    entropy = scipy.stats.norm.entropy(scale=policy.std).sum()
    np.testing.assert_allclose(ev.entropy, np.full(M, entropy), rtol=1e-12)


def test_gaussian_mean_of_each_kind_of_bound_matches_scipy():
    policy, obs, actions, _ = make_case("gaussian_unbounded")
    x = obs @ policy.W.T + policy.b
    expit, softplus = scipy.special.expit, lambda v: np.log1p(np.exp(v))
    mean = np.column_stack(
        [
            3.0 + expit(x[:, 0]) * 27.0,  # both bounds
            x[:, 1],  # none
            0.0 + softplus(x[:, 2]),  # low only
            1.0 - softplus(-x[:, 3]),  # high only
        ]
    )
    np.testing.assert_allclose(policy.mean(obs), mean, rtol=1e-12, atol=1e-12)
    expected = scipy.stats.norm.logpdf(actions, loc=mean, scale=policy.std).sum(axis=1)
    np.testing.assert_allclose(policy.evaluate(obs, actions).log_prob, expected, rtol=1e-12)
    assert (policy.mean(obs * 50)[:, 2] > 0).all() and (policy.mean(obs * 50)[:, 3] < 1).all()


def test_gaussian_samples_are_raw_draws_around_the_mean():
    policy = GaussianPolicy(obs_dim=1, low=[3.0, 5.0], high=[30.0, 50.0], std=[2.0, 10.0])
    policy.theta = [0.5, -1.0, 0.2, 0.1]
    state = np.array([1.0])
    rng = np.random.default_rng(6)
    draws = np.stack([policy.sample(state, rng)[0] for _ in range(20_000)])
    # sample mean within 5 standard errors, sample std within 3 %
    np.testing.assert_array_less(
        np.abs(draws.mean(axis=0) - policy.mean(state)), 5 * policy.std / 141
    )
    np.testing.assert_allclose(draws.std(axis=0), policy.std, rtol=0.03)
    # the sample is not clipped to the bounds of the mean
    assert (draws[:, 1] > 50.0).any() or (draws[:, 1] < 5.0).any()


# --------------------------------------------------------------------------------------
# Parameters, initialisation, groups
# --------------------------------------------------------------------------------------
def test_initial_parameters():
    assert not SoftmaxLinear(2, 3).theta.any()
    gauss = GaussianPolicy(1, low=[3.0, 5.0], high=[30.0, 50.0], std=1.0)
    assert not gauss.theta.any()
    np.testing.assert_allclose(gauss.mean(np.ones(1)), [16.5, 27.5])

    mlp = SoftmaxMLP(obs_dim=4, n_actions=3, hidden=64, rng=np.random.default_rng(7))
    bound = 1 / np.sqrt(4)
    hidden = np.concatenate([mlp.W1.ravel(), mlp.b1])
    assert np.abs(hidden).max() <= bound and np.unique(hidden).size == hidden.size
    assert hidden.std() == pytest.approx(bound / np.sqrt(3), rel=0.15)  # U(−b, b)
    assert not mlp.W2.any() and not mlp.b2.any()
    probs = mlp.evaluate(np.random.default_rng(0).normal(size=(5, 4)), np.zeros(5, int)).probs
    np.testing.assert_allclose(probs, 1 / 3)  # uniform initial policy
    same = SoftmaxMLP(obs_dim=4, n_actions=3, hidden=64, rng=np.random.default_rng(7))
    other = SoftmaxMLP(obs_dim=4, n_actions=3, hidden=64, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(mlp.theta, same.theta)
    assert not np.array_equal(mlp.theta, other.theta)


@pytest.mark.parametrize("name", CASES)
def test_named_weights_are_views_of_theta(name):
    policy, obs, actions, _ = make_case(name)
    theta = policy.theta
    names = ["W", "b"] + (["W1", "b1", "W2", "b2"] if name == "mlp" else [])
    for weight in names:
        assert np.shares_memory(getattr(policy, weight), theta)
    before = policy.evaluate(obs, actions).log_prob.copy()
    theta *= 0.5  # an optimiser's in-place update reaches the weights
    assert not np.allclose(policy.evaluate(obs, actions).log_prob, before)
    policy.theta = np.zeros(policy.n_params)  # assignment copies into the same array
    assert policy.theta is theta and not policy.W.any()
    with pytest.raises(ValueError, match="theta must have shape"):
        policy.theta = np.zeros(policy.n_params + 1)
    with pytest.raises(ValueError, match="theta must be finite"):
        policy.theta = np.full(policy.n_params, np.nan)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("clone", [pickle.loads, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_copies_keep_weights_as_views(name, clone):
    policy, obs, actions, rng = make_case(name)
    dumped = pickle.dumps(policy) if clone is pickle.loads else policy
    twin = clone(dumped)
    np.testing.assert_array_equal(twin.theta, policy.theta)
    assert np.shares_memory(twin.W, twin.theta) and not np.shares_memory(twin.W, policy.theta)
    np.testing.assert_array_equal(
        twin.evaluate(obs, actions).log_prob, policy.evaluate(obs, actions).log_prob
    )
    twin.theta += 1.0
    assert not np.array_equal(twin.theta, policy.theta)
    twin.sample(obs[0], rng)  # the work buffers were rebuilt


def test_param_groups_and_learning_rates():
    mlp = SoftmaxMLP(obs_dim=2, n_actions=4, hidden=32, rng=np.random.default_rng(0))
    groups = mlp.param_groups()
    assert [g for g, _ in groups] == ["hidden", "output"]
    assert groups[0][1] == slice(0, 32 * 3) and groups[1][1] == slice(96, 96 + 4 * 33)
    assert mlp.hidden_lr == 1e-3
    lr = mlp.learning_rates(0.05)
    assert lr.shape == (mlp.n_params,)
    assert (lr[:96] == 1e-3).all() and (lr[96:] == 0.05).all()
    mlp.hidden_lr = 2e-4
    assert (mlp.learning_rates(0.05)[:96] == 2e-4).all()
    for policy in (SoftmaxLinear(1, 5), GaussianPolicy(1, 0.0, 1.0, 1.0)):
        assert policy.param_groups() == [("output", slice(0, policy.n_params))]
        assert (policy.learning_rates(0.01) == 0.01).all()
    with pytest.raises(ValueError, match="lr must be"):
        mlp.learning_rates(0.0)
    with pytest.raises(ValueError, match="hidden_lr must be"):
        mlp.hidden_lr = -1.0
    with pytest.raises(ValueError, match="hidden_lr must be"):
        SoftmaxMLP(2, 4, 8, np.random.default_rng(0), hidden_lr=0.0)


# --------------------------------------------------------------------------------------
# Work-array reuse and empty batches
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_evaluate_out_reuses_arrays_and_matches(name):
    policy, obs, actions, rng = make_case(name)
    c, e = rng.normal(size=M), rng.normal(size=M)
    fresh = policy.evaluate(obs, actions)
    expected = policy.backward(fresh, c, e).copy()
    ev = policy.evaluate(obs, actions, check=False, out=policy.evaluate(obs[::-1], actions[::-1]))
    np.testing.assert_array_equal(ev.log_prob, fresh.log_prob)
    np.testing.assert_array_equal(policy.backward(ev, c, e), expected)
    again = policy.evaluate(obs, actions, out=ev)
    assert again.log_prob.ctypes.data == ev.log_prob.ctypes.data  # same memory, no allocation
    np.testing.assert_array_equal(policy.backward(again, c, e), expected)
    smaller = policy.evaluate(obs[:5], actions[:5], out=again)  # fewer samples: same memory
    assert smaller.log_prob.ctypes.data == ev.log_prob.ctypes.data
    np.testing.assert_array_equal(smaller.log_prob, fresh.log_prob[:5])
    # growing a few samples at a time (a learner's buffer) uses the spare rows: 8 -> room for 10
    small = policy.evaluate(obs[:8], actions[:8])
    room = small.work["log_prob"]
    grown = policy.evaluate(obs[:10], actions[:10], out=small)
    assert room.shape == (10,) and grown.work["log_prob"] is room
    assert grown.log_prob.ctypes.data == room.ctypes.data
    np.testing.assert_array_equal(grown.log_prob, fresh.log_prob[:10])
    alone = policy.backward(policy.evaluate(obs[:10], actions[:10]), c[:10], e[:10]).copy()
    np.testing.assert_array_equal(policy.backward(grown, c[:10], e[:10]), alone)
    other, *_ = make_case(name)
    with pytest.raises(ValueError, match="out must be a result of this policy"):
        policy.evaluate(obs, actions, out=other.evaluate(obs, actions))
    with pytest.raises(ValueError, match="ev must be a result of this policy"):
        policy.backward(other.evaluate(obs, actions), c)


@pytest.mark.parametrize("name", CASES)
def test_empty_batch(name):
    policy, obs, actions, _ = make_case(name)
    ev = policy.evaluate(obs[:0], actions[:0])
    assert ev.log_prob.shape == (0,) and ev.entropy.shape == (0,)
    assert not policy.backward(ev, np.zeros(0), np.zeros(0)).any()


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: SoftmaxLinear(0, 3), "obs_dim must be an integer >= 1"),
        (lambda: SoftmaxLinear(2, 0), "n_actions must be an integer >= 1"),
        (lambda: SoftmaxLinear(2.5, 3), "obs_dim must be an integer"),
        (lambda: SoftmaxLinear(True, 3), "obs_dim must be an integer"),
        (lambda: SoftmaxMLP(2, 4, 0, np.random.default_rng()), "hidden must be an integer >= 1"),
        (lambda: SoftmaxMLP(2, 0, 8, np.random.default_rng()), "n_actions must be"),
        (lambda: SoftmaxMLP(2, 4, 8, 42), "rng must be a numpy.random.Generator"),
        (lambda: GaussianPolicy(1, [3.0], [3.0], 1.0), "low must be < high"),
        (lambda: GaussianPolicy(1, [3.0, 5.0], [30.0], 1.0), "low and high must be"),
        (lambda: GaussianPolicy(1, [0.0], [np.nan], 1.0), "not NaN"),
        (lambda: GaussianPolicy(1, [np.inf], [np.inf], 1.0), "low must be < high"),
        (lambda: GaussianPolicy(1, [0.0], [1.0], 0.0), "std must be finite and > 0"),
        (lambda: GaussianPolicy(1, [0.0], [1.0], -1.0), "std must be finite and > 0"),
        (lambda: GaussianPolicy(1, [0.0, 0.0], [1.0, 1.0], [1.0, 1.0, 1.0]), "std must be"),
        (lambda: GaussianPolicy(0, [0.0], [1.0], 1.0), "obs_dim must be"),
        (lambda: GaussianPolicy(1, [0.0], [1.0], 1.0, rng=3), "rng must be"),
    ],
)
def test_constructor_errors(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize(
    ("obs", "actions", "match"),
    [
        (np.zeros(3), [0], r"obs must have shape \(M, 3\)"),
        (np.zeros((2, 2)), [0, 1], r"obs must have shape \(M, 3\)"),
        ([[0.0, np.nan, 0.0]], [0], "obs must be finite; got .* at sample 0"),
        ([["a", "b", "c"]], [0], "obs must be numbers"),
        (np.zeros((2, 3)), [0], r"actions must have shape \(2,\)"),
        (np.zeros((2, 3)), [0, 4], r"actions must be integers in \[0, 4\); got 4 at sample 1"),
        (np.zeros((2, 3)), [-1, 0], r"actions must be integers in \[0, 4\); got -1 at sample 0"),
        (np.zeros((2, 3)), [0.0, 1.0], "actions must be integers"),
    ],
)
def test_discrete_evaluate_errors(obs, actions, match):
    policy, *_ = make_case("mlp")
    with pytest.raises(ValueError, match=match):
        policy.evaluate(obs, actions)
    with pytest.raises(ValueError, match=match):
        policy.log_prob_and_grad(obs, actions)


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        (np.zeros(2), r"actions must have shape \(2, 2\)"),
        (np.zeros((2, 3)), r"actions must have shape \(2, 2\)"),
        ([[0.0, 1.0], [np.inf, 1.0]], "actions must be finite; got .* at sample 1"),
    ],
)
def test_gaussian_evaluate_errors(actions, match):
    policy, *_ = make_case("gaussian")
    with pytest.raises(ValueError, match=match):
        policy.evaluate(np.zeros((2, 3)), actions)


def test_log_prob_and_grad_coef_errors():
    policy, obs, actions, _ = make_case("linear")
    with pytest.raises(ValueError, match=r"coef must have shape \(12,\)"):
        policy.log_prob_and_grad(obs, actions, coef=np.ones(3))
    with pytest.raises(ValueError, match="coef must be finite"):
        policy.log_prob_and_grad(obs, actions, coef=np.full(M, np.nan))


@pytest.mark.parametrize("module", [pyprog.learn.policies.softmax, pyprog.learn.policies.gaussian])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
