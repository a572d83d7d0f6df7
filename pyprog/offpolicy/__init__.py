"""Per-unit off-policy estimates: one number per past episode or round, and OPFV.

The layer beneath both forecasting paths (:mod:`pyprog.forecast` for episodes,
:mod:`pyprog.value` for rounds), which see only these estimates, their weights and times.

* episodes (:mod:`.episodes`): :func:`pdis`, per-decision importance sampling, each episode's
  estimate Ĵ_i(π) and the per-step weights of its policy gradient; :func:`episode_ratios`
  and :func:`discounted_returns`, NWIS's weights and targets;
* rounds (x_i, t_i, a_i, r_i, π₀(a_i|x_i, t_i)): :func:`round_estimates`, one
  pseudo-outcome per round, IS, self-normalised IS, direct method or doubly robust, with
  the reward model cross-fitted (:mod:`.estimates`, :mod:`.crossfit`); the default reward
  model :class:`ActionRidge` is a NumPy ridge regression with its penalty chosen by
  generalised cross-validation (:mod:`.reward_model`);
* a log read in chunks (:mod:`.chunked`): the same estimates from two passes whose sums
  merge over chunks (the reward model's fold moments, π_e's pooled means, the weights'
  sums), with each round's cross-fitting fold hashed from its time and context, so that a
  log streamed from disk or spread over a cluster is estimated as the whole;
* :func:`support_diagnostics` — how well a log supports π_e: the importance weights'
  effective sample size, the largest weight's share, π_e's mass where π₀ rarely acts
  (:mod:`.support`, :class:`Support`, :class:`SupportWarning`);
* :func:`opfv`, :func:`opfv_select` — Shimizu et al.'s (KDD 2025) estimator of the value at
  a future time, with a known time feature or one chosen from the data (:mod:`.future_value`).

May import :mod:`pyprog.timeseries` (the time features), :mod:`pyprog.logs` (the checked
rounds), :mod:`pyprog.utils` and :mod:`pyprog._ext`.
"""

from pyprog.offpolicy.crossfit import CrossFit, cross_fit
from pyprog.offpolicy.episodes import PDISResult, discounted_returns, episode_ratios, pdis
from pyprog.offpolicy.estimates import ESTIMATORS, RoundEstimates, round_estimates
from pyprog.offpolicy.future_value import DEFAULT_BLOCKS, OPFVResult, opfv, opfv_select
from pyprog.offpolicy.reward_model import ActionRidge
from pyprog.offpolicy.support import Support, SupportWarning, support_diagnostics
from pyprog.utils.moved import moved

__all__ = [
    "DEFAULT_BLOCKS",
    "ESTIMATORS",
    "ActionRidge",
    "CrossFit",
    "OPFVResult",
    "PDISResult",
    "RoundEstimates",
    "Support",
    "SupportWarning",
    "cross_fit",
    "discounted_returns",
    "episode_ratios",
    "opfv",
    "opfv_select",
    "pdis",
    "round_estimates",
    "support_diagnostics",
]

# the names this package held before issue 49's layout: they warn, and go in pyprog 0.3
__getattr__, _ = moved(
    __name__,
    "pyprog.timeseries",
    "pyprog.logs",
    "pyprog.value.bins",
    "pyprog.value.candidates",
    names=[
        "Binned", "Blocks", "Crossed", "DayOfWeek", "PeriodBlocks", "Season", "Step",
        "TimeForecast", "TimeModel", "Trend", "as_days", "bin_estimates", "blocks",
        "default_time_models", "parse_period", "season", "step", "time_forecast", "trend",
    ],
)  # fmt: skip
