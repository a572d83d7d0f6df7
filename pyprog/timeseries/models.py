"""Forecasters in time: least squares on features of t, linear in the per-unit estimates.

From per-unit estimates y_i of the value at their own times t_i (e.g.
``round_estimates(...).values``), fit

    y_i ≈ β₀ + Σ_k β_k φ_k(t_i)

by (weighted) least squares on a sum of feature terms (:mod:`.terms`: :func:`trend`,
:func:`season`, :func:`step`, :func:`blocks`), and evaluate the fit at a target time t'
after the log, or average it over a window [t₁, t₂] (the terms' exact window averages).
The forecast is f = x*ᵀβ̂ = ζ·y with ζ = W X (XᵀWX)⁻¹ x* (W the diagonal of ``weights``),
so the forecast weights ζ are returned with it; they sum to 1 because the constant is
always in the model.

The standard error is heteroskedasticity-robust (HC2, MacKinnon & White 1985):
se² = Σ ζ_i² ξ̂_i² / (1 − h_i), ξ̂ the residuals and h_i the leverages. The interval
f ± z_{1−α/2} se is **noise-only**: it assumes the model is right (the truth is in the span
of the terms, at the target too); it does not include misspecification, extrapolation
error or model selection (:class:`pyprog.value.ModelAverage` averages the candidates, each
shrunk, with a prediction interval).

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
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.logs.times import as_days, forecast_targets, many_targets
from pyprog.timeseries.interval_results import INTERVAL_ALPHA, IntervalResult
from pyprog.timeseries.least_squares import hc2_variances, leverages
from pyprog.timeseries.terms import as_time_model
from pyprog.utils.validation import check_alpha, shorten

__all__ = ["TimeForecast", "time_forecast"]


@dataclass(frozen=True)
class TimeForecast(IntervalResult):
    """A forecast of the value at a time (or over a window), linear in the estimates.

    Its interval answers as every result's does (:class:`~pyprog.timeseries.IntervalResult`:
    ``level``, ``covers``, ``interval_text``).

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
            **self.interval_dict(),
            "se": self.se,
            "model": self.model,
            "target": list(self.target),
            "n": int(self.zeta.shape[0]),
        }


def time_forecast(
    y,
    times,
    terms=None,
    *,
    at=None,
    over=None,
    weights=None,
    alpha: float | None = INTERVAL_ALPHA,
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
    >>> from pyprog.timeseries import season, trend
    >>> t = np.arange(0.0, 730.0, 5.0)
    >>> y = 1.0 + 0.001 * t + 0.5 * np.sin(2 * np.pi * t / 365.25)
    >>> f = time_forecast(y, t, trend() + season(365.25), at=830.0)
    >>> truth = 1.0 + 0.001 * 830.0 + 0.5 * np.sin(2 * np.pi * 830.0 / 365.25)
    >>> bool(abs(f.value - truth) < 1e-9), bool(abs(f.zeta @ y - f.value) < 1e-12), f.model
    (True, True, 'const+trend+season(365.25D,k=1)')
    """
    model = as_time_model(terms)
    yv, t, w = _checked_units(y, times, weights)
    check_alpha(alpha, allow_none=True)
    if isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral) or n_points < 100:
        raise ValueError(f"n_points must be an integer >= 100; got {n_points!r}")
    n = yv.shape[0]
    t0, t1 = float(t.min()) if n else 0.0, float(t.max()) if n else 0.0
    p = model.n_columns(t0, t1)
    if n < p + 1:
        raise ValueError(
            f"y has {n} units; the model {model.name} has {p} columns and needs at least "
            f"{p + 1} units (one more than its columns, for the residuals)"
        )
    x_star, target = _target_row(model, at, over, (t0, t1), int(n_points))
    for term in model.terms:
        term.check_design(t)
    zeta, resid, h = _weighted_fit(model, t, w, yv, x_star)
    value = float(zeta @ yv)
    if (h > 1 - 1e-10).any():
        i = int(np.flatnonzero(h > 1 - 1e-10)[0])
        raise ValueError(
            f"unit {i} (time {t[i]:g}) has leverage 1 in {model.name}: the model fits it "
            f"exactly and its noise cannot be estimated (HC2); use fewer terms"
        )
    se = float(math.sqrt(hc2_variances(zeta, h) @ resid**2))  # HC2
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


def _checked_units(y, times, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y, the times as days and the weights (ones by default), each of shape (n,), checked."""
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
        return yv, t, np.ones(n)
    w = np.asarray(weights)
    if w.ndim != 1 or w.dtype.kind not in "biuf":
        raise ValueError(f"weights must be a 1-D array of numbers; got {w.dtype} {w.shape}")
    if w.shape[0] != n:
        raise ValueError(f"weights must have one entry per estimate in y ({n}); got {w.shape[0]}")
    w = w.astype(np.float64)
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"weights must be finite and > 0; got {w[i]} at row {i}")
    return yv, t, w


def _target_row(model, at, over, span: tuple[float, float], n_points: int):
    """x*, the model's row at the target (or its average over the window), and the target."""
    t0, t1 = span
    if many_targets(at, over):
        raise ValueError(f"at must be one time (a forecast per call); got {shorten(at)}")
    (goal,) = forecast_targets(at, over, t1)
    if goal[0] == "at":
        return model.design(np.array([goal[1]]), t0, t1)[0], goal
    return model.window(goal[1], goal[2], t0, t1, n_points), goal


def _weighted_fit(model, t, w, yv, x_star) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ζ, the residuals and the leverages of the weighted fit: the WLS kernel both paths use
    (:func:`pyprog._ext.fallback.wls_forecast`), and :func:`leverages`; a ValueError naming
    the column where the design is rank-deficient."""
    t0, t1 = float(t.min()), float(t.max())
    X = np.asfortranarray(model.design(t, t0, t1))
    _, coef, zeta, _, status = kernels.wls_forecast(X, w, yv, np.ascontiguousarray(x_star))
    if status == kernels.WLS_RANK_DEFICIENT:
        raise _rank_deficiency(model, X * np.sqrt(w)[:, None], t0, t1)
    return zeta, yv - X @ coef, leverages(X, w)


def _rank_deficiency(model, Xw: np.ndarray, t0: float, t1: float) -> ValueError:
    """Which column of √W X makes it rank-deficient (or too ill-conditioned), as an error."""
    names = model.column_names(t0, t1)
    scale = np.linalg.norm(Xw, axis=0)
    if (scale == 0).any():
        j = int(np.flatnonzero(scale == 0)[0])
        return ValueError(f"the design is rank-deficient: column {names[j]!r} is zero on the log")
    diag = np.abs(np.diag(np.linalg.qr(Xw / scale, mode="r")))
    j = int(np.argmin(diag))
    return ValueError(
        f"the design of {model.name} is rank-deficient on these times (column "
        f"{names[j]!r} is a combination of the others, or too nearly one for a forecast of "
        f"4 digits); drop a term or use a longer log"
    )
