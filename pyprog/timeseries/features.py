"""Piecewise-constant time features φ(t): which of finitely many levels a time falls in.

A time feature is a pure function of the timestamp (as statsmodels' ``CalendarSeasonality``
and Prophet's seasonal terms are), so the level of a target time t' does not depend on how
the log was indexed. Times are numbers in the log's unit; dates are days since
1970-01-01 UTC (:func:`pyprog.logs.times.as_days`).

``PeriodBlocks(period, n_blocks, origin)`` — the b-th of ``n_blocks`` equal blocks of a
period::

    φ(t) = ⌊ n_blocks · ((t − origin) mod period) / period ⌋  ∈ {0, …, n_blocks − 1}

``DayOfWeek()`` is ``PeriodBlocks(7, 7, origin=-3)`` on days since the epoch: Monday = 0
(1970-01-01 was a Thursday, level 3). ``Crossed(f, g)`` is the product feature
(f(t), g(t)) with f.n_levels · g.n_levels levels, e.g. season × day of week.

Any object with an integer attribute ``n_levels`` and a method ``labels(times) -> (n,) int``
in ``[0, n_levels)`` can be used wherever a time feature is accepted (the OPFV estimator of
:mod:`pyprog.offpolicy.future_value`, the reward models' time inputs).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Crossed",
    "DayOfWeek",
    "PeriodBlocks",
    "check_time_feature",
    "checked_labels",
    "one_hot",
]


@dataclass(frozen=True)
class PeriodBlocks:
    """The b-th of ``n_blocks`` equal blocks of a ``period`` (e.g. 8 seasons of a year).

    Parameters
    ----------
    period : float
        The period's length in the log's time unit (days for dates), > 0: 365.25 for a
        year, 7 for a week.
    n_blocks : int
        The number of equal blocks, >= 1 (1 = no time feature: every time has level 0).
    origin : float
        A time at which block 0 starts (default 0: the epoch for dates).

    Examples
    --------
    >>> PeriodBlocks(365.25, 8).labels(np.array([0.0, 50.0, 365.0, 400.0]))
    array([0, 1, 7, 0])
    """

    period: float
    n_blocks: int
    origin: float = 0.0

    def __post_init__(self) -> None:
        real = isinstance(self.period, numbers.Real) and not isinstance(self.period, bool)
        if not real or not math.isfinite(self.period) or self.period <= 0:
            raise ValueError(f"period must be a finite number > 0; got {self.period!r}")
        if (
            isinstance(self.n_blocks, bool)
            or not isinstance(self.n_blocks, numbers.Integral)
            or self.n_blocks < 1
        ):
            raise ValueError(f"n_blocks must be an integer >= 1; got {self.n_blocks!r}")
        if not isinstance(self.origin, numbers.Real) or not math.isfinite(self.origin):
            raise ValueError(f"origin must be a finite number; got {self.origin!r}")

    @property
    def n_levels(self) -> int:
        return int(self.n_blocks)

    def labels(self, times) -> np.ndarray:
        """φ(t) for each time: an int64 array of shape (n,) in [0, n_blocks)."""
        t = np.asarray(times, dtype=np.float64)
        phase = np.mod(t - self.origin, self.period) / self.period
        return np.minimum((phase * self.n_blocks).astype(np.int64), self.n_blocks - 1)


def DayOfWeek() -> PeriodBlocks:
    """The day of the week of times in days since 1970-01-01 (UTC), Monday = 0.

    Examples
    --------
    >>> DayOfWeek().labels(np.array([0.0, 4.0]))  # Thursday 1 Jan 1970, Monday 5 Jan
    array([3, 0])
    """
    return PeriodBlocks(7.0, 7, origin=-3.0)


@dataclass(frozen=True)
class Crossed:
    """The product of two time features: level ``f(t) · g.n_levels + g(t)``.

    Examples
    --------
    >>> both = Crossed(PeriodBlocks(365.25, 8), DayOfWeek())
    >>> both.n_levels, both.labels(np.array([4.0])).tolist()
    (56, [0])
    """

    first: object
    second: object

    def __post_init__(self) -> None:
        check_time_feature("first", self.first)
        check_time_feature("second", self.second)

    @property
    def n_levels(self) -> int:
        return int(self.first.n_levels) * int(self.second.n_levels)

    def labels(self, times) -> np.ndarray:
        return self.first.labels(times) * int(self.second.n_levels) + self.second.labels(times)


def check_time_feature(name: str, feature) -> object:
    """``feature`` if it has ``n_levels`` (int >= 1) and ``labels(times)``; else ValueError."""
    n_levels = getattr(feature, "n_levels", None)
    ok = (
        callable(getattr(feature, "labels", None))
        and isinstance(n_levels, numbers.Integral)
        and not isinstance(n_levels, bool)
        and n_levels >= 1
    )
    if not ok:
        raise ValueError(
            f"{name} must be a time feature: an object with n_levels (an integer >= 1) and "
            f"labels(times) -> (n,) integers, e.g. PeriodBlocks(365.25, 8) or DayOfWeek(); "
            f"got {feature!r}"
        )
    return feature


def checked_labels(name: str, feature, times: np.ndarray) -> np.ndarray:
    """``feature.labels(times)`` as int64 (n,), checked to lie in [0, n_levels)."""
    labels = np.asarray(feature.labels(times))
    if labels.shape != times.shape or labels.dtype.kind not in "iu":
        raise ValueError(
            f"{name}.labels(times) must return integers of shape {times.shape}; got dtype "
            f"{labels.dtype} and shape {labels.shape}"
        )
    bad = (labels < 0) | (labels >= feature.n_levels)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}.labels(times) must lie in [0, {feature.n_levels}); got {labels[i]} at row {i}"
        )
    return labels.astype(np.int64)


def one_hot(labels: np.ndarray, n_levels: int) -> np.ndarray:
    """Indicator columns: shape (n, n_levels), 1.0 in column ``labels[i]`` of row i.

    Examples
    --------
    >>> one_hot(np.array([0, 2]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.]])
    """
    out = np.zeros((labels.shape[0], n_levels))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out
