"""Per-round estimates of a log read in chunks, through sums that merge.

:func:`pyprog.forecast_value` needs, of the per-round estimates, only sums: each time bin's
count, mean and spread of each estimator's pseudo-outcomes, and a few totals. Every input
to them is also a sum over rounds, so a log is read chunk by chunk (from memory, a folder
of Parquet files, or a cluster's partitions) in two passes, each a map over chunks and a
merge of what they return:

1. **fit** (:func:`fit_chunk` -> :class:`FitSums`): each fold's per-action moments of the
   reward model's inputs (:meth:`~pyprog.offpolicy.reward_model.ActionRidge.fold_moments`),
   for each of its time inputs; π_e's mass and its mass-weighted contexts per action (the
   pooled direct term's p̄ and x̄); the actions the log played; the importance weights'
   sums (:mod:`pyprog.offpolicy.support`); whether a callable π_e acts otherwise at a
   target. Folds come from a hash of each row (:class:`~pyprog.timeseries.splits.HashedFolds`),
   so a chunk folds its rows as the whole log would.
2. **estimate** (:func:`estimate_chunk` -> :class:`ChunkEstimates`): with the K fold
   models (:class:`Fitted`), each round's pseudo-outcome for every estimator and each of
   the reward model's time inputs, with and without the pooled direct term; the caller
   gathers them into per-bin sums (:class:`pyprog.value.bins.BinSums`, a floor up).

A chunk is a :class:`pyprog.logs.chunks.Chunk`: checked rounds and π_e at them. Estimators whose
pseudo-outcomes are not row by row (self-normalised IS divides by the whole log's mean
weight) need the whole log in one chunk (:attr:`RoundEstimator.row_local`).

May import :mod:`pyprog.timeseries`, :mod:`pyprog.logs`, :mod:`pyprog.utils` and
:mod:`pyprog._ext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pyprog.logs.chunks import Chunk
from pyprog.logs.rounds import Rounds, policy_action_dist
from pyprog.offpolicy.crossfit import (
    fit_fold_models,
    pooled_direct_rows,
    predict_all,
    reward_features,
)
from pyprog.offpolicy.estimates import ROUND_ESTIMATORS, RoundInputs, time_inputs
from pyprog.offpolicy.reward_model import ActionRidge
from pyprog.offpolicy.support import WeightSums
from pyprog.timeseries.splits import N_FOLDS, HashedFolds

#: The time resolution of the hashed folds, in days (8.64 s): a time read as a date or as
#: its number of days differs in the last bits only.
TIME_GRAIN = 1e-4

__all__ = [
    "ChunkEstimates",
    "FitSums",
    "Fitted",
    "Plan",
    "estimate_chunk",
    "fit_chunk",
    "mergeable",
]


@dataclass(frozen=True)
class Plan:
    """What the passes compute: the same for every chunk.

    Attributes
    ----------
    kinds : tuple of str
        Registered estimator names.
    phis : dict
        Label suffix -> the reward model's time inputs (a TimeModel, a time feature or None).
    n_actions : int
    span : (float, float)
        The whole log's first and last time (the time inputs' scale).
    shift : numpy.ndarray, shape (d,)
        A point near the contexts' mean (the moments are taken about it).
    policy : callable or None
        ``policy(context, times) -> (n, A)``; None when the chunks carry π_e.
    targets : tuple of float
        When a callable π_e is asked how it acts for each target.
    pool : bool
        Also the pooled direct term (the reward model must be affine in its inputs).
    seed : int
        The hashed folds' seed.
    n_folds : int
        K, the cross-fitting folds.
    reward_model : object or None
        None: :class:`ActionRidge` (its moments merge over chunks, as any model's with
        ``fold_moments``, :func:`mergeable`); another model needs the whole log in one
        chunk.
    """

    kinds: tuple
    phis: dict
    n_actions: int
    span: tuple
    shift: np.ndarray
    policy: object = None
    targets: tuple = ()
    pool: bool = False
    seed: int = 0
    n_folds: int = N_FOLDS
    reward_model: object = None

    @property
    def uses_q(self) -> bool:
        return any(ROUND_ESTIMATORS[k].uses_reward_model for k in self.kinds)

    @property
    def ridge(self):
        """The reward model whose fit is a sum over rounds (``fold_moments`` and
        ``from_fold_moments``, as :class:`ActionRidge`), or None for another model."""
        model = ActionRidge(self.n_actions) if self.reward_model is None else self.reward_model
        return model if mergeable(model) else None

    def folds(self, rounds: Rounds) -> np.ndarray:
        """Each round's fold, from a hash of its time (to :data:`TIME_GRAIN` days) and
        context: not of its action, propensity or reward, so that a round's fold is
        independent of what was played and what it earned given when and for whom, as
        cross-fitting's guarantee asks (a fold that depends on the outcome biases DR:
        ``tests/test_chunked.py`` shows it, and that this one does not)."""
        ticks = np.round(rounds.times / TIME_GRAIN)  # dates and their day numbers agree
        return HashedFolds(self.n_folds, self.seed).fold_ids([ticks, rounds.context])

    def inputs(self, rounds: Rounds, phi) -> np.ndarray:
        """z = [context, τ(t)], the reward model's inputs before the action: (n, k)."""
        return reward_features(rounds.context, time_inputs(phi, rounds.times, *self.span))

    def dists(self, chunk: Chunk, keys=None) -> dict:
        """π_e at the chunk's rounds: ``"log"`` at their own times, and, for a callable, at
        each target's time (keys 0, 1, ...); only ``keys`` when given."""
        r = chunk.rounds
        if self.policy is None:
            return {"log": chunk.pi}
        keys = ("log", *range(len(self.targets))) if keys is None else keys
        out = {}
        for key in keys:
            when = r.times if key == "log" else np.full(r.n, self.targets[key])
            out[key] = policy_action_dist(self.policy, r.context, when, self.n_actions)
        return out


# -- pass 1: the fit ---------------------------------------------------------------------


@dataclass
class FitSums:
    """What the fit pass gathers from a chunk; :meth:`merge` adds two chunks'."""

    n: int
    played: np.ndarray  #: (A,) rounds per logged action
    moments: dict  #: phi label -> (K, A, k + 2, k + 2)
    mass: dict  #: dist key -> (A,) Σ_i π_e(a|x_i)
    mass_x: dict  #: dist key -> (A, d) Σ_i π_e(a|x_i) x_i
    weights: dict  #: dist key -> WeightSums
    differs: dict  #: target key -> whether π_e there differs from π_e at the log's times
    models: dict | None = None  #: phi label -> fitted fold models (one chunk, another model)

    def merge(self, other: FitSums) -> FitSums:
        if self.models is not None or other.models is not None:
            raise ValueError(
                "reward_model: only a model whose fit is a sum over rounds (ActionRidge's "
                "fold_moments) can be fitted on a log read in chunks; read the log into "
                "memory to use another model"
            )
        add = lambda a, b: {k: a[k] + b[k] for k in a}  # noqa: E731
        return FitSums(
            self.n + other.n,
            self.played + other.played,
            add(self.moments, other.moments),
            add(self.mass, other.mass),
            add(self.mass_x, other.mass_x),
            {k: self.weights[k].merge(other.weights[k]) for k in self.weights},
            {k: self.differs[k] or other.differs[k] for k in self.differs},
        )


def mergeable(reward_model) -> bool:
    """Whether a reward model's fit is a sum over rounds, so chunks' fits merge."""
    return all(callable(getattr(reward_model, m, None))
               for m in ("fold_moments", "from_fold_moments"))  # fmt: skip


def _weights(dist: np.ndarray, rounds: Rounds) -> np.ndarray:
    """w_i = π_e(a_i|x_i, t_i) / π₀(a_i|x_i, t_i): shape (n,)."""
    return dist[np.arange(rounds.n), rounds.action] / rounds.pscore


def fit_chunk(chunk: Chunk, plan: Plan) -> FitSums:
    """The fit pass's sums of one chunk (:class:`FitSums`)."""
    r = chunk.rounds
    dists = plan.dists(chunk)
    fold = plan.folds(r)
    moments, models = {}, None
    if plan.uses_q:
        X = {label: plan.inputs(r, phi) for label, phi in plan.phis.items()}
        ridge = plan.ridge
        if ridge is not None:
            for label, z in X.items():
                shift = np.concatenate([plan.shift, np.zeros(z.shape[1] - plan.shift.size)])
                moments[label] = ridge.fold_moments(
                    z, r.action, r.reward, fold, plan.n_folds, shift
                )
        else:  # the whole log in this chunk: fit now
            models = {
                label: fit_fold_models(
                    z, r.action, r.reward, plan.n_actions, fold, plan.n_folds, plan.reward_model
                )
                for label, z in X.items()
            }
    log = dists["log"]
    return FitSums(
        n=r.n,
        played=np.bincount(r.action, minlength=plan.n_actions),
        moments=moments,
        mass={k: d.sum(axis=0) for k, d in dists.items()},
        mass_x={k: d.T @ r.context for k, d in dists.items()},
        weights={k: WeightSums.of(_weights(d, r), r) for k, d in dists.items()},
        differs={
            k: bool(not np.allclose(log, d, rtol=0, atol=1e-12))
            for k, d in dists.items()
            if k != "log"
        },
        models=models,
    )


@dataclass(frozen=True)
class Fitted:
    """The fit pass's outcome: each time input's K fold models, and π_e's pooled means."""

    models: dict  #: phi label -> list of K fold models
    p_bar: dict  #: dist key -> (A,) mean_i π_e(a|x_i)
    x_bar: dict  #: dist key -> (A, d) x̄_a, the contexts' mean weighted by π_e(a|x_i)
    sums: FitSums = field(repr=False)

    @classmethod
    def of(cls, sums: FitSums, plan: Plan) -> Fitted:
        models = sums.models
        if models is None:
            ridge = plan.ridge
            models = {}
            for label, moments in sums.moments.items():
                k = moments.shape[2] - 2
                shift = np.concatenate([plan.shift, np.zeros(k - plan.shift.size)])
                models[label] = ridge.from_fold_moments(moments, shift)
        p_bar = {key: m / sums.n for key, m in sums.mass.items()}
        x_bar = {
            key: sums.mass_x[key] / np.where(m > 0, m, 1.0)[:, None] for key, m in sums.mass.items()
        }
        return cls(models, p_bar, x_bar, sums)


# -- pass 2: the estimates ---------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkEstimates:
    """One chunk's pseudo-outcomes, by label, and each time input's context part."""

    times: np.ndarray
    values: dict  #: label -> (n,) Ŷ
    context_part: dict  #: phi label -> (n,) Σ_a π_e(a|x_i) q̂(x_i, 0, a)


def _direct_terms(r: Rounds, z: np.ndarray, bounds: np.ndarray, dist: np.ndarray,
                  models: list, pooled_means: tuple | None) -> tuple:  # fmt: skip
    """q̂ at the logged actions, the own direct term, and (with ``pooled_means`` = (p̄, x̄))
    the pooled one and the context part, for rounds sorted by fold (fold k is rows
    ``bounds[k]:bounds[k + 1]``)."""
    A, K = dist.shape[1], len(models)
    k_time = z.shape[1] - r.context.shape[1]
    q_logged, own, pooled, part = (np.empty(r.n) for _ in range(4))
    for k, model in enumerate(models):
        rows = slice(int(bounds[k]), int(bounds[k + 1]))
        if rows.start == rows.stop:
            continue
        q = predict_all(model, z[rows], A, k, K)  # q̂(x_i, φ(t_i), ·)
        q_logged[rows] = np.take_along_axis(q, r.action[rows, None], axis=1)[:, 0]
        own[rows] = np.einsum("ia,ia->i", dist[rows], q)
        if pooled_means is not None:
            pooled[rows], part[rows] = pooled_direct_rows(
                model, (k, K), r.context[rows], q, dist[rows], *pooled_means, k_time
            )
    if pooled_means is None:
        return q_logged, own, None, None
    return q_logged, own, pooled, part


def estimate_chunk(chunk: Chunk, plan: Plan, fitted: Fitted, keys) -> dict:
    """The estimate pass of one chunk: ``{dist key: ChunkEstimates}`` for each key asked.

    Labels: an estimator's name (IS, SNIS), or its name and the time input's suffix, with
    ``"-pooled"`` before it for the pooled direct term (``"dr-pooled"``). The rounds are
    taken in fold order (one sort), so each fold model predicts a contiguous slice.
    """
    fold = plan.folds(chunk.rounds)
    order = np.argsort(fold, kind="stable")
    r = chunk.rounds.take(order)
    chunk = Chunk(r, None if chunk.pi is None else chunk.pi[order])
    bounds = np.searchsorted(fold[order], np.arange(plan.n_folds + 1))
    dists = plan.dists(chunk, keys)
    z = {label: plan.inputs(r, phi) for label, phi in plan.phis.items()} if plan.uses_q else {}
    groups = np.zeros(r.n, dtype=np.int64)
    out = {}
    for key in keys:
        dist = dists[key]
        w = _weights(dist, r)
        means = (fitted.p_bar[key], fitted.x_bar[key]) if plan.pool else None
        terms = {label: _direct_terms(r, z[label], bounds, dist, fitted.models[label], means)
                 for label in z}  # fmt: skip
        values, parts = {}, {}
        for name in plan.kinds:
            kind = ROUND_ESTIMATORS[name]()
            if not kind.uses_reward_model:
                values[name] = kind.pseudo_outcomes(RoundInputs(r.reward, w, groups))
                continue
            for label, (q_logged, own, pooled, part) in terms.items():
                values[name + label] = kind.pseudo_outcomes(
                    RoundInputs(r.reward, w, groups, q_logged, own)
                )
                if pooled is not None:
                    values[name + "-pooled" + label] = kind.pseudo_outcomes(
                        RoundInputs(r.reward, w, groups, q_logged, pooled)
                    )
                    parts[label] = part
        out[key] = ChunkEstimates(r.times, values, parts)
    return out
