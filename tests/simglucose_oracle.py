"""Import simglucose, the oracle of the patient and NS-Diabetes tests, or say why not.

simglucose is installed without its declared dependencies (``pip install --no-deps
simglucose==0.2.11``): it pins ``gymnasium~=0.29.1``, which would downgrade Gymnasium in the
one environment that also runs NS-Gym. What its modules import is in pyprog's ``[test]`` extra
(the 2017 ``gym``, pandas, and ``pkg_resources`` from setuptools < 81).

Skips when simglucose is not installed (fails instead when ``PYPROG_REQUIRE_SIMGLUCOSE`` is
set, as CI sets it); fails when it is installed but cannot be imported, e.g. without ``gym``
or when setuptools >= 81 removed ``pkg_resources``.
"""

import importlib.util
import os
import warnings
from pathlib import Path
from typing import NoReturn

import pytest

INSTALL = "pip install --no-deps simglucose==0.2.11"
NOT_INSTALLED = (
    f"simglucose (the oracle) is not installed: {INSTALL} "
    "(without --no-deps its pins downgrade Gymnasium to 0.29)"
)


def _not_installed() -> NoReturn:
    if os.environ.get("PYPROG_REQUIRE_SIMGLUCOSE"):
        pytest.fail(f"PYPROG_REQUIRE_SIMGLUCOSE is set but {NOT_INSTALLED}")
    pytest.skip(NOT_INSTALLED)


def simglucose_params_dir() -> Path:
    """The installed simglucose's ``params`` folder, found without importing simglucose."""
    spec = importlib.util.find_spec("simglucose")
    if spec is None or not spec.submodule_search_locations:
        _not_installed()
    for location in spec.submodule_search_locations:
        folder = Path(location) / "params"
        if folder.is_dir():
            return folder
    pytest.fail(f"simglucose is installed but has no params folder under {spec.origin}")


def simglucose_classes() -> dict:
    """simglucose's classes and functions that the oracles use, by name."""
    if importlib.util.find_spec("simglucose") is None:
        _not_installed()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pkg_resources' deprecation notice from gym
            from simglucose.actuator.pump import InsulinPump
            from simglucose.analysis.risk import risk_index
            from simglucose.controller.base import Action
            from simglucose.patient.t1dpatient import Action as PatientAction
            from simglucose.patient.t1dpatient import T1DPatient
            from simglucose.sensor.cgm import CGMSensor
            from simglucose.sensor.noise_gen import CGMNoise
            from simglucose.simulation.env import T1DSimEnv
            from simglucose.simulation.scenario_gen import RandomScenario
    except ModuleNotFoundError as exc:
        if exc.name == "pkg_resources":
            pytest.fail(
                "simglucose is installed but cannot be imported: its `gym` dependency needs "
                'pkg_resources; pip install "setuptools<81" (pinned in pyprog[test])'
            )
        missing = (exc.name or "").split(".")[0]
        if missing in {"gym", "pandas"}:
            pytest.fail(
                f"simglucose is installed but cannot be imported: it needs {missing!r}, which "
                'pyprog[test] installs: pip install -e ".[test]"'
            )
        raise
    return {
        "Action": Action,
        "PatientAction": PatientAction,
        "CGMNoise": CGMNoise,
        "CGMSensor": CGMSensor,
        "InsulinPump": InsulinPump,
        "RandomScenario": RandomScenario,
        "T1DPatient": T1DPatient,
        "T1DSimEnv": T1DSimEnv,
        "risk_index": risk_index,
    }
