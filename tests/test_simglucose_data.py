"""A patient's own basal rate (pyprog.basal_rate), from simglucose's parameters."""

import numpy as np
import pytest

import pyprog
from pyprog.envs.diabetes.parameters import patient_params
from pyprog.envs.diabetes.patient import simulate_patient


@pytest.mark.parametrize("name", ["adult#001", "adolescent#008", "child#003"])
def test_basal_rate_holds_a_fasting_patient_at_steady_state(name):
    """u2ss · BW / 6000 U/min is the rate at which simglucose's patient model stays at its
    initial (steady) state: a fasting day at that rate keeps blood glucose flat."""
    rate = pyprog.basal_rate(name)
    p = patient_params(name)
    assert rate == pytest.approx(p["u2ss"] * p["BW"] / 6000.0, rel=1e-15)
    bg = simulate_patient(name, np.zeros(1440), np.full(1440, rate)).bg
    np.testing.assert_allclose(bg, bg[0], rtol=1e-8)
    # a fixed 0.015 U/min is not every patient's basal: it moves glucose by > 10 mg/dL
    off = simulate_patient(name, np.zeros(1440), np.full(1440, 0.015)).bg
    assert np.abs(off - bg[0]).max() > 10.0


def test_basal_rate_of_a_parameter_mapping():
    assert pyprog.basal_rate({"u2ss": 1.5, "BW": 60.0}) == pytest.approx(0.015)
    assert pyprog.basal_rate(patient_params("adult#002")) == pyprog.basal_rate("adult#002")


@pytest.mark.parametrize(
    "patient, match",
    [
        ("adult#099", "adult#001"),  # unknown name: the valid names are listed
        ({"BW": 60.0}, "'u2ss' and 'BW'"),
        ({"u2ss": 1.0, "BW": 0.0}, "BW > 0"),
        ({"u2ss": float("nan"), "BW": 60.0}, "u2ss >= 0"),
        (3.0, "simglucose patient name or a mapping"),
    ],
)
def test_basal_rate_bad_input(patient, match):
    with pytest.raises(ValueError, match=match):
        pyprog.basal_rate(patient)
