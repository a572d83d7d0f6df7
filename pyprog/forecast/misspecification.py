"""Evidence of a chosen forecaster's misfit, from the log alone.

A bootstrap in the chosen model's world is honest about noise, not about the model. The
functions here measure, each from its own evidence, how wrong the chosen forecast may be:

* :func:`noise_variance`: the per-episode noise, model-free (the yardstick of the others);
* :func:`backtest_mse`: the misfit the backtests saw, net of their targets' noise;
* :func:`periodic_misfit`: periodic structure left in the residuals (the periodogram);
* :func:`trend_misfit`: slow structure left in them (low-order Legendre polynomials), a
  drift over a fraction of one period that falls between the periodogram's frequencies;
* :func:`extrapolates_drift` and :func:`bend_allowance`: the bias of a bend too small
  for the log to reveal, for a model that extrapolates a drift.

:func:`~pyprog.forecast.selected_intervals.selected_interval` adds them to its interval.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.linalg
import scipy.stats

from pyprog.forecast.forecasters import BasisForecaster

__all__ = [
    "BEND_NONCENTRALITY",
    "DRIFT_P",
    "MISFIT_P",
    "TREND_DEGREE",
    "backtest_mse",
    "bend_allowance",
    "extrapolates_drift",
    "noise_variance",
    "periodic_misfit",
    "trend_misfit",
]


def noise_variance(y, weights=None) -> float:
    """Model-free noise variance: ``(2/3)·mean ẽ²``, ``ẽ_i = y_i − (y_{i−1} + y_{i+1})/2``.

    Gasser, Sroka & Jennen-Steinmetz (1986, *Biometrika* 73:625–633; cf. Rice 1984): the
    pseudo-residuals drop a smooth drift whatever model is fitted (the chosen fit's residuals
    also hold its misfit). With weights w (NWIS's λ), the target ``Σw²σ²/Σw²`` is estimated by
    ``Σ w_i² ẽ_i² / Σ w_i² − σ̄²/2``, the neighbours' share removed with the unweighted σ̄².
    Returns a float ``>= 0`` (0 for fewer than three episodes or no weight).

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0.0, 2.0, 5000) + np.linspace(0, 5, 5000)
    >>> round(noise_variance(y), 1)
    4.0
    """
    y = np.asarray(y, dtype=np.float64)
    if len(y) < 3:
        return 0.0
    e2 = (y[1:-1] - 0.5 * (y[:-2] + y[2:])) ** 2
    plain = 2.0 / 3.0 * float(np.mean(e2))
    if weights is None:
        return plain if math.isfinite(plain) else 0.0
    w2 = np.asarray(weights, dtype=np.float64)[1:-1] ** 2
    total = float(w2.sum())
    if not (total > 0 and math.isfinite(total)):
        return 0.0
    value = float(w2 @ e2) / total - 0.5 * plain
    return max(0.0, value) if math.isfinite(value) else 0.0


def backtest_mse(errors, noise_factor, s2: float) -> float:
    """Forecast MSE net of the targets' noise: ``max(0, mean ē² − s²·mean(Σw²/(Σw)²))``.

    Examples
    --------
    >>> backtest_mse(np.array([1.0, -1.0]), np.array([0.2, 0.2]), 2.0)
    0.6
    """
    e = np.asarray(errors, dtype=np.float64)
    if len(e) == 0:
        return 0.0
    value = float(np.mean(e**2)) - s2 * float(np.mean(noise_factor))
    return max(0.0, value) if math.isfinite(value) else 0.0


#: Level of :func:`periodic_misfit`'s detection: under a right model (white residuals) it
#: adds to the interval in about this share of logs.
MISFIT_P = 0.01


def periodic_misfit(u, p: float = MISFIT_P) -> float:
    """Mean square of the periodic structure left in residuals ``u``, net of noise; 0 if none.

    The backtests estimate a model's misfit from its errors at some 60-240 origins, each
    carrying a whole target's noise: a sinusoid of a few periods over the log that a smooth
    model misses can be within one standard error of that estimate (the guide
    ``auto-evidence.md`` has the cell). The periodogram of the residuals sees it at once,
    since a sinusoid puts all its power in one or two ordinates: with
    ``I_k = |Σ_t u_t e^{−2πikt/n}|²/n`` at the Fourier frequencies ``k = 1..⌊(n−1)/2⌋``
    (K of them), white noise of variance σ² gives ``I_k/σ² ≈ Exp(1)``, so the largest one
    exceeds ``c = log(K/p)`` with probability about ``p`` (a Bonferroni form of Fisher's
    1929 g-test). The ordinates above ``c·σ̂²`` are taken as structure, and by Parseval
    their mean square is ``(2/n)·Σ (I_k − σ̂²)``; σ̂² is the model-free
    :func:`noise_variance`, which a smooth or slow periodic drift does not inflate.

    Parameters
    ----------
    u : array_like, shape (n,)
        Residuals whose mean is the model's misfit (NIS: ``Ĵ − ŷ``; NWIS: ``λ(G − ŷ)/λ̄``).
    p : float
        The detection's level under white residuals.

    Returns
    -------
    float
        ``>= 0``; 0 when no ordinate passes, for n < 8, or for a constant series.

    Raises
    ------
    ValueError
        ``p`` not in (0, 1).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(300)
    >>> round(periodic_misfit(np.sin(2 * np.pi * t / 60) + rng.normal(0, 1.2, 300)), 2)
    0.51
    >>> periodic_misfit(rng.normal(0, 1.2, 300))
    0.0
    """
    _check_level(p)
    u, s2 = _with_noise(u)
    if s2 == 0.0:
        return 0.0
    n = len(u)
    # the periodogram I_k at k = 1..⌊(n−1)/2⌋
    power = np.abs(np.fft.rfft(u - u.mean())[1 : (n - 1) // 2 + 1]) ** 2 / n
    value = 2.0 / n * _excess(power, math.log(len(power) / p), s2)
    return value if math.isfinite(value) else 0.0


def _with_noise(u) -> tuple[np.ndarray, float]:
    """``u`` as float64 and its model-free noise variance, 0.0 for n < 8 or none."""
    u = np.asarray(u, dtype=np.float64)
    s2 = noise_variance(u) if len(u) >= 8 else 0.0
    return u, (s2 if s2 > 0 and math.isfinite(s2) else 0.0)


def _excess(power: np.ndarray, c: float, s2: float) -> float:
    """``Σ (P_k − s²)`` over the components whose power P_k exceeds ``c·s²`` (under white
    noise each is about s² in mean): the structure's power net of noise."""
    above = power > c * s2
    return float(np.sum(power[above] - s2))


def _check_level(p) -> None:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 < p < 1.0:
        raise ValueError(f"p must be a level in (0, 1); got {p!r}")


#: Highest degree of the polynomials :func:`trend_misfit` looks for: a line and a bend,
#: the shapes of a drift over less than one period (with degree 3 too, a hump over the log
#: was found less often and more white logs fired: the guide ``auto-evidence.md``).
TREND_DEGREE = 2


def trend_misfit(u, p: float = MISFIT_P, degree: int = TREND_DEGREE) -> float:
    """Mean square of the slow (polynomial) structure left in residuals ``u``, net of noise.

    A drift over a fraction of one period falls between the periodogram's frequencies 0
    and 1/n, where :func:`periodic_misfit` has no ordinate: half a sinusoid of period 2n
    (a hump over the log) left in the overall mean's residuals mostly passes its test. Its
    power lies in the low-order polynomials instead, where this test finds it (the guide
    ``auto-evidence.md`` has the rates). With ``q_1..q_D`` the
    discrete Legendre polynomials of degrees 1..D, orthonormal over the n episodes and to
    the constant, white noise of variance σ² gives ``(q_j·u)²/σ² ~ χ²₁``, so the largest
    exceeds ``c = χ²₁`` 's upper ``p/D`` quantile with probability about ``p``
    (Bonferroni, as :func:`periodic_misfit`). The components above ``c·σ̂²`` are taken as
    structure, with mean square ``(1/n)·Σ ((q_j·u)² − σ̂²)``; σ̂² is the model-free
    :func:`noise_variance`.

    Parameters
    ----------
    u : array_like, shape (n,)
        Residuals whose mean is the model's misfit (NIS: ``Ĵ − ŷ``; NWIS: ``λ(G − ŷ)/λ̄``).
    p : float
        The detection's level under white residuals.
    degree : int
        The highest degree D looked at.

    Returns
    -------
    float
        ``>= 0``; 0 when no component passes, for n < 8, or for a constant series.

    Raises
    ------
    ValueError
        ``p`` not in (0, 1) or ``degree`` not an integer >= 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> hump = np.sin(np.pi * np.arange(300) / 300)
    >>> round(trend_misfit(hump - hump.mean() + rng.normal(0, 0.5, 300)), 3)  # truth 0.095
    0.105
    >>> trend_misfit(rng.normal(0, 0.5, 300))
    0.0
    """
    _check_level(p)
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 1:
        raise ValueError(f"degree must be an integer >= 1; got {degree!r}")
    u, s2 = _with_noise(u)
    if s2 == 0.0:
        return 0.0
    c2 = _legendre_components(u, degree)[1:] ** 2
    value = _excess(c2, float(scipy.stats.chi2.isf(p / degree, 1)), s2) / len(u)
    return value if math.isfinite(value) else 0.0


def _legendre_components(u: np.ndarray, degree: int, chunk: int = 1 << 16) -> np.ndarray:
    """``Qᵀu`` for Q the orthonormal discrete Legendre polynomials of degrees 0..D over the
    n episodes: ``V = Q R`` (V the Legendre Vandermonde matrix on [−1, 1]) gives
    ``Qᵀu = R⁻ᵀ Vᵀu`` with ``RᵀR = VᵀV``, summed over chunks of rows (no (n, D+1) array;
    the Legendre columns are nearly orthogonal, so the Cholesky factor is well conditioned)."""
    n = len(u)
    gram, proj = np.zeros((degree + 1, degree + 1)), np.zeros(degree + 1)
    for a in range(0, n, chunk):
        x = np.arange(a, min(a + chunk, n), dtype=np.float64) * (2.0 / max(n - 1, 1)) - 1.0
        v = np.polynomial.legendre.legvander(x, degree)
        gram += v.T @ v
        proj += v.T @ u[a : a + chunk]
    lower = np.linalg.cholesky(gram)
    return scipy.linalg.solve_triangular(lower, proj, lower=True)


#: Noncentrality of a bend too small to detect: a one-sided 5 % test that knew the bend's
#: shape would find it half of the time (``z_{0.95}²``; Baarda's minimal detectable bias).
BEND_NONCENTRALITY = float(scipy.stats.norm.ppf(0.95) ** 2)


#: Level of :func:`extrapolates_drift`'s two-sided test (as :data:`MISFIT_P`'s).
DRIFT_P = 0.01


def extrapolates_drift(zc, ys, ws, p: float = DRIFT_P) -> bool:
    """Whether the forecast ``ζ·y`` departs from the log's mean at two-sided level ``p``.

    ``d = (ζ − m)·y`` with ``m = w/Σw`` (the weighted mean's weights; NIS: ``w ≡ 1``) has
    noise variance ``s²‖ζ − m‖²`` (``s²`` the model-free :func:`noise_variance` of y); the
    test is ``|d| > z_{1−p/2}·s‖ζ − m‖``. A forecast that is the log's mean
    (``fourier(d=1)``) never extrapolates a drift.

    Examples
    --------
    >>> from pyprog.forecast.forecasters import parse_forecaster
    >>> y = np.linspace(-1.0, 1.0, 300) + np.random.default_rng(0).normal(0, 0.5, 300)
    >>> w = np.ones(300)
    >>> extrapolates_drift(parse_forecaster("linear").weights(300, 1), y, w)
    True
    >>> extrapolates_drift(parse_forecaster("fourier(d=1)").weights(300, 1), y, w)
    False
    """
    m = ws / float(np.sum(ws))
    d = np.asarray(zc, dtype=np.float64) - m
    dd = float(d @ d)
    if not dd > 1e-12 * float(m @ m):  # the mean itself, to rounding
        return False
    z = float(scipy.stats.norm.ppf(1.0 - p / 2.0))
    return abs(float(d @ ys)) > z * math.sqrt(noise_variance(ys) * dd)


def bend_allowance(fc: BasisForecaster, zc, u, ws, delta: int) -> float:
    """The forecast bias of the largest bend at the log's end that the log cannot reveal.

    Why. A straight line through half a period of a slow drift fits the log as well as the
    curve does, yet near a turning point its forecast is off by more than one of its own
    standard errors, and no test tells the two apart: even one that knew the truth's shape
    would reject the line in a minority of logs (the guide ``auto-evidence.md``). The
    backtests cannot see this bias either, so it is bounded instead, as geodesy bounds an
    undetected model error by its *minimal detectable bias* (Baarda 1968, *A testing
    procedure for use in geodetic networks*): the bend
    ``g(t) = ((t − n)/n)²``, ``t = 1..n+δ``, biases the forecast by
    ``b = ζ·g_{1..n} − mean(g_{n+1..n+δ})`` per unit; the part of it the model cannot fit,
    ``r = g − Φ(ΦᵀWΦ)⁻¹ΦᵀW g`` (W: the fit's weights), is what any test could detect, with
    noncentrality ``κ²‖r‖²/σ²`` at size κ (σ² the residuals' noise variance,
    :func:`noise_variance`). The largest size no test detects at
    :data:`BEND_NONCENTRALITY` ``c₀`` biases the forecast by ``|b|·σ·√c₀/‖r‖``.

    Parameters
    ----------
    fc : BasisForecaster
        The chosen forecaster (its design at n episodes and horizon δ).
    zc : ndarray, shape (n,)
        Its forecast weights on the series.
    u : ndarray, shape (n,)
        Its residuals whose mean is its misfit (as for :func:`periodic_misfit`).
    ws : ndarray, shape (n,)
        The fit's weights on the episodes (ones for NIS; the ratios for NWIS).
    delta : int

    Returns
    -------
    float
        ``>= 0`` in the series' units; 0 where the model fits the bend exactly (a cubic) or
        the residuals have no noise.

    Examples
    --------
    >>> from pyprog.forecast.forecasters import parse_forecaster
    >>> line = parse_forecaster("linear")
    >>> u = np.random.default_rng(0).normal(0.0, 1.0, 300)
    >>> round(bend_allowance(line, line.weights(300, 1), u, np.ones(300), 1), 2)
    0.21
    >>> cubic = parse_forecaster("poly(d=3)")
    >>> bend_allowance(cubic, cubic.weights(300, 1), u, np.ones(300), 1)
    0.0
    """
    n = len(u)
    t = np.arange(1, n + delta + 1, dtype=np.float64)
    g = ((t - n) / n) ** 2
    b = float(np.asarray(zc) @ g[:n]) - float(g[n:].mean())
    phi, _, kappa = fc.design(n, delta)
    w = kappa * ws
    # the normal equations (a few columns; a long log's design is not copied)
    gram, rhs = phi.T @ (w[:, None] * phi), phi.T @ (w * g[:n])
    try:
        coef = scipy.linalg.solve(gram, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, ValueError):
        root = np.sqrt(w)
        coef = np.linalg.lstsq(root[:, None] * phi, root * g[:n], rcond=None)[0]
    r = g[:n] - phi @ coef
    rr = float(r @ r)
    if not rr > 1e-12 * float(g[:n] @ g[:n]) or abs(b) < 1e-9:  # the model fits it
        return 0.0
    value = abs(b) * math.sqrt(BEND_NONCENTRALITY * noise_variance(u) / rr)
    return value if math.isfinite(value) else 0.0
