"""Learners: Pro-OLS, Pro-WLS (Prognosticator), FTRL-PG and ONPG, and what they are built of.

* :mod:`.learners` — the learners, which differ only in how they weight the past;
* :mod:`.policies` — softmax (linear, MLP) and Gaussian policies with their gradients;
* :mod:`.buffer` — the last episodes, in play order; :mod:`.optim` — first-order optimisers;
* :mod:`.hyperparams` — a learner's hyper-parameters, checked, and the paper's settings.

May import :mod:`pyprog.envs` and every layer below it (the forecasts of
:mod:`pyprog.forecast`, offpolicy, timeseries, logs, utils, _ext).
"""
