"""Intervals after ``basis="auto"`` chose the forecaster.

A fixed model's bootstrap is honest about noise, not about the model; after a selection,
three things can be wrong with the chosen forecaster's forecast, and the interval of
:func:`selected_interval` answers each with its own evidence:

* **noise and the selection's own variability**: a wild bootstrap in the chosen model's
  world that repeats the selection in every replicate;
* **the chosen model's misfit** (:mod:`pyprog.forecast.misspecification`): its backtest
  errors, net of the targets' noise (:func:`~.misspecification.backtest_mse`, with the
  model-free :func:`~.misspecification.noise_variance`), or, when it is larger, the periodic
  or slow structure its residuals still hold (:func:`~.misspecification.periodic_misfit`,
  :func:`~.misspecification.trend_misfit`); and, for a global model that extrapolates a
  drift, the bias of a bend too small for the log to reveal
  (:func:`~.misspecification.bend_allowance`);
* **which model**: the candidates the backtests cannot reject
  (:attr:`~pyprog.forecast.selection.Selection.plausible`) forecast other values; the
  interval reaches out to them, net of noise (:func:`plausible_deviations`).

Each is a widening of the same interval, centred on the estimator's own value.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.stats

from pyprog._ext.backend import kernels
from pyprog.forecast.backtests import target_sums
from pyprog.forecast.blocks import BootstrapBacktests
from pyprog.forecast.forecasters import BasisForecaster, Forecaster, solve
from pyprog.forecast.intervals import chunk_rows, power_of_two, rademacher_chunks
from pyprog.forecast.misspecification import (
    backtest_mse,
    bend_allowance,
    extrapolates_drift,
    noise_variance,
    periodic_misfit,
    trend_misfit,
)
from pyprog.forecast.selection import (
    SE_RULE,
    Selection,
    chosen_errors,
    target_rows,
    target_totals,
)
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.least_squares import hc2_residuals, leverages
from pyprog.utils.moved import renamed_arguments

__all__ = [
    "forecast_weights",
    "plausible_deviations",
    "selected_interval",
]


def plausible_deviations(ys, Z, usable, selection: Selection) -> np.ndarray:
    """How far the plausible candidates' forecasts lie from the chosen one's, net of noise.

    ``d_c = (ζ_c − ζ)·y`` for each candidate c in :attr:`Selection.plausible` (ζ: the
    chosen forecaster's weights; rows of ``Z``), shrunk towards 0 by what noise alone would
    give: ``sign(d_c)·√max(0, d_c² − s²‖ζ_c − ζ‖²)``, ``s²`` the model-free noise variance
    of y (:func:`~.misspecification.noise_variance`). Under a right model the
    candidates differ by noise and the shrunk deviations are small; under misfit they
    differ by the bias.

    Parameters
    ----------
    ys : ndarray, shape (N,)
        The series the forecasts are linear in (NIS: Ĵ; NWIS: G), possibly rescaled.
    Z : ndarray, shape (C, N)
        Forecast weights of the candidates in ``selection.eligible``, ``Z[c] @ ys`` their
        forecasts.
    usable : ndarray of bool, shape (C,)
        Rows of ``Z`` that hold weights (a candidate that failed at N episodes: False).
    selection : Selection

    Returns
    -------
    ndarray, shape (k,)
        One finite deviation per usable plausible candidate other than the chosen one.

    Examples
    --------
    >>> from pyprog.forecast.selection import select_forecaster
    >>> J = np.random.default_rng(0).normal(0.0, 1.0, 300)
    >>> sel = select_forecaster(J, 5)
    >>> Z = np.array([c.weights(300, 5) for c in sel.eligible])
    >>> dev = plausible_deviations(J, Z, np.ones(len(Z), bool), sel)
    >>> bool(np.all(np.abs(dev) < 0.5))
    True
    """
    eligible = selection.eligible
    chosen = eligible.index(selection.forecaster)
    rows = [
        i for i, c in enumerate(eligible) if usable[i] and i != chosen and c in selection.plausible
    ]
    if not rows:
        return np.zeros(0)
    diff = Z[rows] - Z[chosen]
    d = diff @ ys
    noise = noise_variance(ys) * np.einsum("ij,ij->i", diff, diff)
    return _shrunk(d, noise)


def _shrunk(d: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``sign(d)·√max(0, d² − noise)``, the finite ones."""
    shrunk = np.sign(d) * np.sqrt(np.maximum(0.0, d * d - noise))
    return shrunk[np.isfinite(shrunk)]


def _row_deviations(ys, ws, selection: Selection, usable) -> tuple[np.ndarray, np.ndarray]:
    """:func:`plausible_deviations` of a long log, one row of forecast weights at a time
    (no (candidates × n) matrix), and the chosen forecaster's row."""
    eligible, n, delta = selection.eligible, len(ys), selection.delta
    zc = forecast_weights([selection.forecaster], n, delta, ws)[0][0]
    d, noise = [], []
    s2 = noise_variance(ys)
    for i, c in enumerate(eligible):
        if not usable[i] or c == selection.forecaster or c not in selection.plausible:
            continue
        row, ok = forecast_weights([c], n, delta, ws)
        if ok[0]:
            diff = row[0] - zc
            d.append(float(diff @ ys))
            noise.append(s2 * float(diff @ diff))
    return _shrunk(np.array(d), np.array(noise)), zc


def _world_mean(fc: Forecaster, ys: np.ndarray, ws: np.ndarray, delta: int):
    """Fitted values ŷ and leverages h of the chosen forecaster (the bootstrap's world)."""
    n = len(ys)
    if isinstance(fc, BasisForecaster):
        phi, phi_star, kappa = fc.design(n, delta)
        ww = kappa * ws
        _, coef, _, _, _ = kernels.wls_forecast(phi, ww, ys, phi_star)
        fitted = np.asarray(phi) @ coef
        with np.errstate(all="ignore"):
            h = leverages(np.asarray(phi), ww)  # in chunks of rows on a long log
        if not np.isfinite(h).all():
            h = np.zeros(n)
        return fitted, np.minimum(h, 1.0), ww
    # a local forecaster: a centred (two-sided) weighted moving mean of its own width
    r = max(1, int(getattr(fc, "k", 0)) // 2 or round(float(getattr(fc, "halflife", 1.0))))
    cw = np.concatenate([[0.0], np.cumsum(ws)])
    cy = np.concatenate([[0.0], np.cumsum(ws * ys)])
    lo = np.maximum(np.arange(n) - r, 0)
    hi = np.minimum(np.arange(n) + r + 1, n)
    mass = cw[hi] - cw[lo]
    safe = np.where(mass > 0, mass, 1.0)
    fitted = np.where(mass > 0, (cy[hi] - cy[lo]) / safe, ys)
    h = np.where(mass > 0, ws / safe, 0.0)
    return fitted, np.minimum(h, 1.0), ws


def forecast_weights(candidates, n: int, delta: int, weights=None):
    """Each candidate's forecast weights ζ_c on the n estimates (``f_c = ζ_c·y``).

    NIS (``weights`` None): the cached, data-independent weights; NWIS: ``∂f/∂y`` of the fit
    weighted by ``κ ⊙ weights`` (the ratios, any positive scale). Returns ``Z``, shape
    (candidates, n), and ``usable``, shape (candidates,): False (and a zero row) where the
    candidate's fit is refused (:class:`ForecastError`).
    """
    Z = np.zeros((len(candidates), n))
    usable = np.ones(len(candidates), dtype=bool)
    for i, c in enumerate(candidates):
        try:
            if weights is None:
                Z[i] = c.weights(n, delta)
            else:
                phi, phi_star, kappa = c.design(n, delta)
                Z[i] = solve(phi, kappa * weights, np.zeros(n), phi_star, str(c))[1]
        except ForecastError:
            usable[i] = False
    return Z, usable


@renamed_arguments(seed="random_state")
def selected_interval(
    y,
    ratios,
    selection: Selection,
    *,
    value: float,
    alpha: float,
    n_boot: int = 2000,
    random_state=None,
    one_sided: bool = False,
    what: str = "basis='auto'",
) -> tuple[float, float, float]:
    """A ``1 − alpha`` interval of the forecast that repeats the selection per replicate.

    The bootstrap's world is the chosen forecaster's fit ŷ (a basis: its fitted curve; a
    window or EWMA: a centred moving mean of the same width) with HC2-adjusted residuals
    ``ξ̃_i = (y_i − ŷ_i)/√(1 − h_i)``. Each replicate ``y* = ŷ + σ*⊙ξ̃`` (Rademacher signs
    σ*, the ratios held fixed as in :mod:`pyprog.forecast.intervals`) is backtested
    again, its own best candidate ``c*`` forecasts ``f* = ζ_{c*}·y*``, and
    ``Δ* = f* − ζ_c·ŷ`` (c: the candidate chosen on the data) is the bootstrap error. The
    basic-bootstrap interval is ``[value − q_{1−α/2}(Δ*), value − q_{α/2}(Δ*)]`` (one-sided:
    ``value − q_{1−α}(Δ*)`` and ``inf``). Next, the backtests often cannot tell the chosen
    forecaster from others that forecast a different value (a straight line and a curve over
    half a period of a slow drift): the interval reaches out to ``value + d_c`` for each
    candidate c of :attr:`~pyprog.forecast.selection.Selection.plausible`, ``d_c`` its
    forecast's distance from the chosen one's net of noise (:func:`plausible_deviations`).
    Last, the bootstrap's world is the chosen model, so it cannot see that model's bias; the
    backtests can: the chosen forecaster's backtest errors ``ē_o``, at up to
    :data:`~pyprog.forecast.selection.MAX_ERROR_ORIGINS` origins
    (:func:`~pyprog.forecast.selection.chosen_errors`), have ``E ē² = E(J̄ − f)² + noise``,
    so ``mse = mean(ē²) − s²·mean_o(Σw²/(Σw)²)`` (``s²`` from
    :func:`~.misspecification.noise_variance`, model-free) estimates its mean squared
    bias; for a basis forecaster, the largest of that, of
    :func:`~.misspecification.periodic_misfit` of its residuals, which finds a periodic
    drift the backtests are too noisy to see, and of
    :func:`~.misspecification.trend_misfit`, which finds a slow one (a hump over the
    log) that falls between the periodogram's frequencies. That bias is an error apart
    from the noise, so its allowance ``z_{1−α/2}·√mse`` is added to both ends (as a floor
    under them instead, the intervals under-covered at the phase of a drift where the bias
    is largest: the guide ``auto-evidence.md``, ``tests/fixed_truth_montecarlo.py``). A
    global model whose forecast departs from the log's mean
    (:func:`~.misspecification.extrapolates_drift`) also gets the bias of the largest
    bend at the log's end that no test could see
    (:func:`~.misspecification.bend_allowance`), added the same way: near a drift's
    turning point a line passes every check and still misses by 1.3–1.5 of its standard
    errors. Every backtest and final forecast is linear in y (the ratios fixed), so a
    replicate costs a matrix product with the stacked forecast weights, not a refit.

    All of it runs on ``y`` and the ratios rescaled by powers of 2 (exact), so the result
    neither underflows nor overflows for any finite input. Above
    :data:`~pyprog.forecast.blocks.LARGE_N` episodes the replicates' backtests come from
    block moments (:mod:`pyprog.forecast.blocks`: O(N) memory, O(N) time per replicate for
    all candidates together), and the interval's ends agree with the dense path's to about
    1e-9 of its width.

    Returns
    -------
    low, high : float
        ``low <= value <= high`` (``high = inf`` when one-sided).
    se : float
        The chosen forecaster's robust standard error ``√(Σ ζ_i² ξ̃_i²)`` (noise only).

    Raises
    ------
    ForecastError
        No finite bootstrap draw, or an interval end beyond float64.
    """
    y = np.asarray(y, dtype=np.float64)
    n, delta = len(y), selection.delta
    weights = np.ones(n) if ratios is None else np.asarray(ratios, dtype=np.float64)
    scale = power_of_two(float(np.max(np.abs(y))))
    ys = y / scale
    ws = weights / power_of_two(float(np.max(weights)))
    eligible = selection.eligible
    chosen = eligible.index(selection.forecaster)
    fitted, h, ww = _world_mean(selection.forecaster, ys, ws, delta)
    resid = np.where(ww > 0, hc2_residuals(ys - fitted, h), 0.0)
    resid[~np.isfinite(resid)] = 0.0
    origins = selection.origins
    step = math.ceil(delta / max(1, int(origins[1] - origins[0]))) if len(origins) > 1 else 1
    fit_ws = None if ratios is None else ws
    if selection.fits is not None:  # a long log: from block moments (issue 35)
        usable = np.ascontiguousarray(selection.fits.ok[:, -1])
        errors = _block_bootstrap(selection, ys, ws, fitted, resid, n_boot, random_state, step)
    else:
        Z, usable = forecast_weights(eligible, n, delta, fit_ws)
        errors = _dense_bootstrap(
            selection, Z, usable, ys, ws, fitted, resid, n_boot, random_state, step
        )
    errors = errors[np.isfinite(errors)]
    if len(errors) == 0:
        raise ForecastError(f"{what}: no bootstrap draw gave a finite forecast; no interval")
    # the backtests' own evidence of the forecast error, net of the targets' noise:
    # E ē² = E(J̄ − f)² + noise, with the noise variance from the HC2 residuals
    s2 = noise_variance(ys, ws)
    # from the chosen forecaster's errors at denser origins than the selection's (issue 32)
    _, e, noise_factor = chosen_errors(selection.forecaster, ys, ws, delta, ratios is not None)
    mse = backtest_mse(e, noise_factor, s2)
    global_model = isinstance(selection.forecaster, BasisForecaster)
    if global_model:
        # a global model's residuals over the whole log: E λ(G − ŷ)/λ̄ = J − ŷ (NWIS); a
        # local forecaster's world (a centred moving mean) absorbs a drift its forecast
        # lags behind, so only its backtests see its misfit
        u = ws * (ys - fitted) / float(np.mean(ws)) if ratios is not None else ys - fitted
        mse = max(mse, periodic_misfit(u), trend_misfit(u))
    if one_sided:
        low = value - scale * float(np.quantile(errors, 1.0 - alpha))
        high = math.inf
    else:
        upper, lower = np.quantile(errors, [1.0 - alpha / 2.0, alpha / 2.0])
        low, high = value - scale * float(upper), value - scale * float(lower)
    # model uncertainty: out to the forecasts of the candidates the backtests do not reject
    if selection.fits is not None:
        dev, zc = _row_deviations(ys, fit_ws, selection, usable)
    else:
        dev, zc = plausible_deviations(ys, Z, usable, selection), Z[chosen]
    if len(dev):
        low = min(low, value + scale * float(dev.min()))
        high = max(high, value + scale * float(dev.max()))
    low, high = min(low, value), max(high, value)
    # the chosen model's own bias, from the backtests: a separate error, so its allowance
    # z·√mse is added to the noise reach, not a floor under it (issue 32: the floor left
    # the steepest phases of a drift at 62-75 % coverage)
    z = scipy.stats.norm.ppf(1.0 - (alpha if one_sided else alpha / 2.0))
    half = z * math.sqrt(mse)
    if global_model and extrapolates_drift(zc, ys, ws):
        # a drift the log shows may bend where it cannot show it (issue 32)
        half += bend_allowance(selection.forecaster, zc, u, ws, delta)
    low, high = low - scale * half, high + scale * half
    if not (math.isfinite(low) and (one_sided or math.isfinite(high))):
        raise ForecastError(f"{what}: the interval's ends are beyond float64; no interval")
    se = math.sqrt(float(zc**2 @ resid**2)) * scale
    return low, high, se if math.isfinite(se) else math.inf


def _dense_bootstrap(selection, Z, usable, ys, ws, fitted, resid, n_boot, random_state, step):
    """The bootstrap errors ``Δ* = f* − ζ_c·ŷ`` from the dense backtest weights (n at most
    :data:`~pyprog.forecast.blocks.LARGE_N`)."""
    n, delta, origins = len(ys), selection.delta, selection.origins
    truth = float(Z[selection.eligible.index(selection.forecaster)] @ fitted)
    W = target_rows(origins, delta, n, ws).sum(axis=1)
    back32 = selection.backtest.astype(np.float32)
    # y* = ŷ + σ⊙ξ̃ with σ = 2·bit − 1: element i is lo_i = ŷ_i − ξ̃_i or hi_i = ŷ_i + ξ̃_i;
    # in float32 (the selection) gathered from [lo, hi] exactly, and the forecasts (float64)
    # ζ_c·y* = ζ_c·lo + bits·(2ξ̃ ⊙ ζ_c) without forming y*
    lo, hi = fitted - resid, fitted + resid
    lo32, hi32 = lo.astype(np.float32), hi.astype(np.float32)
    base, D = Z @ lo, Z * (hi - lo)
    errors = np.empty(n_boot)
    start = 0
    for rows in rademacher_chunks(n, n_boot, random_state, chunk_rows(n, n_boot)):
        bits = np.unpackbits(rows, axis=1, count=n, bitorder="little")
        # selection in float32 (a 4-digit loss decides it), the forecasts in float64
        y32 = kernels.signed_rows(rows, lo32, hi32)
        pick = _bootstrap_choice(y32, back32, origins, delta, ws, W, usable, step)
        fstar = base[pick] + (bits.astype(np.float64) @ D.T)[np.arange(len(bits)), pick]
        errors[start : start + len(bits)] = fstar - truth
        start += len(bits)
    return errors


#: Bytes of block moments per pass of the block-moment bootstrap: 16 MiB, a few hundred
#: replicates (the kernel builds a table per byte of signs and pass: not too few).
BOOT_PASS_BYTES = 16 << 20


def _block_bootstrap(selection, ys, ws, fitted, resid, n_boot, random_state, step):
    """The bootstrap errors of a long log, from block moments: each replicate's backtest and
    final forecasts are ``ζ·ŷ`` (:meth:`~pyprog.forecast.blocks.BlockFits.forecasts`, once)
    plus their signed part (:class:`~pyprog.forecast.blocks.BootstrapBacktests`)."""
    fits, origins, delta = selection.fits, selection.origins, selection.delta
    n, m = len(ys), len(origins)
    chosen = selection.eligible.index(selection.forecaster)
    const = fits.forecasts(fitted)  # (C, m + 1): ζ·ŷ at the origins and at n
    usable = np.ascontiguousarray(fits.ok[:, -1])
    const[~fits.ok] = 0.0
    fixed, W, _ = target_totals(origins, delta, fitted, ws)
    truth = float(const[chosen, m])
    boot = BootstrapBacktests(fits, origins, resid)
    errors = np.empty(n_boot)
    start = 0
    moment_bytes = boot.V.shape[1] * len(boot.blocks.starts) * 8
    per_pass = max(64, min(512, BOOT_PASS_BYTES // moment_bytes))
    for rows in rademacher_chunks(n, n_boot, random_state, per_pass):
        F, S = boot.replicates(rows)
        F += const
        S += fixed
        F32 = np.ascontiguousarray(F[:, :, :m], dtype=np.float32)
        S32 = np.ascontiguousarray(S, dtype=np.float32)
        pick = kernels.one_se_choice(F32, S32, W, usable, step, SE_RULE)
        errors[start : start + len(rows)] = F[np.arange(len(rows)), pick, m] - truth
        start += len(rows)
    return errors


def _bootstrap_choice(y32, back32, origins, delta, ws, W, usable, step: int) -> np.ndarray:
    """The one-SE choice in each replicate y32 (B, N) from its backtests: the forecasts
    ``F = y32 @ back32ᵀ`` (one matrix product) and the targets gathered by
    :func:`target_sums`, then ``kernels.one_se_choice`` (compiled: one pass per replicate,
    no (B, C, m) arrays of losses). ``W`` the targets' weight sums."""
    n_candidates = len(usable)
    F = (y32 @ back32.T).reshape(len(y32), n_candidates, -1)
    S1 = np.ascontiguousarray(target_sums(y32, origins, delta, ws), dtype=np.float32)
    return kernels.one_se_choice(F, S1, W, usable, step, SE_RULE)
