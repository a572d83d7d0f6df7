"""Time bases for forecasting a policy's performance over episodes (paper §4, appendix D.2).

Episode ``i = 1..N`` of the buffer sits at the normalised time
``x_i = i / (N + δ + ⌊0.05 N⌋)``, and the forecast target is the mean over the next
δ episodes, ``φ* = mean_{Δ=1..δ} φ(x_{N+Δ})``. The extra ``⌊0.05 N⌋`` keeps the
forecast times away from x = 1, where a Fourier basis turns sharply.

Bases (every one contains the constant, which NIS needs to be unbiased, appendix A):

* ``"fourier"``: ``φ_n(x) = cos(π n x)``, n = 0..d−1 (sines dropped, appendix D.2);
* ``"poly"``: ``φ_n(x) = x**n``, n = 0..d−1;
* ``"linear"`` (the paper's identity basis): ``[x, 1]``, always 2 features.
"""

from __future__ import annotations

import numpy as np

from pyprog.utils.bounded_cache import array_cache
from pyprog.utils.validation import as_float_array, check_finite, check_int

__all__ = [
    "BASES",
    "DEFAULT_D",
    "MAX_DELTA",
    "MAX_DESIGN_CELLS",
    "MAX_FEATURES",
    "check_delta",
    "forecast_design",
    "n_features",
    "resolve_d",
    "time_basis",
    "time_index",
]

#: The available time bases.
BASES = ("fourier", "poly", "linear")
#: Features of a fixed basis when the caller names none (the paper's most common d).
DEFAULT_D = 5
#: Largest forecast horizon δ (episodes): φ* is a mean over δ future times, computed in
#: chunks (constant memory, ~0.1 s per million times and feature).
MAX_DELTA = 10**7
#: Most features of a basis: beyond it no fit is conditioned well enough for a forecast
#: (the WLS kernel refuses it), and the design alone would cost memory before that.
MAX_FEATURES = 1000
#: Largest design ``n × k`` (cells; 2^26, 512 MiB) built for one forecast.
MAX_DESIGN_CELLS = 1 << 26
_CHUNK = 1 << 16


def _check_basis(basis: str, d: int) -> int:
    if basis not in BASES:
        raise ValueError(f"basis must be one of {', '.join(map(repr, BASES))}; got {basis!r}")
    d = check_int("d", d, 1)
    if d > MAX_FEATURES:
        raise ValueError(
            f"d must be at most {MAX_FEATURES} (MAX_FEATURES): no fit with more features is "
            f"conditioned well enough for a forecast; got {d}"
        )
    return d


def resolve_d(basis: str, d: int | None, what: str) -> int | None:
    """``d`` of a fixed basis (:data:`DEFAULT_D` when None), or None for ``basis="auto"``,
    where a given ``d`` is a ValueError (naming ``what``) rather than silently unused.

    Examples
    --------
    >>> resolve_d("fourier", None, "nis_forecast"), resolve_d("auto", None, "nis_forecast")
    (5, None)
    """
    if basis != "auto":
        return DEFAULT_D if d is None else d
    if d is not None:
        raise ValueError(
            f"{what}: d sets the features of a fixed basis; with basis='auto' the "
            f"candidates carry their own (got d={d}; for a fixed basis name it, e.g. "
            f"basis='fourier', d={d}; or name the candidates with candidates=[...])"
        )
    return None


def n_features(basis: str = "fourier", d: int = 5) -> int:
    """Number of features of a basis: ``d``, or 2 for ``"linear"`` (which ignores ``d``).

    Examples
    --------
    >>> n_features("fourier", 5), n_features("linear", 5)
    (5, 2)
    """
    _check_basis(basis, d)
    return 2 if basis == "linear" else int(d)


def time_basis(x, basis: str = "fourier", d: int = 5) -> np.ndarray:
    """Basis features of normalised times.

    Parameters
    ----------
    x : array_like of float, shape (n,)
        Normalised times, normally in (0, 1) (see :func:`time_index`).
    basis : {"fourier", "poly", "linear"}
    d : int
        Number of features (ignored by ``"linear"``, which has 2).

    Returns
    -------
    phi : ndarray of float64, shape (n, n_features(basis, d))

    Examples
    --------
    >>> time_basis([0.0, 0.5], "fourier", 3).round(12)
    array([[ 1.,  1.,  1.],
           [ 1.,  0., -1.]])
    >>> time_basis([0.25], "linear")
    array([[0.25, 1.  ]])
    """
    _check_basis(basis, d)
    x = as_float_array("x", x, 1, "(n,)")
    check_finite("x", x)
    if basis == "fourier":
        return np.cos(np.pi * np.outer(x, np.arange(d)))
    if basis == "poly":
        return np.power.outer(x, np.arange(d, dtype=np.float64))
    return np.stack([x, np.ones_like(x)], axis=1)


def time_index(n: int, delta: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Normalised times of the ``n`` past episodes and of the next ``delta`` ones.

    ``x_i = i / (n + δ + ⌊0.05 n⌋)`` for i = 1..n, and the same for i = n+1..n+δ.

    Returns
    -------
    x_past : ndarray of float64, shape (n,)
    x_future : ndarray of float64, shape (delta,)

    Examples
    --------
    >>> x_past, x_future = time_index(4, delta=1)
    >>> x_past, x_future
    (array([0.2, 0.4, 0.6, 0.8]), array([1.]))
    """
    n = check_int("n", n, 1)
    delta = check_delta(delta)
    scale = float(n + delta + int(0.05 * n))
    return np.arange(1, n + 1) / scale, np.arange(n + 1, n + delta + 1) / scale


def check_delta(delta: int) -> int:
    """A forecast horizon: an integer in [1, :data:`MAX_DELTA`] (ValueError otherwise)."""
    delta = check_int("delta", delta, 1)
    if delta > MAX_DELTA:
        raise ValueError(f"delta must be at most {MAX_DELTA} (MAX_DELTA) episodes; got {delta}")
    return delta


# large enough for basis="auto"'s backtests: 8 bases × up to 60 origins, and the chosen
# forecaster's errors at up to 240 more (selection.MAX_ERROR_ORIGINS), so that a repeated
# forecast (a learner's, a bootstrap study's) does not rebuild them; at most 64 MiB, so
# that a long log's designs are rebuilt rather than kept (issue 35)
@array_cache(maxsize=1024, max_bytes=64 << 20)
def _design(n: int, delta: int, basis: str, d: int) -> tuple[np.ndarray, np.ndarray]:
    scale = float(n + delta + int(0.05 * n))
    # column-major: the WLS kernel runs down contiguous feature columns; filled in chunks of
    # rows by time_basis (the same values), without (n, k) temporaries
    x = np.arange(1, n + 1) / scale
    phi = np.empty((n, n_features(basis, d)), order="F")
    for start in range(0, n, _CHUNK):
        phi[start : start + _CHUNK] = time_basis(x[start : start + _CHUNK], basis, d)
    # φ* = mean_{Δ=1..δ} φ(x_{n+Δ}), in chunks: the δ future times are never all in memory
    total = np.zeros(phi.shape[1])
    for start in range(n + 1, n + delta + 1, _CHUNK):
        stop = min(start + _CHUNK, n + delta + 1)
        total += time_basis(np.arange(start, stop) / scale, basis, d).sum(axis=0)
    phi_star = total / delta
    phi.flags.writeable = False
    phi_star.flags.writeable = False
    return phi, phi_star


def forecast_design(
    n: int, delta: int = 1, basis: str = "fourier", d: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """Regression design of a forecast from ``n`` past episodes, ``delta`` episodes ahead.

    ``d`` is at most :data:`MAX_FEATURES` and ``n·k`` at most :data:`MAX_DESIGN_CELLS`.
    ``delta`` is at most :data:`MAX_DELTA`; ``φ*`` is summed in chunks, so a long horizon
    costs time (about 0.1 s per million episodes and feature) but no memory.

    Returns
    -------
    phi : ndarray of float64, shape (n, k), read-only, Fortran-ordered
        ``φ(x_i)`` for the past episodes, ``k = n_features(basis, d)``.
    phi_star : ndarray of float64, shape (k,), read-only
        ``mean_{Δ=1..δ} φ(x_{n+Δ})``, the features of the forecast target.

    Examples
    --------
    >>> phi, phi_star = forecast_design(10, delta=2, basis="poly", d=3)
    >>> phi.shape, phi_star.shape
    ((10, 3), (3,))
    """
    n = check_int("n", n, 1)
    delta = check_delta(delta)
    d = _check_basis(basis, d)
    k = n_features(basis, d)
    if n * k > MAX_DESIGN_CELLS:
        raise ValueError(
            f"basis {basis!r} with {k} features on {n} episodes needs a design of {n * k:.3g} "
            f"cells, more than the {MAX_DESIGN_CELLS} allowed (MAX_DESIGN_CELLS); use a smaller d"
        )
    return _design(n, delta, basis, d)
