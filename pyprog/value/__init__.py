"""The value in time as one shrinkage model (experimental; not yet used by ``forecast_value``).

The rounds path's forecaster in time, being rebuilt (issue 47): in place of choosing one
of 44 least-squares models behind gates, a single penalized additive model of the binned
per-round estimates in which every effect (trend, a walk of the level, yearly seasons,
blocks of the year, the day of the week) has its own variance chosen from the log by
restricted maximum likelihood, so weak effects are shrunk rather than switched on or off,
and whose prediction intervals carry the day's own deviation and the variances' own
uncertainty.

* :mod:`.effects` — the effects' columns, window averages and unseen future increments;
* :mod:`.reml` — the mixed model's variance components (penalised REML, analytic gradient);
* :mod:`.model` — :class:`ValueModel`: fit, forecast (linear in the bins: ζ), prediction
  intervals from the variances' posterior; :func:`bin_noise`, the bins' noise variances.

May import :mod:`pyprog.offpolicy` (the bins, the time features) and below; the
forecasting layer above it will call it. Its measured state is in the guide
``docs/guides/value-model.md``.
"""

from pyprog.value.effects import (
    Effect,
    LevelsEffect,
    LevelWalk,
    SeasonEffect,
    TrendEffect,
    default_effects,
)
from pyprog.value.model import ValueModel, bin_noise
from pyprog.value.reml import MixedModel

__all__ = [
    "Effect",
    "LevelWalk",
    "LevelsEffect",
    "MixedModel",
    "SeasonEffect",
    "TrendEffect",
    "ValueModel",
    "bin_noise",
    "default_effects",
]
