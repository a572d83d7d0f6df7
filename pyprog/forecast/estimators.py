"""Forecasting estimators of a policy's future performance (paper §4–6, appendix A–B).

Pure functions on arrays, validated here once and computed by the kernels
(:mod:`pyprog._ext`, Cython or the NumPy fallback), from the per-episode estimates of
:mod:`pyprog.offpolicy.episodes` (:func:`~pyprog.pdis`, :func:`~pyprog.episode_ratios`,
:func:`~pyprog.discounted_returns`):

* :func:`ols_weights` — the ζ of paper Fig. 4, ``∂Ĵ_{N+δ}/∂Ĵ_i``;
* :func:`nis_forecast` — NIS: OLS forecast of the PDIS estimates (Pro-OLS);
* :func:`nwis_forecast` — NWIS: WLS forecast of the returns weighted by the ratios
  (Pro-WLS).

Example: forecast a policy's performance from logged data in five lines::

    J = pdis(log_pi, log_beta, rewards, mask, gamma=0.99, clip=10).J
    nis = nis_forecast(J, delta=1, basis="fourier", d=5)
    lam, _ = episode_ratios(log_pi, log_beta, mask, clip=10)
    G = discounted_returns(rewards, mask, gamma=0.99)
    nwis = nwis_forecast(G, lam, delta=1, basis="fourier", d=5)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pyprog.forecast.bases import forecast_design, n_features, resolve_d
from pyprog.forecast.forecasters import BasisForecaster, Forecaster, solve
from pyprog.forecast.intervals import (
    check_alpha,
    check_interval_dof,
    check_n_boot,
    forecast_interval,
)
from pyprog.forecast.selected_intervals import selected_interval
from pyprog.forecast.selection import Selection, select_forecaster
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.interval_results import IntervalResult
from pyprog.utils.moved import moved, renamed_arguments
from pyprog.utils.validation import (
    as_float_array,
    check_finite,
    check_int,
    check_nonnegative,
    check_representable,
    check_same_shape,
)

__all__ = [
    "Forecast",
    "nis_forecast",
    "nwis_forecast",
    "ols_weights",
]


class _ForecastFields(NamedTuple):
    """The fields of a :class:`Forecast`, a named tuple (``value, grad, *_ = f`` works)."""

    #: The forecast Ĵ_{N+δ}: mean performance over the next δ episodes.
    value: float
    #: ∂value/∂input, shape (N,): w.r.t. the PDIS estimates (NIS) or the ratios (NWIS).
    grad: np.ndarray
    #: Lower end of the two-sided 1 − alpha bootstrap interval; None without alpha.
    low: float | None = None
    #: Upper end of that interval; None without alpha.
    high: float | None = None
    #: The forecaster used, e.g. ``"fourier(d=9)"`` or ``"window(k=25)"``.
    model: str = ""
    #: With ``basis="auto"``: every candidate's backtest score (``inf``: not fitted).
    scores: dict | None = None
    #: A misspecification warning (Ljung–Box test of the backtest errors), or None.
    warning: str | None = None
    #: With ``basis="auto"``: the candidates the backtests do not reject, the chosen one
    #: among them; the interval reaches their forecasts (net of noise).
    plausible: tuple[str, ...] | None = None
    #: The interval's ``alpha`` (level 1 − alpha); None without an interval.
    alpha: float | None = None


class Forecast(_ForecastFields, IntervalResult):
    """A forecast of future performance, its gradient w.r.t. its inputs, and its model.

    A named tuple (``value, grad, low, high, model, scores, warning, plausible, alpha``)
    whose interval answers as every result's does
    (:class:`~pyprog.timeseries.IntervalResult`: ``level``, ``covers``, ``interval_text``).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        interval = (
            "" if self.low is None
            else f", low={self.low:.6g}, high={self.high:.6g}, alpha={self.alpha:g}"
        )  # fmt: skip
        warn = "" if self.warning is None else ", warning=..."
        return (
            f"Forecast(value={self.value:.6g}{interval}, model={self.model!r}, "
            f"grad=<{len(self.grad)} values>{warn})"
        )

    def as_dict(self) -> dict:
        """The scalars, the model, the scores (None for ``inf``), the warning and the
        plausible candidates, for JSON."""
        scores = None
        if self.scores is not None:
            scores = {k: (v if np.isfinite(v) else None) for k, v in self.scores.items()}
        return {
            **self.interval_dict(),
            "model": self.model,
            "scores": scores,
            "warning": self.warning,
            "plausible": None if self.plausible is None else list(self.plausible),
        }


def check_enough_episodes(n: int, basis: str, d: int, what: str) -> int:
    """The number of basis features, after checking that ``n`` episodes are at least as
    many (else a ValueError that names ``what``, the function the user called)."""
    k = n_features(basis, d)
    if n < k:
        raise ValueError(
            f"{what} needs at least as many episodes as basis features: got {n} episodes "
            f"for {k} features (basis={basis!r}, d={d}); use a smaller d or more episodes"
        )
    return k


def ols_weights(n: int, delta: int = 1, basis: str = "fourier", d: int = 5) -> np.ndarray:
    """The OLS forecast's weights ``ζ_i = ∂Ĵ_{n+δ}/∂Ĵ_i = [φ*(ΦᵀΦ)⁻¹Φᵀ]_i`` (paper Fig. 4).

    They do not depend on the data, sum to 1 (the basis holds the constant) and are
    often negative: the forecast's gradient ``Σ_i ζ_i ∇Ĵ_i`` can push away from what
    did well in the past.

    Returns
    -------
    zeta : ndarray of float64, shape (n,)

    Examples
    --------
    >>> zeta = ols_weights(100, delta=1, basis="linear")
    >>> round(float(zeta.sum()), 12), bool(zeta[0] < 0 < zeta[-1])
    (1.0, True)
    """
    n = check_int("n", n, 1)
    check_enough_episodes(n, basis, d, "ols_weights")
    phi, phi_star = forecast_design(n, delta, basis, d)
    _, zeta, _ = solve(phi, np.ones(n), np.zeros(n), phi_star, "ols_weights")
    return zeta


@renamed_arguments(seed="random_state")
def nis_forecast(
    J_hat,
    delta: int = 1,
    basis: str = "auto",
    d: int | None = None,
    *,
    alpha: float | None = None,
    n_boot: int = 2000,
    random_state=None,
    candidates=None,
) -> Forecast:
    """NIS: forecast the mean performance over the next ``delta`` episodes by OLS.

    ``Ĵ_{N+δ} = φ*(ΦᵀΦ)⁻¹ΦᵀY`` with ``Y_i = Ĵ_i`` the per-episode PDIS estimates in
    play order. Unbiased and consistent under stationarity (paper Thms 1, 3).

    Parameters
    ----------
    J_hat : array_like, shape (N,)
        Past estimates of the policy's performance, oldest first (e.g. ``pdis(...).J``).
    delta : int >= 1
        Forecast horizon (episodes); the target is the mean of the next ``delta``.
    basis : {"auto", "fourier", "poly", "linear"}
        ``"auto"`` (the default): choose the forecaster (a basis and its ``d``, a window
        mean or an exponentially weighted mean) by rolling-origin backtests of ``J_hat``
        (:func:`pyprog.forecast.selection.select_forecaster`); it needs
        :func:`~pyprog.forecast.selection.min_episodes_auto` episodes. Or a fixed time
        basis of the paper, with ``d`` features.
    d : int >= 1, optional
        Number of features of a fixed basis (at most N; default 5). Not with
        ``basis="auto"``, whose candidates carry their own (a ValueError says so).
    alpha : float in (0, 1), optional
        If given, also a two-sided ``1 − alpha`` confidence interval of the mean
        performance over the next ``delta`` episodes. Fixed basis: a wild bootstrap of
        the studentised forecast (HC2 residuals ``ξ̂_i/√(1 − h_i)``, Rademacher signs;
        see :mod:`pyprog.forecast.intervals`). ``"auto"``: a wild bootstrap that repeats
        the selection in every replicate, widened by the backtests' evidence
        (:func:`~pyprog.forecast.selected_intervals.selected_interval`).
        Always ``low <= value <= high``. Without alpha nothing more is computed.
    n_boot : int >= 100
        Bootstrap draws (only with ``alpha``).
    random_state : None, int or numpy.random.Generator
        Seeds the bootstrap's signs: the same seed gives the same interval.
    candidates : sequence of str or Forecaster, optional
        With ``basis="auto"``: the candidate set (default
        :data:`~pyprog.forecast.selection.DEFAULT_CANDIDATES`).

    Returns
    -------
    Forecast
        ``value`` and ``grad = ζ`` (N,), ``∂value/∂J_hat``; with ``alpha``, ``low`` and
        ``high``; ``model`` names the forecaster; with ``"auto"``, ``scores`` and a
        misspecification ``warning`` (or None).

    Raises
    ------
    ForecastError
        No forecast: too few episodes for ``"auto"`` (the message says how many are
        needed), an ill-conditioned system, or an interval beyond float64.

    Examples
    --------
    >>> import numpy as np
    >>> trend = 2.0 + 0.5 * np.arange(1, 21)  # a perfectly linear past
    >>> round(nis_forecast(trend, delta=1, basis="linear").value, 10)  # episode 21
    12.5
    >>> noisy = trend + np.random.default_rng(0).normal(0.0, 1.0, 20)
    >>> f = nis_forecast(noisy, basis="linear", alpha=0.1, random_state=0)
    >>> bool(f.low < 12.5 < f.high)
    True
    """
    J_hat = as_float_array("J_hat", J_hat, 1, "(N,)")
    check_finite("J_hat", J_hat)
    return _forecast(
        J_hat, None, delta, basis, d, candidates, alpha, n_boot, random_state, "nis_forecast"
    )


@renamed_arguments(seed="random_state")
def nwis_forecast(
    returns,
    ratios,
    delta: int = 1,
    basis: str = "auto",
    d: int | None = None,
    *,
    alpha: float | None = None,
    n_boot: int = 2000,
    random_state=None,
    candidates=None,
) -> Forecast:
    """NWIS: forecast by weighted least squares of the returns, weighted by the ratios.

    ``Ĵ‡_{N+δ} = φ*(ΦᵀΛΦ)⁻¹ΦᵀΛG`` with ``Λ = diag(ratios)`` and ``G_i`` the discounted
    return of episode i. Biased but consistent, and of lower variance than NIS; with
    ``d = 1`` it is weighted importance sampling (paper §6).

    Parameters
    ----------
    returns : array_like, shape (N,)
        Discounted returns ``G_i = Σ_t γ^t r_{i,t}``, oldest first.
    ratios : array_like, shape (N,)
        Whole-episode importance ratios ``λ_i >= 0`` (e.g. from :func:`episode_ratios`).
    delta, basis, d, candidates
        As in :func:`nis_forecast`; with ``"auto"`` the fits and the backtest scores are
        weighted by the ratios.
    alpha, n_boot, random_state
        As in :func:`nis_forecast`: with ``alpha``, a two-sided ``1 − alpha`` interval by
        the wild bootstrap of the weighted fit, the ratios held fixed (its standard error
        is the sandwich variance of the WLS estimating equations, valid for random
        ratios too; see :mod:`pyprog.forecast.intervals`).

    Returns
    -------
    Forecast
        ``value`` and ``grad`` (N,) ``= ∂value/∂ratios = (φ_i·u)(G_i − φ_i·w)`` with
        ``u = (ΦᵀΛΦ)⁻¹φ*ᵀ`` and ``w`` the regression weights; chain it with
        ``∇λ_i = λ_i Σ_t ∇log π`` (0 where the ratio is clipped) for a policy gradient.
        With ``alpha``, ``low`` and ``high``.

    Raises
    ------
    ForecastError
        If fewer than ``d`` episodes carry non-zero weight (rank-deficient system).

    Examples
    --------
    >>> import numpy as np
    >>> G, lam = np.array([1.0, 3.0, 2.0]), np.array([1.0, 0.0, 3.0])
    >>> nwis_forecast(G, lam, basis="fourier", d=1).value  # d = 1: weighted IS
    1.75
    >>> rng = np.random.default_rng(0)
    >>> G, lam = rng.normal(1.0, 0.5, 200), rng.exponential(1.0, 200)
    >>> f = nwis_forecast(G, lam, basis="auto", alpha=0.1, random_state=0)
    >>> bool(f.low <= f.value <= f.high), f.model in f.scores
    (True, True)
    """
    returns = as_float_array("returns", returns, 1, "(N,)")
    ratios = as_float_array("ratios", ratios, 1, "(N,)")
    check_same_shape(returns=returns, ratios=ratios)
    check_finite("returns", returns)
    check_finite("ratios", ratios)
    check_nonnegative("ratios", ratios)
    return _forecast(
        returns, ratios, delta, basis, d, candidates, alpha, n_boot, random_state, "nwis_forecast"
    )


def choose_forecaster(
    y, ratios, delta: int, basis: str, d: int | None, candidates, what: str
) -> tuple[Forecaster, Selection | None]:
    """The forecaster of ``basis``/``d``, or the one :func:`select_forecaster` picks for
    ``basis="auto"`` (then also the :class:`Selection`); ValueError/ForecastError if none."""
    d = resolve_d(basis, d, what)
    if basis == "auto":
        sel = select_forecaster(y, delta, ratios, candidates=candidates, what=what)
        return sel.forecaster, sel
    if candidates is not None:
        raise ValueError(f"{what}: candidates is only used with basis='auto'; got basis={basis!r}")
    check_enough_episodes(len(y), basis, d, what)
    return BasisForecaster(basis, d), None


def _forecast(
    y, ratios, delta, basis, d, candidates, alpha, n_boot, random_state, what
) -> Forecast:
    if alpha is not None:
        alpha, n_boot = check_alpha(alpha), check_n_boot(n_boot, len(y))
    delta = check_int("delta", delta, 1)
    fc, sel = choose_forecaster(y, ratios, delta, basis, d, candidates, what)
    phi, phi_star, kappa = fc.design(len(y), delta)
    weights = kappa if ratios is None else kappa * ratios
    f, dfdy, dfdw = solve(phi, weights, y, phi_star, what)
    grad = dfdy if ratios is None else dfdw * kappa
    del dfdy, dfdw
    if sel is not None:
        phi = None  # the interval after a selection does not use it (an n × k array)
    check_representable(what, f=f, grad=grad, error=ForecastError)
    f = float(f)
    extra = {"model": str(fc)}
    if sel is not None:
        extra.update(
            scores=sel.scores,
            warning=sel.warning,
            plausible=tuple(str(c) for c in sel.plausible),
        )
    if alpha is None:
        return Forecast(f, grad, **extra)
    # the chosen model's residual degrees of freedom, fixed basis and "auto" alike
    check_interval_dof(weights, fc.features, f"{what} ({fc})")
    if sel is not None and not any(math.isfinite(v) for v in sel.scores.values()):
        raise ForecastError(
            f"{what}: no candidate could be scored by the backtests "
            f"({int(np.count_nonzero(weights))} of {len(y)} episodes have non-zero weight); "
            "no interval after the selection; more episodes of non-zero weight are needed"
        )
    if sel is not None:
        low, high, _ = selected_interval(
            y,
            ratios,
            sel,
            value=f,
            alpha=alpha,
            n_boot=n_boot,
            random_state=random_state,
            what=what,
        )
    else:
        ci = forecast_interval(
            phi,
            weights,
            y,
            phi_star,
            alpha=alpha,
            n_boot=n_boot,
            random_state=random_state,
            value=f,
        )
        low, high = ci.low, ci.high
    # plain floats whichever path computed them (NumPy scalars print and compare alike,
    # but are not JSON-serialisable by every library)
    return Forecast(float(f), grad, float(low), float(high), alpha=alpha, **extra)


# the names that moved to pyprog.offpolicy.episodes (issue 49): they warn, and go in pyprog 0.3
__getattr__, _ = moved(
    __name__,
    "pyprog.offpolicy.episodes",
    names=["PDISResult", "check_episode_arrays", "discounted_returns", "episode_ratios", "pdis"],
)
