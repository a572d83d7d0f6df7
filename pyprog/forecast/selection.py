"""Choosing a forecaster from the data: rolling-origin backtests (``basis="auto"``).

Why. The forecast interval of a fixed basis is honest about noise, not about the model: a
Fourier basis with too few features for the drift gives a biased forecast and an interval
that misses. Which ``d`` (or which kind of forecaster) suits a log is an empirical
question, and a log of a few hundred episodes can answer it by forecasting its own past.

How (time-series cross-validation, Tashman 2000, *Int. J. Forecasting* 16:437–450;
Hyndman & Athanasopoulos, *Forecasting: Principles and Practice*, 3rd ed., §5.10):

* origins ``o`` spread evenly (at most :data:`MAX_ORIGINS`) over the later half of the
  series, ``n//2 <= o <= n − δ``;
* at each origin every candidate is fitted on the episodes before it (its own design for
  ``o`` episodes and horizon δ) and forecasts the next δ;
* it is scored against the per-episode estimates themselves,
  ``score = Σ_o Σ_{j=o+1..o+δ} w_j (y_j − f_o)² / Σ w_j``, with ``w ≡ 1`` for NIS (``y = Ĵ``)
  and ``w = λ`` for NWIS (``y = G``). The estimates are unbiased for the true values and
  independent of a forecast made before them, so ``E score`` is the true mean squared
  forecast error plus a noise term that is the same for every candidate: the ranking
  estimates the ranking by true error (for NWIS, ``E[λ(G − f)²] = E_π[(G − f)²]``);
* the candidates are ranked by the noise of their forecast, ``‖ζ_c‖²`` at the log's n and
  δ (the forecast's variance per unit of the estimates' noise variance, from the NIS
  weights ζ, which do not depend on the data; :func:`noise_order`): least noisy first, the
  list order breaking ties;
* the chosen candidate is the first (least noisy) whose mean backtest loss is within one
  standard error of the best one's (the one-standard-error rule of Breiman et al. 1984 and
  Hastie, Tibshirani & Friedman, *ESL* §7.10): the least flexible forecaster that the data
  do not reject, as in Lepski's method, rather than the one that happened to score best,
  which over-fits noisy backtests. Ranking by ``‖ζ‖²`` rather than by a fixed list puts the
  local forecasters and the global bases on one scale (a 50-episode window, ‖ζ‖² = 0.02,
  is as "simple" as ``fourier(d=3)`` at n = 300), and the global bases become simpler as
  the log grows (the guide ``auto-evidence.md`` has the Monte Carlo of the rules,
  ``bench/selection_rules.py``).

This is selection by estimated risk over a finite nested-plus-local list (in the spirit of
Lepski's method and of SLOPE-type model choice, where the list is ordered by complexity and
the data pick the point where extra flexibility stops paying); it is cheap because NIS
forecast weights do not depend on the data (one cached ζ per candidate and origin).

Above :data:`~pyprog.forecast.blocks.LARGE_N` episodes the same backtests are computed from
block moments (:mod:`pyprog.forecast.blocks`), in O(N) memory: the scores agree with the
dense computation's to rounding.

Intervals after the choice are :mod:`pyprog.forecast.selected_intervals`'s: a bootstrap that
repeats the selection, widened by the chosen model's backtest error and out to the forecasts
of the :attr:`Selection.plausible` candidates.

Misspecification check: a Ljung–Box test (Ljung & Box 1978) of the chosen candidate's
backtest errors ``ē_o = Σ_j w_j(y_j − f_o)/Σ_j w_j`` at origins at least δ apart (so that
their targets do not overlap), ``m`` of them, for ``h = max(1, min(5, m // 4))`` lags
(``Q = m(m+2)Σ_k r_k²/(m−k)``, χ²_h). When ``p < 0.01`` the errors still carry structure
and :attr:`Selection.warning` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.stats

from pyprog._ext.fallback_bootstrap import one_se_gaps, one_se_pick
from pyprog.forecast import blocks
from pyprog.forecast.backtests import nwis_backtest_rows
from pyprog.forecast.bases import check_delta
from pyprog.forecast.forecasters import (
    BasisForecaster,
    EWMAForecaster,
    Forecaster,
    parse_forecaster,
)
from pyprog.forecast.intervals import power_of_two
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.splits import MAX_ORIGINS, MIN_ORIGINS, RollingOrigin
from pyprog.utils.validation import check_int

__all__ = [
    "DEFAULT_CANDIDATES",
    "MAX_ERROR_ORIGINS",
    "MAX_ORIGINS",
    "MIN_ORIGINS",
    "PLAUSIBLE_SE",
    "Selection",
    "chosen_errors",
    "ljung_box",
    "loss_gaps",
    "min_episodes_auto",
    "noise_order",
    "parse_candidates",
    "select_forecaster",
    "target_totals",
]

#: The candidate set of ``basis="auto"``. The rule ranks them by forecast noise
#: (:func:`noise_order`); this order breaks ties.
DEFAULT_CANDIDATES = (
    "fourier(d=1)",
    "linear",
    "poly(d=3)",
    "fourier(d=3)",
    "fourier(d=5)",
    "fourier(d=7)",
    "fourier(d=9)",
    "fourier(d=13)",
    "window(k=50)",
    "window(k=25)",
    "window(k=10)",
    "ewma(halflife=20)",
    "ewma(halflife=5)",
)
#: The selection rule's tolerance, in standard errors of the loss difference to the best.
SE_RULE = 1.0
#: Tolerance of the plausible set (:attr:`Selection.plausible`), in standard errors: the
#: candidates whose backtest loss is within it of the best one's are not rejected by the
#: data, and the interval reaches out to their forecasts.
PLAUSIBLE_SE = 2.0
#: Most origins of the chosen forecaster's own backtest errors, from which an interval
#: estimates its misfit: one forecaster, so denser than the selection's (issue 32).
MAX_ERROR_ORIGINS = 240
#: Ljung–Box p-value below which the chosen model is reported as misspecified.
MISSPEC_P = 0.01


def _error_origins(n: int, delta: int) -> tuple[np.ndarray, np.ndarray]:
    """The chosen forecaster's dense backtest origins, then the selection's as a fallback."""
    return RollingOrigin(delta, MAX_ERROR_ORIGINS).origins(n), RollingOrigin(delta).origins(n)


def min_episodes_auto(delta: int = 1) -> int:
    """The fewest episodes ``basis="auto"`` works with: :data:`MIN_ORIGINS` origins.

    Examples
    --------
    >>> min_episodes_auto(1), min_episodes_auto(5)
    (5, 13)
    """
    delta = check_delta(delta)
    # origins run from n//2 to n − δ: MIN_ORIGINS of them once ⌈n/2⌉ >= δ + MIN_ORIGINS − 1
    # (O(1), not a search over n: issue 35, item 11)
    n = max(delta + MIN_ORIGINS, 2 * (delta + MIN_ORIGINS - 1) - 1)
    while RollingOrigin(delta).get_n_splits(n) < MIN_ORIGINS:  # never taken; kept as the definition
        n += 1
    return n


def noise_order(candidates, n: int, delta: int = 1) -> list[int]:
    """Indices of ``candidates``, least noisy forecast first: by ``‖ζ_c‖²``.

    ``ζ_c`` is candidate c's NIS forecast weights at n episodes and horizon δ, so
    ``s²‖ζ_c‖²`` is the variance of its forecast when the estimates have noise variance
    ``s²``: the one measure of flexibility that global bases and local forecasters share.
    Ties keep the given order; candidates that cannot be fitted at n come last.

    Examples
    --------
    >>> from pyprog.forecast.forecasters import parse_forecaster
    >>> cands = [parse_forecaster(c) for c in ("fourier(d=5)", "window(k=50)", "fourier(d=1)")]
    >>> noise_order(cands, 300, 5)
    [2, 1, 0]
    """
    if n > blocks.LARGE_N:
        noise = _block_noise(candidates, n, delta)
    else:
        noise = []
        for c in candidates:
            try:
                noise.append(float(np.sum(np.square(c.weights(n, delta)))))
            except ForecastError:
                noise.append(math.inf)
    return sorted(range(len(noise)), key=lambda i: (noise[i], i))


def _block_noise(candidates, n: int, delta: int) -> list[float]:
    """``‖ζ_c‖²`` of long logs without the weights: ``u·φ*`` of a basis (``ζ = Φu`` and
    ``ΦᵀΦu = φ*``), ``Σκ²/(Σκ)²`` of a window or an EWMA (:mod:`~pyprog.forecast.blocks`)."""
    fits = blocks.BlockFits(candidates, n, delta, [n], np.ones(n))
    noise = []
    for c, (fit,) in zip(candidates, fits.fits, strict=True):
        if fit is None:
            noise.append(math.inf)
        elif isinstance(c, BasisForecaster):
            noise.append(float(fit.u @ fit.phi_star))
        elif isinstance(c, EWMAForecaster):
            kappa = c.design(n, delta)[2]
            noise.append(float(kappa @ kappa) / float(kappa.sum()) ** 2)
        else:
            noise.append(1.0 / fit.total)
    return noise


def ljung_box(errors, lags: int) -> tuple[float, float]:
    """Ljung–Box statistic ``Q = m(m+2) Σ_{k≤h} r_k²/(m−k)`` and its χ²_h p-value.

    Examples
    --------
    >>> q, p = ljung_box(np.random.default_rng(0).normal(size=200), lags=5)
    >>> bool(p > 0.01)
    True
    """
    e = np.asarray(errors, dtype=np.float64)
    m = len(e)
    e = e - e.mean()
    denom = float(e @ e)
    if m <= lags or denom == 0.0 or not math.isfinite(denom):
        return 0.0, 1.0
    r = np.array([float(e[k:] @ e[:-k]) / denom for k in range(1, lags + 1)])
    q = float(m * (m + 2) * np.sum(r**2 / (m - np.arange(1, lags + 1))))
    return q, float(scipy.stats.chi2.sf(q, lags))


@dataclass(frozen=True)
class Selection:
    """The forecaster that the backtests chose, and what they found.

    ``forecaster.weights(n, delta)`` gives NIS's ζ and ``forecaster.nwis(G, lam, delta)``
    NWIS's value and ∂f/∂λ (the learners call these once per update or inner step).
    """

    #: The chosen forecaster.
    forecaster: Forecaster
    #: Backtest score of every candidate, the root mean squared backtest error
    #: ``√(Σ w_j (y_j − f_o)² / Σ w_j)`` (``inf`` where it could not be fitted).
    scores: dict[str, float]
    #: The forecast horizon δ.
    delta: int
    #: Backtest origins (number of episodes fitted), shape (m,).
    origins: np.ndarray = field(repr=False)
    #: Ljung–Box statistic and p-value of the chosen model's backtest errors, and the lags.
    ljung_box: tuple[float, float, int] = (0.0, 1.0, 1)
    #: A misspecification warning (or None).
    warning: str | None = None
    # backtest forecast weights of the eligible candidates: rows (candidate, origin); None
    # above blocks.LARGE_N episodes, where fits holds what the interval needs instead
    backtest: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore
    # the eligible candidates, in the order of backtest's row blocks
    eligible: tuple[Forecaster, ...] = field(default=(), repr=False, compare=False)
    #: The candidates the backtests do not reject: mean loss within :data:`PLAUSIBLE_SE`
    #: standard errors of the best one's (the chosen one among them).
    plausible: tuple[Forecaster, ...] = field(default=(), repr=False, compare=False)
    #: The chosen forecaster's backtest errors ``ē_o − f_o`` (target mean minus forecast), (m,).
    errors: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore
    # per origin, Σ_j w_j² / (Σ_j w_j)²: the noise variance of ē_o in units of one episode's
    noise_factor: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore
    # above blocks.LARGE_N episodes, instead of backtest: the eligible candidates' fits at
    # the origins and at n, from block moments (pyprog.forecast.blocks)
    fits: blocks.BlockFits | None = field(default=None, repr=False, compare=False)

    @property
    def model(self) -> str:
        """The chosen forecaster's name, e.g. ``"fourier(d=9)"``."""
        return str(self.forecaster)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: model, scores (None for ``inf``), Ljung–Box and warning."""
        q, p, lags = self.ljung_box
        return {
            "model": self.model,
            "scores": {k: (v if math.isfinite(v) else None) for k, v in self.scores.items()},
            "origins": [int(o) for o in self.origins],
            "ljung_box": {"statistic": q, "p_value": p, "lags": lags},
            "warning": self.warning,
        }


def _backtest_rows(c: Forecaster, origins, delta, n, ratios) -> np.ndarray:
    """Row r: candidate c's forecast weights on y at origin ``origins[r]`` (zero after it).

    NIS: the cached, data-independent ζ. NWIS: ``∂f/∂y`` of the weighted fit on the first o
    episodes (:func:`~pyprog.forecast.backtests.nwis_backtest_rows`).
    """
    if ratios is not None:
        return nwis_backtest_rows(c, origins, delta, n, ratios)
    rows = np.zeros((len(origins), n))
    for r, o in enumerate(origins):
        rows[r, : int(o)] = c.weights(int(o), delta)
    return rows


def target_rows(origins, delta: int, n: int, weights: np.ndarray) -> np.ndarray:
    """Row o: the backtest target weights ``w_j`` on episodes ``o+1..o+δ``, shape (m, n)."""
    rows = np.zeros((len(origins), n))
    for r, o in enumerate(origins):
        rows[r, o : o + delta] = weights[o : o + delta]
    return rows


def target_totals(origins, delta: int, ys, ws) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per origin o, over the targets ``j = o..o+δ−1``: ``Σ w_j y_j``, ``Σ w_j`` and
    ``Σ w_j²`` (each (m,)), without an (m × n) matrix of target weights.

    Examples
    --------
    >>> target_totals([1, 3], 2, np.arange(6.0), np.ones(6))
    (array([3., 7.]), array([2., 2.]), array([2., 2.]))
    """
    out = np.zeros((3, len(origins)))
    for r, o in enumerate(origins):
        w, y = ws[int(o) : int(o) + delta], ys[int(o) : int(o) + delta]
        out[:, r] = float(w @ y), float(w.sum()), float(w @ w)
    return out[0], out[1], out[2]


def origin_losses(y, backtest, targets, n_candidates: int) -> np.ndarray:
    """Backtest loss of each candidate at each origin, up to a per-origin constant.

    ``L[b, c, o] = Σ_j w_j (y_j − f_{c,o})² − Σ_j w_j y_j²`` for each row b of ``y``
    (shape (b, n)): shape (b, candidates, origins).
    """
    y = np.atleast_2d(y)
    F = (y @ backtest.T).reshape(len(y), n_candidates, -1)
    S1 = (y @ targets.T).astype(F.dtype)
    W = targets.sum(axis=1)
    return F * (W * F - 2.0 * S1[:, None, :])


def loss_gaps(losses: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's mean backtest loss above the best one's, and its standard error.

    ``losses`` (b, candidates, origins) → ``gap, se``, each (b, candidates): ``gap`` the
    mean loss minus the least mean loss (``inf`` where not finite), ``se`` the standard
    error of the per-origin loss difference to the best candidate, estimated from every
    ``step``-th origin (whose targets do not overlap); 0 for the best itself.
    """
    return one_se_gaps(losses, step)


def choose(losses: np.ndarray, step: int) -> np.ndarray:
    """The one-standard-error rule on losses (b, candidates, origins) → index per row b.

    The best candidate has the least mean loss; the chosen one is the first in the order of
    the candidate axis (least noisy first in :func:`select_forecaster`) whose mean loss
    exceeds the best's by at most one standard error of the difference
    (:func:`loss_gaps`). Candidates with a non-finite loss are never chosen.
    In the bootstrap, :func:`pyprog._ext.fallback_bootstrap.one_se_choice` (and its compiled twin)
    does the same from the backtests without forming the losses.
    """
    return one_se_pick(losses, step, SE_RULE)


def chosen_errors(c: Forecaster, ys, ws, delta: int, weighted: bool):
    """The chosen forecaster's backtest errors at up to :data:`MAX_ERROR_ORIGINS` origins.

    One forecaster's errors estimate its own misfit (:func:`pyprog.forecast.selected_intervals.
    backtest_mse`): denser origins than the selection's make that estimate less noisy (at
    n = 300, δ = 1: every one of the 150 origins of the later half rather than 60). Only an
    interval needs them (:func:`~pyprog.forecast.selected_intervals.selected_interval`), so the
    selection itself, which a learner repeats, does not compute them. Where the fit is
    refused at one of them (NWIS, few weights early on), the selection's own origins are used.

    Parameters
    ----------
    c : Forecaster
    ys : ndarray, shape (n,)
        The series (NIS: Ĵ; NWIS: G), as rescaled by the selection.
    ws : ndarray, shape (n,)
        The targets' weights (ones for NIS; the ratios, rescaled, for NWIS).
    delta : int
    weighted : bool
        NWIS: fit with the weights ``ws`` too.

    Returns
    -------
    origins : ndarray of int, shape (m,)
    errors : ndarray, shape (m,)
        ``ē_o − f_o``: the weighted mean of the targets ``o+1..o+δ`` minus the forecast.
    noise_factor : ndarray, shape (m,)
        ``Σ_j w_j² / (Σ_j w_j)²``: the noise variance of ``ē_o`` per unit of one target's.
    """
    n = len(ys)
    if n > blocks.LARGE_N:
        return _block_errors(c, ys, ws, delta, weighted)
    for origins in _error_origins(n, delta):
        try:
            rows = _backtest_rows(c, origins, delta, n, ws if weighted else None)
            break
        except ForecastError:
            continue
    else:  # unreachable while the selection fitted c at its own origins
        raise ForecastError(f"{c}: cannot be fitted at its backtest origins")
    targets = target_rows(origins, delta, n, ws)
    num, den = targets @ ys, targets.sum(axis=1)
    safe = np.where(den > 0, den, 1.0)
    errors = np.where(den > 0, num / safe - rows @ ys, 0.0)
    with np.errstate(all="ignore"):
        noise_factor = (targets**2).sum(axis=1) / safe**2
    noise_factor = np.where((den > 0) & np.isfinite(noise_factor), noise_factor, 0.0)
    return origins, errors, noise_factor


def _block_errors(c: Forecaster, ys, ws, delta: int, weighted: bool):
    """:func:`chosen_errors` of a long log, the forecasts from block moments."""
    n = len(ys)
    for origins in _error_origins(n, delta):
        fits = blocks.BlockFits([c], n, delta, origins, ws if weighted else np.ones(n))
        if fits.ok.all():
            break
    else:  # unreachable while the selection fitted c at its own origins
        raise ForecastError(f"{c}: cannot be fitted at its backtest origins")
    num, den, sq = target_totals(origins, delta, ys, ws)
    safe = np.where(den > 0, den, 1.0)
    errors = np.where(den > 0, num / safe - fits.forecasts(ys)[0], 0.0)
    with np.errstate(all="ignore"):
        noise_factor = sq / safe**2
    noise_factor = np.where((den > 0) & np.isfinite(noise_factor), noise_factor, 0.0)
    return origins, errors, noise_factor


def parse_candidates(candidates=None) -> tuple[Forecaster, ...]:
    """The candidate set of ``basis="auto"``: ``candidates`` (names or forecasters) parsed,
    :data:`DEFAULT_CANDIDATES` for None; a ValueError that names the argument otherwise.

    Examples
    --------
    >>> parse_candidates(["linear", "window(k=50)"])
    (BasisForecaster(basis='linear', d=2), WindowForecaster(k=50))
    """
    if candidates is None:
        candidates = DEFAULT_CANDIDATES
    elif isinstance(candidates, (str, Forecaster)) or not hasattr(candidates, "__iter__"):
        raise ValueError(f"candidates must be a sequence of forecasters; got {candidates!r}")
    try:
        parsed = tuple(parse_forecaster(c) for c in candidates)
    except ValueError as exc:
        raise ValueError(f"candidates: {exc}") from None
    if not parsed:
        raise ValueError("candidates must name at least one forecaster; got none")
    return parsed


def select_forecaster(  # noqa: PLR0915  (reviewed: docs/guides/development.md)
    y,
    delta: int = 1,
    ratios=None,
    *,
    candidates=None,
    incumbent: Forecaster | str | None = None,
    what: str = "basis='auto'",
) -> Selection:
    """Choose a forecaster by rolling-origin backtests of the data (module docstring).

    Parameters
    ----------
    y : array_like, shape (N,)
        NIS: the per-episode estimates Ĵ, oldest first; NWIS: the returns G.
    delta : int >= 1
        Forecast horizon.
    ratios : array_like, shape (N,), optional
        NWIS: the episode ratios λ (then the fits and the scores are λ-weighted).
    candidates : sequence of Forecaster or names, optional
        Default :data:`DEFAULT_CANDIDATES`.
    incumbent : Forecaster or name, optional
        The forecaster chosen before (a learner re-selecting on its buffer): ranked first,
        so it is kept while its loss stays within one standard error of the best, and
        replaced only when the backtests reject it. Ignored if it is not a candidate.

    Returns
    -------
    Selection

    Raises
    ------
    ForecastError
        Fewer than :func:`min_episodes_auto` episodes, or no candidate could be fitted.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(300)
    >>> J = np.sin(2 * np.pi * t / 150) + rng.normal(0, 0.3, 300)
    >>> sel = select_forecaster(J, delta=5)
    >>> sel.model != "fourier(d=1)", len(sel.forecaster.weights(300, 5))
    (True, 300)
    """
    y = np.asarray(y, dtype=np.float64)
    delta = check_int("delta", delta, 1)
    n = len(y)
    cands = parse_candidates(candidates)
    named: dict[str, Forecaster] = {}
    for c in cands:  # a candidate named twice is one candidate (and plausible once)
        named.setdefault(str(c), c)
    cands = tuple(named.values())
    need = min_episodes_auto(delta)
    if n < need:
        raise ForecastError(
            f"{what}: the backtests need at least {need} episodes for delta={delta} "
            f"({MIN_ORIGINS} forecast origins in the later half); got {n}"
        )
    origins = RollingOrigin(delta).origins(n)
    # ranked at the full log's n: the order is the same in every backtest and replicate
    ranked = [cands[i] for i in noise_order(cands, n, delta)]
    if incumbent is not None:  # kept unless the data reject it: no switching on noise
        try:
            name = str(parse_forecaster(incumbent))
        except ValueError as err:
            raise ValueError(f"incumbent: {err}") from None
        ranked.sort(key=lambda c: str(c) != name)
    weights = np.ones(n) if ratios is None else np.asarray(ratios, dtype=np.float64)
    scale = power_of_two(np.max(np.abs(y)))
    ys = y / scale
    wscale = power_of_two(np.max(weights))
    ws = weights / wscale
    scores: dict[str, float] = {str(c): math.inf for c in cands}  # in the given order
    ranked = [c for c in ranked if 2 * c.features <= origins[0]]
    if n > blocks.LARGE_N:  # long logs: from block moments, O(n) memory (issue 35)
        # NIS's fits are unweighted: its ws is a constant, to which they are invariant
        fits = blocks.BlockFits(ranked, n, delta, np.append(origins, n), ws)
        keep = fits.ok[:, :-1].all(axis=1)
        eligible = [c for c, k in zip(ranked, keep, strict=True) if k]
        if eligible:
            fits = fits.subset(keep)
            F = fits.forecasts(ys)[:, :-1]
        backtest = None
        num, den, sq = target_totals(origins, delta, ys, ws)
    else:
        fits = None
        targets = target_rows(origins, delta, n, ws)
        eligible, rows_of = [], []
        for c in ranked:
            try:
                rows = _backtest_rows(c, origins, delta, n, None if ratios is None else ws)
            except ForecastError:
                continue
            eligible.append(c)
            rows_of.append(rows)
    if not eligible:
        raise ForecastError(
            f"{what}: no candidate forecaster could be fitted at the backtest origins "
            f"({n} episodes, {int(np.count_nonzero(weights))} of non-zero weight); "
            "more episodes are needed"
        )
    if fits is None:
        backtest = np.concatenate(rows_of)
        total = targets.sum()
        losses = origin_losses(ys, backtest, targets, len(eligible))
        const = float(ys**2 @ targets.sum(axis=0))
        num, den = targets @ ys, targets.sum(axis=1)
        sq = (targets**2).sum(axis=1)
    else:
        total = float(den.sum())
        losses = (F * (den * F - 2.0 * num))[None]
        const = sum(float(ws[o : o + delta] @ ys[o : o + delta] ** 2) for o in origins)
    raw = losses[0].sum(axis=1)
    for c, s in zip(eligible, raw, strict=True):
        # reported as a root mean squared error, in y's units (no overflow at any scale)
        value = math.sqrt(max(0.0, (s + const) / total)) * scale if total > 0 else math.inf
        scores[str(c)] = float(value) if math.isfinite(value) else math.inf
    step = math.ceil(delta / max(1, int(origins[1] - origins[0]))) if len(origins) > 1 else 1
    best = int(choose(losses, step)[0])
    chosen = eligible[best]
    gap, se = loss_gaps(losses, step)
    plausible = tuple(
        c for i, c in enumerate(eligible) if i == best or gap[0, i] <= PLAUSIBLE_SE * se[0, i]
    )
    F_best = rows_of[best] @ ys if fits is None else F[best]
    errors = np.where(den > 0, num / np.where(den > 0, den, 1.0) - F_best, 0.0)
    # errors of origins less than δ apart share targets (MA(δ−1) by construction): test
    # every step-th error only, so that under a right model they are close to white
    tested = errors[::step]
    lags = max(1, min(5, len(tested) // 4))
    q, p = ljung_box(tested, lags)
    m = len(tested)
    warning = None
    if p < MISSPEC_P:
        warning = (
            f"the chosen forecaster {chosen} leaves structure in its backtest errors "
            f"(Ljung-Box Q={q:.3g} on {m} origins, {lags} lags, p={p:.2g}): the forecast "
            "and its interval may be biased"
        )
    with np.errstate(all="ignore"):
        noise_factor = sq / np.where(den > 0, den, 1.0) ** 2
    noise_factor = np.where((den > 0) & np.isfinite(noise_factor), noise_factor, 0.0)
    return Selection(
        forecaster=chosen,
        scores=scores,
        delta=delta,
        origins=origins,
        ljung_box=(q, p, lags),
        errors=errors * scale,
        noise_factor=noise_factor,
        warning=warning,
        backtest=backtest,
        eligible=tuple(eligible),
        plausible=plausible,
        fits=fits,
    )
