"""Terms of the forecasters in time, and their sums: the features φ_k(t) of a time model.

Terms (compose them with ``+``; the constant is always added, :class:`TimeModel`):

* :func:`trend` — (t − t_min) / (t_max − t_min) over the log's times (scaled so that the
  design is well conditioned; the forecast does not depend on the scaling);
* :func:`season` — cos(2π j t / P), sin(2π j t / P), j = 1..k, for a stated period P in
  days (``365.25``, ``"7D"``, ``"365D"``, ``"24H"``, ``"2W"``); t is absolute (days since
  1970-01-01 UTC for dates), so the phase does not depend on where the log starts;
* :func:`step` — 1{t ≥ τ}: a level shift at a stated time τ, which persists (with the
  constant alone: the level after τ is the forecast);
* :func:`blocks` — a piecewise-constant time feature of :mod:`.features`
  (:class:`PeriodBlocks`, :func:`DayOfWeek`, :class:`Crossed`, any object with
  ``n_levels`` and ``labels``): one-hot with level 0 dropped (the constant stands for it).

Each term gives its columns at times (``columns``) and their exact average over a window
(``window``): closed form for the trend (its value at the midpoint), for cos/sin
((sin ωt₂ − sin ωt₁)/(ω(t₂ − t₁)) and the like) and for a step (the window's share after
τ); for blocks, the share of the window in each level, measured on a grid of ``n_points``
midpoints (error below 1/n_points per level boundary crossed). The fit is
:mod:`.models`.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pyprog.logs.times import time_point
from pyprog.timeseries.features import (
    DayOfWeek,
    PeriodBlocks,
    check_time_feature,
    checked_labels,
)

__all__ = [
    "Blocks",
    "Season",
    "Step",
    "Term",
    "TimeModel",
    "Trend",
    "as_time_model",
    "blocks",
    "parse_period",
    "season",
    "step",
    "time_point",
    "trend",
]

_UNITS = {"D": 1.0, "H": 1.0 / 24.0, "W": 7.0}
_PERIOD_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([DHW])\s*$", re.IGNORECASE)


def parse_period(period) -> float:
    """A period in days from a number (days) or a string such as ``"7D"``, ``"24H"``, ``"2W"``.

    Examples
    --------
    >>> parse_period("365.25D"), parse_period("12H"), parse_period(7)
    (365.25, 0.5, 7.0)
    """
    if isinstance(period, str):
        m = _PERIOD_RE.match(period)
        if m is None:
            raise ValueError(
                f"period must be a number of days or a string like '7D', '365.25D', '24H', "
                f"'2W'; got {period!r}"
            )
        days = float(m.group(1)) * _UNITS[m.group(2).upper()]
    elif isinstance(period, numbers.Real) and not isinstance(period, bool):
        days = float(period)
    else:
        raise ValueError(f"period must be a number of days or a string like '7D'; got {period!r}")
    if not math.isfinite(days) or days <= 0:
        raise ValueError(f"period must be a finite number of days > 0; got {period!r}")
    return days


def _fmt(x: float) -> str:
    return f"{x:g}"


class Term:
    """A term of a time model: columns of the design at times, given the log's time range.

    A new term is a frozen dataclass subclassing this one that writes ``name``,
    ``n_columns(t0, t1)``, ``labels_names(t0, t1)``, ``columns(t, t0, t1)`` (shape
    (len(t), n_columns)) and ``window(a, b, t0, t1, n_points)`` (the columns' exact average
    over [a, b], shape (n_columns,)), and says what it means for the future
    (:attr:`reading`). The model average and the fit ask a term only through these.
    """

    #: What the term says of the value after the log: ``"continues"`` (a trend goes on),
    #: ``"persists"`` (a level shift stays), ``"returns"`` (a pattern in time recurs), or
    #: None (nothing: the day of the week, which every reading holds or not). The model
    #: average gives each reading the same prior mass (:func:`pyprog.value.reading`).
    reading: ClassVar[str | None] = "returns"

    def all_levels(self, z: np.ndarray) -> np.ndarray:
        """The columns ``z`` (shape (..., n_columns)) with every level of a one-hot term,
        the one the constant stands for put back first; other terms' as they are."""
        return z

    def check_design(self, t: np.ndarray) -> None:
        """Raise ``ValueError`` if the term's columns at ``t`` cannot be fit (rank)."""

    def __add__(self, other) -> TimeModel:
        return TimeModel((self,)) + other

    def __radd__(self, other) -> TimeModel:
        if other == 0:  # sum([...])
            return TimeModel((self,))
        return NotImplemented


@dataclass(frozen=True)
class Trend(Term):
    """A linear trend in t, scaled to [0, 1] over the log's times. Build with :func:`trend`."""

    reading: ClassVar[str | None] = "continues"

    @property
    def name(self) -> str:
        return "trend"

    def n_columns(self, t0: float, t1: float) -> int:
        return 1

    def labels_names(self, t0: float, t1: float) -> list[str]:
        return ["trend"]

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        return ((t - t0) / _span(t0, t1))[:, None]

    def window(self, a: float, b: float, t0: float, t1: float, n_points: int) -> np.ndarray:
        return np.array([(0.5 * (a + b) - t0) / _span(t0, t1)])


@dataclass(frozen=True)
class Season(Term):
    """cos/sin(2π j t / period), j = 1..harmonics. Build with :func:`season`."""

    period: float
    harmonics: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "period", parse_period(self.period))
        k = self.harmonics
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"harmonics must be an integer >= 1; got {k!r}")

    @property
    def name(self) -> str:
        return f"season({_fmt(self.period)}D,k={self.harmonics})"

    def n_columns(self, t0: float, t1: float) -> int:
        return 2 * self.harmonics

    def labels_names(self, t0: float, t1: float) -> list[str]:
        out = []
        for j in range(1, self.harmonics + 1):
            out += [f"cos(2π·{j}t/{_fmt(self.period)})", f"sin(2π·{j}t/{_fmt(self.period)})"]
        return out

    def _omegas(self) -> np.ndarray:
        return 2.0 * np.pi * np.arange(1, self.harmonics + 1) / self.period

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        wt = t[:, None] * self._omegas()[None, :]
        out = np.empty((t.shape[0], 2 * self.harmonics))
        out[:, 0::2] = np.cos(wt)
        out[:, 1::2] = np.sin(wt)
        return out

    def window(self, a: float, b: float, t0: float, t1: float, n_points: int) -> np.ndarray:
        w = self._omegas()
        out = np.empty(2 * self.harmonics)
        out[0::2] = (np.sin(w * b) - np.sin(w * a)) / (w * (b - a))
        out[1::2] = (np.cos(w * a) - np.cos(w * b)) / (w * (b - a))
        return out


@dataclass(frozen=True)
class Blocks(Term):
    """One-hot levels of a piecewise-constant time feature, level 0 dropped.

    Build with :func:`blocks`.
    """

    feature: object

    def __post_init__(self) -> None:
        check_time_feature("feature", self.feature)

    @property
    def name(self) -> str:
        f = self.feature
        if isinstance(f, PeriodBlocks):
            if f.period == 7.0 and f.n_blocks == 7 and f.origin == -3.0:
                return "blocks(dow)"
            origin = "" if f.origin == 0 else f",o={_fmt(f.origin)}"
            return f"blocks({_fmt(f.period)}D/{f.n_blocks}{origin})"
        return f"blocks({type(f).__name__},L={f.n_levels})"

    def n_columns(self, t0: float, t1: float) -> int:
        return int(self.feature.n_levels) - 1

    def labels_names(self, t0: float, t1: float) -> list[str]:
        return [f"{self.name}=={lv}" for lv in range(1, int(self.feature.n_levels))]

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        lab = checked_labels("feature", self.feature, t)
        n_levels = int(self.feature.n_levels)
        out = np.zeros((t.shape[0], n_levels))
        out[np.arange(t.shape[0]), lab] = 1.0
        return out[:, 1:]

    def window(self, a: float, b: float, t0: float, t1: float, n_points: int) -> np.ndarray:
        grid = a + (np.arange(n_points) + 0.5) * (b - a) / n_points
        return self.columns(grid, t0, t1).mean(axis=0)

    @property
    def reading(self) -> str | None:  # type: ignore[override]
        """None for the day of the week (it says nothing of the future); else "returns"."""
        return None if self.feature == DayOfWeek() else "returns"

    def all_levels(self, z: np.ndarray) -> np.ndarray:
        return np.concatenate([1.0 - z.sum(axis=-1, keepdims=True), z], axis=-1)

    def check_design(self, t: np.ndarray) -> None:
        lab = checked_labels("feature", self.feature, t)
        missing = np.setdiff1d(np.arange(self.feature.n_levels), lab)
        if missing.size:
            raise ValueError(
                f"the design is rank-deficient: {self.name} has level(s) "
                f"{missing.tolist()} never observed in times; use fewer blocks or a "
                f"longer log"
            )


@dataclass(frozen=True)
class Step(Term):
    """1{t ≥ at}: a level shift at a stated time that persists. Build with :func:`step`."""

    reading: ClassVar[str | None] = "persists"
    at: float

    def __post_init__(self) -> None:
        real = isinstance(self.at, numbers.Real) and not isinstance(self.at, bool)
        if not real or not math.isfinite(self.at):
            raise ValueError(f"step: at must be a finite time (days); got {self.at!r}")
        object.__setattr__(self, "at", float(self.at))

    @property
    def name(self) -> str:
        return f"step({self.at:.6g})"

    def n_columns(self, t0: float, t1: float) -> int:
        return 1

    def labels_names(self, t0: float, t1: float) -> list[str]:
        return [self.name]

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        return (t >= self.at).astype(np.float64)[:, None]

    def window(self, a: float, b: float, t0: float, t1: float, n_points: int) -> np.ndarray:
        return np.array([min(max((b - self.at) / (b - a), 0.0), 1.0)])  # share of [a, b] ≥ τ


def _span(t0: float, t1: float) -> float:
    return t1 - t0 if t1 > t0 else 1.0


def trend() -> Trend:
    """A linear trend in time (scaled to [0, 1] over the log for conditioning).

    Examples
    --------
    >>> (trend() + season("365D", harmonics=2)).name
    'const+trend+season(365D,k=2)'
    """
    return Trend()


def season(period, harmonics: int = 1) -> Season:
    """Periodic terms cos/sin(2π j t / period), j = 1..harmonics, period in days.

    Parameters
    ----------
    period : float or str
        Days (``365.25``) or a string ``"7D"``, ``"365D"``, ``"24H"``, ``"2W"``.
    harmonics : int
        k >= 1: 2k columns.

    Examples
    --------
    >>> season("7D", harmonics=3).name
    'season(7D,k=3)'
    """
    return Season(period, harmonics)


def step(at) -> Step:
    """A persistent level shift at time ``at``: the column 1{t ≥ at}.

    Parameters
    ----------
    at : float or date
        τ, in the log's time unit (days since 1970-01-01 UTC for dates).

    Examples
    --------
    >>> step(60.0).columns(np.array([59.0, 60.0, 61.0]), 0.0, 100.0).ravel()
    array([0., 1., 1.])
    """
    return Step(time_point("at", at))


def blocks(feature) -> Blocks:
    """A piecewise-constant time feature as one-hot columns (level 0 is the constant's).

    Parameters
    ----------
    feature : time feature
        ``PeriodBlocks(365.25, 8)``, ``DayOfWeek()``, ``Crossed(f, g)`` or any object with
        ``n_levels`` and ``labels(times)``.

    Examples
    --------
    >>> from pyprog.timeseries.features import DayOfWeek
    >>> blocks(DayOfWeek()).name
    'blocks(dow)'
    """
    return Blocks(feature)


@dataclass(frozen=True)
class TimeModel:
    """A sum of feature terms plus the constant. Build with ``+`` on terms.

    Examples
    --------
    >>> model = trend() + season(365.25, harmonics=2)
    >>> model.name
    'const+trend+season(365.25D,k=2)'
    """

    terms: tuple = ()

    def __post_init__(self) -> None:
        for term in self.terms:
            if not isinstance(term, Term):
                raise ValueError(
                    f"terms must be trend(), season(...), step(...), blocks(...) or another "
                    f"pyprog.timeseries.Term; got {term!r}"
                )

    def __add__(self, other) -> TimeModel:
        if isinstance(other, TimeModel):
            return TimeModel(self.terms + other.terms)
        if isinstance(other, Term):
            return TimeModel((*self.terms, other))
        return NotImplemented

    def __radd__(self, other) -> TimeModel:
        if other == 0:
            return self
        return NotImplemented

    @property
    def name(self) -> str:
        return "+".join(["const"] + [term.name for term in self.terms])

    def n_columns(self, t0: float, t1: float) -> int:
        return 1 + sum(term.n_columns(t0, t1) for term in self.terms)

    def column_names(self, t0: float, t1: float) -> list[str]:
        out = ["const"]
        for term in self.terms:
            out += term.labels_names(t0, t1)
        return out

    def design(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """The design at times ``t``: shape (len(t), n_columns), constant first."""
        cols = [np.ones((t.shape[0], 1))] + [term.columns(t, t0, t1) for term in self.terms]
        return np.hstack(cols)

    def window(self, a: float, b: float, t0: float, t1: float, n_points: int) -> np.ndarray:
        """The features' exact average over [a, b]: shape (n_columns,)."""
        parts = [np.ones(1)] + [term.window(a, b, t0, t1, n_points) for term in self.terms]
        return np.concatenate(parts)


def as_time_model(terms) -> TimeModel:
    """A TimeModel from a term, a sum of terms, a list of them, or None (the constant).

    Examples
    --------
    >>> as_time_model([trend(), season(7)]).name
    'const+trend+season(7D,k=1)'
    """
    if isinstance(terms, TimeModel):
        return terms
    if isinstance(terms, Term):
        return TimeModel((terms,))
    if terms is None:
        return TimeModel(())
    if isinstance(terms, (list, tuple)):
        return TimeModel(tuple(terms))
    raise ValueError(
        f"terms must be a term (trend(), season(...), blocks(...)), a sum of terms, or a list "
        f"of them; got {terms!r}"
    )
