"""OPFV: a policy's value at a future time from a time feature (Shimizu et al., KDD 2025).

Shimizu, Kawamura, Muroi, Narita, Tateno, Udagawa & Saito (2025), "Off-Policy Evaluation
and Learning for the Future under Non-Stationarity", KDD. Target: the value at a time t'
after the log, V_{t'}(π_e) = E_{x∼p(x|t'), a∼π_e(· | x,t')} q(x, t', a). With a time feature
φ (piecewise constant: the b-th of n blocks of a year, the day of week, ...), the rounds
whose φ(t_i) equals φ(t') stand in for the unseen future (SPEC §2d)::

    V̂(t') = 1/n Σ_i [ 1{φ(t_i) = φ(t')} / P̂(φ(t')) · π_e(a_i|x_i, t') / π₀(a_i|x_i, t_i)
                        · (r_i − f̂(x_i, φ(t_i), a_i))
                      + Σ_a π_e(a|x_i, t') f̂(x_i, φ(t'), a) ]

P̂(φ(t')) is the share of rounds with φ(t_i) = φ(t'); f̂ is a regression of r on
(x, onehot(φ(t)), a), cross-fitted on K folds (:mod:`pyprog.offpolicy.crossfit`; the
default :class:`~pyprog.offpolicy.reward_model.ActionRidge`) and evaluated at φ(t'). It is
unbiased for V_{t'} when q(x, t', a) − f̂ has the same mean over the matched rounds as at t'
(the paper's condition: the part of q not explained by φ is the same at t' as in the
matched past) and contexts do not drift; with a single block (φ ≡ 0) it is stationary DR.
The standard error is std of the bracketed per-round terms / √n (P̂ and f̂ taken as fixed).

Two ways to pick φ:

* known: pass ``time_feature`` to :func:`opfv` (e.g. ``PeriodBlocks(365.25, 8)``);
* from the data, :func:`opfv_select`: among candidates ordered from coarse (low variance,
  possibly biased) to fine (less biased, noisier), for each target the coarsest candidate
  whose estimate agrees with every finer one, abs(V̂_i − V̂_j) ≤ κ (ŝ_i + ŝ_j) for all j > i
  (κ = 2: the ±2 s.e. intervals overlap). This is Lepski's method as used for estimator
  selection in off-policy evaluation (SLOPE: Su, Srinath & Krishnamurthy 2020; Tucker &
  Lee 2021) — a bias–variance rule that needs no backtest, so it works for targets further
  ahead than half the log. It is our choice of rule, not one spelled out in the OPFV paper.

The evaluation policy is a callable ``policy(context, times) -> (n, A)`` so that it can be
evaluated at t'. Contexts that drift in time are not modelled (the direct term averages
over all logged contexts).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from pyprog.logs.rounds import Rounds, check_rounds, policy_action_dist
from pyprog.logs.times import as_days
from pyprog.offpolicy.crossfit import cross_fit, reward_features
from pyprog.timeseries.features import PeriodBlocks, check_time_feature, checked_labels, one_hot
from pyprog.timeseries.splits import N_FOLDS, Folds

__all__ = ["DEFAULT_BLOCKS", "OPFVResult", "opfv", "opfv_action_values", "opfv_select"]

#: Default candidates of :func:`opfv_select`: 1, 2, 4, ..., 64 blocks of a year. Nested (each
#: block of one is a union of blocks of the next), so that a finer candidate is never more
#: biased than a coarser one for any truth constant on the coarser blocks: the order
#: Lepski's rule presumes. 64 blocks are 5.7 days each.
DEFAULT_BLOCKS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class OPFVResult:
    """OPFV estimates at one or more target times.

    Attributes
    ----------
    at : numpy.ndarray, shape (m,)
        The targets t' (float; days since 1970-01-01 UTC when given as dates).
    value, se : numpy.ndarray, shape (m,)
        V̂(t') and its standard error.
    n_matched : numpy.ndarray of int, shape (m,)
        Rounds with φ(t_i) = φ(t').
    terms : numpy.ndarray, shape (m, n)
        The bracketed per-round terms (``value`` is their mean over rounds).
    time_feature : list
        The φ used for each target.
    """

    at: np.ndarray
    value: np.ndarray
    se: np.ndarray
    n_matched: np.ndarray
    terms: np.ndarray
    time_feature: list = field(default_factory=list)


def _targets(at) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(at))
    if arr.dtype.kind == "O" or arr.ndim != 1:
        arr = np.atleast_1d(np.asarray(list(np.atleast_1d(at))))
    return as_days(arr, name="at")


def _check_policy_and_targets(policy, at) -> np.ndarray:
    if not callable(policy):
        raise ValueError(
            f"policy must be a callable policy(context, times) -> (n, n_actions), so that it "
            f"can be evaluated at the target time; got {type(policy).__name__}"
        )
    return _targets(at)


class _Fitted:
    """f̂ cross-fitted for one φ, and OPFV at any target from it."""

    def __init__(self, log, feature, reward_model, n_folds, folds, random_state, name):
        self.log, self.feature, self.name = log, check_time_feature(name, feature), name
        self.labels = checked_labels(name, feature, log.times)
        z = reward_features(log.context, one_hot(self.labels, feature.n_levels))
        self.fit = cross_fit(
            z, log.times, log.action, log.reward, log.n_actions, reward_model=reward_model,
            n_folds=n_folds, folds=folds, random_state=random_state,
        )  # fmt: skip
        rows = np.arange(log.n)
        self.residual = log.reward - self.fit.q_hat[rows, log.action]  # r_i − f̂(x_i, φ(t_i), a_i)

    def level(self, target: float) -> int:
        return int(checked_labels(self.name, self.feature, np.array([target]))[0])

    def action_values(self, target: float) -> tuple[np.ndarray, int]:
        """OPFV's value of every action at every round for the target, C (n, A), and the
        rounds matched: V̂(t') = 1/n Σ_i Σ_a π_e(a|x_i, t') C_ia, with
        C_ia = f̂(x_i, φ(t'), a) + 1{a = a_i} 1{φ(t_i) = φ(t')} / P̂(φ(t')) · (r_i − f̂(x_i,
        φ(t_i), a_i)) / π₀(a_i|x_i, t_i). Linear in π_e: what OPFV-PG differentiates."""
        log, level = self.log, self.level(target)
        match = self.labels == level
        n_matched = int(match.sum())
        if n_matched == 0:
            raise ValueError(
                f"{self.name}: no logged round has the level {level} of the target time "
                f"{target:g} ({self.feature!r}); OPFV needs past rounds with φ(t_i) = φ(t'): "
                f"use a coarser time feature"
            )
        onehot_t = np.zeros((log.n, self.feature.n_levels))
        onehot_t[:, level] = 1.0
        values = self.fit.predict(reward_features(log.context, onehot_t))  # f̂(x_i, φ(t'), ·)
        share = n_matched / log.n  # P̂(φ(t'))
        rows = np.arange(log.n)
        values[rows, log.action] += match / share * self.residual / log.pscore
        return values, n_matched

    def terms(self, policy, target: float) -> tuple[np.ndarray, int]:
        log = self.log
        values, n_matched = self.action_values(target)
        pi_t = policy_action_dist(policy, log.context, np.full(log.n, target), log.n_actions)
        return (pi_t * values).sum(axis=1), n_matched


def opfv_action_values(
    log: Rounds,
    at: float,
    *,
    time_feature,
    reward_model=None,
    n_folds: int = N_FOLDS,
    random_state=None,
) -> np.ndarray:
    """OPFV's per-round value of every action at the target t', C of shape (n, A).

    OPFV's estimate of any policy is linear in it, V̂(t') = 1/n Σ_i Σ_a π(a|x_i, t') C_ia
    (:func:`opfv`), so the gradient of V̂ in a policy's parameters is a weighted policy
    gradient with these values: OPFV-PG (Shimizu et al. 2025, Sec. 5).

    Parameters
    ----------
    log : Rounds
        Checked rounds (:func:`pyprog.logs.rounds.check_rounds`).
    at : float
        The target t' (days).
    time_feature : time feature
        φ, e.g. ``PeriodBlocks(365.25, 8)``.
    reward_model, n_folds, random_state
        As in :func:`opfv`.

    Returns
    -------
    numpy.ndarray, shape (n, A)

    Examples
    --------
    >>> from pyprog.timeseries import PeriodBlocks
    >>> rng = np.random.default_rng(0)
    >>> t = np.sort(rng.uniform(0, 365.25, 2000))
    >>> a = rng.integers(0, 2, 2000)
    >>> r = (a == 1) * PeriodBlocks(365.25, 4).labels(t) + rng.normal(0, 0.1, 2000)
    >>> log = check_rounds(None, t, a, r, np.full(2000, 0.5), 2)
    >>> c = opfv_action_values(log, 365.25 + 200, time_feature=PeriodBlocks(365.25, 4))
    >>> c.mean(axis=0).round(1)  # arm 1 pays 2 in season 2
    array([0., 2.])
    """
    fitted = _Fitted(log, time_feature, reward_model, n_folds, "random", random_state,
                     "time_feature")  # fmt: skip
    return fitted.action_values(float(at))[0]


def opfv(  # noqa: PLR0913  (reviewed: docs/guides/development.md)
    context,
    times,
    action,
    reward,
    pscore,
    policy,
    at,
    *,
    time_feature,
    n_actions: int,
    reward_model=None,
    n_folds: int = N_FOLDS,
    folds: str | Folds = "random",
    random_state=None,
) -> OPFVResult:
    """OPFV with a known time feature φ: V̂(t') for each target time t'.

    Parameters
    ----------
    context : array_like, shape (n, d), or None
    times : array_like, shape (n,)
        Numbers or dates (:func:`pyprog.logs.times.as_days`).
    action : array_like of int, shape (n,)
    reward : array_like, shape (n,)
    pscore : array_like, shape (n,)
        π₀(a_i|x_i, t_i) in (0, 1].
    policy : callable
        ``policy(context (n, d), times (n,)) -> (n, n_actions)``: π_e, evaluated at t'.
    at : float, date, or array_like of them, shape (m,)
        Target times, in the unit of ``times``.
    time_feature : time feature
        φ, e.g. ``PeriodBlocks(365.25, 8)`` (:mod:`pyprog.timeseries.features`).
    n_actions : int
    reward_model : scikit-learn-style regressor, optional
        f̂; default :class:`~pyprog.offpolicy.reward_model.ActionRidge`.
    n_folds : int
        Cross-fitting folds K >= 2.
    folds : {"random", "blocked"} or Folds
        How rounds are split (:mod:`pyprog.timeseries.splits`).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    OPFVResult

    Examples
    --------
    >>> from pyprog.timeseries import PeriodBlocks
    >>> rng = np.random.default_rng(0)
    >>> n = 4000
    >>> t = np.sort(rng.uniform(0, 365.25, n))
    >>> a = rng.integers(0, 2, n)
    >>> season = PeriodBlocks(365.25, 4)
    >>> r = (a == 1) * season.labels(t) + rng.normal(0, 0.1, n)  # arm 1 pays the season's index
    >>> always_1 = lambda x, t: np.tile([0.0, 1.0], (len(t), 1))
    >>> res = opfv(None, t, a, r, np.full(n, 0.5), always_1, 365.25 + 200,
    ...            time_feature=season, n_actions=2, random_state=0)
    >>> round(float(res.value[0]), 1)  # day 200 of a year is in season 2
    2.0
    """
    log = check_rounds(context, times, action, reward, pscore, n_actions)
    targets = _check_policy_and_targets(policy, at)
    fitted = _Fitted(log, time_feature, reward_model, n_folds, folds, random_state, "time_feature")
    terms = np.empty((targets.shape[0], log.n))
    n_matched = np.empty(targets.shape[0], dtype=np.int64)
    for j, target in enumerate(targets):
        terms[j], n_matched[j] = fitted.terms(policy, float(target))
    se = terms.std(axis=1, ddof=1) / np.sqrt(log.n) if log.n > 1 else np.full(len(targets), np.nan)
    return OPFVResult(
        targets, terms.mean(axis=1), se, n_matched, terms, [time_feature] * len(targets)
    )


def opfv_select(  # noqa: PLR0913  (reviewed: docs/guides/development.md)
    context,
    times,
    action,
    reward,
    pscore,
    policy,
    at,
    *,
    n_actions: int,
    candidates=None,
    kappa: float = 2.0,
    reward_model=None,
    n_folds: int = N_FOLDS,
    folds: str | Folds = "random",
    random_state=None,
) -> OPFVResult:
    """OPFV with φ chosen from the data for each target, by Lepski's rule (module docstring).

    Parameters
    ----------
    context, times, action, reward, pscore, policy, at, n_actions
        As in :func:`opfv`.
    candidates : sequence of time features, optional
        Ordered from coarse to fine; default ``PeriodBlocks(365.25, b)`` for b in
        :data:`DEFAULT_BLOCKS` (the first must be usable at every target: one block is).
    kappa : float
        The agreement threshold κ > 0 (in standard errors of the two estimates, summed).
    reward_model, n_folds, folds, random_state
        As in :func:`opfv`; f̂ is refit for every candidate.

    Returns
    -------
    OPFVResult
        ``time_feature`` holds the candidate chosen for each target.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> n = 3000
    >>> t = np.sort(rng.uniform(0, 365.25, n))
    >>> a = rng.integers(0, 2, n)
    >>> r = (a == 1) * 1.0 + rng.normal(0, 0.5, n)  # stationary
    >>> always_1 = lambda x, t: np.tile([0.0, 1.0], (len(t), 1))
    >>> res = opfv_select(None, t, a, r, np.full(n, 0.5), always_1, [400.0, 500.0],
    ...                   n_actions=2, random_state=0)
    >>> [f.n_blocks for f in res.time_feature]
    [1, 1]
    """
    log = check_rounds(context, times, action, reward, pscore, n_actions)
    targets = _check_policy_and_targets(policy, at)
    real = isinstance(kappa, numbers.Real) and not isinstance(kappa, bool)
    if not real or not np.isfinite(kappa) or kappa <= 0:
        raise ValueError(f"kappa must be a finite number > 0; got {kappa!r}")
    if candidates is None:
        candidates = [PeriodBlocks(365.25, b) for b in DEFAULT_BLOCKS]
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must hold at least one time feature; got none")
    fits = [
        _Fitted(log, c, reward_model, n_folds, folds, random_state, f"candidates[{k}]")
        for k, c in enumerate(candidates)
    ]
    m, c = targets.shape[0], len(candidates)
    terms = np.full((m, c, log.n), np.nan)
    matched = np.zeros((m, c), dtype=np.int64)
    for j, target in enumerate(targets):
        for k, fitted in enumerate(fits):
            if (fitted.labels == fitted.level(float(target))).any():
                terms[j, k], matched[j, k] = fitted.terms(policy, float(target))
    value = terms.mean(axis=2)
    se = terms.std(axis=2, ddof=1) / np.sqrt(log.n)
    chosen = np.empty(m, dtype=np.int64)
    for j in range(m):
        usable = np.flatnonzero(matched[j] > 0)
        if usable.size == 0:
            raise ValueError(
                f"at: no candidate time feature has logged rounds at the level of target "
                f"{targets[j]:g}; add a coarser candidate (one block always has)"
            )
        chosen[j] = next(
            i
            for i in usable
            if all(
                abs(value[j, i] - value[j, k]) <= kappa * (se[j, i] + se[j, k])
                for k in usable[usable > i]
            )
        )  # the last usable candidate agrees with every finer one vacuously
    rows = np.arange(m)
    return OPFVResult(
        targets,
        value[rows, chosen],
        se[rows, chosen],
        matched[rows, chosen],
        terms[rows, chosen],
        [candidates[k] for k in chosen],
    )
