"""Weighted least squares in time: leverages and HC2 residuals, once for both paths.

A forecast linear in the estimates, f = ζ·y, from the weighted fit of y on a design X
(weights w), has the heteroskedasticity-robust variance of MacKinnon & White's HC2:

    se² = Σ_i ζ_i² ξ̂_i² / (1 − h_i),    ξ̃_i = ξ̂_i / √(1 − h_i),

with ξ̂ the residuals and h_i = w_i x_iᵀ (XᵀWX)⁻¹ x_i the leverages (the diagonal of the hat
matrix; h_i = ‖Q_i‖² for √W X = QR). The episode path's wild bootstrap flips ξ̃
(:mod:`pyprog.forecast.intervals`, :mod:`pyprog.forecast.selected_intervals`), and the rounds
path's :func:`~pyprog.timeseries.time_forecast` reports se.

Where h_i = 1 the unit is fitted exactly and ξ̂_i = 0: the divisor is floored at the
machine epsilon, so ξ̃_i is 0 there, not NaN.

References
----------
MacKinnon & White (1985), "Some heteroskedasticity-consistent covariance matrix estimators
with improved finite sample properties", J. Econometrics 29.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["hc2_residuals", "hc2_variances", "leverages"]

_EPS = np.finfo(np.float64).eps


def leverages(X: np.ndarray, w: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
    """The leverages h_i of the weighted fit, shape (n,), each in [0, 1] up to rounding.

    From the QR of √W X; above ``chunk`` rows, R comes from the QR of the chunks' stacked
    R factors (TSQR) and h_i = ‖R⁻ᵀ √w_i x_i‖², with no (n, k) temporaries. Non-finite
    where X is rank-deficient on the rows of positive weight.

    Parameters
    ----------
    X : ndarray, shape (n, k)
    w : ndarray, shape (n,)
        Non-negative weights.
    chunk : int
        Rows per chunk of a long log.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), np.arange(4.0)])
    >>> leverages(X, np.ones(4)).round(2)
    array([0.7, 0.3, 0.3, 0.7])
    >>> bool(np.allclose(leverages(X, np.ones(4), chunk=2), leverages(X, np.ones(4))))
    True
    """
    n = len(w)
    root = np.sqrt(w)
    if n <= chunk:
        q, _ = np.linalg.qr(root[:, None] * X)
        return np.einsum("ij,ij->i", q, q)
    parts = [
        np.linalg.qr(root[a : a + chunk, None] * X[a : a + chunk], mode="r")
        for a in range(0, n, chunk)
    ]
    R = np.linalg.qr(np.vstack(parts), mode="r")
    h = np.empty(n)
    for a in range(0, n, chunk):
        z = scipy.linalg.solve_triangular(
            R, (root[a : a + chunk, None] * X[a : a + chunk]).T, trans="T", check_finite=False
        )
        h[a : a + chunk] = np.einsum("ij,ij->j", z, z)
    return h


def hc2_residuals(resid: np.ndarray, h: np.ndarray) -> np.ndarray:
    """ξ̃ = ξ̂ / √(1 − h), shape (n,): the residuals a wild bootstrap flips.

    Examples
    --------
    >>> hc2_residuals(np.array([1.0, 0.0]), np.array([0.75, 1.0]))
    array([2., 0.])
    """
    return resid / np.sqrt(np.maximum(1.0 - h, _EPS))


def hc2_variances(zeta: np.ndarray, h: np.ndarray) -> np.ndarray:
    """ζ² / (1 − h), shape (n,): se² = Σ_i of these times ξ̂_i².

    Examples
    --------
    >>> zeta, h, resid = np.array([0.5, 0.5]), np.array([0.5, 0.5]), np.array([1.0, -1.0])
    >>> float(np.sqrt(hc2_variances(zeta, h) @ resid**2))
    1.0
    """
    return zeta**2 / np.maximum(1.0 - h, _EPS)
