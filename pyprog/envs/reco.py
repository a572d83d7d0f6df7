"""NS-Reco: a recommender whose user's interest in each of 5 items drifts sinusoidally over time."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from pyprog.utils.validation import check_action, check_speed, reset_option

__all__ = ["NSReco"]


class NSReco(gym.Env[np.ndarray, np.int64]):
    r"""Non-stationary recommender system (Chandak et al., ICML 2020, appendix D).

    ## Description

    A recommender engine shows one of 5 items to a user whose interest in each item
    fluctuates over time, and earns the user's (noisy) interest as reward. Every episode is
    a single step: a non-stationary multi-armed bandit. The item curves are fixed by the
    paper's seeds, so every instance with the same ``speed`` sees the same curves.

    ## Action Space

    ``Discrete(5)``: the item to recommend.

    ## Observation Space

    ``Box(0, 1, (1,), float32)``; the observation is always ``[1.0]`` (no context).

    ## Rewards

    With ``k`` the 0-based count of steps this environment has taken (see *Non-stationarity*)
    and ``a`` the chosen item:

    .. math:: r = \mu_a(k) + \sigma_a \varepsilon_a, \qquad
              \mu_a(k) = \text{amplitude}_a \sin(k\,\text{frequency}_a)

    (``\mu_a(k) = \text{amplitude}_a`` when ``speed = 0``), where ``amplitude =
    RandomState(1).rand(5)``, ``frequency = RandomState(0).rand(5) * speed * 0.005``,
    ``sigma = RandomState(0).rand(5) * 0.01`` and ``epsilon`` is a standard normal
    5-vector drawn from ``self.np_random`` for all items at every step.

    The step's ``info`` carries the true expected rewards, so regret is exact:
    ``sum_k info["regret"] = sum_k (J*_k - mu_{A_k}(k))``.

    ## Starting State

    The observation ``[1.0]``; nothing else is reset.

    ## Episode End

    Every step terminates its episode (``terminated=True``, ``truncated=False``).
    Calling :meth:`reset` between steps is allowed but not required.

    ## Arguments

    speed : float, default 2
        How fast the item curves oscillate; ``0`` gives the stationary bandit with means
        ``amplitude``. The paper uses 0–4.
    render_mode : None
        Rendering is not supported; plot :meth:`expected_rewards` instead.

    ## Non-stationarity

    The time ``k`` counts the steps taken in this environment's life, from 0. It is *not*
    reset by :meth:`reset`; ``reset(options={"time": k})`` sets it explicitly (the next
    step is then taken at time ``k``). Item ``a`` completes a period every
    ``2 pi / frequency_a`` steps.

    ## Info

    ``reset`` returns ``{"time": k}`` (the time of the next step). ``step`` returns

    * ``"time"`` (int): the time ``k`` at which this step was taken,
    * ``"expected_rewards"`` (ndarray, (5,)): ``mu(k)`` for every item,
    * ``"best_expected_reward"`` (float): ``J*_k = max_a mu_a(k)``,
    * ``"expected_reward"`` (float): ``mu_{A_k}(k)`` of the chosen item,
    * ``"regret"`` (float): ``J*_k - mu_{A_k}(k)`` (>= 0).

    Examples
    --------
    >>> env = NSReco(speed=2)
    >>> obs, info = env.reset(seed=0)
    >>> obs, info
    (array([1.], dtype=float32), {'time': 0})
    >>> obs, reward, terminated, truncated, info = env.step(1)
    >>> terminated, truncated, info["time"], info["regret"]  # sin(0) = 0 for every item
    (True, False, 0, 0.0)
    >>> _ = env.reset()  # does not rewind time
    >>> env.time
    1
    >>> env.expected_rewards([0, 100]).shape  # (T, 5): the items' curves
    (2, 5)
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class-level convention)
    #: Steps per episode (one): how run loops size their buffers.
    horizon = 1

    def __init__(self, speed: float = 2.0, render_mode: str | None = None) -> None:
        self.speed = check_speed(speed)
        if render_mode is not None:
            raise ValueError(
                f"render_mode must be None (NSReco does not render); got {render_mode!r}"
            )
        self.render_mode = render_mode

        self.n_items = 5
        self.frequency_scale = 0.005
        self.noise_scale = 0.01
        # The paper's fixed curves: the same for every seed (seeds only drive the reward noise).
        self.amplitude = np.random.RandomState(1).rand(self.n_items)
        self.frequency = (
            np.random.RandomState(0).rand(self.n_items) * self.speed * self.frequency_scale
        )
        self.noise_std = np.random.RandomState(0).rand(self.n_items) * self.noise_scale
        for constant in (self.amplitude, self.frequency, self.noise_std):
            constant.flags.writeable = False

        self.action_space = spaces.Discrete(self.n_items)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)

        self._time = 0
        self._obs = np.ones(1, dtype=np.float32)
        self._noise = np.empty(self.n_items)  # reused buffer: the step's N(0, 1) draws
        self._noise_std = self.noise_std.tolist()  # Python floats: cheaper scalar arithmetic

    @property
    def time(self) -> int:
        """The time ``k`` of the next step (0-based count of steps taken so far)."""
        return self._time

    def expected_rewards(self, k: Any) -> np.ndarray:
        """True mean reward of every item at time(s) ``k``.

        Parameters
        ----------
        k : int or array_like, shape (...)
            Time(s) (0-based step counts); non-integers are allowed for smooth curves.

        Returns
        -------
        ndarray, shape (..., 5)
            ``mu_a(k) = amplitude_a * sin(k * frequency_a)`` (``amplitude_a`` if ``speed = 0``).

        Examples
        --------
        >>> env = NSReco(speed=1)
        >>> mu = env.expected_rewards(np.arange(1000))  # (1000, 5)
        >>> best = mu.max(axis=1)  # J*_k, the best item's mean at every step
        >>> mu.shape, best.shape
        ((1000, 5), (1000,))
        """
        k = np.asarray(k, dtype=np.float64)
        if self.speed == 0:
            return np.broadcast_to(self.amplitude, (*k.shape, self.n_items)).copy()
        # Same operations, in the same order, as `step`, so the two agree bit for bit.
        return np.sin(k[..., None] * self.frequency) * self.amplitude

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode; the time counter carries on unless ``options={"time": k}``.

        Parameters
        ----------
        seed : int, optional
            Reseeds ``self.np_random`` (the reward noise).
        options : dict, optional
            ``{"time": k}`` with ``k`` an integer >= 0 sets the time of the next step.

        Returns
        -------
        observation : ndarray, shape (1,), float32
            Always ``[1.0]``.
        info : dict
            ``{"time": k}``, the time of the next step.
        """
        super().reset(seed=seed)
        time = reset_option(options, "time", "NSReco")
        if time is not None:
            self._time = time
        return self._obs.copy(), {"time": self._time}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Recommend item ``action`` at the current time ``k``, then advance time by one.

        Parameters
        ----------
        action : int
            An item in ``[0, 4]``.

        Returns
        -------
        observation : ndarray, shape (1,), float32
            ``[1.0]``.
        reward : float
            ``mu_action(k) + noise_std[action] * epsilon[action]``.
        terminated : bool
            Always True (one step per episode).
        truncated : bool
            Always False.
        info : dict
            ``time``, ``expected_rewards`` (5,), ``best_expected_reward``,
            ``expected_reward``, ``regret`` (see the class docstring).
        """
        a = check_action(action, self.n_items)
        k = self._time
        if self.speed == 0:
            mu = self.amplitude.copy()
        else:
            mu = self.frequency * k  # the one fresh array per step: it is handed out in info
            np.sin(mu, out=mu)
            mu *= self.amplitude
        # All 5 items' noise is drawn every step, whatever the action (the paper's draw order).
        self.np_random.standard_normal(out=self._noise)
        means = mu.tolist()
        best = max(means)
        chosen = means[a]
        reward = chosen + self._noise.item(a) * self._noise_std[a]
        self._time = k + 1
        info = {
            "time": k,
            "expected_rewards": mu,
            "best_expected_reward": best,
            "expected_reward": chosen,
            "regret": best - chosen,
        }
        return self._obs.copy(), reward, True, False, info
