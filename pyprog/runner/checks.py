"""Checks of what an environment returns, where it arrives, naming env, episode and step.

What Gymnasium's env checker (``gymnasium.utils.env_checker``) looks at once, before a run,
the run loop (:func:`pyprog.runner.loop.train`) checks on every step it takes, at a cost of
a few tenths of a microsecond per step: ``step`` returns five values, the reward is a real
number, the observation has the space's shape, is finite and (for ``Discrete``) in the space,
and each episode's return and ``info["expected_reward"]`` are finite. A failure is an
:class:`EnvironmentReturnError`, a ``ValueError`` whose one line names the environment, the
episode and the step (both counted from 0).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "EnvironmentReturnError",
    "UpdateError",
    "bad_observation",
    "check_expected_rewards",
    "check_return",
    "reward_error",
    "step_arity_error",
]


class EnvironmentReturnError(ValueError):
    """The environment returned something a run cannot use (named with env, episode, step).

    Examples
    --------
    >>> isinstance(EnvironmentReturnError("env 'x', episode 0, step 3: ..."), ValueError)
    True
    """


class UpdateError(RuntimeError):
    """A learner's update raised (e.g. a NaN log π from a float32 pass on huge observations);
    the message names the env and the episode, the cause is chained.

    Examples
    --------
    >>> isinstance(UpdateError("env 'x', episode 9: the update failed: ..."), RuntimeError)
    True
    """


def _where(env: str, episode: int, step: int | None = None) -> str:
    at = f"env {env!r}, episode {episode}"
    return at if step is None else f"{at}, step {step}"


def _short(value: Any) -> str:
    # one line: NumPy wraps the repr of long arrays over several lines
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def step_arity_error(env: str, episode: int, step: int, result: Any) -> EnvironmentReturnError:
    """The error for a ``step`` that did not return (obs, reward, terminated, truncated, info).

    Examples
    --------
    >>> str(step_arity_error("e", 0, 2, (1, 2, 3, 4)))  # doctest: +ELLIPSIS
    "env 'e', episode 0, step 2: step() returned 4 values; Gymnasium's API returns 5 ..."
    """
    n = len(result) if isinstance(result, tuple) else f"a {type(result).__name__}, not"
    hint = (
        " — an old gym environment returns 4: wrap it with gymnasium.wrappers.EnvCompatibility "
        "or update it"
        if n == 4
        else ""
    )
    return EnvironmentReturnError(
        f"{_where(env, episode, step)}: step() returned {n} values; Gymnasium's API returns 5 "
        f"(obs, reward, terminated, truncated, info){hint}"
    )


def reward_error(env: str, episode: int, step: int, reward: Any) -> EnvironmentReturnError | None:
    """None if ``reward`` is a finite real number (not a bool), else the error naming it.

    Examples
    --------
    >>> reward_error("e", 1, 0, 0.5) is None
    True
    >>> str(reward_error("e", 1, 0, "1.0"))  # doctest: +ELLIPSIS
    "env 'e', episode 1, step 0: the reward must be a real number; got str '1.0' ..."
    """
    if isinstance(reward, numbers.Real) and not isinstance(reward, bool):
        if math.isfinite(reward):
            return None
        return EnvironmentReturnError(
            f"{_where(env, episode, step)}: the reward is {float(reward)!r}; rewards must be "
            "finite numbers"
        )
    return EnvironmentReturnError(
        f"{_where(env, episode, step)}: the reward must be a real number; got "
        f"{type(reward).__name__} {_short(reward)} (NS-Gym wrappers need scalar_reward=True)"
    )


def bad_observation(
    env: str, episode: int, step: int, obs: Any, dim: int, cause: str | None = None
) -> EnvironmentReturnError:
    """The error for an observation that is not a finite vector of ``dim`` values.

    ``step`` is the step that returned it (0: the ``reset``).

    Examples
    --------
    >>> str(bad_observation("e", 0, 0, [1.0, float("nan")], 2))
    "env 'e', episode 0, step 0: the observation [1.0, nan] is not finite (NaN or inf)"
    """
    if cause is None:
        try:
            arr = np.asarray(obs, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            cause = "is not numeric"
        else:
            cause = (
                f"has {arr.size} values; the observation space has {dim}"
                if arr.size != dim
                else "is not finite (NaN or inf)"
            )
    return EnvironmentReturnError(
        f"{_where(env, episode, step)}: the observation {_short(obs)} {cause}"
    )


def check_return(env: str, episode: int, total: float) -> None:
    """A ValueError if an episode's return (sum of rewards) is not finite.

    Examples
    --------
    >>> check_return("e", 4, float("inf"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pyprog.runner.checks.EnvironmentReturnError: env 'e', episode 4: the return ... is inf; ...
    """
    if not math.isfinite(total):
        raise EnvironmentReturnError(
            f"{_where(env, episode)}: the return (sum of rewards) is {total!r}; the rewards "
            "must be finite and their sum within float64"
        )


def check_expected_rewards(env: str, episode: int, best: float, expected: float) -> None:
    """A ValueError if ``info["best_expected_reward"]`` or ``info["expected_reward"]`` of
    an episode's last step is not finite (the regret would be NaN).

    Examples
    --------
    >>> check_expected_rewards("e", 7, 1.0, float("nan"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pyprog.runner.checks.EnvironmentReturnError: env 'e', episode 7: info['expected_reward'] is...
    """
    for key, value in (("best_expected_reward", best), ("expected_reward", expected)):
        if not math.isfinite(value):
            raise EnvironmentReturnError(
                f"{_where(env, episode)}: info[{key!r}] is {float(value)!r}; it must be a finite "
                "number (the regret sums best_expected_reward - expected_reward)"
            )
