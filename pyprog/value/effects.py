"""The effects of the value in time: each a block of columns with one variance of its own.

In a candidate model of :mod:`.averaging` the value on day t is

    V(t) = β₀ + Σ_k z_k(t)ᵀ b_k + u(t),     b_k ~ N(0, s_k² I),   u(t) ~ N(0, τ²) iid by day,

a mixed model (a penalized additive model: each ridge penalty 1/s_k² is a variance
component chosen from the log, :mod:`.reml`). An effect gives its columns at times
(``columns``) and their exact average over a window (``window``), with t₀, t₁ the log's
first and last bin times. :class:`LevelsEffect` is one column per level of a
piecewise-constant time feature (blocks of the year, the day of the week, a user's
feature), every level kept: the shared variance makes them exchangeable, and the
constant absorbs their mean; :class:`pyprog.value.TermEffect` wraps the least-squares
terms of :mod:`pyprog.offpolicy.time_terms`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyprog.offpolicy.time_features import DayOfWeek, PeriodBlocks, checked_labels, one_hot

__all__ = ["Effect", "LevelsEffect"]

#: Grid points per window when an effect has no closed-form average.
WINDOW_POINTS = 2_000


class Effect:
    """A block of columns z(t) with one variance s²: subclass and give ``name``, ``columns``.

    ``window`` defaults to the average of ``columns`` on a grid of midpoints.
    """

    name = "effect"

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """z(t): shape (len(t), q)."""
        raise NotImplementedError

    def window(self, a: float, b: float, t0: float, t1: float) -> np.ndarray:
        """The columns' average over [a, b]: shape (q,)."""
        grid = a + (np.arange(WINDOW_POINTS) + 0.5) * (b - a) / WINDOW_POINTS
        return self.columns(grid, t0, t1).mean(axis=0)


@dataclass(frozen=True)
class LevelsEffect(Effect):
    """One column per level of a time feature (``PeriodBlocks``, ``DayOfWeek()``, ...)."""

    feature: object

    @property
    def name(self) -> str:
        f = self.feature
        if f == DayOfWeek():
            return "dow"
        if isinstance(f, PeriodBlocks):
            return f"blocks({f.period:g}D/{f.n_blocks})"
        return f"levels({type(f).__name__},L={f.n_levels})"

    def columns(self, t, t0, t1):
        return one_hot(checked_labels("feature", self.feature, t), int(self.feature.n_levels))
