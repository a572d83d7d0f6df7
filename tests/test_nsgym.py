"""NS-Gym integration: Pro-WLS on NS-Gym's CartPole whose pole mass grows across episodes.

NS-Gym (PyPI ``ns-gym``) is optional. CI installs it the light way (README, "NS-Gym") and
sets ``PYPROG_REQUIRE_NSGYM=1``, so that there this module fails instead of skipping.
"""

from __future__ import annotations

import os

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
