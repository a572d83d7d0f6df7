"""Forecast uncertainty: wild-bootstrap intervals for NIS and NWIS forecasts (SPEC §2b).

A forecast of either estimator is linear in its targets, ``f = ζᵀy``, with ζ fixed by
the design Φ, the forecast features φ* and (NWIS) the weights Λ. Following Chandak et
al. (NeurIPS 2020, "SPIN"), its uncertainty comes from a heteroskedasticity-robust
standard error and a wild bootstrap of the studentised forecast:

* fit ``ŷ = Φw``, residuals ``ξ̂ = y − ŷ``, leverages ``h_i = λ_i φ_iᵀ(ΦᵀΛΦ)⁻¹φ_i``
  (the diagonal of the hat matrix ``H = Φ(ΦᵀΛΦ)⁻¹ΦᵀΛ``; λ ≡ 1 for NIS);
* adjusted residuals ``ξ̃_i = ξ̂_i / √(1 − h_i)`` (the "HC2" correction, which makes
  ``E ξ̃_i² = Var y_i`` exactly for homoskedastic OLS);
* standard error ``ŝ² = Σ_i ζ_i² ξ̃_i²``;
* wild bootstrap: ``y* = ŷ + σ* ⊙ ξ̃`` with Rademacher signs σ*; since Φ and Λ are
  fixed, ``f* − f = ζᵀ(σ*⊙ξ̃)`` and the refit's residuals are ``(I − H)(σ*⊙ξ̃)``, so
  ``ŝ*`` follows without refitting, and ``t* = (f* − f)/ŝ*``;
* two-sided ``1 − α`` interval ``[f − ŝ t*_{1−α/2}, f − ŝ t*_{α/2}]``; one-sided lower
  bound ``f − ŝ t*_{1−α}``.

NWIS (weighted fit). The forecast solves the estimating equations
``Σ_i λ_i φ_i (G_i − φ_iᵀw) = 0``; its sandwich (robust) variance is
``Σ_i (λ_i φ*ᵀA⁻¹φ_i)² ξ̂_i² = Σ_i ζ_i² ξ̂_i²`` with ``A = ΦᵀΛΦ``. That is the same
formula with ζ the WLS forecast weights, and it holds whether the ratios λ are fixed or
random, because the residual ``λ_i ξ̂_i`` of each estimating equation carries the
randomness of λ_i along with that of G_i. So the bootstrap holds Λ fixed and flips the
residuals, exactly as for NIS, with the oblique hat matrix ``H = Φ A⁻¹ ΦᵀΛ``.

The bootstrap itself is the kernel :func:`pyprog._ext.fallback.wild_bootstrap_t`
(Cython, with a NumPy twin): Φ is fixed, so it is linear algebra on residuals.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.least_squares import hc2_residuals, hc2_variances
from pyprog.utils import validation
from pyprog.utils.moved import renamed_arguments

__all__ = [
    "BOOT_CHUNK_SIGNS",
    "MAX_BOOT",
    "MIN_ALPHA",
    "MIN_BOOT",
    "MIN_RESIDUAL_DOF",
    "BootstrapInterval",
    "check_alpha",
    "check_interval_dof",
    "check_n_boot",
    "chunk_rows",
    "forecast_interval",
    "power_of_two",
    "rademacher_chunks",
    "rademacher_signs",
]

#: The smallest significance level: below it ``1 − alpha/2`` is within a few roundings of
#: 1, the normal quantiles of the widenings after ``basis="auto"`` stop being finite, and
#: no bootstrap of at most :data:`MAX_BOOT` draws resolves the tail anyway.
MIN_ALPHA = 1e-12
#: The fewest bootstrap draws accepted: the tails of t* need at least this many.
MIN_BOOT = 100
#: The most bootstrap draws accepted (10^6: quantiles far finer than any interval needs).
MAX_BOOT = 10**6
#: About the most Rademacher signs (draws × episodes) held at once: the bootstrap draws them
#: in chunks of rows (:func:`rademacher_chunks`), so its memory does not grow with ``n_boot``.
BOOT_CHUNK_SIGNS = 1 << 22
#: The fewest residual degrees of freedom (episodes of non-zero weight minus features) of
#: an interval. With one, the residuals span a single direction: the bootstrap's
#: standard errors ``ŝ*`` are rounding noise and the interval is meaningless (issue 35).
MIN_RESIDUAL_DOF = 2


class BootstrapInterval(NamedTuple):
    """A wild-bootstrap confidence interval of a linear forecast."""

    #: The forecast ``f = ζᵀy``.
    value: float
    #: Lower end: two-sided ``f − ŝ t*_{1−α/2}``, or one-sided ``f − ŝ t*_{1−α}``.
    low: float
    #: Upper end ``f − ŝ t*_{α/2}`` (``inf`` for a one-sided lower bound).
    high: float
    #: Robust standard error ``ŝ = √(Σ ζ_i² ξ̃_i²)``.
    se: float


def check_alpha(alpha: float) -> float:
    """A significance level lies strictly between 0 and 1, and is at least :data:`MIN_ALPHA`."""
    alpha = validation.check_alpha(alpha)
    if alpha < MIN_ALPHA:
        raise ValueError(
            f"alpha must be at least {MIN_ALPHA:g} (MIN_ALPHA): a smaller level is within "
            f"rounding of a 100% interval, which no bootstrap resolves; got {alpha!r}"
        )
    return alpha


def check_n_boot(n_boot: int, n: int | None = None) -> int:
    """The number of bootstrap draws: an integer in [``MIN_BOOT``, ``MAX_BOOT``].

    ``n``, the number of episodes, is accepted for compatibility: the draws' signs are
    drawn and used in chunks (:func:`rademacher_chunks`), so their memory does not depend
    on ``n_boot · n`` (issue 35; it was capped at 2^30 before).
    """
    if (
        isinstance(n_boot, bool)
        or not isinstance(n_boot, numbers.Integral)
        or not MIN_BOOT <= n_boot <= MAX_BOOT
    ):
        big = isinstance(n_boot, numbers.Integral) and abs(n_boot) > MAX_BOOT**2
        shown = f"{float(n_boot):.4g}" if big else repr(n_boot)  # not 300 digits
        raise ValueError(f"n_boot must be an integer >= {MIN_BOOT} and <= {MAX_BOOT}; got {shown}")
    return int(n_boot)


def check_interval_dof(weights, k: int, what: str = "the interval") -> int:
    """The number of episodes of non-zero weight, after checking that they exceed the
    ``k`` features by at least :data:`MIN_RESIDUAL_DOF`; else a ForecastError that says
    how many are needed.

    Examples
    --------
    >>> check_interval_dof(np.ones(4), 2)
    4
    """
    used = int(np.count_nonzero(weights))
    if used - k < MIN_RESIDUAL_DOF:
        raise ForecastError(
            f"{what}: a confidence interval needs at least {k + MIN_RESIDUAL_DOF} episodes "
            f"of non-zero weight for {k} feature(s) ({MIN_RESIDUAL_DOF} residual degrees of "
            f"freedom, to estimate the noise); got {used}; use a smaller d or more episodes"
        )
    return used


def _generator(random_state) -> np.random.Generator:
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if (
        isinstance(random_state, bool)
        or not isinstance(random_state, numbers.Integral)
        or random_state < 0
    ):
        raise ValueError(
            "random_state must be None, an integer >= 0 or a numpy.random.Generator; "
            f"got {random_state!r}"
        )
    return np.random.default_rng(int(random_state))


@renamed_arguments(seed="random_state")
def rademacher_signs(n: int, n_boot: int, random_state=None) -> np.ndarray:
    """``n_boot`` rows of ``n`` Rademacher signs, packed 8 to a byte (bit set = +1).

    Drawn in Python from one ``numpy.random.Generator``, so both kernel backends see
    the very same signs and give the same interval for the same seed.

    Returns
    -------
    signs : ndarray of uint8, shape (n_boot, ceil(n / 8))

    Examples
    --------
    >>> signs = rademacher_signs(10, 3, random_state=0)
    >>> signs.shape, signs.dtype
    ((3, 2), dtype('uint8'))
    >>> np.unpackbits(signs, axis=1, count=10, bitorder="little").shape
    (3, 10)
    """
    rng = _generator(random_state)
    return rng.integers(0, 256, size=(n_boot, (n + 7) // 8), dtype=np.uint8)


def chunk_rows(n: int, n_boot: int) -> int:
    """Rows of a chunk of signs: about :data:`BOOT_CHUNK_SIGNS` signs, a multiple of 4 (or
    all ``n_boot`` rows if they fit), as :func:`rademacher_chunks` takes them."""
    rows = max(1, min(n_boot, BOOT_CHUNK_SIGNS // max(n, 1)))
    return rows if rows == n_boot else -(-rows // 4) * 4


@renamed_arguments(seed="random_state")
def rademacher_chunks(n: int, n_boot: int, random_state=None, rows: int | None = None):
    """:func:`rademacher_signs` ``(n, n_boot, random_state)``, drawn and yielded ``rows`` rows at a
    time (default :func:`chunk_rows`): the chunks concatenate to the very same array, and
    only one is in memory at a time.

    NumPy draws uint8 from 32-bit words, 4 bytes each, and drops the rest of a word at
    the end of a call; every chunk but the last has a multiple of 4 rows, so of bytes, and
    the stream runs on exactly as in one call. ``rows`` is rounded up to a multiple of 4.

    Yields
    ------
    signs : ndarray of uint8, shape (rows, ceil(n / 8))

    Examples
    --------
    >>> whole = rademacher_signs(100, 10, random_state=3)
    >>> parts = list(rademacher_chunks(100, 10, random_state=3, rows=4))
    >>> [len(p) for p in parts], bool((np.concatenate(parts) == whole).all())
    ([4, 4, 2], True)
    """
    rng = _generator(random_state)
    rows = chunk_rows(n, n_boot) if rows is None else -(-max(1, int(rows)) // 4) * 4
    nbytes = (n + 7) // 8
    for start in range(0, n_boot, rows):
        count = min(rows, n_boot - start)
        yield rng.integers(0, 256, size=(count, nbytes), dtype=np.uint8)


def _weighted_fit(phi: np.ndarray, weights: np.ndarray, y: np.ndarray, phi_star: np.ndarray):
    """Forecast weights, fit, leverages and hat-matrix factors of a weighted fit.

    Through the thin SVD ``√Λ Φ = U S Vᵀ`` (no normal equations): with ``R = V S⁻¹``,
    ``P = Φ R``, ``K = ΛΦ R`` (``= √Λ U``), so that ``P Kᵀ = Φ A⁻¹ ΦᵀΛ`` is the hat matrix;
    ``ζ = K Rᵀφ*``, ``ŷ = P Kᵀ y`` and ``h_i = ‖U_i‖²``. The factors are in the
    orthonormal coordinates of the fit, not Φ's: an ill-conditioned basis (poly) gives
    no large entries that cancel in the bootstrap's ``Σ v r*²`` (issue 35: the backends
    then agree to 1e-9, not 1e-8).
    """
    root = np.sqrt(weights)
    U, S, Vt = np.linalg.svd(root[:, None] * phi, full_matrices=False)
    R = Vt.T / S
    P = np.ascontiguousarray(phi @ R)
    K = np.ascontiguousarray(weights[:, None] * P)
    zeta = K @ (R.T @ phi_star)
    fitted = P @ (K.T @ y)
    leverage = np.einsum("ij,ij->i", U, U)
    return zeta, fitted, leverage, P, K


@renamed_arguments(seed="random_state")
def forecast_interval(
    phi: np.ndarray,
    weights: np.ndarray,
    y: np.ndarray,
    phi_star: np.ndarray,
    *,
    alpha: float,
    n_boot: int = 2000,
    random_state=None,
    one_sided: bool = False,
    value: float | None = None,
) -> BootstrapInterval:
    """Wild-bootstrap-t interval of the (weighted) least-squares forecast ``φ*·w``.

    Parameters
    ----------
    phi : ndarray of float64, shape (N, k)
        Design (e.g. from :func:`pyprog.forecast_design`); full column rank on the
        episodes of non-zero weight (the caller checks that, see
        :func:`pyprog.nwis_forecast`), and at least ``k + 2`` such episodes
        (:data:`MIN_RESIDUAL_DOF`).
    weights : ndarray of float64, shape (N,)
        ``λ_i >= 0``; ones for NIS.
    y : ndarray of float64, shape (N,)
        Targets: PDIS estimates (NIS) or returns (NWIS).
    phi_star : ndarray of float64, shape (k,)
    alpha : float in (0, 1)
    n_boot : int >= 100
    random_state : None, int or numpy.random.Generator
    one_sided : bool
        Return the one-sided lower bound ``f − ŝ t*_{1−α}`` (and ``high = inf``).
    value : float, optional
        The forecast the interval is centred on, as the estimator computed it (through
        the kernel's conditioning checks); default ``ζᵀy`` from this function's own fit.

    Returns
    -------
    BootstrapInterval
        ``value``, ``low``, ``high``, ``se``, with ``low <= value <= high`` always (the
        interval is widened to hold ``value`` if rounding or a skewed bootstrap would leave
        it outside). A perfect fit (every residual 0) gives ``low == high == value``. ``y``
        and the weights are rescaled by powers of 2 first (exact), so ``se`` neither
        underflows nor overflows for finite inputs.

    Raises
    ------
    ForecastError
        No bootstrap draw is finite, or an end of the interval is beyond float64.

    Examples
    --------
    >>> from pyprog.forecast.bases import forecast_design
    >>> rng = np.random.default_rng(0)
    >>> phi, phi_star = forecast_design(200, delta=1, basis="linear")
    >>> y = 1.0 + 2.0 * phi[:, 0] + rng.normal(0, 0.5, 200)
    >>> ci = forecast_interval(phi, np.ones(200), y, phi_star, alpha=0.1, random_state=0)
    >>> bool(ci.low < ci.value < ci.high), round(ci.se, 2)
    (True, 0.07)
    """
    alpha = check_alpha(alpha)
    n_boot = check_n_boot(n_boot, len(y))
    check_interval_dof(weights, phi.shape[1], "d")
    yscale, wscale = power_of_two(np.max(np.abs(y))), power_of_two(np.max(weights))
    ys, ws = y / yscale, weights / wscale
    zeta, fitted, leverage, P, K = _weighted_fit(phi, ws, ys, phi_star)
    f = float(zeta @ ys) * yscale if value is None else float(value)
    resid = hc2_residuals(ys - fitted, leverage)  # ξ̃ = ξ̂ / √(1 − h)
    v = hc2_variances(zeta, leverage)
    se = math.sqrt(float(zeta**2 @ resid**2))
    if se == 0.0 or not math.isfinite(se):
        if se == 0.0:
            return BootstrapInterval(f, f, math.inf if one_sided else f, 0.0)
        raise ForecastError("the forecast's standard error is not finite; no interval")
    # the signs in chunks of rows: memory O(N), whatever n_boot (each row's t is its own)
    t = np.concatenate(
        [
            kernels.wild_bootstrap_t(signs, resid, zeta, P, K, v)
            for signs in rademacher_chunks(len(y), n_boot, random_state)
        ]
    )
    t = t[np.isfinite(t)]
    if len(t) == 0:
        raise ForecastError("no bootstrap draw gave a finite t statistic; no interval")
    if one_sided:
        low, high = f - yscale * se * float(np.quantile(t, 1.0 - alpha)), math.inf
    else:
        upper, lower = np.quantile(t, [1.0 - alpha / 2.0, alpha / 2.0])
        low, high = f - yscale * se * float(upper), f - yscale * se * float(lower)
    low, high = min(low, f), max(high, f)
    if not (math.isfinite(low) and (one_sided or math.isfinite(high))):
        raise ForecastError("the interval's ends are beyond float64; no interval")
    return BootstrapInterval(f, low, high, se * yscale)


def power_of_two(x) -> float:
    """A power of 2 near ``x`` (1 for 0 or non-finite): an exact rescaling factor.

    ``2^e`` with ``x < 2^e <= 2x``, at most ``2^1023`` (the largest float64 power of 2), so
    ``x / power_of_two(x)`` lies in [0.5, 2) for every finite ``x > 0``.

    Examples
    --------
    >>> power_of_two(3.0), power_of_two(1.7e308) == 2.0**1023
    (4.0, True)
    """
    x = float(x)
    if not (x > 0 and math.isfinite(x)):
        return 1.0
    return math.ldexp(1.0, min(math.frexp(x)[1], 1023))
