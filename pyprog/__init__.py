"""pyprog: Prognosticator (Chandak et al., ICML 2020) with a Cython core.

Estimate each past episode's performance of a policy by importance sampling,
forecast its future performance by (weighted) least squares over time, and follow
the gradient of that forecast.

>>> import pyprog
>>> result = pyprog.run("reco", "pro-wls", speed=2, seed=0, episodes=300)
>>> result.returns.shape
(300,)
"""

from pyprog._ext.backend import backend
from pyprog._version import __version__
from pyprog.envs import register_envs as _register_envs  # noqa: F401  (registers the envs)
from pyprog.envs.diabetes.parameters import basal_rate
from pyprog.forecast.bases import BASES, forecast_design, n_features, time_basis, time_index
from pyprog.forecast.estimators import (
    Forecast,
    PDISResult,
    discounted_returns,
    episode_ratios,
    nis_forecast,
    nwis_forecast,
    ols_weights,
    pdis,
)
from pyprog.forecast.forecasters import Forecaster, ForecastError
from pyprog.forecast.logged import LogForecast, forecast_logs
from pyprog.forecast.safety import SafetyTest, safety_test
from pyprog.forecast.selection import Selection, select_forecaster
from pyprog.forecast.value import ValueForecast, forecast_value
from pyprog.learn.hyperparams import Hyper, default_hyper
from pyprog.learn.learners import FTRLPG, ONPG, Learner, ProOLS, ProWLS
from pyprog.learn.policies import GaussianPolicy, Policy, SoftmaxLinear, SoftmaxMLP
from pyprog.runner.loop import RunResult, run
from pyprog.stats.summary import surrogate_regret

__all__ = [
    "BASES",
    "FTRLPG",
    "ONPG",
    "Forecast",
    "ForecastError",
    "Forecaster",
    "GaussianPolicy",
    "Hyper",
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


def __getattr__(name: str):
    # the patient model imports numba: load it on first use, not with pyprog
    if name == "simulate_patient":
        from pyprog.envs.diabetes.patient import simulate_patient

        return simulate_patient
    raise AttributeError(f"module 'pyprog' has no attribute {name!r}")
