"""simglucose's parameter tables as pyprog ships them, and a patient's own basal rate."""

import hashlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from simglucose_oracle import simglucose_params_dir

import pyprog
from pyprog.envs.diabetes.parameters import data_dir, patient_params
from pyprog.envs.diabetes.patient import simulate_patient

SHIPPED = ("vpatient_params.csv", "pump_params.csv", "sensor_params.csv")


@pytest.mark.parametrize("filename", SHIPPED)
def test_shipped_tables_equal_simglucoses_files(filename):
    """The copies in pyprog/envs/diabetes/data/ are simglucose's own files, byte for byte
    (skips, saying how to install it, when simglucose is not installed)."""
    ours = (data_dir() / filename).read_bytes()
    theirs = (simglucose_params_dir() / filename).read_bytes()
    assert ours == theirs, f"{filename} differs from the installed simglucose's"


def test_shipped_tables_carry_simglucoses_licence_and_checksums():
    folder = data_dir()
    assert folder.parent.name == "diabetes" and folder.parent.parent.name == "envs"
    licence = (folder / "LICENSE").read_text()
    assert licence.startswith("Copyright (c) 2017 Jinyu Xie") and "Permission is hereby" in licence
    notice = (folder / "NOTICE").read_text()
    assert "simglucose 0.2.11" in notice and "MIT License" in notice
    for filename in SHIPPED:
        digest = hashlib.sha256((folder / filename).read_bytes()).hexdigest()
        assert f"{digest}  {filename}" in notice, f"NOTICE's checksum of {filename} is stale"


def test_parameters_need_no_simglucose_or_gym():
    """With simglucose, gym and pandas made unimportable, the tables still load from pyprog."""
    code = textwrap.dedent(
        """
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"simglucose", "gym", "pandas"}:
                    raise ModuleNotFoundError(f"blocked: {name}", name=name)

        sys.meta_path.insert(0, Block())
        from pyprog.envs.diabetes.parameters import data_dir, patient_names, pump_params
        assert len(patient_names()) == 30, patient_names()
        assert pump_params()["max_bolus"] == 30.0
        print(data_dir())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(data_dir())


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
