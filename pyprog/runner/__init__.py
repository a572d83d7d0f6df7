"""Running a learner on an environment: one run, many in parallel, a replay.

* :mod:`.loop` — ``pyprog.run(env, algo, speed=..., seed=...)``;
* :mod:`.adapter` — any Gymnasium environment seen the way the learners see one;
  :mod:`.checks` — what an environment returns, checked where it arrives;
* :mod:`.parallel` — many independent runs on local cores (joblib) or a Dask cluster;
* :mod:`.replay` — a run replayed, recording what its policy chose.

May import :mod:`pyprog.learn` and every layer below it (envs, the forecasts, offpolicy,
timeseries, logs, utils, _ext).
"""
