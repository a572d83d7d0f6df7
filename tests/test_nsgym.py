"""NS-Gym integration: Pro-WLS on NS-Gym's CartPole whose pole mass grows across episodes.

NS-Gym (PyPI ``ns-gym``) is optional. CI installs it the light way (README, "NS-Gym") and
sets ``PYPROG_REQUIRE_NSGYM=1``, so that there this module fails instead of skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import pyprog

try:
    import ns_gym  # noqa: F401
    from ns_gym.schedulers import ContinuousScheduler
    from ns_gym.update_functions import IncrementUpdate
    from ns_gym.wrappers import NSClassicControlWrapper
except Exception as exc:  # ns-gym raises RuntimeError on a Gymnasium older than 1.1
    if os.environ.get("PYPROG_REQUIRE_NSGYM"):
        raise
    pytest.skip(f"ns-gym is not importable here: {exc}", allow_module_level=True)

K = 1e-4  # pole mass added at every step


def make_growing_pole(k: float = K) -> gym.Env:
    """NS-Gym CartPole whose ``masspole`` grows by ``k`` per step, kept across resets."""
    tunable = {"masspole": IncrementUpdate(ContinuousScheduler(), k=k)}
    return NSClassicControlWrapper(gym.make("CartPole-v1"), tunable, persistent_params=True)


def test_pro_wls_on_ns_gym_cartpole_whose_pole_mass_drifts(backend):
    env = make_growing_pole()
    assert isinstance(env.observation_space, gym.spaces.Dict)  # {"state": ..., ...}
    mass, inertia = [], []

    def after_episode(k: int, ret: float) -> None:
        mass.append(env.unwrapped.masspole)
        inertia.append(env.unwrapped.polemass_length)

    result = pyprog.run(env, "pro-wls", seed=0, episodes=15, callback=after_episode)
    assert result.speed is None and result.regret is None and result.truncated == 0
    assert result.updates > 0
    # CartPole pays 1 per step: after episode j the pole has grown by k per step so far,
    # so pyprog never reset the drift (reset(seed=...) once, then reset())
    steps = np.cumsum(result.returns)
    np.testing.assert_allclose(mass, 0.1 + K * steps, rtol=1e-9)
    assert (np.diff(mass) > 0).all() and mass[-1] > 0.1 + K * 100
    # and the dynamics see it: NS-Gym updates the derived physical constants
    np.testing.assert_allclose(inertia, np.array(mass) * env.unwrapped.length, rtol=1e-12)


def test_instance_and_factory_give_the_same_run():
    by_instance = pyprog.run(make_growing_pole(), "pro-wls", seed=2, episodes=8)
    by_factory = pyprog.run(make_growing_pole, "pro-wls", seed=2, episodes=8)
    np.testing.assert_array_equal(by_instance.returns, by_factory.returns)
    assert by_factory.env == "test_nsgym:make_growing_pole"


def test_the_readme_ns_gym_block_drifts_across_episodes_only_with_persistent_params(capsys):
    """Issue 19: README's own NS-Gym paragraph; its block is run here (it needs ns-gym)."""
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("**NS-Gym: drift across episodes", 1)[1].split("```py\n", 1)[1]
    code = block.split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "README.md (NS-Gym)", "exec"), namespace)
    mass, prob = (float(x) for x in capsys.readouterr().out.split())
    assert mass > 0.1 + 1e-4 * 60 and prob < 1.0 - 1e-3 * 60  # at least a step per episode
    lake = namespace["lake"]
    assert 0.4 < prob < 0.6  # as the README says: 0.475
    # without persistent_params the drift silently resets at every episode
    from ns_gym.schedulers import ContinuousScheduler
    from ns_gym.update_functions import DistributionDecrementUpdate
    from ns_gym.wrappers import NSFrozenLakeWrapper

    slip = {"P": DistributionDecrementUpdate(ContinuousScheduler(), k=1e-3)}
    forgetful = NSFrozenLakeWrapper(
        gym.make("FrozenLake-v1", is_slippery=False), slip, initial_prob_dist=[1.0, 0.0, 0.0]
    )
    starts = []
    pyprog.run(
        forgetful,
        "pro-wls",
        seed=0,
        episodes=60,
        callback=lambda k, ret: starts.append(forgetful.transition_prob[0]),
    )
    assert min(starts) > 0.9 and lake.transition_prob[0] < 0.6
