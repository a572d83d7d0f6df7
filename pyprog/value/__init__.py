"""The value in time by shrinkage (experimental; not yet used by ``forecast_value``).

The rounds path's forecaster in time, being rebuilt (issue 47): in place of choosing one
of 44 least-squares models behind gates, mixed models of the binned per-round estimates
in which every effect (trend, steps, yearly seasons, blocks of the year, the day of the
week) has its own variance chosen from the log by restricted maximum likelihood, so weak
effects are shrunk rather than switched on or off, with prediction intervals that carry
the day's own deviation. Two forms are measured side by side: one model with every effect
in, and an average over the 44 candidates each as such a model, weighted by evidence.

* :mod:`.effects` — the effects' columns, window averages and unseen future increments;
* :mod:`.reml` — the mixed model's variance components (penalised REML, analytic gradient);
* :mod:`.bins` — :func:`bin_noise`, the bins' noise variances;
* :mod:`.model` — :class:`ValueModel`, one model with every effect: fit, forecast
  (linear in the bins: ζ), prediction intervals by a parametric bootstrap;
* :mod:`.averaging` — :class:`ModelAverage`: Bayesian model averaging of the candidates,
  each a mixed model; prediction intervals from the mixture of their predictives;
  :func:`drifts`, whether values drift in time (a Bayes factor against the constant).

May import :mod:`pyprog.offpolicy` (the bins, the time features) and below; the
forecasting layer above it will call it. Its measured state is in the guide
``docs/guides/value-model.md``.
"""

from pyprog.value.averaging import ModelAverage, TermEffect, drifts
from pyprog.value.bins import bin_noise
from pyprog.value.effects import (
    Effect,
    LevelsEffect,
    LevelWalk,
    SeasonEffect,
    TrendEffect,
    default_effects,
)
from pyprog.value.model import ValueModel
from pyprog.value.reml import MixedModel

__all__ = [
    "Effect",
    "LevelWalk",
    "LevelsEffect",
    "MixedModel",
    "ModelAverage",
    "SeasonEffect",
    "TermEffect",
    "TrendEffect",
    "ValueModel",
    "bin_noise",
    "default_effects",
    "drifts",
]
