"""Experiments: grids of runs kept in a folder, the one writer of runs into a store, sweeps.

* :mod:`.grid` — a grid of runs (env × algo × speed × seed), one setting each;
* :mod:`.runs` — run tasks into a :class:`~pyprog.results.ResultStore` (``pyprog run``,
  ``sweep`` and ``reproduce`` all write through it);
* :mod:`.sweep` — hyper-parameter sweeps, and the best setting per (env, algo, speed).

May import :mod:`pyprog.stats` and every layer below it (results, runner, learn, envs, the
forecasts, offpolicy, timeseries, logs, utils, _ext).
"""
