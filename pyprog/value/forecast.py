"""A policy's value at a future date, from timestamped contextual-bandit rounds.

:func:`forecast_value` is the one entry point (``pyprog forecast LOG.csv --time COL`` runs
it). From a log of rounds (x_i, t_i, a_i, r_i, π₀(a_i|x_i, t_i)) and an evaluation policy
π_e it answers "what will π_e's value be on this date (or over this window)?":

1. **Per-round estimates** (those of :func:`pyprog.offpolicy.round_estimates`): doubly
   robust pseudo-outcomes Ŷ_i with a cross-fitted reward model (default), or importance
   sampling; each is an unbiased estimate of V_{t_i}(π_e), the value at its own time.
   They are computed chunk by chunk in two passes whose sums merge
   (:mod:`pyprog.value.gather`), each round's fold hashed from its time and context, so
   that the log's size bounds the time, not the memory, and the rows' order changes
   nothing.
   DR's direct term is pooled over every logged context (as OPFV's) unless the contexts
   drift (``pool_contexts``; :mod:`pyprog.offpolicy.estimates`).
   With ``estimator="auto"`` both DR and IS are computed (DR, under the default
   ``time_feature="auto"``, with a reward model that sees the time and with one that does
   not), and the one whose chosen model predicts held-out stretches of the log better
   (lower cross-validation error: all estimate the same V_t, so the lower error is the
   lower noise) is used. The direct term is pooled unless the contexts drift
   (:func:`pyprog.value.drifts` on its context part).
2. **The value in time** (:class:`pyprog.value.ModelAverage`): the rounds are gathered
   into one-day bins, and each candidate model of the value in time (the constant, a
   trend, a persistent step, a yearly season or blocks of the year, each with or without
   the day of the week) is a mixed model whose every term has its own variance chosen
   from the log (REML), so weak effects are shrunk rather than switched on or off; the
   forecast averages the candidates weighted by their evidence (Bayesian model
   averaging), and is linear in the bins.
3. **A prediction interval** (``interval="prediction"``, the default) for the value on the
   target day (or the window's average): the mixture of the candidates' predictive
   normals, each with its coefficients' uncertainty at the target, the day's own
   deviation that no model explains (its variance estimated from the log: the excess of
   the daily estimates' spread over their noise; shrinking as 1/L over a window of L
   days), and the pooled direct term's sampling error, which every bin shares.
   ``interval="mean"`` leaves out the day's own deviation (the interval for the models'
   mean). By the orthogonality of cross-fitted DR (Chernozhukov et al. 2018), the reward
   model's fitting error enters the estimate only at second order, so the
   pseudo-outcomes' own variability carries it to first order.

How far ahead: each model is extrapolated on its own terms (a season repeats, a trend
continues, the level after a step persists), which a log cannot test beyond its own
length. Targets further past the log's end than the log is long (``max_horizon``, default
the log's span) are a :class:`~pyprog.timeseries.errors.ForecastError` that says so.

Times: numbers are days (the default models' year is 365.25 and their week 7); dates
(``datetime64``, ``datetime``, pandas timestamps, ISO-8601 strings) are converted to UTC
(a time zone offset is honoured, naive dates are taken as UTC) and counted in days since
1970-01-01, so blocks of the year and days of the week follow the UTC calendar.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field

import numpy as np

from pyprog.logs.chunks import CHUNK_ROWS, ArraySource, RoundSource, rounds_of
from pyprog.logs.columns import log_columns as _columns
from pyprog.logs.rounds_csv import read_rounds_csv
from pyprog.logs.streams import DaskSource, ParquetSource, is_dask_frame
from pyprog.logs.tables import is_parquet_path
from pyprog.logs.times import forecast_targets, many_targets
from pyprog.offpolicy.chunked import Plan, mergeable
from pyprog.offpolicy.estimates import ESTIMATORS, ROUND_ESTIMATORS
from pyprog.offpolicy.support import Support, warn_support
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.interval_results import INTERVAL_ALPHA, IntervalResult
from pyprog.timeseries.splits import HashedFolds
from pyprog.timeseries.terms import TimeModel, as_time_model
from pyprog.utils.moved import renamed_arguments
from pyprog.utils.validation import check_alpha, shorten
from pyprog.value import ModelAverage
from pyprog.value.averaging import screening_models
from pyprog.value.candidates import default_reward_time_model
from pyprog.value.gather import estimate_bins

__all__ = ["ValueForecast", "forecast_value", "read_rounds_csv"]

#: The estimators ``forecast_value`` chooses between under ``estimator="auto"``.
AUTO_ESTIMATORS = ("dr", "is")
#: The label's suffix when DR's or DM's reward model without time inputs was chosen.
UNTIMED = " (q(x, a))"


@dataclass(frozen=True)
class ValueForecast(IntervalResult):
    """A policy's forecast value at a time (or over a window) with its interval.

    Its interval answers as every result's does (:class:`~pyprog.timeseries.IntervalResult`:
    ``level``, ``covers``, ``interval_text``).

    Attributes
    ----------
    value : float
        The forecast of V_{t'}(π_e) (or its average over the window).
    low, high : float or None
        The interval's ends at level 1 − ``alpha`` (None when ``alpha`` is None).
    alpha : float or None
    model : str
        The candidate with the highest weight, e.g. ``"const+season(365.25D,k=1)"``.
    estimator : str
        The per-round estimator used: ``"dr"``, ``"is"``, ``"snis"`` or ``"dm"``.
    target : tuple
        ``("at", t')`` or ``("over", t₁, t₂)``, in days (since 1970-01-01 UTC for dates).
    horizon : float
        Days from the log's last round to the target (to the window's end for ``over``).
    n_rounds, n_bins : int
        Rounds in the log, and the one-day (``bin_width``) bins they fill.
    se : float
        The standard deviation of the forecast's predictive mixture (of ``interval``'s
        kind); the interval is the mixture's quantiles, not ± a multiple of it.
    interval : str
        ``"prediction"`` (the value on the day, or the window's average) or ``"mean"``
        (the models' mean there, without the day's own deviation).
    weights : dict
        Every candidate's weight in the average (they sum to 1).
    support : Support or None
        The importance weights' diagnostics (:class:`~pyprog.offpolicy.support.Support`:
        effective sample size, the largest weight's share, π_e's mass where π₀ rarely
        acts, rounds per bin); a :class:`~pyprog.offpolicy.support.SupportWarning` says
        when they are poor.
    average : ModelAverage or None
        The model average the forecast came from (its bins, candidates and weights):
        what :meth:`plot` draws.
    dated : bool
        Whether the log's times were dates (the plot's axis reads them as dates).
    """

    value: float
    low: float | None
    high: float | None
    alpha: float | None
    model: str
    estimator: str
    target: tuple
    horizon: float
    n_rounds: int
    n_bins: int
    se: float
    interval: str = "prediction"
    weights: dict = field(default_factory=dict, repr=False)
    support: Support | None = field(default=None, repr=False)
    average: ModelAverage | None = field(default=None, repr=False, compare=False)
    dated: bool = field(default=False, repr=False)

    def as_dict(self) -> dict:
        """A JSON-ready summary (dates as days since 1970-01-01 UTC)."""
        return {
            **self.interval_dict(),
            "model": self.model,
            "estimator": self.estimator,
            "target": list(self.target),
            "horizon_days": self.horizon,
            "n_rounds": self.n_rounds,
            "n_bins": self.n_bins,
            "se": self.se,
            "interval": self.interval,
            "support": None if self.support is None else self.support.as_dict(),
        }

    def plot(self, path: str | os.PathLike | None = None):
        """The daily estimates with their noise, the model in time, and the forecast with
        its band out to the target (a matplotlib Figure, saved as PNG at ``path``).

        See :func:`pyprog.value.plot.plot_value_forecasts`, which draws several targets.
        """
        from pyprog.value.plot import plot_value_forecasts

        return plot_value_forecasts([self], path)

    def __str__(self) -> str:
        interval = "" if self.low is None else " " + self.interval_text(self.interval)
        return (
            f"value {self.value:.4g}{interval} at {self.horizon:.4g} days ahead; "
            f"top model {self.model}, estimator {self.estimator}, {self.n_rounds} rounds"
        )


# -- the forecast ----------------------------------------------------------------------


@renamed_arguments(models="candidates")
def forecast_value(  # noqa: PLR0913  (reviewed: docs/guides/development.md)
    log,
    policy,
    *,
    at=None,
    over=None,
    time: str = "time",
    context="x",
    action: str = "action",
    reward: str = "reward",
    pscore: str = "pscore",
    n_actions: int | None = None,
    estimator: str = "auto",
    candidates=None,
    reward_model=None,
    time_feature="auto",
    pool_contexts="auto",
    bin_width: float = 1.0,
    max_horizon: float | None = None,
    alpha: float | None = INTERVAL_ALPHA,
    interval: str = "prediction",
    random_state=0,
):
    """Forecast a policy's value at a future time from timestamped contextual-bandit rounds.

    Parameters
    ----------
    log : str, os.PathLike, DataFrame, table or dict of array_like
        The rounds, with the columns named below: a CSV path (:func:`read_rounds_csv`), a
        Parquet file or folder (streamed in batches: :mod:`pyprog.logs.streams`), a pandas
        or Polars DataFrame, a pyarrow Table, a Dask DataFrame (partition by partition, on
        the current ``dask.distributed`` client), or a dict of arrays. Every form gives the
        same forecast (to rounding).
    policy : array_like of shape (n, A), str, list of str, or callable
        π_e: its probability of every action at each logged round, as an (n, A) array,
        as the columns of the log (a prefix: ``"pi_"`` takes ``pi_0``, ``pi_1``, ...; or
        a list of names), or a callable ``policy(context (n, d), times (n,)) -> (n, A)``.
        A callable is also evaluated at the target time (a window's midpoint), so a
        policy that changes with time is forecast as it will act then.
    at : float, date, str, or a sequence of them
        The target time t' after the log (a sequence gives a list of forecasts that share
        the fitting).
    over : (t₁, t₂)
        A window after the log: the forecast of the value's average over it. Exactly one
        of ``at`` and ``over``.
    time, action, reward, pscore : str
        Column names: time, logged action (integers 0..A−1), reward, and the logging
        policy's probability of the logged action π₀(a_i|x_i, t_i) (OBP's ``pscore``).
    context : str, list of str, or None
        The context columns: a prefix (default ``"x"``: ``x0``, ``x1``, ...), a list of
        names, or None for no context.
    n_actions : int, optional
        A; default: the policy's number of columns.
    estimator : {"auto", "dr", "is", "snis", "dm"} or a registered name
        Per-round estimates; "auto" (default) chooses DR or IS (module docstring); any
        :class:`~pyprog.offpolicy.estimates.RoundEstimator` registered by name.
    candidates : list of TimeModel or terms, optional
        The candidate models of the value in time, averaged; default
        :func:`pyprog.value.candidates.default_time_models`.
    reward_model : scikit-learn-style regressor, optional
        q̂ for DR and DM; default :class:`pyprog.offpolicy.ActionRidge`.
    time_feature : "auto", time feature, TimeModel or None
        Time inputs of the reward model: "auto" (default) both a trend, 16 blocks of the
        year and the day of the week, as far as the log's span allows
        (:func:`pyprog.value.candidates.default_reward_time_model`), and none,
        the one with the lower cross-validation error kept (the result's ``estimator``
        then ends in " (q(x, a))"); or a time feature (``PeriodBlocks(365.25, 12)``), a
        TimeModel, or None (q̂(x, a)).
    pool_contexts : "auto", bool
        DR's and DM's direct term averaged over every logged context (as OPFV's), not
        round i's own. "auto" (default): pooled when the reward model is affine in its
        inputs (the default is) and the contexts' part of the direct term does not drift
        (:func:`pyprog.value.drifts`: no candidate beats the constant by a Bayes factor
        of 20); the result's ``estimator`` then reads "dr-pooled".
    bin_width : float
        Days per bin (default 1); use less for patterns within a day.
    max_horizon : float, optional
        The furthest target, in days after the log's last round; default the log's span.
    alpha : float or None
        1 − the interval's level (default 0.1: 90 %); None: no interval.
    interval : {"prediction", "mean"}
        "prediction" (default): for the value on the target day (a window's average);
        "mean": for the models' mean there, without the day's own deviation.
    random_state : None, int or numpy.random.Generator
        The reward model's cross-fitting folds.

    Returns
    -------
    ValueForecast, or a list of them when ``at`` is a sequence

    Raises
    ------
    ValueError
        Bad input, naming the argument (or the column) and what is allowed.
    ForecastError
        A target further ahead than ``max_horizon``, or a log in fewer than 30 bins.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = 3000
    >>> t = np.sort(rng.uniform(0, 365, n))              # a year of rounds (days)
    >>> x = rng.normal(size=(n, 2))
    >>> a = rng.integers(0, 2, n)                        # uniform logging policy
    >>> r = (a == 1) * (1 + np.sin(2 * np.pi * t / 365.25)) + rng.normal(0, 0.3, n)
    >>> log = {"time": t, "x0": x[:, 0], "x1": x[:, 1], "action": a, "reward": r,
    ...        "pscore": np.full(n, 0.5)}
    >>> always_1 = np.tile([0.0, 1.0], (n, 1))
    >>> f = forecast_value(log, always_1, at=365.25 + 91.3)   # a year and a season on
    >>> f.model, round(f.value, 1), f.low < 2.0 < f.high
    ('const+season(365.25D,k=1)', 2.0, True)
    """
    _check_options(alpha, interval, bin_width, max_horizon, random_state)  # before any reading
    source = _source(log, time, {"time": time, "context": context, "action": action,
                                 "reward": reward, "pscore": pscore}, policy, n_actions,
                     reward_model)  # fmt: skip
    source.threads = not callable(policy)  # a user's callable need not be thread-safe
    many = many_targets(at, over)
    kinds = _estimator_kinds(estimator, source)
    affine = _check_pooling(pool_contexts, reward_model)
    scan = source.scan
    goals = forecast_targets(at, over, scan.t_last)
    _check_horizon(goals, (scan.t_first, scan.t_last), max_horizon)

    # the reward model's time inputs; "auto": with and without, and the backtest chooses
    # (on a thousand rounds that do not drift, their noise outweighs what they explain)
    phis = {"": time_feature}
    if isinstance(time_feature, str) and time_feature == "auto":
        phis = {"": default_reward_time_model(scan.t_first, scan.t_last), UNTIMED: None}
    plan = Plan(
        kinds=tuple(kinds), phis=phis, n_actions=scan.n_actions,
        span=(scan.t_first, scan.t_last), shift=scan.context_mean,
        policy=policy if callable(policy) else None,
        targets=tuple(_policy_time(g) for g in goals),
        pool=pool_contexts is not False and bool(affine), seed=HashedFolds.seed_of(random_state),
        reward_model=reward_model,
    )  # fmt: skip
    fit = _Fit(None if candidates is None else [_as_model(m) for m in candidates], alpha, interval,
               bin_width, scan.t_last, scan.n, source.dated)  # fmt: skip
    gathered, support = estimate_bins(source, plan, bin_width)
    # π_e as it acts at the log's times, or, when a callable acts otherwise at some target,
    # as it will act at each target (one set of estimates per target)
    groups = [("log", goals)] if "log" in gathered else [(j, [g]) for j, g in enumerate(goals)]
    out = []
    for key, group in groups:
        warn_support(support[key], stacklevel=3)  # the caller's line, past renamed_arguments
        estimates = gathered[key].estimates(plan, pool_contexts)
        out += fit.forecasts(group, estimates, support[key])
    return out if many else out[0]


def _source(log, time: str, columns: dict, policy, n_actions, reward_model) -> RoundSource:
    """The log as chunks: a Dask DataFrame's partitions, a Parquet file or folder read in
    batches, or a log in memory (one chunk for a reward model whose fit does not merge
    over chunks)."""
    if is_dask_frame(log):  # on the cluster, partition by partition
        return DaskSource(log, columns, policy, n_actions)
    if isinstance(log, (str, os.PathLike)) and is_parquet_path(log):  # streamed from disk
        return ParquetSource(log, columns, policy, n_actions)
    frame, path = _columns(log)
    if frame is None:
        frame = read_rounds_csv(path, time=time)
    chunk, n_actions, dated = rounds_of(frame, columns, policy, n_actions)
    rows = CHUNK_ROWS if reward_model is None or mergeable(reward_model) else None
    return ArraySource(chunk, rows, dated)


def _estimator_kinds(estimator, source: RoundSource) -> list[str]:
    """The per-round estimators to compute: both of :data:`AUTO_ESTIMATORS`, or the one."""
    name = estimator.lower() if isinstance(estimator, str) else None
    if name != "auto" and name not in ESTIMATORS:
        allowed = ", ".join(repr(k) for k in ("auto", *ROUND_ESTIMATORS))
        raise ValueError(f"estimator must be one of {allowed}; got {estimator!r}")
    # an alias (OBP's "ipw") as its estimator's name
    kinds = list(AUTO_ESTIMATORS) if name == "auto" else [ESTIMATORS[name]]
    if not source.one_chunk:  # in chunks: each round's estimate must be its own
        kinds = [k if ROUND_ESTIMATORS[k].row_local else _one_chunk(k, source) for k in kinds]
    return kinds


def _one_chunk(kind: str, source: RoundSource) -> str:
    """A non-row-local estimator (SNIS) on a log in chunks: whole, if it is in memory."""
    if isinstance(source, ArraySource):
        source.chunk_rows = source.whole.rounds.n
        return kind
    raise ValueError(
        f"estimator {kind!r} normalises over the whole log, which is read in chunks here; "
        "use 'is' or 'dr', or read the log into memory"
    )


def _check_pooling(pool_contexts, reward_model) -> bool:
    """Whether the reward model is affine in its inputs (so the direct term can be pooled)."""
    affine = getattr(reward_model, "affine_features", reward_model is None)
    if not (isinstance(pool_contexts, (bool, np.bool_)) or pool_contexts == "auto"):
        raise ValueError(f"pool_contexts must be 'auto', True or False; got {pool_contexts!r}")
    if pool_contexts is True and reward_model is not None and not affine:
        raise ValueError(
            f"pool_contexts=True needs a reward model affine in its inputs (marked "
            f"affine_features = True, as the default ActionRidge); got {reward_model!r}"
        )
    return affine


def _check_horizon(goals: list[tuple], span: tuple, max_horizon) -> None:
    """Each target within the horizon a model chosen on the log (``span``: its first and
    last time) can be checked for."""
    t_first, t_last = span
    span = t_last - t_first
    limit = span if max_horizon is None else float(max_horizon)
    for goal in goals:
        ahead = goal[-1] - t_last
        if ahead > limit and max_horizon is not None:
            raise ForecastError(
                f"the target is {ahead:.4g} days after the log's end, beyond "
                f"max_horizon={limit:g} days"
            )
        if ahead > limit:
            raise ForecastError(
                f"the target is {ahead:.4g} days after the log's end, but the log "
                f"covers {span:.4g} days: a model chosen on a log cannot be checked further "
                f"ahead than the log is long. Pass max_horizon= to forecast anyway"
            )


@dataclass(frozen=True)
class _Fit:
    """The model in time of the best estimator's bins, and its forecasts (:meth:`forecasts`)."""

    models: list | None
    alpha: float | None
    interval: str
    bin_width: float
    t_last: float
    n: int
    dated: bool

    def forecasts(
        self, group: list, estimates_by_kind: dict, support: Support
    ) -> list[ValueForecast]:
        # the estimator whose bins a few broad shrunk models predict best in held-out
        # stretches (all estimate the same V_t, so the lower error is the lower noise)
        bins = {k: (b.binned, b.noise, b.shared) for k, b in estimates_by_kind.items()}
        kind = next(iter(bins))
        if len(bins) > 1:
            scores = {k: _average(b, screening_models(*b[0].span)).cv_score()
                      for k, b in bins.items()}  # fmt: skip
            kind = min(scores, key=scores.get)
        avg = _average(bins[kind], self.models)
        value, low, high, sd = avg.forecast(group, self.alpha, kind=self.interval)
        return [
            ValueForecast(
                value=float(value[j]),
                low=None if low is None else float(low[j]),
                high=None if high is None else float(high[j]),
                alpha=None if self.alpha is None else float(self.alpha),
                model=avg.top,
                estimator=kind,
                target=goal,
                horizon=float(goal[-1] - self.t_last),
                n_rounds=int(self.n),
                n_bins=avg.binned.m,
                se=float(sd[j]),
                interval=self.interval,
                weights=avg.weights,
                support=support,
                average=avg,
                dated=self.dated,
            )
            for j, goal in enumerate(group)
        ]


def _check_options(alpha, interval, bin_width, max_horizon, random_state) -> None:
    """The numeric options, each a ValueError naming it (before the log is read)."""

    def real(x) -> bool:
        return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))

    check_alpha(alpha, allow_none=True)
    if interval not in ("prediction", "mean"):
        raise ValueError(f"interval must be 'prediction' or 'mean'; got {shorten(interval)}")
    seeds = (numbers.Integral, np.random.Generator, np.random.SeedSequence)
    if not (random_state is None or isinstance(random_state, seeds)) or isinstance(
        random_state, bool
    ):
        raise ValueError(
            f"random_state must be None, an integer or a numpy.random.Generator; got "
            f"{shorten(random_state)}"
        )
    if not (real(bin_width) and math.isfinite(bin_width) and bin_width > 0):
        raise ValueError(f"bin_width must be a finite number of days > 0; got {shorten(bin_width)}")
    if max_horizon is not None and not (
        real(max_horizon) and math.isfinite(max_horizon) and max_horizon > 0
    ):
        raise ValueError(f"max_horizon must be a number of days > 0; got {shorten(max_horizon)}")


def _average(bins: tuple, models) -> ModelAverage:
    """The model average of ``models`` (None: the default candidates) on :func:`_bins`."""
    binned, noise, shared = bins
    return ModelAverage(binned, noise, models, shared)


def _policy_time(goal: tuple) -> float:
    """When a callable π_e is asked how it acts for a target: t', or a window's midpoint."""
    return goal[1] if goal[0] == "at" else 0.5 * (goal[1] + goal[2])


def _as_model(spec) -> TimeModel:
    try:  # a term, a sum of terms (a TimeModel) or a list of terms
        return as_time_model(spec)
    except ValueError as exc:
        raise ValueError(f"candidates: {exc}") from None
