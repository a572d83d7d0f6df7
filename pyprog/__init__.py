"""pyprog: Prognosticator (Chandak et al., ICML 2020) with a Cython core.

Estimate each past episode's performance of a policy by importance sampling,
forecast its future performance by (weighted) least squares over time, and follow
the gradient of that forecast.

>>> import pyprog
>>> result = pyprog.run("reco", "pro-wls", speed=2, seed=0, episodes=300)
>>> result.returns.shape
(300,)

The public names are loaded on first use (PEP 562), so that ``import pyprog`` (and each
``pyprog`` command, whose errors should appear at once) costs only what it uses: the
kernel backend (chosen, and any warning about it given, at import) and the registration
of the environments with Gymnasium.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyprog._ext.backend import backend
from pyprog._version import __version__
from pyprog.envs import register_envs as _register_envs  # noqa: F401  (registers the envs)
from pyprog.utils.lazy import lazy_names

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from pyprog.envs.diabetes.parameters import basal_rate
    from pyprog.envs.diabetes.patient import simulate_patient
    from pyprog.forecast.bases import BASES, forecast_design, n_features, time_basis, time_index
    from pyprog.forecast.estimators import Forecast, nis_forecast, nwis_forecast, ols_weights
    from pyprog.forecast.forecasters import Forecaster
    from pyprog.forecast.logged import LogForecast, forecast_logs
    from pyprog.forecast.safety import SafetyTest, safety_test
    from pyprog.forecast.selection import Selection, select_forecaster
    from pyprog.learn.hyperparams import Hyper, default_hyper
    from pyprog.learn.learners import FTRLPG, ONPG, Learner, ProOLS, ProWLS
    from pyprog.learn.policies import GaussianPolicy, Policy, SoftmaxLinear, SoftmaxMLP
    from pyprog.offpolicy.episodes import PDISResult, discounted_returns, episode_ratios, pdis
    from pyprog.offpolicy.support import SupportWarning
    from pyprog.runner.loop import RunResult, run
    from pyprog.stats.summary import surrogate_regret
    from pyprog.timeseries.errors import ForecastError
    from pyprog.value.forecast import ValueForecast, forecast_value
    from pyprog.value.future_policy import FuturePolicy
    from pyprog.value.learning import LearnedPolicy, learn_for_future

#: The module that defines each lazily loaded public name.
_SOURCES = {
    "pyprog.envs.diabetes.parameters": ("basal_rate",),
    "pyprog.envs.diabetes.patient": ("simulate_patient",),  # imports numba
    "pyprog.forecast.bases": ("BASES", "forecast_design", "n_features", "time_basis", "time_index"),
    "pyprog.forecast.estimators": ("Forecast", "nis_forecast", "nwis_forecast", "ols_weights"),
    "pyprog.forecast.forecasters": ("Forecaster",),
    "pyprog.forecast.logged": ("LogForecast", "forecast_logs"),
    "pyprog.forecast.safety": ("SafetyTest", "safety_test"),
    "pyprog.forecast.selection": ("Selection", "select_forecaster"),
    "pyprog.learn.hyperparams": ("Hyper", "default_hyper"),
    "pyprog.learn.learners": ("FTRLPG", "ONPG", "Learner", "ProOLS", "ProWLS"),
    "pyprog.learn.policies": ("GaussianPolicy", "Policy", "SoftmaxLinear", "SoftmaxMLP"),
    "pyprog.offpolicy.episodes": ("PDISResult", "discounted_returns", "episode_ratios", "pdis"),
    "pyprog.offpolicy.support": ("SupportWarning",),
    "pyprog.runner.loop": ("RunResult", "run"),
    "pyprog.stats.summary": ("surrogate_regret",),
    "pyprog.timeseries.errors": ("ForecastError",),
    "pyprog.value.forecast": ("ValueForecast", "forecast_value"),
    "pyprog.value.future_policy": ("FuturePolicy",),
    "pyprog.value.learning": ("LearnedPolicy", "learn_for_future"),
}  # fmt: skip
__getattr__, __dir__ = lazy_names(__name__, _SOURCES)

__all__ = [
    "BASES",
    "FTRLPG",
    "ONPG",
    "Forecast",
    "ForecastError",
    "Forecaster",
    "FuturePolicy",
    "GaussianPolicy",
    "Hyper",
    "LearnedPolicy",
    "Learner",
    "LogForecast",
    "PDISResult",
    "Policy",
    "ProOLS",
    "ProWLS",
    "RunResult",
    "SafetyTest",
    "Selection",
    "SoftmaxLinear",
    "SoftmaxMLP",
    "SupportWarning",
    "ValueForecast",
    "__version__",
    "backend",
    "basal_rate",
    "default_hyper",
    "discounted_returns",
    "episode_ratios",
    "forecast_design",
    "forecast_logs",
    "forecast_value",
    "learn_for_future",
    "n_features",
    "nis_forecast",
    "nwis_forecast",
    "ols_weights",
    "pdis",
    "run",
    "safety_test",
    "select_forecaster",
    "simulate_patient",
    "surrogate_regret",
    "time_basis",
    "time_index",
]
