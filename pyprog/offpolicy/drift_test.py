"""Does the value move at all? A robust Wald test of a model against the constant.

The drift gate of :mod:`.time_selection` keeps the constant unless a drifting model earns
its place. Cross-validation asks that as "does the model predict held-out bins better by
``gate`` standard errors", a question about squared errors, whose per-bin differences are
heavy-tailed and so a weak test: on 100 logs of 10,000 rounds whose value moves with the
day of the week (``tests/contextual_year.py``), cross-validation kept the constant in 4,
although in every one of the 100 the F-test of the nested pair rejected the constant at
p < 10⁻⁴ (smallest F(6, 358) = 5.0, p = 6·10⁻⁵). For nested least-squares models the
classical question is about the coefficients the bigger model adds, and this module asks
it.

For a candidate with orthonormal basis Q (m, p) of its count-weighted design √n X, let U
(m, p − 1) be an orthonormal basis of its columns net of the constant (the span of Q
projected off √n / ‖√n‖). The fitted drift is γ = Uᵀ √n ȳ, with heteroskedasticity-robust
covariance Σ = Uᵀ diag(σ²) U, where σ_j² is the variance of √n_j ȳ_j. Under no drift

    W = γᵀ Σ⁻¹ γ  ≈  χ²(p − 1),

and W / (p − 1) is compared with the F(p − 1, m − p) quantile, a little more cautious than
χ² with some 360 bins (MacKinnon & White 1985 on small-sample Wald tests).

The variances σ² come from a model's HC2 residuals on the log (in a wild-bootstrap world,
from that world's own residuals, so that the test is repeated in every draw as the choice
is), averaged over the 61 bins around each bin (:func:`smooth_variance`). One squared
residual per bin is too noisy an estimate for a test of many coefficients: with the 22 of
16 blocks of the year and the day of the week, the raw HC2 test rejected 14.6 % of 2,000
drift-free logs at the 5 % level and 5 % at the 1 % level (6.3 % and 1.1 % averaged over
61 bins; 7 % and 1.4 % over 31). Averaged, the noise may still drift slowly over the year
(a season of busier, noisier days), but not from one day to the next.

References
----------
White (1980), "A heteroskedasticity-consistent covariance matrix estimator and a direct
test for heteroskedasticity", Econometrica 48. MacKinnon & White (1985), "Some
heteroskedasticity-consistent covariance matrix estimators with improved finite sample
properties", Journal of Econometrics 29.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = [
    "drift_basis",
    "drift_rejects",
    "drift_statistic",
    "nested_basis",
    "smooth_variance",
]

#: Bins on either side averaged into each bin's noise variance.
HALF_WIDTH = 30


def drift_basis(q: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """An orthonormal basis of a model's columns net of the constant.

    Parameters
    ----------
    q : numpy.ndarray, shape (m, p)
        Orthonormal basis of the count-weighted design √n X (the constant in its span).
    sw : numpy.ndarray, shape (m,)
        √n per bin (the weighted constant column).

    Returns
    -------
    numpy.ndarray, shape (m, p − 1)
        (m, 0) for the constant model.

    Examples
    --------
    >>> sw = np.ones(4)
    >>> q = np.linalg.qr(np.column_stack([sw, [0.0, 1, 2, 3]]))[0]
    >>> u = drift_basis(q, sw)
    >>> u.shape, bool(abs(u[:, 0] @ sw) < 1e-12)
    ((4, 1), True)
    """
    return nested_basis(q, (sw / np.linalg.norm(sw))[:, None])


def nested_basis(q: np.ndarray, base: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the span of q net of the span of ``base``.

    The directions a bigger model adds to a smaller one nested in it: their robust Wald
    statistic (:func:`drift_statistic`) tests the terms the bigger model adds. Against
    the constant (base √n / ‖√n‖) it is :func:`drift_basis`.

    Parameters
    ----------
    q : numpy.ndarray, shape (m, p)
        Orthonormal basis of the bigger model's count-weighted design.
    base : numpy.ndarray, shape (m, r)
        Orthonormal basis of the smaller model's, its span inside q's.

    Returns
    -------
    numpy.ndarray, shape (m, p − r)

    Examples
    --------
    >>> q = np.eye(4)[:, :3]
    >>> nested_basis(q, np.eye(4)[:, :1]).shape
    (4, 2)
    """
    net = q - base @ (base.T @ q)
    u, s, _ = np.linalg.svd(net, full_matrices=False)
    return u[:, s > 0.5]  # singular values are 1 for the added directions, 0 for base's


def drift_statistic(u: np.ndarray, yw: np.ndarray, var: np.ndarray) -> np.ndarray:
    """The robust Wald statistic W / (p − 1) of the drift in basis u, per column of yw.

    Parameters
    ----------
    u : numpy.ndarray, shape (m, r)
        :func:`drift_basis`; r = 0 gives zeros.
    yw : numpy.ndarray, shape (m, B)
        √n ȳ, one column per data set (the log, or bootstrap draws).
    var : numpy.ndarray, shape (m,)
        Variance of each √n_j ȳ_j.

    Returns
    -------
    numpy.ndarray, shape (B,)

    Examples
    --------
    >>> u = np.eye(3)[:, :1]   # the drift is the first bin's value
    >>> drift_statistic(u, np.array([[2.0], [0.0], [0.0]]), np.full(3, 4.0))
    array([1.])
    """
    r = u.shape[1]
    if r == 0:
        return np.zeros(yw.shape[1])
    sigma = (u * var[:, None]).T @ u  # (r, r)
    lam, vec = np.linalg.eigh(sigma)
    keep = lam > 1e-12 * max(float(lam.max()), 1e-300)
    g = vec[:, keep].T @ (u.T @ yw)  # (r', B) decorrelated drift coefficients
    return (g**2 / lam[keep, None]).sum(axis=0) / r


def smooth_variance(e2: np.ndarray, half_width: int = HALF_WIDTH) -> np.ndarray:
    """Each bin's noise variance as the mean of e2 over the bins within ``half_width``.

    Parameters
    ----------
    e2 : numpy.ndarray, shape (m,)
        Per-bin squared (HC2-scaled) residuals.
    half_width : int

    Returns
    -------
    numpy.ndarray, shape (m,)

    Examples
    --------
    >>> smooth_variance(np.array([0.0, 3.0, 0.0, 0.0]), half_width=1)
    array([1.5, 1. , 1. , 0. ])
    """
    c = np.concatenate([[0.0], np.cumsum(e2)])
    j = np.arange(e2.shape[0])
    lo, hi = np.maximum(j - half_width, 0), np.minimum(j + half_width + 1, e2.shape[0])
    return (c[hi] - c[lo]) / (hi - lo)


def drift_rejects(statistic: np.ndarray, r: int, m: int, p: int, level: float) -> np.ndarray:
    """Whether W / r exceeds the F(r, m − p) quantile at ``level`` (no drift rejected).

    Examples
    --------
    >>> drift_rejects(np.array([3.0, 12.0]), 1, 365, 2, 0.001).tolist()
    [False, True]
    """
    if r == 0:
        return np.zeros(statistic.shape, dtype=bool)
    return statistic > stats.f.isf(level, r, max(m - p, 1))
