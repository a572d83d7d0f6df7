"""The generic run loop against the built-in fast path and against the bare environment.

Run: ``pytest bench/bench_any_env.py --benchmark-columns=median,rounds``.

* NS-Reco passed as a Gymnasium instance (``gym.make("pyprog/NSReco-v0", speed=2)``, with
  Gymnasium's wrappers) against the built-in name ``"reco"``: the same 1000-episode Pro-WLS
  run (the paper's speed-2 setting, the same seed, the same returns). Target: within 1.3×
  (speed-up >= 1 / 1.3).
* The loop's per-step overhead on CartPole-v1: ``pyprog.run`` with a learner that never
  updates (δ larger than the run) against stepping the same environment, for the same
  number of steps, with precomputed random actions. The difference per step is what pyprog
  adds: encoding the observation, sampling from the policy, storing the step.
"""

import gymnasium as gym
import numpy as np
import pytest

from pyprog.learn.hyperparams import default_hyper, paper_hyper
from pyprog.runner.loop import run

EPISODES = 1000
SETTING = paper_hyper("reco", "pro-wls", 2)


def _reco_instance():
    return (gym.make("pyprog/NSReco-v0", speed=2), "pro-wls"), {
        "seed": 0,
        "episodes": EPISODES,
        "hyper": SETTING,
    }


@pytest.mark.parametrize("how", ["name", "instance"])
def bench_reco_by_name_and_instance(benchmark, how):
    benchmark.group = "1000-episode NS-Reco run, Pro-WLS: built-in name vs gym.make instance"
    if how == "name":
        benchmark.extra_info.update(impl='run("reco", speed=2)', role="baseline")
        result = benchmark.pedantic(
            run,
            args=("reco", "pro-wls"),
            kwargs={"speed": 2, "seed": 0, "episodes": EPISODES},
            rounds=3,
            iterations=1,
        )
    else:
        benchmark.extra_info.update(
            impl='run(gym.make("pyprog/NSReco-v0", speed=2))', role="candidate", target=1 / 1.3
        )
        result = benchmark.pedantic(run, setup=_reco_instance, rounds=3, iterations=1)
    assert result.returns.shape == (EPISODES,)


#: CartPole episodes of the overhead benchmark, and the setting that never updates
CARTPOLE_EPISODES = 200
NO_UPDATES = default_hyper("ftrl-pg").replace(delta=10**6, buffer_size=CARTPOLE_EPISODES)


def _cartpole_steps() -> int:
    result = run("CartPole-v1", "ftrl-pg", seed=0, episodes=CARTPOLE_EPISODES, hyper=NO_UPDATES)
    assert result.updates == 0
    return int(result.returns.sum())  # CartPole pays 1 per step


def _bare_loop(env: gym.Env, actions: np.ndarray) -> int:
    """Step ``env`` through ``actions``, resetting where an episode ends."""
    env.reset(seed=0)
    for a in actions:
        _, _, terminated, truncated, _ = env.step(a)
        if terminated or truncated:
            env.reset()
    return len(actions)


@pytest.mark.parametrize("how", ["bare", "pyprog"])
def bench_cartpole_per_step_overhead(benchmark, how):
    steps = _cartpole_steps()
    benchmark.group = f"CartPole-v1, {steps} steps: bare env.step vs pyprog's loop (no updates)"
    benchmark.extra_info["steps"] = steps
    if how == "bare":
        benchmark.extra_info.update(impl="env.step, random actions", role="baseline")
        actions = [int(a) for a in np.random.default_rng(0).integers(0, 2, size=steps)]
        benchmark.pedantic(
            _bare_loop,
            setup=lambda: ((gym.make("CartPole-v1"), actions), {}),
            rounds=5,
            iterations=1,
        )
    else:
        benchmark.extra_info.update(impl="pyprog.run, FTRL-PG, no updates", role="candidate")
        result = benchmark.pedantic(
            run,
            args=("CartPole-v1", "ftrl-pg"),
            kwargs={"seed": 0, "episodes": CARTPOLE_EPISODES, "hyper": NO_UPDATES},
            rounds=5,
            iterations=1,
        )
        assert int(result.returns.sum()) == steps
