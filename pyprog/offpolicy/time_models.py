"""Forecasters in time: least squares on features of t, linear in the per-unit estimates.

From per-unit estimates y_i of the value at their own times t_i (e.g.
``round_estimates(...).values``), fit

    y_i ≈ β₀ + Σ_k β_k φ_k(t_i)

by (weighted) least squares on a sum of feature terms, and evaluate the fit at a target
time t' after the log, or average it over a window [t₁, t₂]. The forecast is
f = x*ᵀβ̂ = ζ·y with ζ = W X (XᵀWX)⁻¹ x* (W the diagonal of ``weights``), so the forecast
weights ζ are returned with it; they sum to 1 because the constant is always in the model.

Terms (compose them with ``+``; the constant is always added):

* :func:`trend` — (t − t_min) / (t_max − t_min) over the log's times (scaled so that the
  design is well conditioned; the forecast does not depend on the scaling);
* :func:`season` — cos(2π j t / P), sin(2π j t / P), j = 1..k, for a stated period P in
  days (``365.25``, ``"7D"``, ``"365D"``, ``"24H"``, ``"2W"``); t is absolute (days since
  1970-01-01 UTC for dates), so the phase does not depend on where the log starts;
* :func:`step` — 1{t ≥ τ}: a level shift at a stated time τ, which persists (with the
  constant alone: the level after τ is the forecast);
* :func:`blocks` — a piecewise-constant time feature of :mod:`.time_features`
  (:class:`PeriodBlocks`, :func:`DayOfWeek`, :class:`Crossed`, any object with
  ``n_levels`` and ``labels``): one-hot with level 0 dropped (the constant stands for it).

Window targets ``over=(t₁, t₂)`` use the exact average of each feature over the window:
closed form for the trend (its value at the midpoint) and for cos/sin
((sin ωt₂ − sin ωt₁)/(ω(t₂ − t₁)) and the like); for blocks, the share of the window in
each level, measured on a grid of ``n_points`` midpoints (error below 1/n_points per level
boundary crossed).

The standard error is heteroskedasticity-robust (HC2, MacKinnon & White 1985):
se² = Σ ζ_i² ξ̂_i² / (1 − h_i), ξ̂ the residuals and h_i the leverages. The interval
f ± z_{1−α/2} se is **noise-only**: it assumes the model is right (the truth is in the span
of the terms, at the target too); it does not include misspecification, extrapolation
error or model selection.

References
----------
MacKinnon & White (1985), "Some heteroskedasticity-consistent covariance matrix estimators
with improved finite sample properties", J. Econometrics 29.
Shimizu et al. (2025), "Off-policy evaluation and learning for the future under
non-stationarity", KDD (the time features).
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from pyprog.offpolicy.rounds import as_days
from pyprog.offpolicy.time_features import PeriodBlocks, check_time_feature, checked_labels

__all__ = [
    "Blocks",
    "Season",
    "Step",
    "TimeForecast",
    "TimeModel",
    "Trend",
    "blocks",
    "parse_period",
    "season",
    "step",
    "time_forecast",
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


class _Term:
    """A feature term: columns of the design at times, given the log's time range."""

    def __add__(self, other) -> TimeModel:
        return TimeModel((self,)) + other

    def __radd__(self, other) -> TimeModel:
        if other == 0:  # sum([...])
            return TimeModel((self,))
        return NotImplemented


@dataclass(frozen=True)
class Trend(_Term):
    """A linear trend in t, scaled to [0, 1] over the log's times. Build with :func:`trend`."""

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
class Season(_Term):
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
class Blocks(_Term):
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


@dataclass(frozen=True)
class Step(_Term):
    """1{t ≥ at}: a level shift at a stated time that persists. Build with :func:`step`."""

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
    >>> t = np.arange(0.0, 100.0)
    >>> y = np.where(t >= 60, 1.0, -1.0)
    >>> round(time_forecast(y, t, step(60.0), at=130.0, alpha=None).value, 12)
    1.0
    """
    return Step(_time_point("at", at))


def blocks(feature) -> Blocks:
    """A piecewise-constant time feature as one-hot columns (level 0 is the constant's).

    Parameters
    ----------
    feature : time feature
        ``PeriodBlocks(365.25, 8)``, ``DayOfWeek()``, ``Crossed(f, g)`` or any object with
        ``n_levels`` and ``labels(times)``.

    Examples
    --------
    >>> from pyprog.offpolicy.time_features import DayOfWeek
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
            if not isinstance(term, _Term):
                raise ValueError(
                    f"terms must be trend(), season(...), step(...) or blocks(...) terms; got "
                    f"{term!r}"
                )

    def __add__(self, other) -> TimeModel:
        if isinstance(other, TimeModel):
            return TimeModel(self.terms + other.terms)
        if isinstance(other, _Term):
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


def _as_model(terms) -> TimeModel:
    if isinstance(terms, TimeModel):
        return terms
    if isinstance(terms, _Term):
        return TimeModel((terms,))
    if terms is None:
        return TimeModel(())
    if isinstance(terms, (list, tuple)):
        return TimeModel(tuple(terms))
    raise ValueError(
        f"terms must be a term (trend(), season(...), blocks(...)), a sum of terms, or a list "
        f"of them; got {terms!r}"
    )


@dataclass(frozen=True)
class TimeForecast:
    """A forecast of the value at a time (or over a window), linear in the estimates.

    Attributes
    ----------
    value : float
        f = ζ·y.
    zeta : numpy.ndarray, shape (n,)
        The forecast weights (they sum to 1).
    se : float
        HC2 standard error, √(Σ ζ_i² ξ̂_i² / (1 − h_i)).
    low, high : float or None
        value ∓ z_{1−α/2} se (noise-only: assumes the model is right); None without ``alpha``.
    alpha : float or None
    model : str
        The model's name, e.g. ``"const+trend+season(365D,k=2)"``.
    target : tuple
        ``("at", t')`` or ``("over", t₁, t₂)`` in days.
    """

    value: float
    zeta: np.ndarray
    se: float
    low: float | None
    high: float | None
    alpha: float | None
    model: str
    target: tuple

    def as_dict(self) -> dict:
        """A JSON-ready summary (without ζ)."""
        return {
            "value": self.value,
            "se": self.se,
            "low": self.low,
            "high": self.high,
            "alpha": self.alpha,
            "model": self.model,
            "target": list(self.target),
            "n": int(self.zeta.shape[0]),
        }


def _time_point(name: str, value) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        out = float(value)
        if not math.isfinite(out):
            raise ValueError(f"{name} must be a finite time; got {value!r}")
        return out
    return float(as_days(np.asarray([value]), name=name)[0])


def time_forecast(
    y,
    times,
    terms=None,
    *,
    at=None,
    over=None,
    weights=None,
    alpha: float | None = 0.1,
    n_points: int = 10_000,
) -> TimeForecast:
    """Forecast the value at a future time by least squares on features of time.

    Parameters
    ----------
    y : array_like, shape (n,)
        Per-unit estimates, each of the value at its own time.
    times : array_like, shape (n,)
        t_i: numbers (days) or dates (days since 1970-01-01 UTC).
    terms : term, sum of terms, or list of terms, optional
        ``trend()``, ``season(period, harmonics=k)``, ``blocks(feature)``, composed by
        ``+``; the constant is always included (None: the constant alone, the mean).
    at : float or date, optional
        The target time t' > max t_i.
    over : (t₁, t₂), optional
        A window max t_i < t₁ < t₂: the forecast is the fit's average over it.
        Exactly one of ``at`` and ``over``.
    weights : array_like, shape (n,), optional
        Positive weights for weighted least squares (default: all 1).
    alpha : float or None
        The interval's level 1 − α (default 0.1); None gives no interval.
    n_points : int
        Grid size for the window average of block terms (>= 100).

    Returns
    -------
    TimeForecast

    Raises
    ------
    ValueError
        Mismatched lengths, NaN inputs, a target inside the logged span, fewer units than
        columns + 1, a block level never observed, a rank-deficient design, or a unit with
        leverage 1.

    Examples
    --------
    >>> t = np.arange(0.0, 730.0, 5.0)
    >>> y = 1.0 + 0.001 * t + 0.5 * np.sin(2 * np.pi * t / 365.25)
    >>> f = time_forecast(y, t, trend() + season(365.25), at=830.0)
    >>> truth = 1.0 + 0.001 * 830.0 + 0.5 * np.sin(2 * np.pi * 830.0 / 365.25)
    >>> bool(abs(f.value - truth) < 1e-9), bool(abs(f.zeta @ y - f.value) < 1e-12), f.model
    (True, True, 'const+trend+season(365.25D,k=1)')
    """
    model = _as_model(terms)
    yv = np.asarray(y)
    if yv.ndim != 1 or yv.dtype.kind not in "biuf":
        raise ValueError(
            f"y must be a 1-D array of numbers of shape (n,); got {yv.dtype} {yv.shape}"
        )
    yv = yv.astype(np.float64)
    bad = ~np.isfinite(yv)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y must be finite; got {yv[i]} at row {i}")
    t = as_days(times, name="times")
    n = yv.shape[0]
    if t.shape[0] != n:
        raise ValueError(f"times must have one entry per estimate in y ({n}); got {t.shape[0]}")
    if weights is None:
        w = np.ones(n)
    else:
        w = np.asarray(weights)
        if w.ndim != 1 or w.dtype.kind not in "biuf":
            raise ValueError(f"weights must be a 1-D array of numbers; got {w.dtype} {w.shape}")
        if w.shape[0] != n:
            raise ValueError(
                f"weights must have one entry per estimate in y ({n}); got {w.shape[0]}"
            )
        w = w.astype(np.float64)
        bad = ~np.isfinite(w) | (w <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"weights must be finite and > 0; got {w[i]} at row {i}")
    if alpha is not None and not (
        isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and 0 < alpha < 1
    ):
        raise ValueError(f"alpha must be in (0, 1) or None; got {alpha!r}")
    if isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral) or n_points < 100:
        raise ValueError(f"n_points must be an integer >= 100; got {n_points!r}")

    t0, t1 = float(t.min()) if n else 0.0, float(t.max()) if n else 0.0
    p = model.n_columns(t0, t1)
    if n < p + 1:
        raise ValueError(
            f"y has {n} units; the model {model.name} has {p} columns and needs at least "
            f"{p + 1} units (one more than its columns, for the residuals)"
        )

    if (at is None) == (over is None):
        raise ValueError("give exactly one of at= (a time) and over= (a window (t1, t2))")
    if at is not None:
        ta = _time_point("at", at)
        if ta <= t1:
            raise ValueError(
                f"at must be after the log (a forecast): at = {ta:g} <= the last time {t1:g}"
            )
        x_star = model.design(np.array([ta]), t0, t1)[0]
        target = ("at", ta)
    else:
        if not isinstance(over, (tuple, list)) or len(over) != 2:
            raise ValueError(f"over must be a pair (t1, t2); got {over!r}")
        a, b = _time_point("over[0]", over[0]), _time_point("over[1]", over[1])
        if not a < b:
            raise ValueError(f"over must have t1 < t2; got ({a:g}, {b:g})")
        if a <= t1:
            raise ValueError(
                f"over must start after the log (a forecast): t1 = {a:g} <= the last time {t1:g}"
            )
        x_star = model.window(a, b, t0, t1, int(n_points))
        target = ("over", a, b)

    for term in model.terms:
        if isinstance(term, Blocks):
            lab = checked_labels("feature", term.feature, t)
            missing = np.setdiff1d(np.arange(term.feature.n_levels), lab)
            if missing.size:
                raise ValueError(
                    f"the design is rank-deficient: {term.name} has level(s) "
                    f"{missing.tolist()} never observed in times; use fewer blocks or a "
                    f"longer log"
                )

    X = model.design(t, t0, t1)
    sw = np.sqrt(w)
    Xw = X * sw[:, None]
    scale = np.linalg.norm(Xw, axis=0)
    if (scale == 0).any():
        j = int(np.flatnonzero(scale == 0)[0])
        names = model.column_names(t0, t1)
        raise ValueError(f"the design is rank-deficient: column {names[j]!r} is zero on the log")
    q, r = np.linalg.qr(Xw / scale)
    diag = np.abs(np.diag(r))
    if diag.min() < 1e-10 * diag.max():
        names = model.column_names(t0, t1)
        j = int(np.argmin(diag))
        raise ValueError(
            f"the design of {model.name} is rank-deficient on these times (column "
            f"{names[j]!r} is a combination of the others); drop a term or use a longer log"
        )
    # β̂ = (XᵀWX)⁻¹XᵀWy; with Xw/scale = QR, x*ᵀβ̂ = (x*/scale)ᵀ R⁻¹ Qᵀ (√w y).
    u = np.linalg.solve(r.T, x_star / scale)  # R⁻ᵀ x*
    zeta = sw * (q @ u)
    value = float(zeta @ yv)
    coef = np.linalg.solve(r, q.T @ (sw * yv)) / scale
    resid = yv - X @ coef
    h = np.einsum("ij,ij->i", q, q)
    if (h > 1 - 1e-10).any():
        i = int(np.flatnonzero(h > 1 - 1e-10)[0])
        raise ValueError(
            f"unit {i} (time {t[i]:g}) has leverage 1 in {model.name}: the model fits it "
            f"exactly and its noise cannot be estimated (HC2); use fewer terms"
        )
    se = float(math.sqrt(np.sum(zeta**2 * resid**2 / (1.0 - h))))
    low = high = None
    if alpha is not None:
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        low, high = value - z * se, value + z * se
    return TimeForecast(
        value=value,
        zeta=zeta,
        se=se,
        low=low,
        high=high,
        alpha=None if alpha is None else float(alpha),
        model=model.name,
        target=target,
    )
