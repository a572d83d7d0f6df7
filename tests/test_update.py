"""The compiled update (kernels.policy_update) against the learners' Python loop."""

import numpy as np
import pytest

from pyprog._ext.backend import backend, kernels
from pyprog.learn.hyperparams import Hyper
from pyprog.learn.learners import FTRLPG, LEARNERS, ONPG, NonFiniteParametersError, ProWLS
from pyprog.learn.policies import GaussianPolicy, SoftmaxLinear, SoftmaxMLP

cython_only = pytest.mark.skipif(backend() != "cython", reason="needs the compiled kernels")

POLICIES = {
    "linear": lambda: SoftmaxLinear(2, 3),
    "mlp": lambda: SoftmaxMLP(2, 4, 8, np.random.default_rng(1)),
    "reco": lambda: SoftmaxLinear(1, 5),  # a fixed-size backward instance (5 actions, 1 input)
    "reacher": lambda: SoftmaxMLP(2, 4, 16, np.random.default_rng(2)),  # fixed-size instance
    "gaussian": lambda: GaussianPolicy(2, [3.0, 5.0], [30.0, 50.0], std=[2.0, 4.0]),
}


def play(learner, rng, episodes, horizon):
    """Episodes of random length (padding included), rewards depending on the action."""
    for _ in range(episodes):
        for _ in range(rng.integers(1, horizon + 1)):
            obs = rng.normal(size=learner.policy.obs_dim)
            a, lp = learner.act(obs, rng)
            reward = float(a == 1) if learner.policy.discrete else float(a @ [0.1, -0.05])
            learner.observe(obs, a, lp, reward + rng.normal())
        learner.buffer.end_episode()
        learner.buffer.start_episode()
        learner.episodes += 1


def twins(name, policy_name, optimizer, episodes=12, horizon=4, **hyper):
    """A compiled and a Python learner with the same policy and the same buffer."""
    hyper = Hyper(
        lr=0.05, delta=2, inner_steps=5, d=2, entropy_lambda=0.1, clip=3.0, gamma=0.9,
        optimizer=optimizer, **hyper,
    )  # fmt: skip
    out = []
    for compiled in (True, False):
        learner = LEARNERS[name](POLICIES[policy_name](), hyper, horizon, compiled=compiled)
        play(learner, np.random.default_rng(3), episodes, horizon)
        out.append(learner)
    return out


@cython_only
@pytest.mark.parametrize("optimizer", ["rmsprop", "adam", "sgd"])
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_one_compiled_update_is_the_python_update(name, policy_name, optimizer):
    fast, slow = twins(name, policy_name, optimizer)
    assert fast.compiled and not slow.compiled
    np.testing.assert_array_equal(fast.policy.theta, slow.policy.theta)
    assert fast.update() == slow.update() is True
    np.testing.assert_allclose(fast.policy.theta, slow.policy.theta, rtol=0, atol=1e-12)
    assert not np.array_equal(fast.policy.theta, POLICIES[policy_name]().theta)  # it moved
    for key in ("square_avg", "exp_avg", "exp_avg_sq"):
        if hasattr(slow.optimizer, key):
            np.testing.assert_allclose(
                getattr(fast.optimizer, key), getattr(slow.optimizer, key), rtol=1e-12, atol=0
            )
    assert getattr(fast.optimizer, "step_count", 0) == getattr(slow.optimizer, "step_count", 0)
    assert fast.stats() == slow.stats()


@cython_only
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_whole_runs_of_both_paths_agree(name):
    """300 episodes of a drifting 3-armed bandit: the paths part at most in the last bits."""
    thetas = []
    for compiled in (True, False):
        rng = np.random.default_rng(4)
        learner = LEARNERS[name](
            SoftmaxLinear(1, 3), Hyper(lr=0.05, delta=3, inner_steps=4, d=2), 1, compiled=compiled
        )
        for k in range(300):
            a, lp = learner.act(np.ones(1), rng)
            learner.observe(np.ones(1), a, lp, float(a == (k // 100)) + 0.1 * rng.normal())
            learner.end_episode()
        thetas.append(learner.policy.theta.copy())
        stats = learner.stats()
    np.testing.assert_allclose(thetas[0], thetas[1], rtol=1e-8, atol=1e-10)
    assert stats["updates"] > 0


def test_compiled_is_the_default_where_available():
    learner = FTRLPG(SoftmaxLinear(1, 2), Hyper(lr=0.1), horizon=1)
    assert learner.compiled == (backend() == "cython")
    gauss = FTRLPG(GaussianPolicy(1, [0.0], [1.0], std=1.0), Hyper(lr=0.1), horizon=1)
    assert gauss.compiled == (backend() == "cython")
    free = FTRLPG(GaussianPolicy(1, [-np.inf], [np.inf], std=1.0), Hyper(lr=0.1), horizon=1)
    assert free.compiled is False  # an unbounded mean: the Python loop
    assert FTRLPG(SoftmaxLinear(1, 2), Hyper(lr=0.1), 1, compiled=False).compiled is False


def test_compiled_true_where_unavailable_and_bad_values_raise():
    with pytest.raises(ValueError, match=r"compiled=True needs .*GaussianPolicy"):
        FTRLPG(GaussianPolicy(1, [-np.inf], [np.inf], std=1.0), Hyper(lr=0.1), 1, compiled=True)
    with pytest.raises(ValueError, match="compiled must be True, False or None"):
        FTRLPG(SoftmaxLinear(1, 2), Hyper(lr=0.1), 1, compiled="yes")


@cython_only
def test_a_subclass_changing_the_coefficients_runs_the_python_loop():
    class Halved(FTRLPG):
        def _coefficients(self, log_pi, log_beta, mask):
            return 0.5 * super()._coefficients(log_pi, log_beta, mask)

    assert Halved(SoftmaxLinear(1, 2), Hyper(lr=0.1), 1).compiled is False
    with pytest.raises(ValueError, match="compiled=True needs"):
        Halved(SoftmaxLinear(1, 2), Hyper(lr=0.1), 1, compiled=True)


@cython_only
def test_no_forecast_in_the_compiled_loop_skips_and_counts_like_the_python_loop(monkeypatch):
    fast, slow = twins("pro-wls", "linear", "rmsprop")
    theta = fast.policy.theta.copy()
    # a design with a zero column is rank-deficient: no forecast at the first step
    phi = np.asfortranarray(np.column_stack([np.ones(12), np.zeros(12)]))
    monkeypatch.setattr(
        ProWLS, "_kernel_coefficients", lambda self: (None, (phi, self._returns, self._phi_star))
    )
    no_forecast = lambda self, *args: None  # noqa: E731
    monkeypatch.setattr(ProWLS, "_coefficients", no_forecast)
    monkeypatch.setattr(ProWLS, "_kernel_twin", no_forecast)
    assert fast.compiled  # both hooks patched together: still the compiled loop
    assert fast.update() is slow.update() is False
    assert fast.stats() == slow.stats() and fast.stats()["skipped_steps"] == 5
    np.testing.assert_array_equal(fast.policy.theta, theta)


@cython_only
@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_non_finite_parameters_in_the_compiled_loop_raise():
    hyper = Hyper(lr=10, delta=1, inner_steps=2, d=1, optimizer="sgd")
    learner = ONPG(SoftmaxLinear(1, 2), hyper, horizon=1, compiled=True)
    rng = np.random.default_rng(9)
    a, lp = learner.act(np.ones(1), rng)
    learner.observe(np.ones(1), a, lp, 1e308)  # a step of inf
    with pytest.raises(NonFiniteParametersError, match=r"onpg: the policy's parameters .*step 1\)"):
        learner.end_episode()


def kernel_args(**changes):
    """A one-episode, two-step policy_update call (linear policy, 2 actions, 1 input)."""
    args = {
        "theta": np.zeros(4),
        "policy": ("softmax", 2, 0),
        "obs": np.ones((2, 1)),
        "actions": np.array([0, 1]),
        "index": np.array([0, 1]),
        "log_beta": np.full((1, 2), np.log(0.5)),
        "rewards": np.ones((1, 2)),
        "mask": np.ones((1, 2)),
        "gamma": 1.0,
        "clip": np.inf,
        "steps": 3,
        "entropy_coef": 0.0,
        "zeta": np.ones(1),
        "wls": None,
        "optimizer": (0, np.full(4, 0.1), np.empty(4), np.empty(4), 0, 0.0, 0.0, 0.0),
    }
    args.update(changes)
    return args


@cython_only
def test_kernel_stops_before_a_non_finite_gradient():
    args = kernel_args(zeta=np.array([np.inf]))
    assert kernels.policy_update(**args) == (0, kernels.UPDATE_NONFINITE_GRAD, 0)
    np.testing.assert_array_equal(args["theta"], 0.0)
    args = kernel_args()
    assert kernels.policy_update(**args) == (3, kernels.UPDATE_DONE, 3)
    assert args["theta"][2] != 0.0


@cython_only
@pytest.mark.parametrize(
    "changes, match",
    [
        ({"index": np.array([1, 0])}, "index must increase"),
        ({"index": np.array([0, 2])}, "index must increase"),
        ({"index": np.array([0.0, 1.0])}, "index must be a C-contiguous int64"),
        ({"actions": np.array([0, 2])}, "actions must be in"),
        ({"theta": np.zeros(5)}, "theta must have shape"),
        ({"zeta": None}, "wls must be a tuple"),
        ({"zeta": None, "wls": (1, 2)}, "wls must be a tuple"),
        ({"zeta": np.ones(2)}, "zeta must have shape"),
        ({"optimizer": (0,)}, "optimizer must be a tuple"),
        ({"policy": ("beta", 2, 0)}, "policy must be"),
        ({"policy": ("gaussian", np.ones(2), np.ones(1), np.ones(2), np.ones(2), 0.0)}, "half"),
        ({"policy": ("gaussian", *[np.ones(2)] * 4, 0.0)}, "actions must be a 2-D"),
        ({"optimizer": (7, np.ones(4), np.ones(4), np.ones(4), 0, 0.0, 0.0, 0.0)}, "kind"),
        ({"steps": -1}, "steps >= 0"),
        ({"gamma": 2.0}, "gamma must be in"),
        ({"clip": 0.0}, "clip must be > 0"),
        ({"mask": np.ones((2, 2))}, "mask must have shape"),
    ],
)
def test_kernel_input_errors(changes, match):
    args = kernel_args(**changes)
    with pytest.raises(ValueError, match=match):
        kernels.policy_update(**args)


@cython_only
def test_kernel_refuses_a_read_only_theta():
    theta = np.zeros(4)
    theta.flags.writeable = False
    with pytest.raises(ValueError, match="theta must be writeable"):
        kernels.policy_update(**kernel_args(theta=theta))


@cython_only
def test_kernel_recomputes_an_overflowing_pdis_row_exactly():
    """A cumulative ratio past 1e308 (log β = −720) times a tiny reward: the row is
    recomputed exactly, as pdis_weights does, and the step uses those weights."""
    log_beta = np.array([[-720.0, np.log(0.5)]])
    rewards = np.full((1, 2), 1e-300)
    args = kernel_args(log_beta=log_beta, rewards=rewards, steps=1)
    assert kernels.policy_update(**args)[:2] == (1, kernels.UPDATE_DONE)
    # the same step from the separate kernels, at θ = 0
    obs, actions = np.ones((2, 1)), np.array([0, 1])
    W1, b1, W, b = np.zeros((0, 1)), np.zeros(0), np.zeros((2, 1)), np.zeros(2)
    fwd = kernels.softmax_forward(obs, actions, W1, b1, W, b)
    g, J = kernels.pdis_weights(fwd[3][None, :].copy(), log_beta, rewards, np.ones((1, 2)), 1.0,
                                np.inf)  # fmt: skip
    assert np.isfinite(J).all() and J[0] > 1e10  # finite only through the exact path
    grad = kernels.softmax_backward(obs, actions, *fwd[:3], fwd[4], W1, W, g[0], np.zeros(2))
    np.testing.assert_allclose(args["theta"], 0.1 * grad, rtol=1e-12)


def wls_args(log_beta, clip=np.inf, **changes):
    """A Pro-WLS policy_update call: 4 one-step episodes, a linear design (φ = [1, i])."""
    n = log_beta.shape[0]
    phi = np.asfortranarray(np.column_stack([np.ones(n), np.arange(n, dtype=float)]))
    args = kernel_args(
        obs=np.ones((n, 1)), actions=np.arange(n) % 2, index=np.arange(n), log_beta=log_beta,
        rewards=np.ones((n, 1)), mask=np.ones((n, 1)), clip=clip, steps=1, zeta=None,
        wls=(phi, np.linspace(0.0, 1.0, n), np.array([1.0, n + 0.5])),
    )  # fmt: skip
    args.update(changes)
    return args


@cython_only
def test_kernel_pro_wls_step_is_the_separate_kernels_step():
    """One Pro-WLS inner step without the GIL: ratios, the WLS solve's ∂f/∂λ, the gradient."""
    log_beta = np.log(np.array([[0.3], [0.6], [0.5], [0.45]]))
    args = wls_args(log_beta, clip=1.5)
    assert kernels.policy_update(**args)[:2] == (1, kernels.UPDATE_DONE)
    obs, actions = args["obs"], args["actions"]
    W1, b1, W, b = np.zeros((0, 1)), np.zeros(0), np.zeros((2, 1)), np.zeros(2)
    fwd = kernels.softmax_forward(obs, actions, W1, b1, W, b)
    lam, unclipped = kernels.episode_ratios(fwd[3][:, None].copy(), log_beta, args["mask"], 1.5)
    assert not unclipped.all()  # one clipped ratio: its gradient term is 0
    phi, returns, phi_star = args["wls"]
    dfdlam = kernels.wls_forecast(phi, lam, returns, phi_star)[3]
    coef = dfdlam * lam * unclipped
    grad = kernels.softmax_backward(obs, actions, *fwd[:3], fwd[4], W1, W, coef, np.zeros(4))
    np.testing.assert_allclose(args["theta"], 0.1 * grad, rtol=1e-12)


@cython_only
def test_kernel_pro_wls_overflowing_ratio_is_the_exact_one_or_its_error():
    """A ratio beyond float64 (clip inf): the same error as episode_ratios, naming the episode."""
    log_beta = np.array([[-720.0], [np.log(0.5)], [np.log(0.5)], [np.log(0.5)]])
    with pytest.raises(ValueError) as direct:
        kernels.episode_ratios(np.full((4, 1), np.log(0.5)), log_beta, np.ones((4, 1)), np.inf)
    with pytest.raises(ValueError) as in_update:
        kernels.policy_update(**wls_args(log_beta))
    assert str(in_update.value) == str(direct.value) and "episode 0" in str(direct.value)


@cython_only
@pytest.mark.parametrize(
    "which, value, match",
    [
        (0, np.ones((4, 2)), "phi must be a 2-D Fortran-contiguous"),
        (0, np.asfortranarray(np.ones((3, 2))), "phi must have shape"),
        (1, np.ones(3), "returns must have shape"),
        (2, np.ones(3), "phi_star must have shape"),
    ],
)
def test_kernel_pro_wls_input_errors(which, value, match):
    args = wls_args(np.full((4, 1), np.log(0.5)))
    wls = list(args["wls"])
    wls[which] = value
    with pytest.raises(ValueError, match=match):
        kernels.policy_update(**{**args, "wls": tuple(wls)})


@cython_only
def test_kernel_pro_wls_rank_deficient_design_takes_no_step():
    args = wls_args(np.full((4, 1), np.log(0.5)))
    phi = np.asfortranarray(np.ones((4, 2)))  # two equal columns
    args["wls"] = (phi, *args["wls"][1:])
    assert kernels.policy_update(**args)[:2] == (0, kernels.UPDATE_NO_FORECAST)
    np.testing.assert_array_equal(args["theta"], 0.0)
