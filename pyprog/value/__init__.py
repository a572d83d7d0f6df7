"""The value in time: the rounds path's model of a policy's value on future dates.

From per-round estimates gathered into day bins (:func:`pyprog.offpolicy.bin_estimates`),
every candidate model of the value in time (the constant, a trend, a persistent step, a
yearly season, blocks of the year, each with and without the day of the week) is a mixed
model in which each term has its own variance chosen from the log by restricted maximum
likelihood, so weak effects are shrunk rather than switched on or off; the forecast
averages the candidates weighted by their evidence, and its prediction interval carries
what no candidate explains (the day's own deviation) and what every bin shares (the
pooled direct term's sampling error). :func:`pyprog.forecast_value` calls it.

* :mod:`.bins` — :func:`bin_noise`, the bins' noise variances;
* :mod:`.reml` — :class:`MixedModel`: the variance components (penalised REML, analytic
  gradient) and the evidence integrated over them;
* :mod:`.averaging` — :class:`TermEffect`, a candidate's term with one variance;
  :class:`ModelAverage`: Bayesian model averaging of the candidates,
  prediction intervals from the mixture of their predictives, a blocked-CV score;
  :func:`drifts`, whether values drift in time (a Bayes factor against the constant).

May import :mod:`pyprog.offpolicy` (the bins, the time terms and features) and below; the
measured evidence is in the guide ``docs/guides/value-model.md``.
"""

from pyprog.value.averaging import ModelAverage, TermEffect, drifts, reading
from pyprog.value.bins import bin_noise
from pyprog.value.reml import MixedModel

__all__ = [
    "MixedModel",
    "ModelAverage",
    "TermEffect",
    "bin_noise",
    "drifts",
    "reading",
]
