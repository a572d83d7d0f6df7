"""Per-round off-policy estimates of a contextual policy's value, and OPFV.

The layer beneath the forecasters (:mod:`pyprog.forecast`), which only see estimates,
their weights and their times. From timestamped contextual-bandit rounds
(x_i, t_i, a_i, r_i, π₀(a_i|x_i, t_i)):

* :func:`round_estimates` — one pseudo-outcome per round, IS, self-normalised IS, direct
  method or doubly robust, with the reward model cross-fitted (:mod:`.estimates`,
  :mod:`.crossfit`); the default reward model :class:`ActionRidge` is a NumPy ridge
  regression with its penalty chosen by generalised cross-validation (:mod:`.reward_model`);
* :func:`opfv`, :func:`opfv_select` — Shimizu et al.'s (KDD 2025) estimator of the value at
  a future time, with a known time feature or one chosen from the data (:mod:`.future`);
* time features φ(t): :class:`PeriodBlocks`, :func:`DayOfWeek`, :class:`Crossed`
  (:mod:`.time_features`);
* :func:`time_forecast` — one forecaster in time, least squares on a sum of :func:`trend`,
  :func:`season` (a stated period) and :func:`blocks` (a time feature) evaluated at a
  future time or over a window, linear in the estimates (ζ returned) with an HC2 standard
  error (:mod:`.time_models`; the terms in :mod:`.time_terms`); :func:`step` a
  persistent level shift;
* the rounds gathered into day bins (:func:`bin_estimates`) and the candidate models
  (:func:`default_time_models`) that :mod:`pyprog.value` averages (:mod:`.time_candidates`).

Inputs are checked once here (:mod:`.rounds`); errors name the argument.
"""

from pyprog.offpolicy.crossfit import CrossFit, cross_fit
from pyprog.offpolicy.estimates import ESTIMATORS, RoundEstimates, round_estimates
from pyprog.offpolicy.future import DEFAULT_BLOCKS, OPFVResult, opfv, opfv_select
from pyprog.offpolicy.reward_model import ActionRidge
from pyprog.offpolicy.rounds import as_days
from pyprog.offpolicy.time_candidates import Binned, bin_estimates, default_time_models
from pyprog.offpolicy.time_features import Crossed, DayOfWeek, PeriodBlocks
from pyprog.offpolicy.time_models import TimeForecast, time_forecast
from pyprog.offpolicy.time_terms import (
    Blocks,
    Season,
    Step,
    TimeModel,
    Trend,
    blocks,
    parse_period,
    season,
    step,
    trend,
)

__all__ = [
    "DEFAULT_BLOCKS",
    "ESTIMATORS",
    "ActionRidge",
    "Binned",
    "Blocks",
    "CrossFit",
    "Crossed",
    "DayOfWeek",
    "OPFVResult",
    "PeriodBlocks",
    "RoundEstimates",
    "Season",
    "Step",
    "TimeForecast",
    "TimeModel",
    "Trend",
    "as_days",
    "bin_estimates",
    "blocks",
    "cross_fit",
    "default_time_models",
    "opfv",
    "opfv_select",
    "parse_period",
    "round_estimates",
    "season",
    "step",
    "time_forecast",
    "trend",
]
