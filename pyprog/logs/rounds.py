"""Timestamped contextual-bandit rounds, checked once at the public boundary.

A log holds n rounds ``(x_i, t_i, a_i, r_i, π₀(a_i|x_i, t_i))``:

* ``context`` — shape (n, d), finite numbers (d may be 0: pass shape (n, 0) or ``None``);
* ``times`` — shape (n,), numbers (any unit, e.g. float days) or dates. Dates
  (``datetime64``, Python ``datetime``, pandas timestamps) become **float days since
  1970-01-01 UTC**: dates with a time zone are converted to UTC first, naive dates are
  taken as UTC. Rows need not be sorted: :meth:`Rounds.canonical_order` puts them in one order
  that depends only on their values (by time, ties by the other columns), which
  :func:`pyprog.forecast_value` uses, so that a shuffled log gives the same forecast (the
  cross-fitting folds depend on the order of the rows);
* ``action`` — shape (n,), integers in ``[0, n_actions)``;
* ``reward`` — shape (n,), finite;
* ``pscore`` — shape (n,), π₀(a_i|x_i, t_i) in (0, 1] (OBP's name for the propensity);
* ``action_dist`` — shape (n, A), π_e(· | x_i, t_i): each row in [0, 1] and summing to 1
  (to 1e-6).

Every check raises ``ValueError`` naming the argument, the first bad row and what is
allowed. The estimators trust what comes out of :func:`check_rounds`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyprog.logs.times import as_days

__all__ = [
    "MAX_ABS_REWARD",
    "PROB_TOL",
    "UNSEEN_MASS",
    "Rounds",
    "check_action_dist",
    "check_played",
    "check_rounds",
    "check_support",
    "policy_action_dist",
]

#: How far a row of action probabilities may be from summing to 1.
PROB_TOL = 1e-6


def _vector(name: str, value, n: int | None, kind: str = "float") -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be an array of numbers of shape (n,); got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (n,); got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have one entry per round ({n}); got {arr.shape[0]}")
    if kind == "int":
        if arr.dtype.kind == "f":
            bad = ~np.isfinite(arr) | (arr != np.round(arr))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{name} must hold integers; got {arr[i]} at row {i}")
        return arr.astype(np.int64)
    return np.ascontiguousarray(arr, dtype=np.float64)


def _first_bad(name: str, bad: np.ndarray, values: np.ndarray, allowed: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be {allowed}; got {values[i].item()!r} at row {i}")


def check_action_dist(name: str, value, n: int, n_actions: int | None = None) -> np.ndarray:
    """π_e(· | x_i, t_i) as a float64 (n, A) array whose rows are probability vectors.

    Parameters
    ----------
    name : str
        The argument's name, for error messages.
    value : array_like, shape (n, A) (or OBP's (n, A, 1))
    n : int
        The number of rounds.
    n_actions : int, optional
        The required A.

    Returns
    -------
    numpy.ndarray, shape (n, A)

    Examples
    --------
    >>> check_action_dist("action_dist", [[0.5, 0.5], [1.0, 0.0]], n=2).shape
    (2, 2)
    """
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numbers of shape (n, n_actions); got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 3 and arr.shape[2] == 1:  # OBP's (n_rounds, n_actions, len_list=1)
        arr = arr[:, :, 0]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape (n, n_actions) with n = {n}; got {arr.shape}")
    if n_actions is not None and arr.shape[1] != n_actions:
        raise ValueError(
            f"{name} must have one column per action ({n_actions}); got {arr.shape[1]}"
        )
    # within PROB_TOL of [0, 1], as the row sums are: rounding of a policy's 0 and 1
    bad = ~np.isfinite(arr) | (arr < -PROB_TOL) | (arr > 1 + PROB_TOL)
    if bad.any():
        i, a = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} must hold probabilities in [0, 1] (to {PROB_TOL:g}); got {arr[i, a]:.9g} "
            f"at row {i}, action {a}"
        )
    arr = np.clip(arr, 0.0, 1.0)
    sums = arr.sum(axis=1)
    off = np.abs(sums - 1.0) > PROB_TOL
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"{name}: each row must sum to 1 (the policy's probabilities of every action, to "
            f"{PROB_TOL:g}); row {i} sums to {sums[i]:.9g}"
        )
    return np.ascontiguousarray(arr)


def policy_action_dist(policy, context: np.ndarray, times: np.ndarray, n_actions: int):
    """``policy(context, times)`` checked as an (n, n_actions) array of probabilities.

    Parameters
    ----------
    policy : callable
        ``policy(context (n, d), times (n,)) -> (n, n_actions)``.
    context : numpy.ndarray, shape (n, d)
    times : numpy.ndarray, shape (n,)
    n_actions : int

    Returns
    -------
    numpy.ndarray, shape (n, n_actions)

    Examples
    --------
    >>> uniform = lambda x, t: np.full((len(x), 2), 0.5)
    >>> policy_action_dist(uniform, np.zeros((3, 1)), np.zeros(3), 2).sum()
    np.float64(3.0)
    """
    if not callable(policy):
        raise ValueError(
            f"policy must be a callable policy(context, times) -> (n, n_actions); "
            f"got {type(policy).__name__}"
        )
    try:  # copies: a callable that writes into its arguments must not change the log
        probs = policy(context.copy(), times.copy())
    except Exception as exc:
        raise ValueError(f"policy(context, times) raised {type(exc).__name__}: {exc}") from exc
    return check_action_dist("policy(context, times)", probs, len(times), n_actions)


#: The largest reward magnitude a log takes. The forecasts square importance-weighted
#: rewards and returns (variances, the weighted least squares, the bootstrap), which
#: overflows float64 from about 1e154 on and still returns a number; 1e100 leaves room for
#: ratios up to 1e20 over 10^9 steps. Every forecast scales with the rewards: rescale them.
MAX_ABS_REWARD = 1e100

#: π_e's share of mass on an action the log never played above which nothing estimates
#: the value: that action's rewards are not in the log (rounding of a policy's zeros
#: stays below it).
UNSEEN_MASS = 1e-6


def check_support(dist: np.ndarray, rounds: Rounds) -> np.ndarray:
    """``dist`` (n, A), π_e at the logged rounds, unless it puts mass on an action the log
    never played: then a ValueError naming the action and its share of π_e's mass
    (importance sampling would score it 0, a reward model would guess it).

    Examples
    --------
    >>> r = check_rounds(None, [0.0, 1.0], [0, 0], [1.0, 1.0], [0.5, 0.5], 2)
    >>> check_support(np.array([[0.9, 0.1], [0.9, 0.1]]), r)
    Traceback (most recent call last):
    ...
    ValueError: policy: π_e puts 0.1 of its mass on action 1, which the log never played: ...
    """
    check_played(np.bincount(rounds.action, minlength=rounds.n_actions), dist.mean(axis=0))
    return dist


def check_played(played: np.ndarray, share: np.ndarray) -> None:
    """A ValueError naming the first action π_e puts mass on (``share`` (A,), its mean
    probability) that the log never played (``played`` (A,), rounds per action)."""
    unseen = np.flatnonzero((played == 0) & (share > UNSEEN_MASS))
    if unseen.size:
        a = int(unseen[0])
        others = "" if unseen.size == 1 else f" (and {unseen.size - 1} more such actions)"
        raise ValueError(
            f"policy: π_e puts {share[a]:.3g} of its mass on action {a}, which the log never "
            f"played{others}: the log holds no reward of it, so no estimator can forecast "
            "this policy's value; evaluate a policy that plays only logged actions"
        )


@dataclass(frozen=True)
class Rounds:
    """A checked log of n rounds (see the module docstring for each field's rules)."""

    context: np.ndarray  #: (n, d)
    times: np.ndarray  #: (n,) float64 (days since 1970-01-01 UTC when given as dates)
    action: np.ndarray  #: (n,) int64 in [0, n_actions)
    reward: np.ndarray  #: (n,)
    pscore: np.ndarray  #: (n,) in (0, 1]
    n_actions: int

    @property
    def n(self) -> int:
        return int(self.reward.shape[0])

    def canonical_order(self) -> np.ndarray:
        """The rows' order by time, ties broken by action, reward, pscore and the context's
        columns: shape (n,). It depends only on the rows' values, never on how they came.

        Examples
        --------
        >>> r = check_rounds(None, [2.0, 1.0, 1.0], [0, 1, 0], [0.0, 0.0, 0.0], [0.5] * 3, 2)
        >>> r.canonical_order().tolist()
        [2, 1, 0]
        """
        order = np.argsort(self.times, kind="stable")
        t = self.times[order]
        tied = np.flatnonzero(np.r_[t[1:] == t[:-1], False] | np.r_[False, t[1:] == t[:-1]])
        if tied.size == 0:  # distinct times: the order by time is the whole answer
            return order
        rows = order[tied]  # the tie groups' slots, in time order: sort only their rows
        keys = [self.context[rows, j] for j in range(self.context.shape[1] - 1, -1, -1)]
        keys += [self.pscore[rows], self.reward[rows], self.action[rows], self.times[rows]]
        order[tied] = rows[np.lexsort(keys)]  # the last key sorts first
        return order

    def take(self, order: np.ndarray) -> Rounds:
        """The same rounds in the order ``order``."""
        return Rounds(
            self.context[order], self.times[order], self.action[order], self.reward[order],
            self.pscore[order], self.n_actions,
        )  # fmt: skip


def check_rounds(context, times, action, reward, pscore, n_actions: int) -> Rounds:
    """Check a log of rounds; ``ValueError`` naming the argument and the first bad row.

    Parameters
    ----------
    context : array_like, shape (n, d), or None (no context)
    times : array_like, shape (n,)
    action : array_like of int, shape (n,)
    reward : array_like, shape (n,)
    pscore : array_like, shape (n,)
        π₀(a_i|x_i, t_i), in (0, 1].
    n_actions : int
        A, the number of actions.

    Returns
    -------
    Rounds

    Examples
    --------
    >>> r = check_rounds(np.zeros((2, 3)), [0.0, 1.0], [0, 1], [1.0, 0.0], [0.5, 0.5], 2)
    >>> r.n, r.context.shape
    (2, (2, 3))
    """
    if isinstance(n_actions, bool) or not isinstance(n_actions, (int, np.integer)):
        raise ValueError(f"n_actions must be an integer >= 1; got {n_actions!r}")
    if n_actions < 1:
        raise ValueError(f"n_actions must be an integer >= 1; got {n_actions}")
    reward = _vector("reward", reward, None)
    n = reward.shape[0]
    if n == 0:
        raise ValueError("reward must hold at least one round; got an empty array")
    _first_bad("reward", ~np.isfinite(reward), reward, "finite")
    _first_bad(
        "reward", np.abs(reward) > MAX_ABS_REWARD, reward,
        f"at most {MAX_ABS_REWARD:g} in magnitude (the forecasts square them: rescale the "
        "rewards, every forecast scales with them)",
    )  # fmt: skip
    times = as_days(times)
    if times.shape[0] != n:
        raise ValueError(f"times must have one entry per round ({n}); got {times.shape[0]}")
    action = _vector("action", action, n, kind="int")
    _first_bad(
        "action", (action < 0) | (action >= n_actions), action, f"an integer in [0, {n_actions})"
    )
    pscore = _vector("pscore", pscore, n)
    _first_bad(
        "pscore",
        ~np.isfinite(pscore) | (pscore <= 0) | (pscore > 1 + PROB_TOL),
        pscore,
        "a probability in (0, 1] (the logging policy's probability of the logged action; "
        "a round it could not have played cannot be reweighted)",
    )
    pscore = np.minimum(pscore, 1.0)  # within PROB_TOL above 1: rounding of a 1
    if context is None:
        context = np.zeros((n, 0))
    context = np.asarray(context)
    if context.dtype.kind not in "biuf":
        raise ValueError(f"context must be numbers of shape (n, d); got dtype {context.dtype}")
    if context.ndim == 1:
        context = context[:, None]
    if context.ndim != 2 or context.shape[0] != n:
        raise ValueError(f"context must have shape (n, d) with n = {n}; got {context.shape}")
    context = np.ascontiguousarray(context, dtype=np.float64)
    bad = ~np.isfinite(context)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"context must be finite; got {context[i, j]} at row {i}, column {j}")
    return Rounds(context, times, action, reward, pscore, int(n_actions))
