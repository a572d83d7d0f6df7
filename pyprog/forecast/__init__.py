"""Episode forecasts: a policy's future performance from past episodes (the paper's path).

From per-episode estimates (:mod:`pyprog.offpolicy.episodes`), fit a curve in time and forecast
the next ``delta`` episodes:

* :mod:`.bases` — the time bases (Fourier, polynomial, linear); :mod:`.forecasters` —
  forecasts linear in the past estimates (bases, windows, EWMA);
* :mod:`.estimators` — NIS (Pro-OLS) and NWIS (Pro-WLS), and ζ (:func:`~pyprog.ols_weights`);
* :mod:`.selection`, :mod:`.backtests`, :mod:`.blocks`, :mod:`.misspecification`,
  :mod:`.selected_intervals` — ``basis="auto"``: the forecaster chosen by rolling-origin
  backtests, in O(N) memory on long logs, and the interval after the choice;
* :mod:`.intervals` — wild-bootstrap intervals; :mod:`.safety` — the safety test;
* :mod:`.logged` — :func:`~pyprog.forecast_logs`, what ``pyprog forecast`` runs on episodes;
  :mod:`.plot` — a forecast drawn.

May import :mod:`pyprog.offpolicy`, :mod:`pyprog.timeseries`, :mod:`pyprog.logs`,
:mod:`pyprog.utils` and :mod:`pyprog._ext`; not its sibling :mod:`pyprog.value`.
"""
