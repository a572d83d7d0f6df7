"""A safety test for non-stationary environments (SPEC §2b; SPIN, Chandak et al. 2020).

May a candidate policy π replace the behaviour policy β that logged the data? For each
logged episode, ``D_i = Ĵ_i(π) − G_i`` is how much better π would have done than β did
(PDIS estimate minus β's own discounted return). Under non-stationarity the past mean
of D says little about the future, so the test forecasts D over the next ``delta``
episodes (NIS, OLS on a time basis) and accepts π only if the one-sided ``1 − alpha``
wild-bootstrap lower bound of that forecast is above 0.

The stationary one-sided t-test of the mean of D is reported alongside, for
comparison: it answers a different question (was π better on average in the past?).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.stats

from pyprog.forecast.estimators import choose_forecaster
from pyprog.forecast.forecasters import solve
from pyprog.forecast.intervals import check_alpha, check_n_boot, forecast_interval
from pyprog.forecast.selected_intervals import selected_interval
from pyprog.offpolicy.episodes import check_episode_arrays, discounted_returns, pdis
from pyprog.timeseries.interval_results import TEST_ALPHA, IntervalResult
from pyprog.utils.moved import renamed_arguments
from pyprog.utils.validation import as_float_array

__all__ = ["SafetyTest", "difference_safety_test", "safety_test"]


@dataclass(frozen=True)
class SafetyTest(IntervalResult):
    """Outcome of :func:`safety_test`: the decision and the numbers behind it.

    Its one-sided bound answers as every interval does
    (:class:`~pyprog.timeseries.IntervalResult`; ``high`` is ``inf``).
    """

    #: A one-sided lower bound has no upper end.
    high = math.inf

    #: True iff ``low > 0``: π is forecast to do better than β with confidence 1 − alpha.
    accept: bool
    #: Forecast mean of ``D = Ĵ(π) − G`` over the next ``delta`` episodes (NIS).
    value: float
    #: One-sided ``1 − alpha`` wild-bootstrap lower bound of ``value``.
    low: float
    #: Robust standard error of ``value``.
    se: float
    #: The significance level of the test.
    alpha: float
    #: Number of logged episodes N.
    episodes: int
    #: Past mean of D (what a stationary test looks at).
    past_mean: float
    #: One-sided ``1 − alpha`` Student-t lower bound of the past mean of D.
    stationary_low: float
    #: One-sided p-value of the t-test of "mean D <= 0".
    stationary_p: float
    #: The stationary t-test's decision: ``stationary_low > 0``.
    stationary_accept: bool
    #: The per-episode differences ``D_i``, shape (N,), oldest first.
    differences: np.ndarray = field(repr=False, compare=False)
    #: The forecaster of D used, e.g. ``"linear"`` (chosen by backtests with ``"auto"``).
    model: str = ""
    #: With ``basis="auto"``: the candidates' backtest scores (``inf``: not fitted).
    scores: dict | None = field(default=None, repr=False, compare=False)
    #: A misspecification warning for the forecast of D, or None.
    warning: str | None = None

    def as_dict(self) -> dict:
        """The scalar fields, the model, the scores (None for ``inf``), for JSON."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("differences", "scores")}
        out |= self.interval_dict()  # "high": None, as every interval's JSON has it
        if self.scores is not None:
            out["scores"] = {k: (v if math.isfinite(v) else None) for k, v in self.scores.items()}
        return out


@renamed_arguments(seed="random_state")
def safety_test(  # noqa: PLR0913  (reviewed: docs/guides/development.md)
    log_pi,
    log_beta,
    rewards,
    mask=None,
    *,
    delta: int,
    basis: str = "auto",
    d: int | None = None,
    alpha: float = TEST_ALPHA,
    gamma: float = 1.0,
    clip: float = np.inf,
    n_boot: int = 2000,
    random_state=None,
    candidates=None,
) -> SafetyTest:
    """Test whether a candidate policy π will do better than the behaviour policy β.

    Accept iff the one-sided ``1 − alpha`` lower bound of the NIS forecast of
    ``D_i = Ĵ_i(π) − G_i`` over the next ``delta`` episodes is > 0, where ``Ĵ_i(π)``
    is the PDIS estimate of π in logged episode i and ``G_i = Σ_t γ^t r_{i,t}`` the
    return β obtained. The bound is the wild-bootstrap-t bound of
    :mod:`pyprog.forecast.intervals` (HC2 residuals, Rademacher signs): if the trend of D
    lies in the span of the basis, a π that is not better is accepted with
    probability at most about ``alpha``.

    Parameters
    ----------
    log_pi, log_beta, rewards : array_like, shape (N, H)
        As in :func:`pyprog.pdis`: the candidate's and the behaviour's
        log-probabilities of the logged actions, and the rewards.
    mask : array_like of {0, 1}, shape (N, H), optional
    delta : int >= 1
        Horizon: the test is about the mean of the next ``delta`` episodes.
    basis : {"auto", "fourier", "poly", "linear"}
        ``"auto"`` (the default): the forecaster of D is chosen by rolling-origin backtests
        (:func:`pyprog.select_forecaster`) and the bound repeats the choice in every
        bootstrap replicate (:func:`pyprog.forecast.selected_intervals.selected_interval`).
    d : int >= 1, optional
        Features of a fixed basis (default 5); not with ``"auto"`` (a ValueError).
    alpha : float in (0, 1)
        Significance level: the accepted risk of deploying a worse policy (default
        :data:`~pyprog.timeseries.TEST_ALPHA`, 0.05).
    gamma : float in [0, 1]
    clip : float > 0
        Clip of the PDIS ratios (``inf``: none; clipping biases Ĵ(π) downwards,
        which makes the test more cautious, not less).
    n_boot : int >= 100
    random_state : None, int or numpy.random.Generator
        Seeds the bootstrap: the same seed gives the same decision.
    candidates : sequence of str or Forecaster, optional
        The candidate set of ``"auto"``.

    Returns
    -------
    SafetyTest
        ``accept``, ``value``, ``low``, ``model`` and the stationary t-test's numbers.

    Raises
    ------
    ForecastError
        The forecast of D is refused, exactly where :func:`pyprog.nis_forecast` refuses
        it (ill-conditioned system, too few episodes for ``"auto"``).

    Examples
    --------
    A candidate that was better in the past, but less and less so:

    >>> rng = np.random.default_rng(0)
    >>> n = 300
    >>> log_beta = np.full((n, 1), np.log(0.5))
    >>> actions = rng.integers(0, 2, size=(n, 1))
    >>> log_pi = np.log(np.where(actions == 1, 0.9, 0.1))  # π mostly plays action 1
    >>> x = np.arange(1, n + 1)[:, None] / n
    >>> rewards = np.where(actions == 1, 1.5 - 2.0 * x, 0.0) + rng.normal(0, 0.3, (n, 1))
    >>> test = safety_test(log_pi, log_beta, rewards, delta=5, basis="linear", d=2,
    ...                    alpha=0.05, random_state=0)
    >>> test.stationary_accept, test.accept, bool(test.value < 0)
    (True, False, True)
    """
    check_alpha(alpha)
    check_n_boot(n_boot)
    J = pdis(log_pi, log_beta, rewards, mask, gamma=gamma, clip=clip).J
    _, _, rewards, mask = check_episode_arrays(log_pi, log_beta, mask, rewards)
    G = discounted_returns(rewards, mask, gamma)
    return difference_safety_test(
        J - G,
        delta=delta,
        basis=basis,
        d=d,
        alpha=alpha,
        n_boot=n_boot,
        random_state=random_state,
        candidates=candidates,
    )


@renamed_arguments(seed="random_state")
def difference_safety_test(
    differences,
    *,
    delta: int,
    basis: str = "auto",
    d: int | None = None,
    alpha: float = TEST_ALPHA,
    n_boot: int = 2000,
    random_state=None,
    candidates=None,
) -> SafetyTest:
    """:func:`safety_test` from the per-episode differences ``D_i = Ĵ_i(π) − G_i``.

    For callers that have computed ``Ĵ(π)`` and ``G`` themselves (e.g. episode by
    episode, as :func:`pyprog.forecast_logs` does for ragged logs).

    Parameters
    ----------
    differences : array_like, shape (N,)
        Finite, oldest episode first.
    delta, basis, d, alpha, n_boot, random_state, candidates
        As in :func:`safety_test`.

    Returns
    -------
    SafetyTest

    Examples
    --------
    >>> D = 0.5 - np.linspace(0, 1, 200) + np.random.default_rng(0).normal(0, 0.1, 200)
    >>> test = difference_safety_test(D, delta=10, basis="linear", d=2, alpha=0.05, random_state=0)
    >>> test.stationary_accept, test.accept
    (False, False)
    """
    alpha = check_alpha(alpha)
    n_boot = check_n_boot(n_boot)
    D = as_float_array("differences", differences, 1, "(N,)")
    if not np.isfinite(D).all():
        i = int(np.flatnonzero(~np.isfinite(D))[0])
        raise ValueError(f"differences must be finite; episode {i} has {D[i]}")
    n = len(D)
    fc, sel = choose_forecaster(D, None, delta, basis, d, candidates, "safety_test")
    phi, phi_star, kappa = fc.design(n, delta)
    # the same kernel and conditioning checks as nis_forecast: refused there, refused here
    value, _, _ = solve(phi, kappa, D, phi_star, "safety_test")
    if sel is None:
        ci = forecast_interval(
            phi,
            kappa,
            D,
            phi_star,
            alpha=alpha,
            n_boot=n_boot,
            random_state=random_state,
            one_sided=True,
            value=value,
        )
        low, forecast_se = ci.low, ci.se
    else:
        low, _, forecast_se = selected_interval(
            D,
            None,
            sel,
            value=value,
            alpha=alpha,
            n_boot=n_boot,
            random_state=random_state,
            one_sided=True,
            what="safety_test",
        )
    past_mean = float(D.mean())
    if n > 1:
        se = float(D.std(ddof=1)) / math.sqrt(n)
        t_crit = float(scipy.stats.t.ppf(1.0 - alpha, n - 1))
        stationary_low = past_mean - t_crit * se
        if se > 0:
            stationary_p = float(scipy.stats.t.sf(past_mean / se, n - 1))
        else:
            stationary_p = 0.0 if past_mean > 0 else 1.0
    else:
        stationary_low, stationary_p = -math.inf, 1.0
    low, forecast_se = float(low), float(forecast_se)  # plain floats in repr and JSON
    return SafetyTest(
        accept=bool(low > 0.0),
        value=float(value),
        low=low,
        se=forecast_se,
        alpha=alpha,
        episodes=n,
        past_mean=past_mean,
        stationary_low=stationary_low,
        stationary_p=stationary_p,
        stationary_accept=bool(stationary_low > 0.0),
        differences=D,
        model=str(fc),
        scores=None if sel is None else sel.scores,
        warning=None if sel is None else sel.warning,
    )
