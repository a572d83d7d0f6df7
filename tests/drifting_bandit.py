"""A drifting bandit written for the tests: an environment nobody tuned pyprog for.

Three arms whose mean rewards move with the episode count k (sines of one period, a third
of a period apart); one step per episode; the final ``info`` carries ``expected_reward`` and
``best_expected_reward``, so pyprog's regret is exact. The drift belongs to the environment:
``reset(seed=...)`` starts it at k = 0 and every ``reset()`` advances it.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class DriftingBandit(gym.Env):
    """Arms' means ``0.5 + 0.5 sin(2π k / period + φ_a)``, φ = (0, 2, 4); reward noise N(0, noise²).

    Observation ``[1.0]`` (Box(1,)); actions Discrete(3); one step per episode (``horizon = 1``).
    """

    horizon = 1

    def __init__(self, period: float = 300.0, noise: float = 0.1) -> None:
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float64)
        self.period, self.noise = float(period), float(noise)
        self.phase = np.array([0.0, 2.0, 4.0])
        self.k = 0

    def means(self) -> np.ndarray:
        return 0.5 + 0.5 * np.sin(2.0 * np.pi * self.k / self.period + self.phase)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0 if seed is not None else self.k + 1
        return np.ones(1), {}

    def step(self, action):
        mu = self.means()
        reward = float(mu[action] + self.noise * self.np_random.standard_normal())
        info = {"expected_reward": float(mu[action]), "best_expected_reward": float(mu.max())}
        return np.ones(1), reward, True, False, info


def make(period: float = 300.0) -> DriftingBandit:
    """A factory, as ``pyprog run --env drifting_bandit:make`` finds it."""
    return DriftingBandit(period=period)


if "tests/DriftingBandit-v0" not in gym.registry:
    gym.register("tests/DriftingBandit-v0", entry_point=DriftingBandit)
