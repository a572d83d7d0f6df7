"""A log's per-round estimates as per-bin sums: the two passes of :func:`pyprog.forecast_value`.

:func:`estimate_bins` runs :mod:`pyprog.offpolicy.chunked`'s passes over a
:class:`~pyprog.logs.chunks.RoundSource` (in memory, streamed from disk, or on a cluster)
and keeps, of each estimator's pseudo-outcomes, only their :class:`~pyprog.value.bins.BinSums`
(:class:`Gathered`), so the memory a forecast needs after the passes is the bins', not the
rounds'. :meth:`Gathered.estimates` then chooses, for each estimator that uses the reward
model, the pooled direct term or each round's own (pooled unless the contexts' part of it
drifts, :func:`pyprog.value.averaging.drifts_in`) and gives each its bins, their noise
and the variance every bin shares.

May import :mod:`pyprog.offpolicy`, :mod:`pyprog.timeseries`, :mod:`pyprog.logs`,
:mod:`pyprog.utils` and :mod:`pyprog._ext`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyprog.logs.chunks import Chunk, RoundSource
from pyprog.logs.rounds import check_played
from pyprog.offpolicy.chunked import Fitted, Plan, estimate_chunk, fit_chunk
from pyprog.offpolicy.estimates import ROUND_ESTIMATORS
from pyprog.timeseries.errors import ForecastError
from pyprog.value.averaging import MIN_BINS, drifts_in
from pyprog.value.bins import Binned, BinSums

__all__ = ["BinnedEstimates", "Gathered", "estimate_bins", "gather_chunk"]


@dataclass(frozen=True)
class BinnedEstimates:
    """One estimator's bins, what the model in time takes.

    Attributes
    ----------
    binned : Binned
    noise : numpy.ndarray, shape (m,)
        Each bin mean's noise variance.
    shared : float
        The variance every bin shares: a pooled direct term's sampling error,
        var(context part) / n (0 without pooling).
    """

    binned: Binned
    noise: np.ndarray
    shared: float


@dataclass(frozen=True)
class Gathered:
    """Per-bin sums of every label's pseudo-outcomes and each time input's context part,
    for one π_e (one dist key); :meth:`merge` adds two chunks'."""

    values: dict  #: label -> BinSums
    parts: dict  #: phi label -> BinSums of the context part

    def merge(self, other: Gathered) -> Gathered:
        return Gathered(
            {k: v.merge(other.values[k]) for k, v in self.values.items()},
            {k: v.merge(other.parts[k]) for k, v in self.parts.items()},
        )

    def estimates(self, plan: Plan, pool_contexts) -> dict:
        """Each estimator's :class:`BinnedEstimates` by label (``"dr-pooled"`` when the
        pooled direct term is kept; the time input's suffix after it)."""
        out = {}
        for name in plan.kinds:
            if not ROUND_ESTIMATORS[name].uses_reward_model:
                out[name] = _binned(self.values[name], None)
                continue
            for suffix in plan.phis:
                part = self.parts.get(suffix)
                pooled = part is not None and (pool_contexts is True or not drifts_in(part))
                label = name + ("-pooled" if pooled else "")
                out[label + suffix] = _binned(self.values[label + suffix], part if pooled else None)
        return out


class _Keyed(dict):
    """``{key: Gathered}`` whose merge merges key by key."""

    def merge(self, other: _Keyed) -> _Keyed:
        return _Keyed({k: v.merge(other[k]) for k, v in self.items()})


def gather_chunk(chunk: Chunk, plan: Plan, fitted: Fitted, keys: tuple, width: float) -> _Keyed:
    """``{key: Gathered}`` of one chunk (:func:`~pyprog.offpolicy.chunked.estimate_chunk`)."""
    out = _Keyed()
    for key, est in estimate_chunk(chunk, plan, fitted, keys).items():
        values = {k: BinSums.of(v, est.times, width) for k, v in est.values.items()}
        parts = {k: BinSums.of(v, est.times, width) for k, v in est.context_part.items()}
        out[key] = Gathered(values, parts)
    return out


def _binned(sums: BinSums, part: BinSums | None) -> BinnedEstimates:
    """The bins of one label, with the shared variance of a pooled direct term."""
    if sums.m < MIN_BINS:
        raise ForecastError(
            f"the log has {sums.m} time bins of {sums.width:g} days; a forecast in time "
            f"needs at least {MIN_BINS}: use narrower bins or a longer log"
        )
    shared = 0.0
    if part is not None:  # var(context part) / n, from the bins: within plus between
        n = float(part.count.sum())
        mean = float(part.count @ part.mean) / n
        m2 = float(part.m2.sum() + part.count @ (part.mean - mean) ** 2)
        shared = m2 / n / n
    return BinnedEstimates(sums.binned(), sums.noise(), shared)


def estimate_bins(source: RoundSource, plan: Plan, width: float) -> tuple[dict, dict]:
    """Both passes over ``source``: per dist key, the :class:`Gathered` bins and the
    :class:`~pyprog.offpolicy.support.Support` of π_e there.

    The keys are ``"log"`` (π_e at the logged times) or, when a callable π_e acts otherwise
    at some target, each target's index.
    """
    fitted = Fitted.of(source.map_reduce(fit_chunk, plan), plan)
    sums = fitted.sums
    keys = ("log",)
    if any(sums.differs.values()):
        keys = tuple(range(len(plan.targets)))
    for key in dict.fromkeys(("log", *keys)):  # π_e at the log's times, and where it acts
        check_played(sums.played, sums.mass[key] / sums.n)
    gathered = source.map_reduce(gather_chunk, plan, fitted, keys, width)
    support = {}
    for key in keys:
        counts = next(iter(gathered[key].values.values())).count
        support[key] = sums.weights[key].support(counts)
    return gathered, support
