"""Multi-step logs: SCOPE-RL's ``logged_dataset`` dict and Minari's episodes.

See :mod:`pyprog.logs.readers` for how continuous actions' log-densities are stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from pyprog.logs.episodes import LOG_PROB_FLOOR, LogFormatError, Logs, as_timestamps
from pyprog.logs.readers.common import (
    as_array,
    as_index,
    call,
    check_rewards,
    check_sums_to_one,
    count,
    fail,
    log_probabilities,
    need_key,
    numbers,
    shift_densities,
    show,
)

__all__ = ["from_minari", "from_scope_rl"]

_INT64_MAX = np.iinfo(np.int64).max


# -- SCOPE-RL ----------------------------------------------------------------------------------


def from_scope_rl(  # noqa: PLR0912  (reviewed: docs/guides/development.md)
    logged_dataset: Mapping,
    *,
    evaluation_policy_action_dist=None,
    evaluation_policy_log_prob=None,
    timestamp=None,
) -> Logs:
    """Logs from SCOPE-RL's ``logged_dataset`` dict: trajectories of a fixed length.

    The dict's keys used (what ``scope_rl.dataset.SyntheticDataset.obtain_episodes``
    returns; its other keys are ignored):

    ``size`` (int)
        Number of steps, ``n_trajectories * step_per_trajectory``.
    ``n_trajectories``, ``step_per_trajectory`` (int)
        Trajectories N, each of exactly H steps, stored flat trajectory after trajectory.
    ``action`` (size,) int, or (size, action_dim)
        The behaviour policy's actions (discrete, or continuous).
    ``reward`` (size,)
        The reward of each step.
    ``done`` (size,)
        1 where an episode ends; SCOPE-RL sets it at the last step of every trajectory
        (checked: a 0 there means ``step_per_trajectory`` does not fit the data). An
        earlier 1 does not cut the trajectory, as in SCOPE-RL's own estimators.
    ``terminal`` (size,)
        1 where the trajectory reached its maximum length; its length is checked.
    ``pscore`` (size,) or (size, action_dim)
        The behaviour policy's probability of the logged action, in (0, 1] (discrete),
        or the density of each action dimension, > 0 (continuous: multiplied over the
        dimensions).
    ``action_type`` ("discrete" or "continuous"), optional
        Default: "continuous" when ``pscore`` is 2-D.

    SCOPE-RL keeps the evaluation policy apart (``input_dict[name]
    ["evaluation_policy_action_dist"]``); pass it here.

    Parameters
    ----------
    logged_dataset : dict
    evaluation_policy_action_dist : array_like, shape (size, n_actions), optional
        Discrete actions: the policy to evaluate's probability of each action at each step.
    evaluation_policy_log_prob : array_like, shape (size,), optional
        Instead: its log-probability (log-density, continuous) of each logged action.
    timestamp : array_like, shape (n_trajectories,), optional
        A time per trajectory (SCOPE-RL's dict has none).

    Returns
    -------
    Logs
        N episodes of H steps.

    Raises
    ------
    LogFormatError
        Naming the key: missing, a length other than ``size`` (ragged arrays too), ``size``,
        N or H not integers >= 1 or ``size`` other than N·H, a discrete action that is not
        an integer in 0 .. A−1 (NaN, 1.5 or a string), a continuous one that is not a
        finite number, a reward not finite or beyond ±1e100, a ``pscore`` outside (0, 1]
        (> 0 for continuous), an action distribution outside [0, 1] or not summing to 1, a
        trajectory without ``done`` at its end, a ``timestamp`` that is NaT or outside
        1677-2262, or not exactly one of the two evaluation-policy arguments.

    Examples
    --------
    >>> import numpy as np
    >>> data = {"size": 4, "n_trajectories": 2, "step_per_trajectory": 2,
    ...         "action": np.array([0, 1, 1, 1]), "reward": np.array([1.0, 0.0, 0.0, 1.0]),
    ...         "done": np.array([0, 1, 0, 1]), "terminal": np.array([0, 1, 0, 1]),
    ...         "pscore": np.full(4, 0.5)}
    >>> logs = from_scope_rl(data, evaluation_policy_action_dist=np.tile([0.9, 0.1], (4, 1)))
    >>> logs.episodes, logs.rewards.tolist()
    (2, [[1.0, 0.0], [0.0, 1.0]])
    """
    source = "SCOPE-RL logged dataset"
    size = count(logged_dataset, "size", source, low=1)
    n = count(logged_dataset, "n_trajectories", source, low=1)
    h = count(logged_dataset, "step_per_trajectory", source, low=1)
    if n * h != size:
        raise fail(
            source, "size", f"{size} steps, but n_trajectories × step_per_trajectory = {n} × {h}"
        )
    pscore = numbers(need_key(logged_dataset, "pscore", source), "pscore", source)
    action_type = logged_dataset.get("action_type") or (
        "continuous" if pscore.ndim == 2 else "discrete"
    )
    if action_type not in ("discrete", "continuous"):
        raise fail(source, "action_type", f"{action_type!r}: expected 'discrete' or 'continuous'")
    continuous = action_type == "continuous"
    action = need_key(logged_dataset, "action", source)
    if continuous:
        action = as_array(action, "action", source, (size, None))
        if not np.isfinite(action).all():
            i, j = (int(k) for k in np.argwhere(~np.isfinite(action))[0])
            raise fail(source, "action", f"{action[i, j]} at step {i}, dimension {j}")
    elif np.ndim(action) != 1 or len(action) != size:
        raise fail(source, "action", f"shape {np.shape(action)}, expected (size,) with size={size}")
    reward = as_array(need_key(logged_dataset, "reward", source), "reward", source, (size,))
    check_rewards(reward, "reward", source, "step")
    done = as_array(need_key(logged_dataset, "done", source), "done", source, (size,))
    as_array(need_key(logged_dataset, "terminal", source), "terminal", source, (size,))
    if continuous:
        pscore = as_array(pscore, "pscore", source, (size, None))
        if not (np.isfinite(pscore) & (pscore > 0)).all():
            i, j = (int(k) for k in np.argwhere(~(np.isfinite(pscore) & (pscore > 0)))[0])
            raise fail(
                source,
                "pscore",
                f"{show(pscore[i, j])} at step {i}, dimension {j} is not a density > 0",
            )
        log_beta = np.log(pscore).sum(axis=1)
    else:
        log_beta = log_probabilities(as_array(pscore, "pscore", source, (size,)), "pscore", source)
    ends = done[h - 1 :: h]
    if (ends == 0).any():
        i = int(np.flatnonzero(ends == 0)[0])
        raise fail(
            source,
            "done",
            f"trajectory {i} does not end with done=1 at step {h - 1}; is "
            f"step_per_trajectory={h} the data's?",
        )
    if (evaluation_policy_action_dist is None) == (evaluation_policy_log_prob is None):
        raise fail(
            source,
            "evaluation_policy_action_dist",
            "pass exactly one of evaluation_policy_action_dist (discrete) and "
            "evaluation_policy_log_prob",
        )
    if evaluation_policy_action_dist is not None:
        if continuous:
            raise fail(
                source,
                "evaluation_policy_action_dist",
                "continuous actions: pass evaluation_policy_log_prob",
            )
        dist = as_array(
            evaluation_policy_action_dist, "evaluation_policy_action_dist", source, (size, None)
        )
        log_probabilities(dist, "evaluation_policy_action_dist", source, zero=True)
        check_sums_to_one(dist, "evaluation_policy_action_dist", source, ("step",))
        action = as_index(action, "action", source, dist.shape[1], "step", "an action ")
        with np.errstate(divide="ignore"):
            log_pi = np.maximum(np.log(dist[np.arange(size), action]), LOG_PROB_FLOOR)
    else:
        log_pi = as_array(evaluation_policy_log_prob, "evaluation_policy_log_prob", source, (size,))
        if np.isnan(log_pi).any() or (log_pi == np.inf).any():
            i = int(np.flatnonzero(np.isnan(log_pi) | (log_pi == np.inf))[0])
            raise fail(source, "evaluation_policy_log_prob", f"{log_pi[i]} at step {i}")
        log_pi = np.maximum(log_pi, LOG_PROB_FLOOR)
        if not continuous:  # integers, in 0 .. n_actions − 1 when the dict says n_actions
            known = logged_dataset.get("n_actions") is not None
            limit = count(logged_dataset, "n_actions", source, 1) if known else _INT64_MAX
            as_index(action, "action", source, limit, "step", "an action ")
        if not continuous and (log_pi > 0).any():
            i = int(np.flatnonzero(log_pi > 0)[0])
            raise fail(
                source,
                "evaluation_policy_log_prob",
                f"{log_pi[i]:g} at step {i} is > 0 (a probability > 1)",
            )
    if continuous:
        log_pi, log_beta = shift_densities(log_pi, log_beta)
    if timestamp is not None:
        timestamp = as_timestamps(timestamp, "timestamp", source, "trajectory")
        if len(timestamp) != n:
            raise fail(source, "timestamp", f"{len(timestamp)} times for n_trajectories={n}")
    return Logs.from_arrays(
        reward.reshape(n, h),
        log_pi.reshape(n, h),
        log_beta.reshape(n, h),
        timestamp=timestamp,
        source=source,
    )


# -- Minari ------------------------------------------------------------------------------------

_EPISODE_FIELDS = ("observations", "actions", "rewards", "terminations", "truncations", "infos")


def _drop_last(observations):
    """The observation each action was taken at: all but the last (dict spaces too)."""
    if isinstance(observations, Mapping):
        return {k: _drop_last(v) for k, v in observations.items()}
    if isinstance(observations, tuple):
        return tuple(_drop_last(v) for v in observations)
    return observations[:-1]


def _length(values) -> int | None:
    """The number of entries (of the first array of a dict / tuple space); None for a
    scalar or an empty dict / tuple."""
    if isinstance(values, Mapping):
        return _length(next(iter(values.values()))) if values else None
    if isinstance(values, tuple):
        return _length(values[0]) if values else None
    return len(values) if np.ndim(values) > 0 else None


def _episode_id(ep, k: int, source: str) -> int:
    """``ep.id`` as an int (default: ``k``, its index); 1.5, None or a string refused."""
    value = getattr(ep, "id", k)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(f"{source}, episode at position {k}", "id", f"{show(value)} is not an integer")
    return value


def _check_lengths(ep, t: int, where: str) -> None:
    for attr in ("actions", "terminations", "truncations"):
        got = _length(getattr(ep, attr))
        if got != t:
            noun = "actions" if attr == "actions" else "entries"
            what = "a scalar" if got is None else f"{got} {noun}"
            raise fail(where, attr, f"{what} for {t} rewards; expected one per step")
    got = _length(ep.observations)
    if got != t + 1:
        what = "a scalar (or an empty dict)" if got is None else f"{got}"
        raise fail(
            where,
            "observations",
            f"{what} for {t} rewards; Minari stores {t + 1} (the first from reset)",
        )


def _per_action(values, t: int, key: str, source: str) -> np.ndarray:
    """An ``infos`` entry as one value per action: T+1 entries (Minari's: the first from
    reset, entry t+1 from the step of action t) or T entries."""
    arr = np.asarray(values)
    if arr.ndim != 1 or len(arr) not in (t, t + 1):
        raise fail(
            source,
            key,
            f"shape {arr.shape}; expected ({t + 1},) as Minari records infos, or ({t},)",
        )
    return arr[1:] if len(arr) == t + 1 else arr


def _log_probs(values, t: int, key: str, source: str) -> np.ndarray:
    arr = as_array(values, key, source, (t,))
    if np.isnan(arr).any() or (arr == np.inf).any():
        i = int(np.flatnonzero(np.isnan(arr) | (arr == np.inf))[0])
        raise fail(source, key, f"{arr[i]} at step {i} is not a log-probability")
    return arr


def from_minari(
    episodes,
    *,
    evaluation_log_prob: Callable,
    behavior_log_prob_key: str | None = None,
    behavior_policy: Callable | None = None,
    timestamp_key: str | None = None,
) -> Logs:
    """Logs from Minari episodes (``minari.EpisodeData``), without needing minari.

    Each episode is an object with the attributes of Minari's ``EpisodeData``:

    ``id`` (int, optional)
        The episode's id (default: its index in ``episodes``).
    ``observations`` (T+1, ...), or a dict / tuple of such arrays
        The observations, the first from ``reset`` (so one more than the actions).
    ``actions`` (T, ...)
        The actions taken.
    ``rewards`` (T,)
        Their rewards.
    ``terminations``, ``truncations`` (T,)
        Whether the episode terminated / was truncated at each step (lengths checked).
    ``infos`` (dict of arrays)
        The environment's infos, recorded as Minari records them: T+1 entries, the
        first from ``reset`` (T entries, one per action, are accepted too).

    Minari stores no action probabilities: the behaviour policy's come from an ``infos``
    key the data collector recorded (``behavior_log_prob_key``) or from the policy itself
    (``behavior_policy``); exactly one of the two.

    Parameters
    ----------
    episodes : iterable of EpisodeData, or a MinariDataset
        In play order (a dataset's ``iterate_episodes()`` is used when it has one).
    evaluation_log_prob : callable
        ``evaluation_log_prob(observations, actions) -> (T,)``: the policy to evaluate's
        log-probability (log-density for continuous actions) of each action at the
        observation it was taken at (``observations`` without the last one).
    behavior_log_prob_key : str, optional
        The ``infos`` key holding the behaviour policy's log-probability of each action.
    behavior_policy : callable, optional
        Instead: ``behavior_policy(observations, actions) -> (T,)``, as above.
    timestamp_key : str, optional
        An ``infos`` key holding times; an episode's time is its first entry.

    Returns
    -------
    Logs
        One episode per Minari episode (log-densities shifted as the module docstring
        says).

    Raises
    ------
    LogFormatError
        Naming the attribute or key: a missing attribute or ``infos`` key, an ``id`` that is
        not an integer or that two episodes share, lengths that do not match ``rewards``
        (scalars too), ``infos`` that is not a dict, a reward not finite or beyond ±1e100,
        a log-probability that is NaN or +inf (or −inf for the behaviour policy), a
        callable that raises, a time that is NaT or outside 1677-2262, not exactly one
        behaviour source, or no episodes.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> ep = SimpleNamespace(id=3, observations=np.zeros((3, 2)), actions=np.array([0, 1]),
    ...                      rewards=np.array([1.0, 0.5]), terminations=np.array([0, 1]),
    ...                      truncations=np.array([0, 0]),
    ...                      infos={"log_prob": np.log([1.0, 0.5, 0.5])})
    >>> uniform = lambda obs, act: np.log(np.full(len(act), 0.5))
    >>> logs = from_minari([ep], evaluation_log_prob=uniform, behavior_log_prob_key="log_prob")
    >>> logs.episode_ids.tolist(), logs.rewards.tolist()
    ([3], [[1.0, 0.5]])
    """
    source = "Minari episodes"
    if (behavior_log_prob_key is None) == (behavior_policy is None):
        raise fail(
            source,
            "behavior_log_prob_key",
            "pass exactly one of behavior_log_prob_key and behavior_policy",
        )
    if hasattr(episodes, "iterate_episodes"):
        episodes = episodes.iterate_episodes()
    if not isinstance(episodes, Iterable):
        raise LogFormatError(
            f"{source}: expected an iterable of episodes; got {type(episodes).__name__}"
        )
    ids, rewards, log_pis, log_betas, times = [], [], [], [], []
    seen: dict[int, int] = {}
    for k, ep in enumerate(episodes):
        for attr in _EPISODE_FIELDS:
            if not hasattr(ep, attr):
                raise fail(
                    f"{source}, episode {getattr(ep, 'id', k)}",
                    attr,
                    f"missing attribute (Minari's EpisodeData has {', '.join(_EPISODE_FIELDS)})",
                )
        ep_id = _episode_id(ep, k, source)
        if ep_id in seen:
            raise fail(
                source,
                "id",
                f"episode id {ep_id} appears twice, at positions {seen[ep_id]} and {k} of "
                "episodes; each episode needs its own id",
            )
        seen[ep_id] = k
        where = f"{source}, episode {ep_id}"
        r = as_array(ep.rewards, "rewards", where, (None,))
        t = len(r)
        if t == 0:
            raise fail(where, "rewards", "an episode without steps")
        check_rewards(r, "rewards", where, "step")
        _check_lengths(ep, t, where)
        infos = ep.infos if ep.infos is not None else {}
        if not isinstance(infos, Mapping):
            raise fail(
                where, "infos", f"got {type(infos).__name__}; Minari's infos is a dict of arrays"
            )
        obs = _drop_last(ep.observations)
        if behavior_log_prob_key is not None:
            if behavior_log_prob_key not in infos:
                raise fail(
                    where,
                    behavior_log_prob_key,
                    f"missing infos key (infos has {', '.join(map(str, infos)) or 'nothing'})",
                )
            lb = _per_action(infos[behavior_log_prob_key], t, behavior_log_prob_key, where)
            lb = _log_probs(lb, t, behavior_log_prob_key, where)
            lb_name = behavior_log_prob_key
        else:
            lb = call(behavior_policy, "behavior_policy", where, obs, ep.actions)
            lb = _log_probs(lb, t, "behavior_policy", where)
            lb_name = "behavior_policy"
        if (lb == -np.inf).any():
            raise fail(
                where,
                lb_name,
                f"−inf at step {int(np.flatnonzero(lb == -np.inf)[0])}: the logged action "
                "had probability 0",
            )
        lp = call(evaluation_log_prob, "evaluation_log_prob", where, obs, ep.actions)
        lp = _log_probs(lp, t, "evaluation_log_prob", where)
        lp = np.maximum(lp, LOG_PROB_FLOOR)
        lp, lb = shift_densities(lp, lb)
        if timestamp_key is not None:
            if timestamp_key not in infos:
                raise fail(where, timestamp_key, "missing infos key")
            entry = infos[timestamp_key]
            if _length(entry) in (None, 0):
                raise fail(where, timestamp_key, "no times; expected one per step (or T+1)")
            times.append(as_timestamps(np.asarray(entry)[:1], timestamp_key, where, "step")[0])
        ids.append(np.full(t, ep_id))
        rewards.append(r)
        log_pis.append(lp)
        log_betas.append(lb)
    if not ids:
        raise LogFormatError(f"{source}: no episodes")
    return Logs.from_arrays(
        np.concatenate(rewards),
        np.concatenate(log_pis),
        np.concatenate(log_betas),
        episode=np.concatenate(ids),
        timestamp=np.array(times) if times else None,
        source=source,
    )
