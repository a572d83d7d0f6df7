"""The compiled update (one ``policy_update`` call per update) against the Python loop.

Run: ``pytest bench/bench_update.py --benchmark-columns=median,rounds --ratio-json update.json``.

* Per inner step on a linear softmax policy (NS-Reco's: 1 input, 5 actions; 100 stored
  one-step episodes, FTRL-PG, 100 inner steps): ``Learner.update()`` on the Python loop vs
  the compiled loop, and the compiled ``update()`` vs the ``policy_update`` kernel alone on
  the same inputs. ``(update − kernel) / inner steps`` is the interpreter's share per inner
  step (target: at most 5 µs); the same for Pro-WLS with NS-Reco's paper setting and a full
  buffer (1000 episodes, 50 inner steps), whose update also sets up the forecast design.
* CartPole-v1 with the default setting (softmax-linear, 4 inputs, 2 actions; Pro-WLS and
  FTRL-PG): µs per update on a buffer of 30 real episodes, Python loop vs compiled; and the
  compiled Pro-WLS update side by side with stepping the bare environment for the δ episodes
  that one update follows (one group: their ratio).
* A 1000-episode NS-Reco run, Pro-WLS, the paper's speed-2 setting: Python loop vs compiled.
"""

import gymnasium as gym
import numpy as np
import pytest

from pyprog.learn import learners
from pyprog.learn.hyperparams import Hyper, default_hyper, paper_hyper
from pyprog.learn.learners import FTRLPG, LEARNERS
from pyprog.learn.policies import SoftmaxLinear
from pyprog.runner.loop import run

compiled = pytest.importorskip("pyprog._ext._kernels", reason="compiled kernels not built")

PATHS = [("python", False, "baseline"), ("compiled", True, "candidate")]
INNER = 100


def _reco_like_learner(use_compiled: bool) -> FTRLPG:
    rng = np.random.default_rng(0)
    hyper = Hyper(lr=0.01, delta=1, inner_steps=INNER, entropy_lambda=0.01, buffer_size=100)
    learner = FTRLPG(SoftmaxLinear(1, 5), hyper, horizon=1, compiled=use_compiled)
    for _ in range(100):
        a, lp = learner.act(np.ones(1), rng)
        learner.observe(np.ones(1), a, lp, float(a == 2) + rng.normal())
        learner.buffer.end_episode()
        learner.buffer.start_episode()
        learner.episodes += 1
    return learner


@pytest.mark.parametrize("path, use_compiled, role", PATHS, ids=[p[0] for p in PATHS])
def bench_linear_policy_update(benchmark, path, use_compiled, role):
    benchmark.group = f"one update, {INNER} inner steps, softmax-linear (1 → 5), 100 episodes"
    benchmark.extra_info.update(impl=f"{path} loop", role=role, inner_steps=INNER)
    learner = _reco_like_learner(use_compiled)
    assert benchmark(learner.update)


def _kernel_call(learner: FTRLPG):
    """The ``policy_update`` call that ``learner.update()`` makes, with its inputs."""
    learner._begin()
    buf, flat, h, opt = learner.buffer, learner._steps, learner.hyper, learner.optimizer
    lr = np.full(opt.theta.shape, opt.lr)
    state = (compiled.OPT_RMSPROP, lr, opt.square_avg, opt.square_avg, 0, opt.alpha, 0.0, opt.eps)
    n = len(buf)
    args = (
        learner.policy.theta, ("softmax", 5, 0), flat.obs, flat.actions, flat.index, buf.log_beta,
        buf.rewards, buf.mask, h.gamma, h.clip, INNER, h.entropy_lambda / len(flat.index),
        np.full(n, 1.0 / n), None, state,
    )  # fmt: skip
    return lambda: compiled.policy_update(*args)


@pytest.mark.parametrize("what", ["update", "kernel"])
def bench_linear_softmax_interpreter_share(benchmark, what):
    benchmark.group = f"compiled update() vs its kernel alone, {INNER} inner steps, softmax-linear"
    learner = _reco_like_learner(True)
    if what == "update":
        benchmark.extra_info.update(impl="Learner.update()", role="baseline")
        benchmark(learner.update)
    else:
        benchmark.extra_info.update(impl="kernels.policy_update", role="candidate")
        call = _kernel_call(learner)
        assert benchmark(call)[0] == INNER


def _reco_pro_wls_learner() -> learners.ProWLS:
    """Pro-WLS with NS-Reco's paper setting (speed 2) and a full buffer of 1000 episodes."""
    hyper = paper_hyper("reco", "pro-wls", 2)
    learner = learners.ProWLS(SoftmaxLinear(1, 5), hyper, horizon=1, compiled=True)
    rng = np.random.default_rng(0)
    for _ in range(hyper.buffer_size):
        a, lp = learner.act(np.ones(1), rng)
        learner.observe(np.ones(1), a, lp, 0.1 * a + rng.normal())
        learner.buffer.end_episode()
        learner.buffer.start_episode()
        learner.episodes += 1
    return learner


@pytest.mark.parametrize("what", ["update", "kernel"])
def bench_pro_wls_interpreter_share(benchmark, monkeypatch, what):
    """Pro-WLS's compiled update() against the policy_update call it makes (captured from
    an update, then replayed): their difference is the Python around the kernel."""
    learner = _reco_pro_wls_learner()
    steps = learner.hyper.inner_steps
    benchmark.group = (
        f"compiled Pro-WLS update() vs its kernel alone, NS-Reco setting, {steps} inner steps, "
        "1000 stored episodes"
    )
    theta, square_avg = learner.policy.theta.copy(), learner.optimizer.square_avg.copy()

    def reset():  # every round from the same θ and optimiser state (θ must not drift)
        learner.policy.theta[:] = theta
        learner.optimizer.square_avg[:] = square_avg

    if what == "update":
        benchmark.extra_info.update(impl="Learner.update()", role="baseline", inner_steps=steps)
        assert benchmark.pedantic(learner.update, setup=reset, rounds=300)
        return
    calls, kernel = [], compiled.policy_update

    def capture(*args):
        calls.append(args)
        return kernel(*args)

    monkeypatch.setattr(learners.kernels, "policy_update", capture)
    assert learner.update()
    monkeypatch.undo()
    benchmark.extra_info.update(impl="kernels.policy_update", role="candidate")
    done = benchmark.pedantic(kernel, args=calls[0], setup=reset, rounds=300)
    assert done[0] == steps


CARTPOLE_EPISODES = 30
CARTPOLE_EPISODES = 30


def _cartpole_learner(algo: str, use_compiled: bool):
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    hyper = default_hyper(algo)
    learner = LEARNERS[algo](SoftmaxLinear(4, 2), hyper, horizon=500, compiled=use_compiled)
    obs, _ = env.reset(seed=0)
    for _ in range(CARTPOLE_EPISODES):
        done = False
        while not done:
            obs64 = np.asarray(obs, dtype=np.float64)
            a, lp = learner.act(obs64, rng)
            obs, r, terminated, truncated, _ = env.step(a)
            learner.observe(obs64, a, lp, r)
            done = terminated or truncated
        obs, _ = env.reset()
        learner.buffer.end_episode()
        learner.buffer.start_episode()
        learner.episodes += 1
    return learner


@pytest.mark.parametrize("path, use_compiled, role", PATHS, ids=[p[0] for p in PATHS])
@pytest.mark.parametrize("algo", ["pro-wls", "ftrl-pg"])
def bench_cartpole_update(benchmark, algo, path, use_compiled, role):
    hyper = default_hyper(algo)
    benchmark.group = (
        f"CartPole-v1 default setting, {algo}: one update ({hyper.inner_steps} inner steps, "
        f"{CARTPOLE_EPISODES} episodes stored)"
    )
    learner = _cartpole_learner(algo, use_compiled)
    benchmark.extra_info.update(
        impl=f"{path} loop", role=role, stored_steps=int(learner.buffer.mask.sum())
    )
    assert benchmark(learner.update)


def _bare_episodes(env: gym.Env, episodes: int) -> int:
    """Step ``env`` with random actions through ``episodes`` episodes; the steps taken."""
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=10_000).tolist()
    steps = 0
    for _ in range(episodes):
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(actions[steps])
            steps += 1
            done = terminated or truncated
        env.reset()
    return steps


def bench_cartpole_bare_env_delta_episodes(benchmark):
    delta = default_hyper("pro-wls").delta
    benchmark.group = f"CartPole-v1: stepping the bare env for δ = {delta} episodes"
    env = gym.make("CartPole-v1")
    assert benchmark(_bare_episodes, env, delta) > 0


@pytest.mark.parametrize("what", ["bare-env", "update"])
def bench_cartpole_update_beside_the_env(benchmark, what):
    """One compiled Pro-WLS update (default setting) beside stepping the bare CartPole-v1
    through the δ episodes it follows: the "speed-up" is bare env / update, so below 1 the
    update costs 1 / speed-up times the environment's own steps."""
    delta = default_hyper("pro-wls").delta
    benchmark.group = (
        f"CartPole-v1, default Pro-WLS: one compiled update vs δ = {delta} bare episodes"
    )
    if what == "bare-env":
        env = gym.make("CartPole-v1")
        benchmark.extra_info.update(impl=f"bare env, {delta} episodes", role="baseline")
        steps = benchmark(_bare_episodes, env, delta)
        benchmark.extra_info.update(us_per_env_step=benchmark.stats.stats.median / steps * 1e6)
    else:
        learner = _cartpole_learner("pro-wls", True)
        benchmark.extra_info.update(impl="compiled update", role="candidate")
        assert benchmark(learner.update)


@pytest.mark.parametrize("path, use_compiled, role", PATHS, ids=[p[0] for p in PATHS])
def bench_reco_run(benchmark, monkeypatch, path, use_compiled, role):
    benchmark.group = "1000-episode NS-Reco run, Pro-WLS, paper speed-2 setting"
    benchmark.extra_info.update(impl=f"{path} loop", role=role)
    if not use_compiled:
        monkeypatch.setattr(learners.Learner, "_compiled_available", lambda self: False)
    result = benchmark.pedantic(
        run, args=("reco", "pro-wls"), kwargs={"speed": 2, "seed": 0}, rounds=3, iterations=1
    )
    assert result.returns.shape == (1000,)
