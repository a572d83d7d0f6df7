"""The effects of the value in time: each a block of columns with one variance of its own.

The value on day t is modelled as

    V(t) = β₀ + Σ_k z_k(t)ᵀ b_k + u(t),     b_k ~ N(0, λ_k I),   u(t) ~ N(0, τ²) iid by day,

a mixed model (a penalized additive model: each ridge penalty 1/λ_k is a variance
component chosen from the log, :mod:`.reml`). The effects:

* :class:`TrendEffect` — (t − t₀)/(t₁ − t₀): a slope that continues after the log;
* :class:`LevelWalk` — a random walk of the level with knots every ``spacing`` days: the
  level is Σ_l δ_l ramp_l(t), the ramps rising from 0 to 1 between knots l − 1 and l, with
  iid increments δ_l ~ N(0, λ). Steps and slow drifts of any shape are its special cases.
  After the log the walk goes on: the knots between the log's end and a target carry new
  increments the log has not seen, whose variance λ per knot enters the forecast's
  variance (:meth:`LevelWalk.future_columns`), so a drift is never certain to stop;
* :class:`SeasonEffect` — cos/sin(2π j t / P) of one harmonic j of a stated period;
* :class:`LevelsEffect` — one column per level of a piecewise-constant time feature
  (blocks of the year, the day of the week, a user's feature), every level kept: the
  shared variance makes them exchangeable, and the constant absorbs their mean.

Each effect gives its columns at times (``columns``) and their exact average over a
window (``window``), with t₀, t₁ the log's first and last bin times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyprog.offpolicy.time_features import DayOfWeek, PeriodBlocks, checked_labels, one_hot

__all__ = [
    "Effect",
    "LevelWalk",
    "LevelsEffect",
    "SeasonEffect",
    "TrendEffect",
    "default_effects",
]

#: Days in a year (the period of the yearly season and blocks).
YEAR = 365.25
#: Grid points per window when an effect has no closed-form average.
WINDOW_POINTS = 2_000


class Effect:
    """A block of columns z(t) with one variance λ: subclass and give ``name``, ``columns``.

    ``window`` defaults to the average of ``columns`` on a grid of midpoints;
    ``future_columns`` (columns of coefficients the log has not seen) to none.
    """

    name = "effect"

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """z(t): shape (len(t), q)."""
        raise NotImplementedError

    def window(self, a: float, b: float, t0: float, t1: float) -> np.ndarray:
        """The columns' average over [a, b]: shape (q,)."""
        grid = a + (np.arange(WINDOW_POINTS) + 0.5) * (b - a) / WINDOW_POINTS
        return self.columns(grid, t0, t1).mean(axis=0)

    def future_columns(self, rows: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """Columns of new coefficients at targets: shape (len(rows), r); r = 0 by default.

        ``rows`` holds ``("at", t)`` or ``("over", a, b)`` targets as an object array.
        """
        return np.zeros((len(rows), 0))


@dataclass(frozen=True)
class TrendEffect(Effect):
    """A linear trend, (t − t₀)/(t₁ − t₀): the slope is the change over the log."""

    @property
    def name(self) -> str:
        return "trend"

    def columns(self, t, t0, t1):
        return ((t - t0) / _span(t0, t1))[:, None]

    def window(self, a, b, t0, t1):
        return np.array([(0.5 * (a + b) - t0) / _span(t0, t1)])


@dataclass(frozen=True)
class SeasonEffect(Effect):
    """cos/sin(2π j t / period): harmonic ``j`` of a period (days), t absolute."""

    period: float = YEAR
    harmonic: int = 1

    @property
    def name(self) -> str:
        return f"season({self.period:g}D,j={self.harmonic})"

    def _omega(self) -> float:
        return 2.0 * math.pi * self.harmonic / self.period

    def columns(self, t, t0, t1):
        wt = self._omega() * t
        return np.column_stack([np.cos(wt), np.sin(wt)])

    def window(self, a, b, t0, t1):
        w = self._omega()
        return np.array([math.sin(w * b) - math.sin(w * a), math.cos(w * a) - math.cos(w * b)]) / (
            w * (b - a)
        )


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


@dataclass(frozen=True)
class LevelWalk(Effect):
    """A random walk of the level: iid increments at knots every ``spacing`` days.

    The knots are κ_l = t₀ + l·spacing, l = 0..K, K = ⌈(t₁ − t₀)/spacing⌉; column l
    (l = 1..K) is the ramp clip((t − κ_{l−1})/spacing, 0, 1), so the level is a piecewise
    linear walk through the knots, 0 at t₀ (the constant stands for it).
    """

    spacing: float

    @property
    def name(self) -> str:
        return f"walk({self.spacing:g}D)"

    def n_knots(self, t0: float, t1: float) -> int:
        return max(1, math.ceil((t1 - t0) / self.spacing - 1e-9))

    def _ramps(self, t: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.clip((t[:, None] - starts[None, :]) / self.spacing, 0.0, 1.0)

    def columns(self, t, t0, t1):
        starts = t0 + self.spacing * np.arange(self.n_knots(t0, t1))
        return self._ramps(np.asarray(t, dtype=np.float64), starts)

    def window(self, a, b, t0, t1):
        return self._window_ramps(a, b, t0 + self.spacing * np.arange(self.n_knots(t0, t1)))

    def _window_ramps(self, a: float, b: float, starts: np.ndarray) -> np.ndarray:
        # the exact mean of a ramp over [a, b]: the integral of clip((t - s)/w, 0, 1)
        def integral(t):
            u = np.clip((t - starts) / self.spacing, 0.0, 1.0)
            return self.spacing * 0.5 * u**2 + np.maximum(t - starts - self.spacing, 0.0)

        return (integral(b) - integral(a)) / (b - a)

    def future_columns(self, rows, t0, t1):
        first = t0 + self.spacing * self.n_knots(t0, t1)  # the first knot after the log
        ends = [row[-1] for row in rows]
        k = max(0, math.ceil((max(ends) - first) / self.spacing)) if rows.size else 0
        starts = first + self.spacing * np.arange(k)
        out = np.zeros((len(rows), k))
        for i, row in enumerate(rows):
            if row[0] == "at":
                out[i] = self._ramps(np.array([row[1]]), starts)[0]
            else:
                out[i] = self._window_ramps(row[1], row[2], starts)
        return out


def _span(t0: float, t1: float) -> float:
    return t1 - t0 if t1 > t0 else 1.0


def default_effects(t0: float, t1: float) -> list[Effect]:
    """The effects of the default model for a log spanning [t0, t1] days.

    Always a trend and a walk of the level with eight increments over the log (knots every
    max(7, span/8) days: a walk with weekly knots took up a one-year log's trend in small
    steps and forecast it flat, guide "The value in time as one shrinkage model"); a yearly
    season (3 harmonics) and 4, 8 and 16 blocks of the year when the log covers 11/12 of
    a year; the day of the week when it covers two weeks.

    Examples
    --------
    >>> [e.name for e in default_effects(0.0, 365.0)]  # doctest: +NORMALIZE_WHITESPACE
    ['trend', 'walk(45.625D)', 'season(365.25D,j=1)', 'season(365.25D,j=2)',
     'season(365.25D,j=3)', 'blocks(365.25D/4)', 'blocks(365.25D/8)', 'blocks(365.25D/16)',
     'dow']
    """
    span = t1 - t0
    out: list[Effect] = [TrendEffect(), LevelWalk(max(7.0, span / 8.0))]
    if span >= YEAR * 11 / 12:
        out += [SeasonEffect(YEAR, j) for j in (1, 2, 3)]
        out += [LevelsEffect(PeriodBlocks(YEAR, b)) for b in (4, 8, 16)]
    if span >= 14.0:
        out.append(LevelsEffect(DayOfWeek()))
    return out
