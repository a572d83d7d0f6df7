"""Gymnasium's ``check_env`` for environments that are non-stationary across episodes.

Gymnasium's step-determinism check (in ``check_env``) resets with a seed, steps, resets with
the same seed again and steps again, and since Gymnasium 1.x it also requires the two steps'
``info`` to be equal. pyprog's NS environments drift from episode to episode by design: a
seeded reset reseeds the noise but does not rewind the episode counter, so the second step
is the next episode's and its info says so (``episode``, ``time``, the drifting ``goal``,
``alpha``, the expected rewards). Under the Gymnasium 0.29 that simglucose used to pin, the
info was not compared, which hid this.

:func:`check_env` here is Gymnasium's, with that one check replaced by the property it means
to test, made exact: two copies of the environment in the same state, reset with the same
seed and given the same action, make the same step (observation, reward, flags and info).
(Gymnasium's also asserts that one step does not truncate, which a test's ``horizon=1``
environment does by construction.)
"""

from __future__ import annotations

import copy
from unittest import mock

import gymnasium as gym
from gymnasium.utils import env_checker
from gymnasium.utils.env_checker import data_equivalence


def _step_determinism_within_one_episode(env: gym.Env, seed: int = 123) -> None:
    if env.spec is not None and env.spec.nondeterministic is True:
        return
    steps = []
    for twin in (copy.deepcopy(env), copy.deepcopy(env)):
        twin.action_space.seed(seed)
        action = twin.action_space.sample()
        twin.reset(seed=seed)
        steps.append(copy.deepcopy(twin.step(action)))
    (obs_0, rew_0, term_0, trunc_0, info_0), (obs_1, rew_1, term_1, trunc_1, info_1) = steps
    assert data_equivalence(obs_0, obs_1, exact=True), "step observations differ"
    assert data_equivalence(rew_0, rew_1, exact=True), "step rewards differ"
    assert data_equivalence(term_0, term_1, exact=True), "step terminations differ"
    assert data_equivalence(trunc_0, trunc_1, exact=True), "step truncations differ"
    assert data_equivalence(info_0, info_1, exact=True), "step infos differ"


def check_env(env: gym.Env, **kwargs) -> None:
    """``gymnasium.utils.env_checker.check_env`` with the step-determinism check above."""
    if not hasattr(env_checker, "check_step_determinism"):  # Gymnasium 0.29 has none
        env_checker.check_env(env, **kwargs)
        return
    with mock.patch.object(
        env_checker, "check_step_determinism", _step_determinism_within_one_episode
    ):
        env_checker.check_env(env, **kwargs)
