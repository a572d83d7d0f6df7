"""The episode buffer: the last ``capacity`` episodes, in the order they were played.

Per step only what the estimators need is stored (SPEC §1): the observation ``s``,
the action ``a``, the behaviour policy's log-probability ``log β(a|s)`` (a log-density
for continuous actions) and the reward ``r``. Episodes of different lengths are padded
to the horizon ``H`` with zeros, and ``mask`` says which steps are real.

The arrays live in a mirrored ring: episode ``e`` is written to slot ``e mod C`` and
to slot ``e mod C + C`` of arrays with ``2C`` rows, so the last ``N <= C`` episodes are
always ONE contiguous slice, oldest first. Reading the buffer never copies::

    ring slots   0   1   2   3 | 4   5   6   7        (C = 4; episodes 0..5 written)
    episode      4   5   2   3 | 4   5   2   3        → view = slots 2..5 = episodes 2, 3, 4, 5

Example
-------
>>> import numpy as np
>>> buf = EpisodeBuffer(horizon=3, obs_dim=1, capacity=2)
>>> for k in range(3):
...     buf.start_episode()
...     for t in range(k + 1):
...         buf.add(obs=[float(t)], action=0, log_beta=np.log(0.5), reward=float(k))
...     buf.end_episode()
>>> len(buf), buf.rewards.tolist(), buf.mask.tolist()
(2, [[1.0, 1.0, 0.0], [2.0, 2.0, 2.0]], [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
>>> steps = buf.flat_valid()
>>> steps.episode.tolist(), steps.step.tolist()
([0, 0, 1, 1, 1], [0, 1, 0, 1, 2])
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pyprog.utils.validation import check_int

__all__ = ["EpisodeBatch", "EpisodeBuffer", "FlatSteps"]

# log β of a discrete action is log of a probability: <= 0 up to rounding
_LOG_PROB_TOLERANCE = 1e-9


class EpisodeBatch(NamedTuple):
    """The stored episodes, oldest first: read-only views into the buffer.

    Valid until the buffer next changes (a later episode may overwrite the memory);
    copy what must outlive that.

    Attributes
    ----------
    obs : ndarray of float64, shape (N, H, obs_dim)
    actions : ndarray, shape (N, H, ``*action_shape``)
        int64 (discrete) or float64 (continuous).
    log_beta : ndarray of float64, shape (N, H)
        Behaviour log-probabilities (log-densities); 0 on padding.
    rewards : ndarray of float64, shape (N, H)
    mask : ndarray of float64, shape (N, H)
        1.0 on valid steps, 0.0 on padding.
    lengths : ndarray of int64, shape (N,)
        Number of valid steps of each episode.
    """

    obs: np.ndarray
    actions: np.ndarray
    log_beta: np.ndarray
    rewards: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray


@dataclass(frozen=True, eq=False)
class FlatSteps:
    """The valid steps of the stored episodes as flat (M, ...) arrays, episode-major.

    Row ``k`` is step ``step[k]`` of episode ``episode[k]``; ``index[k] =
    episode[k] · H + step[k]`` is its position in a flattened (N, H) array. All arrays
    are read-only.

    Attributes
    ----------
    obs : ndarray of float64, shape (M, obs_dim)
    actions : ndarray, shape (M, ``*action_shape``)
    episode, step, index : ndarray of int64, shape (M,)
    shape : (int, int)
        ``(N, H)``.
    """

    obs: np.ndarray
    actions: np.ndarray
    episode: np.ndarray
    step: np.ndarray
    index: np.ndarray
    shape: tuple[int, int]

    def scatter(
        self, values: np.ndarray, fill: float = 0.0, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Per-step values (M,) back into padded (N, H) form, ``fill`` on padding.

        E.g. the policy's ``log π`` of the valid steps → the (N, H) input of the
        PDIS kernel.

        Parameters
        ----------
        values : ndarray of float64, shape (M,)
        fill : float, default 0.0
        out : ndarray of float64, shape (N, H), optional
            C-contiguous; overwritten.

        Returns
        -------
        ndarray of float64, shape (N, H)
        """
        values = np.asarray(values, dtype=np.float64)
        if values.shape != self.index.shape:
            raise ValueError(f"values must have shape {self.index.shape}; got {values.shape}")
        if out is None:
            out = np.empty(self.shape)
        elif out.shape != self.shape or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float64 array of shape {self.shape}")
        if values.size == out.size:  # no padding
            out.reshape(-1)[...] = values
        else:
            out.fill(fill)
            out.reshape(-1)[self.index] = values
        return out

    def gather(self, arr: np.ndarray) -> np.ndarray:
        """The valid entries (M,) of a padded (N, H) array, in the order of the rows.

        E.g. the PDIS weights ``g`` (N, H) → the policy's ``coef_log_prob`` (M,).

        Parameters
        ----------
        arr : ndarray, shape (N, H)

        Returns
        -------
        ndarray, shape (M,)
            A new array.
        """
        arr = np.asarray(arr)
        if arr.shape != self.shape:
            raise ValueError(f"arr must have shape {self.shape}; got {arr.shape}")
        return np.take(arr.reshape(-1), self.index)


def _readonly(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


class EpisodeBuffer:
    """The last ``capacity`` episodes, preallocated, readable without copies.

    Fill it a step at a time (:meth:`start_episode`, :meth:`add`, :meth:`end_episode`)
    or an episode at a time (:meth:`add_episode`). When full, a new episode replaces
    the oldest. Read it through :meth:`view` (or the properties of the same names):
    C-contiguous arrays, oldest episode first, that are views of the storage.

    Parameters
    ----------
    horizon : int
        H, the maximum number of steps of an episode, >= 1.
    obs_dim : int
        Dimension of an observation, >= 1.
    capacity : int, default 1000
        C, the number of episodes kept, >= 1.
    action_shape : tuple of int, default ()
        Shape of one action: ``()`` for discrete actions, ``(act_dim,)`` otherwise.
    action_dtype : numpy dtype, default int64
        ``int64`` for discrete actions (then ``log β`` must be <= 0), ``float64``
        for continuous ones.

    Notes
    -----
    Memory: ``2 · C · H · (obs_dim + act_dim + 3) · 8`` bytes (every episode is held
    twice; see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> buf = EpisodeBuffer(horizon=1, obs_dim=1, capacity=3, action_shape=(2,),
    ...                     action_dtype=np.float64)
    >>> for k in range(4):
    ...     buf.add_episode(obs=[[1.0]], actions=[[10.0 + k, 20.0]], log_beta=[-2.5],
    ...                     rewards=[float(k)])
    >>> buf.rewards[:, 0], buf.actions.shape
    (array([1., 2., 3.]), (3, 1, 2))
    """

    def __init__(
        self,
        horizon: int,
        obs_dim: int,
        capacity: int = 1000,
        action_shape: tuple[int, ...] = (),
        action_dtype: type | np.dtype = np.int64,
    ) -> None:
        self.horizon = check_int("horizon", horizon, 1)
        self.obs_dim = check_int("obs_dim", obs_dim, 1)
        self.capacity = check_int("capacity", capacity, 1)
        try:
            shape = tuple(check_int("action_shape entry", n, 1) for n in action_shape)
        except TypeError:
            raise ValueError(
                f"action_shape must be a tuple: () or (act_dim,); got {action_shape!r}"
            ) from None
        self.action_shape = shape
        self.action_dtype = np.dtype(action_dtype)
        if self.action_dtype.kind not in "if":
            raise ValueError(
                f"action_dtype must be an integer (discrete) or float (continuous) type; "
                f"got {self.action_dtype}"
            )
        self._discrete = self.action_dtype.kind == "i"
        rows, h = 2 * self.capacity, self.horizon
        self._obs = np.zeros((rows, h, self.obs_dim))
        self._actions = np.zeros((rows, h, *shape), dtype=self.action_dtype)
        self._log_beta = np.zeros((rows, h))
        self._rewards = np.zeros((rows, h))
        self._mask = np.zeros((rows, h))
        self._lengths = np.zeros(rows, dtype=np.int64)
        # the episode being played, step by step, until end_episode() commits it
        self._stage_obs = np.zeros((h, self.obs_dim))
        self._stage_actions = np.zeros((h, *shape), dtype=self.action_dtype)
        self._stage_log_beta = np.zeros(h)
        self._stage_rewards = np.zeros(h)
        self._t: int | None = None
        self._count = 0  # episodes stored since creation or clear(); the next goes to slot
        self._version = 0  # bumped by every change; the cached views are tagged with it
        self._batch: tuple[int, EpisodeBatch] | None = None
        self._flat: tuple[int, FlatSteps] | None = None

    @classmethod
    def for_policy(cls, policy: object, horizon: int, capacity: int = 1000) -> EpisodeBuffer:
        """A buffer for the observations and actions of ``policy``.

        Parameters
        ----------
        policy : pyprog.learn.policies.Policy
            Supplies ``obs_dim``, ``action_shape`` and ``action_dtype``.
        horizon : int
        capacity : int, default 1000

        Returns
        -------
        EpisodeBuffer
        """
        return cls(horizon, policy.obs_dim, capacity, policy.action_shape, policy.action_dtype)

    def __repr__(self) -> str:
        return (
            f"EpisodeBuffer(horizon={self.horizon}, obs_dim={self.obs_dim}, "
            f"capacity={self.capacity}, action_shape={self.action_shape}, "
            f"action_dtype={self.action_dtype.name}) holding {len(self)} episodes"
        )

    def __len__(self) -> int:
        """N, the number of episodes stored (at most ``capacity``)."""
        return min(self._count, self.capacity)

    # -- writing ------------------------------------------------------------------------
    def start_episode(self) -> None:
        """Begin an episode; add its steps with :meth:`add`, then :meth:`end_episode`."""
        if self._t is not None:
            raise RuntimeError(
                f"an episode is already in progress ({self._t} steps); end_episode() first"
            )
        self._t = 0

    def add(self, obs: np.ndarray, action: object, log_beta: float, reward: float) -> None:
        """Record one step of the episode in progress.

        Parameters
        ----------
        obs : array_like of float, shape (obs_dim,)
        action : int, or array_like of float of shape ``action_shape``
        log_beta : float
            ``log β(action | obs)`` of the policy that chose the action; <= 0 for
            discrete actions.
        reward : float
        """
        t = self._t
        if t is None:
            raise RuntimeError("no episode in progress: call start_episode() before add()")
        if t >= self.horizon:
            raise ValueError(
                f"episode longer than horizon={self.horizon}: cannot add step {t}; "
                f"end the episode, or build the buffer with a larger horizon"
            )
        self._check_log_beta_reward(log_beta, reward, f"step {t}")
        if np.shape(obs) != (self.obs_dim,):
            raise ValueError(f"obs must have shape ({self.obs_dim},); got {np.shape(obs)}")
        row = self._stage_obs[t]
        row[...] = obs
        if not np.isfinite(row).all():
            raise ValueError(f"obs must be finite; got {row.tolist()} at step {t}")
        if self._discrete:
            try:
                self._stage_actions[t] = operator.index(action)  # ints only: 1.5 is an error
            except TypeError:
                raise ValueError(f"action must be an integer; got {action!r} at step {t}") from None
        else:
            if np.shape(action) != self.action_shape:
                raise ValueError(
                    f"action must have shape {self.action_shape}; got {np.shape(action)}"
                )
            act = self._stage_actions[t]
            act[...] = action
            if not np.isfinite(act).all():
                raise ValueError(f"action must be finite; got {act.tolist()} at step {t}")
        self._stage_log_beta[t] = log_beta
        self._stage_rewards[t] = reward
        self._t = t + 1

    def end_episode(self) -> None:
        """Store the episode in progress (it replaces the oldest if the buffer is full)."""
        t = self._t
        if t is None:
            raise RuntimeError("no episode in progress: call start_episode() first")
        if t == 0:
            raise ValueError("an episode needs at least one step; add() some before end_episode()")
        self._t = None
        self._commit(
            self._stage_obs[:t],
            self._stage_actions[:t],
            self._stage_log_beta[:t],
            self._stage_rewards[:t],
        )

    def add_episode(
        self, obs: np.ndarray, actions: np.ndarray, log_beta: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Store a whole episode of T steps (it replaces the oldest if the buffer is full).

        Parameters
        ----------
        obs : array_like of float, shape (T, obs_dim)
        actions : array_like, shape (T, ``*action_shape``)
        log_beta : array_like of float, shape (T,)
        rewards : array_like of float, shape (T,)
            ``1 <= T <= horizon``.
        """
        if self._t is not None:
            raise RuntimeError("an episode is in progress (start_episode()); end_episode() first")
        obs = _as_float("obs", obs)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim or not 1 <= len(obs) <= self.horizon:
            raise ValueError(
                f"obs must have shape (T, {self.obs_dim}) with 1 <= T <= horizon={self.horizon}; "
                f"got {obs.shape}"
            )
        n = len(obs)
        log_beta = _as_float("log_beta", log_beta)
        rewards = _as_float("rewards", rewards)
        for name, arr in (("log_beta", log_beta), ("rewards", rewards)):
            if arr.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), like obs; got {arr.shape}")
            _check_finite_steps(name, arr)
        if self._discrete and (log_beta > _LOG_PROB_TOLERANCE).any():
            t = int(np.argmax(log_beta > _LOG_PROB_TOLERANCE))
            raise ValueError(_discrete_log_beta_message(log_beta[t], f"step {t}"))
        _check_finite_steps("obs", obs)
        actions = np.asarray(actions)
        if actions.shape != (n, *self.action_shape):
            raise ValueError(
                f"actions must have shape {(n, *self.action_shape)}; got {actions.shape}"
            )
        if self._discrete:
            if actions.dtype.kind not in "iu":
                raise ValueError(f"actions must be integers; got dtype {actions.dtype}")
        else:
            actions = _as_float("actions", actions)
            _check_finite_steps("actions", actions)
        self._commit(obs, actions, log_beta, rewards)

    def clear(self) -> None:
        """Forget every episode (and the one in progress, if any)."""
        self._count = 0
        self._t = None
        self._version += 1

    def _commit(
        self, obs: np.ndarray, actions: np.ndarray, log_beta: np.ndarray, rewards: np.ndarray
    ) -> None:
        t = len(obs)
        slot = self._count % self.capacity
        for store, values in (
            (self._obs, obs),
            (self._actions, actions),
            (self._log_beta, log_beta),
            (self._rewards, rewards),
        ):
            row = store[slot]
            row[:t] = values
            row[t:] = 0  # padding stays finite: 0
        self._mask[slot, :t] = 1.0
        self._mask[slot, t:] = 0.0
        self._lengths[slot] = t
        # the mirror copy keeps the last `capacity` episodes one contiguous slice
        mirror = slot + self.capacity
        for store in self._stores():
            store[mirror] = store[slot]
        self._count += 1
        self._version += 1

    def _stores(self) -> tuple[np.ndarray, ...]:
        return (self._obs, self._actions, self._log_beta, self._rewards, self._mask, self._lengths)

    def _check_log_beta_reward(self, log_beta: float, reward: float, where: str) -> None:
        if not math.isfinite(log_beta):
            raise ValueError(f"log_beta must be finite (β > 0); got {log_beta!r} at {where}")
        if self._discrete and log_beta > _LOG_PROB_TOLERANCE:
            raise ValueError(_discrete_log_beta_message(log_beta, where))
        if not math.isfinite(reward):
            raise ValueError(f"reward must be finite; got {reward!r} at {where}")

    # -- reading ------------------------------------------------------------------------
    def view(self) -> EpisodeBatch:
        """The stored episodes, oldest first, as read-only views (no copy).

        Returns
        -------
        EpisodeBatch
            ``obs`` (N, H, obs_dim), ``actions`` (N, H, ``*action_shape``), ``log_beta``,
            ``rewards``, ``mask`` (N, H) and ``lengths`` (N,); valid until the buffer
            next changes.
        """
        if self._batch is None or self._batch[0] != self._version:
            n = len(self)
            start = (self._count - n) % self.capacity
            window = slice(start, start + n)
            batch = EpisodeBatch(*(_readonly(store[window]) for store in self._stores()))
            self._batch = (self._version, batch)
        return self._batch[1]

    @property
    def obs(self) -> np.ndarray:
        """ndarray of float64, shape (N, H, obs_dim): observations, oldest episode first."""
        return self.view().obs

    @property
    def actions(self) -> np.ndarray:
        """ndarray, shape (N, H, ``*action_shape``): actions, oldest episode first."""
        return self.view().actions

    @property
    def log_beta(self) -> np.ndarray:
        """ndarray of float64, shape (N, H): behaviour log-probabilities; 0 on padding."""
        return self.view().log_beta

    @property
    def rewards(self) -> np.ndarray:
        """ndarray of float64, shape (N, H): rewards; 0 on padding."""
        return self.view().rewards

    @property
    def mask(self) -> np.ndarray:
        """ndarray of float64, shape (N, H): 1.0 on valid steps, 0.0 on padding."""
        return self.view().mask

    @property
    def lengths(self) -> np.ndarray:
        """ndarray of int64, shape (N,): the number of steps of each episode."""
        return self.view().lengths

    def flat_valid(self) -> FlatSteps:
        """The valid (state, action) pairs as flat arrays, cached until the buffer changes.

        Learners evaluate the policy on these M steps only (no padding) and move
        per-step values between the two layouts with :meth:`FlatSteps.scatter` and
        :meth:`FlatSteps.gather`. When no episode is padded, ``obs`` and ``actions``
        are reshaped views of the storage, not copies.

        Returns
        -------
        FlatSteps
            ``obs`` (M, obs_dim), ``actions`` (M, ``*action_shape``), ``episode``,
            ``step`` and ``index`` (M,) with M = ``lengths.sum()``.
        """
        if self._flat is None or self._flat[0] != self._version:
            batch = self.view()
            n, h = batch.mask.shape
            if (batch.lengths == h).all():
                index = np.arange(n * h)
                episode, step = np.divmod(index, h)
                obs = batch.obs.reshape(n * h, self.obs_dim)
                actions = batch.actions.reshape(n * h, *self.action_shape)
            else:
                valid = batch.mask != 0
                episode, step = np.nonzero(valid)  # row-major: episode by episode
                index = episode * h + step
                obs, actions = batch.obs[valid], batch.actions[valid]
            flat = FlatSteps(
                *(_readonly(a) for a in (obs, actions, episode, step, index)), shape=(n, h)
            )
            self._flat = (self._version, flat)
        return self._flat[1]


def _as_float(name: str, value: object) -> np.ndarray:
    try:
        return np.ascontiguousarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers; {exc}") from None


def _check_finite_steps(name: str, arr: np.ndarray) -> None:
    """Raise, naming the first step, if ``arr`` (T, ...) holds NaN or ±inf."""
    bad = ~np.isfinite(arr)
    if bad.any():
        t = int(np.argwhere(bad)[0, 0])
        raise ValueError(f"{name} must be finite; got {arr[t].tolist()} at step {t}")


def _discrete_log_beta_message(log_beta: float, where: str) -> str:
    return (
        f"log_beta must be <= 0 for discrete actions (β is a probability in (0, 1]); "
        f"got {log_beta!r} at {where}"
    )
