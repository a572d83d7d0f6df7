"""The value on a date: the rounds path, from a log of rounds to a forecast and its interval.

:func:`pyprog.forecast_value` (:mod:`.forecast`) reads a log of timestamped rounds
(:mod:`pyprog.logs`), estimates each round's value of the policy (:mod:`pyprog.offpolicy`),
gathers the estimates into day bins (:func:`~pyprog.value.bins.bin_estimates`) and
forecasts the value at a future date or over a window. Every candidate model of the value
in time (the constant, a trend, a persistent step, a yearly season, blocks of the year,
each with and without the day of the week: :mod:`.candidates`) is a mixed model in which
each term has its own variance chosen from the log by restricted maximum likelihood, so
weak effects are shrunk rather than switched on or off; the forecast averages the
candidates weighted by their evidence, and its prediction interval carries what no
candidate explains (the day's own deviation) and what every bin shares (the pooled direct
term's sampling error).

* :mod:`.forecast` — :func:`~pyprog.forecast_value` and :class:`~pyprog.ValueForecast`;
* :mod:`.bins` — :func:`bin_estimates`, the rounds in day bins, and :func:`bin_noise`, the
  bins' noise variances;
* :mod:`.candidates` — the candidate models, and the reward model's time inputs;
* :mod:`.reml` — :class:`MixedModel`: the variance components (penalised REML, analytic
  gradient) and the evidence integrated over them;
* :mod:`.averaging` — :class:`TermEffect`, a candidate's term with one variance;
  :class:`ModelAverage`: Bayesian model averaging of the candidates,
  prediction intervals from the mixture of their predictives, a blocked-CV score;
  :func:`drifts`, whether values drift in time (a Bayes factor against the constant);
* :mod:`.gather` — :func:`~pyprog.value.gather.estimate_bins`: the per-round estimates of
  a log in chunks, kept as per-bin sums (:class:`~pyprog.value.bins.BinSums`);
* :mod:`.plot` — :func:`~pyprog.value.plot.plot_value_forecasts`, what
  :meth:`ValueForecast.plot <pyprog.ValueForecast.plot>` draws;
* :mod:`.learning` — :func:`~pyprog.learn_for_future`, the policy for a future date learned
  from the log, forecast on rounds it was not learned on and tested against the logging
  policy; :mod:`.learners`, Prognosticator and the baselines, one class each;
  :mod:`.future_policy`, :class:`~pyprog.FuturePolicy`, the policy as a plain file.

May import :mod:`pyprog.offpolicy`, :mod:`pyprog.timeseries`, :mod:`pyprog.logs`,
:mod:`pyprog.utils` and :mod:`pyprog._ext`; not its sibling :mod:`pyprog.forecast`. The
measured evidence is in the guide ``docs/guides/value-model.md``.
"""

from pyprog.value.averaging import ModelAverage, TermEffect, drifts, reading
from pyprog.value.bins import Binned, bin_estimates, bin_noise
from pyprog.value.reml import MixedModel

__all__ = [
    "Binned",
    "MixedModel",
    "ModelAverage",
    "TermEffect",
    "bin_estimates",
    "bin_noise",
    "drifts",
    "reading",
]
