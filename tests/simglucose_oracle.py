"""Import simglucose, the oracle of the patient and NS-Diabetes tests, or say why not.

Skips when simglucose is not installed; fails (does not skip) when it is installed but
cannot be imported, which happens when setuptools >= 81 removed the ``pkg_resources``
that its 2017 ``gym`` dependency needs.
"""

import importlib.util
import warnings

import pytest


def simglucose_classes() -> dict:
    """simglucose's classes and functions that the oracles use, by name."""
    if importlib.util.find_spec("simglucose") is None:
        pytest.skip('simglucose (the oracle) is not installed: pip install "pyprog[test]"')
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
