"""The rounds in time bins, and what each bin's mean knows of the value.

:func:`bin_estimates` gathers per-round estimates into bins of a day (or any width), so that
the model average of :mod:`pyprog.value` costs by bins, not rounds; :func:`bin_noise` is
the noise variance of each bin's mean.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["Binned", "bin_estimates", "bin_noise"]


def bin_noise(values: np.ndarray, times: np.ndarray, binned: Binned) -> np.ndarray:
    """The noise variance of each bin's mean, σ_j² = s² / n_j: shape (m,).

    s² is the within-bin variance pooled over every bin. Not each bin's own: the spread of
    IS and DR estimates grows with their mean, so weights 1/s_j² from each bin's own
    rounds favour the bins that came out low (measured in the guide ``value-model.md``).
    When fewer than 10 degrees of
    freedom are within bins, s² is half the mean squared difference of time-consecutive
    rounds (Rice 1984), which a slow drift barely inflates.
    """
    key = np.floor(times / binned.width)
    _, inv = np.unique(key, return_inverse=True)
    ss = float(np.sum((values - binned.y[inv]) ** 2))
    dof = float(np.sum(binned.count - 1.0))
    if dof >= 10:
        pooled = ss / dof
    else:
        order = np.argsort(times, kind="stable")
        pooled = 0.5 * float(np.mean(np.diff(values[order]) ** 2))
    pooled = max(pooled, 1e-12 * max(1.0, float(np.mean(values**2))))
    return pooled / binned.count


@dataclass(frozen=True)
class Binned:
    """Per-round estimates gathered into time bins.

    Attributes
    ----------
    times : numpy.ndarray, shape (m,)
        Each bin's mean round time.
    y : numpy.ndarray, shape (m,)
        Each bin's mean estimate ȳ_j.
    count : numpy.ndarray, shape (m,)
        Rounds per bin n_j (> 0).
    width : float
        The bin width in days.
    """

    times: np.ndarray
    y: np.ndarray
    count: np.ndarray
    width: float

    @property
    def m(self) -> int:
        return int(self.y.shape[0])

    @property
    def span(self) -> tuple[float, float]:
        return float(self.times.min()), float(self.times.max())


def bin_estimates(values: np.ndarray, times: np.ndarray, width: float = 1.0) -> Binned:
    """Gather per-round estimates into bins of ``width`` days (empty bins dropped).

    Parameters
    ----------
    values : numpy.ndarray, shape (n,)
    times : numpy.ndarray, shape (n,)
        Float days.
    width : float
        Bin width in days, > 0; bins start at multiples of ``width`` (midnight UTC for
        one-day bins of dates).

    Returns
    -------
    Binned

    Examples
    --------
    >>> b = bin_estimates(np.array([1.0, 3.0, 5.0]), np.array([0.2, 0.7, 2.5]))
    >>> b.y, b.count, b.times
    (array([2., 5.]), array([2., 1.]), array([0.45, 2.5 ]))
    """
    real = isinstance(width, numbers.Real) and not isinstance(width, bool)
    if not real or not math.isfinite(width) or width <= 0:
        raise ValueError(f"width must be a finite number of days > 0; got {width!r}")
    key = np.floor(times / width)
    uniq, inv = np.unique(key, return_inverse=True)
    count = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    y = np.bincount(inv, weights=values, minlength=uniq.size) / count
    t = np.bincount(inv, weights=times, minlength=uniq.size) / count
    return Binned(t, y, count, float(width))
