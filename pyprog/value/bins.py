"""The rounds in time bins, and what each bin's mean knows of the value.

:func:`bin_estimates` gathers per-round estimates into bins of a day (or any width), so that
the model average of :mod:`pyprog.value` costs by bins, not rounds; :func:`bin_noise` is
the noise variance of each bin's mean. Both are read from :class:`BinSums`, the per-bin
sums that merge over chunks of a log, so a log streamed in parts gives the bins of the
whole.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["BinSums", "Binned", "bin_estimates", "bin_noise"]


def bin_noise(values: np.ndarray, times: np.ndarray, binned: Binned) -> np.ndarray:
    """The noise variance of each bin's mean, σ_j² = s² / n_j: shape (m,).

    :meth:`BinSums.noise` on the values' sums (``binned`` must be their bins): s² is the
    within-bin variance pooled over every bin. Not each bin's own: the spread of IS and DR
    estimates grows with their mean, so weights 1/s_j² from each bin's own rounds favour
    the bins that came out low (measured in the guide ``value-model.md``).
    """
    sums = BinSums.of(values, times, binned.width)
    if sums.m != binned.m:
        raise ValueError(f"binned has {binned.m} bins; the values fill {sums.m}")
    return sums.noise()


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
    return BinSums.of(values, times, width).binned()


def _check_width(width) -> float:
    real = isinstance(width, numbers.Real) and not isinstance(width, bool)
    if not real or not math.isfinite(width) or width <= 0:
        raise ValueError(f"width must be a finite number of days > 0; got {width!r}")
    return float(width)


@dataclass(frozen=True)
class BinSums:
    """Per-bin sums of per-round values, mergeable over chunks of a log (in any order).

    Each bin (rounds with the same ⌊t / width⌋) keeps its count n_j, Σ t, its values' mean
    and their sum of squared deviations M2_j; :meth:`merge` combines two chunks' sums by
    Chan, Golub & LeVeque's (1979) pairwise update, which keeps M2 accurate where Σ v² −
    n v̄² would cancel. :meth:`binned` and :meth:`noise` give what the model in time takes.

    Attributes
    ----------
    key : numpy.ndarray of float, shape (m,)
        ⌊t / width⌋ of each bin, increasing.
    count, t_sum, mean, m2 : numpy.ndarray, shape (m,)
    width : float

    Examples
    --------
    >>> v, t = np.array([1.0, 3.0, 5.0, 7.0]), np.array([0.2, 0.7, 2.5, 0.4])
    >>> whole = BinSums.of(v, t)
    >>> parts = BinSums.of(v[:2], t[:2]).merge(BinSums.of(v[2:], t[2:]))
    >>> np.allclose(parts.mean, whole.mean), whole.mean, whole.m2
    (True, array([3.66666667, 5.        ]), array([18.66666667,  0.        ]))
    """

    key: np.ndarray
    count: np.ndarray
    t_sum: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    width: float

    @classmethod
    def of(cls, values: np.ndarray, times: np.ndarray, width: float = 1.0) -> BinSums:
        """The sums of one chunk: ``values`` and ``times`` of shape (n,)."""
        width = _check_width(width)
        key, inv = np.unique(np.floor(times / width), return_inverse=True)
        count = np.bincount(inv, minlength=key.size).astype(np.float64)
        mean = np.bincount(inv, weights=values, minlength=key.size) / count
        m2 = np.bincount(inv, weights=(values - mean[inv]) ** 2, minlength=key.size)
        t_sum = np.bincount(inv, weights=times, minlength=key.size)
        return cls(key, count, t_sum, mean, m2, width)

    @property
    def m(self) -> int:
        return int(self.key.shape[0])

    def merge(self, other: BinSums) -> BinSums:
        """The sums of both chunks' rounds (bins with the same key combined)."""
        if other.width != self.width:
            raise ValueError(f"cannot merge bins of {self.width:g} and {other.width:g} days")
        key, inv = np.unique(np.concatenate([self.key, other.key]), return_inverse=True)
        a, b = inv[: self.m], inv[self.m :]
        count = np.zeros(key.size)
        t_sum, mean, m2 = np.zeros(key.size), np.zeros(key.size), np.zeros(key.size)
        count[a], t_sum[a], mean[a], m2[a] = self.count, self.t_sum, self.mean, self.m2
        n_b = np.zeros(key.size)
        n_b[b] = other.count
        t_sum[b] += other.t_sum
        mean_b = np.zeros(key.size)
        mean_b[b] = other.mean
        total = count + n_b
        delta = mean_b - mean
        m2[b] += other.m2
        m2 += delta**2 * count * n_b / total
        mean += delta * n_b / total
        return BinSums(key, total, t_sum, mean, m2, self.width)

    def binned(self) -> Binned:
        """The bins: each one's mean time, mean value and count."""
        return Binned(self.t_sum / self.count, self.mean.copy(), self.count.copy(), self.width)

    def noise(self) -> np.ndarray:
        """The noise variance of each bin's mean, σ_j² = s² / n_j: shape (m,).

        s² is the within-bin variance pooled over every bin, Σ M2_j / Σ (n_j − 1). When
        fewer than 10 degrees of freedom are within bins, it is Rice's (1984) estimate from
        consecutive bins instead, the mean of (ȳ_j − ȳ_{j+1})² / (1/n_j + 1/n_{j+1}) (half
        the mean squared difference of time-consecutive rounds when each bin holds one),
        which a slow drift barely inflates.
        """
        dof = float(np.sum(self.count - 1.0))
        if dof >= 10 or self.m < 2:
            pooled = float(self.m2.sum()) / max(dof, 1.0)
        else:
            spread = 1.0 / self.count[1:] + 1.0 / self.count[:-1]
            pooled = float(np.mean(np.diff(self.mean) ** 2 / spread))
        mean_square = float(np.sum(self.count * self.mean**2 + self.m2) / self.count.sum())
        pooled = max(pooled, 1e-12 * max(1.0, mean_square))
        return pooled / self.count
