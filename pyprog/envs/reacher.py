"""NS-Reacher: reach a goal that slowly circles the unit square, episode after episode."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from pyprog.utils.validation import check_action, check_int, check_speed, reset_option

__all__ = ["NSReacher"]


class NSReacher(gym.Env[np.ndarray, np.int64]):
    r"""Non-stationary goal reacher (Chandak et al., ICML 2020, appendix D).

    ## Description

    A point robot starts at the centre of the unit square and must reach a small square
    goal with noisy up/right/down/left moves. The goal moves along a circle of radius 0.45
    around the centre, a little further every episode, so a policy good today drifts out of
    date.

    ## Action Space

    ``Discrete(4)``: 0 up ``(0, +1)``, 1 right ``(+1, 0)``, 2 down ``(0, -1)``, 3 left ``(-1, 0)``.

    Each action makes up to ``sub_moves = 3`` sub-moves of ``step_length = 0.045`` in its
    direction. Each sub-move first draws ``u0 ~ U(0, 1)``; if ``u0 < slip_prob = 0.25`` it
    draws ``u ~ U(0, 1)^2`` and moves by ``u / 1.415 * 0.045`` instead (always up and/or
    right). A sub-move that would leave ``[0, 1]^2`` is not made and ends the action;
    entering the goal ends it too. (Draw order as in the authors' ``NS_Reacher.py``.)

    ## Observation Space

    ``Box(0, 1, (2,), float64)``: the position ``(x, y)``.

    ## Rewards

    ``-0.5`` per action, plus ``+100`` for the action that enters the goal (once: the
    episode then terminates).

    ## Starting State

    ``(0.5, 0.5)``, every episode.

    ## Episode End

    * Termination: the position is inside the goal (bounds inclusive).
    * Truncation: ``horizon`` actions were taken without reaching the goal
      (``truncated`` is False when the last action reaches the goal).

    Stepping after the episode ended, or before the first reset, raises ``RuntimeError``.

    ## Arguments

    speed : float, default 2
        How fast the goal moves; ``0`` keeps it at ``(0.5, 0.95)``. The paper uses 0–4.
    horizon : int, default 15
        Actions per episode before truncation (the paper's 15; the authors' code used 13).
    render_mode : None
        Rendering is not supported.

    ## Non-stationarity

    The episode counter ``k`` is 1 after the first :meth:`reset` and grows by one at every
    reset (``reset(options={"episode": k})`` sets it). The goal of episode ``k`` is the
    square of half-width 0.025 centred at

    .. math:: \Big(\frac{0.9 \sin(k f) + 1}{2},\ \frac{0.9 \cos(k f) + 1}{2}\Big),
              \qquad f = 0.001\,\text{speed},

    a full turn every ``2 pi / f`` episodes (about 3142 at speed 2).

    ## Info

    ``reset`` and ``step`` return ``{"goal": centre (2,) read-only ndarray, "episode": k}``.

    Examples
    --------
    >>> env = NSReacher(speed=2, horizon=15)
    >>> obs, info = env.reset(seed=0)
    >>> obs, info["episode"], info["goal"].round(4)
    (array([0.5, 0.5]), 1, array([0.5009, 0.95  ]))
    >>> def greedy(obs, goal):  # close the larger gap first
    ...     dx, dy = goal - obs
    ...     if abs(dx) > abs(dy):
    ...         return 1 if dx > 0 else 3
    ...     return 0 if dy > 0 else 2
    >>> ret, done = 0.0, False
    >>> while not done:
    ...     obs, reward, terminated, truncated, info = env.step(greedy(obs, info["goal"]))
    ...     ret, done = ret + reward, terminated or truncated
    >>> terminated, truncated, ret
    (True, False, 97.5)
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class-level convention)

    def __init__(
        self, speed: float = 2.0, horizon: int = 15, render_mode: str | None = None
    ) -> None:
        self.speed = check_speed(speed)
        self.horizon = check_int("horizon", horizon, 1)
        if render_mode is not None:
            raise ValueError(
                f"render_mode must be None (NSReacher does not render); got {render_mode!r}"
            )
        self.render_mode = render_mode

        self.frequency = self.speed * 0.001
        self.start = (0.5, 0.5)
        self.step_length = 0.045
        self.sub_moves = 3
        self.slip_prob = 0.25
        self.slip_norm = 1.415  # ~sqrt(2): a slip moves at most one step length
        self.goal_half_width = 0.025
        self.step_reward = -0.5
        self.goal_reward = 100.0
        # Unit direction of each action, scaled once to a sub-move: up, right, down, left.
        s = self.step_length
        self._moves = ((0.0, s), (s, 0.0), (0.0, -s), (-s, 0.0))

        self.action_space = spaces.Discrete(4)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float64)

        self._episode = 0
        self._done = True  # no episode until the first reset
        self._x, self._y = self.start
        self._steps = 0
        self._goal = self.goal_center(0)
        self._goal_box = (0.0, 0.0, 0.0, 0.0)

    @property
    def episode(self) -> int:
        """The episode counter ``k`` (0 before the first reset)."""
        return self._episode

    def goal_center(self, k: Any) -> np.ndarray:
        """Centre of the goal in episode(s) ``k``.

        Parameters
        ----------
        k : int or array_like, shape (...)
            Episode counter(s).

        Returns
        -------
        ndarray, shape (..., 2)
            ``((0.9 sin(k f) + 1) / 2, (0.9 cos(k f) + 1) / 2)``, ``f = speed * 0.001``.

        Examples
        --------
        >>> NSReacher(speed=0).goal_center([1, 2]).tolist()
        [[0.5, 0.95], [0.5, 0.95]]
        """
        angle = np.asarray(k, dtype=np.float64) * self.frequency
        return np.stack(((0.9 * np.sin(angle) + 1) / 2.0, (0.9 * np.cos(angle) + 1) / 2.0), axis=-1)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start the next episode at ``(0.5, 0.5)`` with the goal of episode ``k``.

        Parameters
        ----------
        seed : int, optional
            Reseeds ``self.np_random`` (the slips).
        options : dict, optional
            ``{"episode": k}`` with ``k`` an integer >= 0 starts episode ``k`` instead of
            the next one; later resets count on from ``k``.

        Returns
        -------
        observation : ndarray, shape (2,)
            ``[0.5, 0.5]``.
        info : dict
            ``{"goal": centre (2,), "episode": k}``.
        """
        super().reset(seed=seed)
        episode = reset_option(options, "episode", "NSReacher")
        self._episode = self._episode + 1 if episode is None else episode
        self._goal = self.goal_center(self._episode)
        self._goal.flags.writeable = False
        gx, gy = self._goal.tolist()
        w = self.goal_half_width
        self._goal_box = (gx - w, gx + w, gy - w, gy + w)
        self._x, self._y = self.start
        self._steps = 0
        self._done = False
        return np.array(self.start), self._info()

    def _info(self) -> dict[str, Any]:
        # a fresh (read-only) goal array per call: Gymnasium's check_env (1.4) requires that
        # no two calls' infos share an object, since users keep what they are given
        goal = self._goal.copy()
        goal.flags.writeable = False
        return {"goal": goal, "episode": self._episode}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Make up to 3 sub-moves in direction ``action``.

        Parameters
        ----------
        action : int
            0 up, 1 right, 2 down, 3 left.

        Returns
        -------
        observation : ndarray, shape (2,)
            The new position.
        reward : float
            -0.5, or 99.5 if the goal was entered.
        terminated : bool
            The goal was entered.
        truncated : bool
            ``horizon`` actions were taken and the goal was not entered.
        info : dict
            ``{"goal": centre (2,), "episode": k}``.
        """
        a = check_action(action, 4)
        if self._done:
            raise RuntimeError(
                "NSReacher.step called with no episode running (before the first reset, or "
                "after terminated/truncated); call reset() first"
            )
        dx, dy = self._moves[a]
        x, y = self._x, self._y
        x_lo, x_hi, y_lo, y_hi = self._goal_box
        rand = self.np_random.random
        slip_prob, slip_norm, length = self.slip_prob, self.slip_norm, self.step_length
        reward = self.step_reward
        terminated = False
        for _ in range(self.sub_moves):
            if rand() < slip_prob:
                # Two scalar draws == the reference's rand(2), without allocating an array.
                nx = x + rand() / slip_norm * length
                ny = y + rand() / slip_norm * length
            else:
                nx, ny = x + dx, y + dy
            if not (0.0 <= nx <= 1.0 and 0.0 <= ny <= 1.0):
                break  # the wall stops the whole action
            x, y = nx, ny
            if x_lo <= x <= x_hi and y_lo <= y <= y_hi:
                reward += self.goal_reward
                terminated = True
                break
        self._x, self._y = x, y
        self._steps += 1
        truncated = not terminated and self._steps >= self.horizon
        self._done = terminated or truncated
        obs = np.array((x, y))
        return obs, reward, terminated, truncated, self._info()
