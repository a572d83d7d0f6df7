"""The shared time-series core: designs of time, least squares in time, forecast errors.

Both paths forecast a value in time from per-unit estimates (episodes' PDIS estimates,
rounds' pseudo-outcomes) that they see only as numbers, weights and times. What they share:

* time features φ(t) (:mod:`.features`): :class:`PeriodBlocks`, :func:`DayOfWeek`,
  :class:`Crossed`;
* time terms (:mod:`.terms`, each a :class:`Term`), composed with ``+`` into a
  :class:`TimeModel`:
  :func:`trend`, :func:`season` (a stated period), :func:`step` (a persistent level shift)
  and :func:`blocks` (a time feature), with their exact window averages;
* :func:`time_forecast` (:mod:`.models`): least squares on a time model, evaluated at a
  future time or over a window, linear in the estimates (ζ returned), with an HC2
  standard error;
* :func:`~pyprog.timeseries.least_squares.leverages` and HC2 residuals
  (:mod:`.least_squares`), shared by both paths' intervals;
* splitters as objects (:mod:`.splits`), in the manner of scikit-learn's
  ``TimeSeriesSplit``: :class:`RollingOrigin` (backtest origins, the episode path's
  selection) and :class:`RandomFolds` / :class:`BlockedFolds` (cross-fitting, the rounds
  path's reward model);
* :class:`IntervalResult` (:mod:`.interval_results`): what every result with an interval
  shares, on both paths, and the default levels :data:`INTERVAL_ALPHA` (a forecast's
  two-sided interval) and :data:`TEST_ALPHA` (a one-sided test);
* :class:`ForecastError` (:mod:`.errors`): what the log cannot support, as opposed to the
  ``ValueError`` of bad input.

May import :mod:`pyprog.logs` (the times), :mod:`pyprog.utils` and :mod:`pyprog._ext`.
"""

from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.features import Crossed, DayOfWeek, PeriodBlocks
from pyprog.timeseries.interval_results import INTERVAL_ALPHA, TEST_ALPHA, IntervalResult
from pyprog.timeseries.models import TimeForecast, time_forecast
from pyprog.timeseries.splits import BlockedFolds, Folds, RandomFolds, RollingOrigin, Splitter
from pyprog.timeseries.terms import (
    Blocks,
    Season,
    Step,
    Term,
    TimeModel,
    Trend,
    blocks,
    parse_period,
    season,
    step,
    trend,
)

__all__ = [
    "INTERVAL_ALPHA",
    "TEST_ALPHA",
    "BlockedFolds",
    "Blocks",
    "Crossed",
    "DayOfWeek",
    "Folds",
    "ForecastError",
    "IntervalResult",
    "PeriodBlocks",
    "RandomFolds",
    "RollingOrigin",
    "Season",
    "Splitter",
    "Step",
    "Term",
    "TimeForecast",
    "TimeModel",
    "Trend",
    "blocks",
    "parse_period",
    "season",
    "step",
    "time_forecast",
    "trend",
]
