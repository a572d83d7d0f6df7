"""The noise of binned per-round estimates: what each bin's mean knows of the value."""

from __future__ import annotations

import numpy as np

from pyprog.offpolicy.time_candidates import Binned

__all__ = ["bin_noise"]


def bin_noise(values: np.ndarray, times: np.ndarray, binned: Binned) -> np.ndarray:
    """The noise variance of each bin's mean, σ_j² = s² / n_j: shape (m,).

    s² is the within-bin variance pooled over every bin. Not each bin's own: the spread of
    IS and DR estimates grows with their mean, so weights 1/s_j² from each bin's own
    rounds favour the bins that came out low (on a trend at 10,000 rounds, with own
    variances shrunk toward the pooled one by 10 prior degrees of freedom, the model
    average's MSE was 1.2x that with the pooled variance). When fewer than 10 degrees of
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
