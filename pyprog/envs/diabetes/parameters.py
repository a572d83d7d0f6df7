"""Patient, pump and sensor parameters of the UVa/Padova simulator, shipped with pyprog.

The tables are simglucose's (https://github.com/jxx123/simglucose): ``data/vpatient_params.csv``
(the 30 virtual patients), ``data/pump_params.csv`` and ``data/sensor_params.csv`` are
byte-for-byte copies of simglucose 0.2.11's ``simglucose/params/`` files, Copyright (c) 2017
Jinyu Xie, MIT License (``data/LICENSE``; provenance and checksums in ``data/NOTICE``).
Shipping them means NS-Diabetes needs neither simglucose nor the Gymnasium 0.29 it pins;
``tests/test_simglucose_data.py`` checks that they equal simglucose's own files whenever
simglucose is installed. simglucose's other data file, ``Quest.csv`` (its basal-bolus
controller's patient therapy table), is not read by pyprog and not shipped. The meal
scenario needs no data file: its constants are in :mod:`pyprog.envs.diabetes.day`.

Examples
--------
>>> from pyprog.envs.diabetes.parameters import patient_names, patient_params
>>> patient_names()[:2]
['adolescent#001', 'adolescent#002']
>>> patient_params("adolescent#003")["BW"]
44.791
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

__all__ = [
    "basal_rate",
    "data_dir",
    "patient_names",
    "patient_params",
    "pump_names",
    "pump_params",
    "sensor_names",
    "sensor_params",
]

_PACKAGE = "pyprog.envs.diabetes"


@functools.lru_cache(maxsize=1)
def data_dir() -> Path:
    """The folder of parameter tables shipped with pyprog (``pyprog/envs/diabetes/data``).

    Returns
    -------
    pathlib.Path
        Folder holding ``vpatient_params.csv``, ``pump_params.csv`` and ``sensor_params.csv``
        (simglucose 0.2.11's files, with its ``LICENSE`` and a ``NOTICE``).

    Raises
    ------
    FileNotFoundError
        If the tables are missing from this pyprog installation (a broken install).
    """
    folder = Path(str(resources.files(_PACKAGE).joinpath("data")))
    if not (folder / "vpatient_params.csv").is_file():
        raise FileNotFoundError(
            f"pyprog's patient parameter tables are missing from {folder}; this pyprog "
            "installation is incomplete: reinstall pyprog"
        )
    return folder


@functools.cache
def _read_table(filename: str) -> dict[str, dict[str, float]]:
    """``{Name: {column: value}}`` for one shipped CSV, every column but ``Name`` a float."""
    path = data_dir() / filename
    table: dict[str, dict[str, float]] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            name = row.pop("Name")
            table[name] = {column: float(value) for column, value in row.items()}
    return table


def _lookup(filename: str, kind: str, name: str) -> dict[str, float]:
    table = _read_table(filename)
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; valid names are: {', '.join(table)}")
    return dict(table[name])  # a copy: the cached table must not be edited by callers


def patient_names() -> list[str]:
    """Names of simglucose's 30 virtual patients, in the CSV's order.

    Returns
    -------
    list of str
        ``adolescent#001`` … ``adolescent#010``, ``adult#001`` … ``adult#010``,
        ``child#001`` … ``child#010``.
    """
    return list(_read_table("vpatient_params.csv"))


def patient_params(name: str) -> dict[str, float]:
    """One virtual patient's row of ``vpatient_params.csv``.

    Parameters
    ----------
    name : str
        Patient name, e.g. ``"adolescent#003"``.

    Returns
    -------
    dict of str to float
        Every column but ``Name``, with the CSV's column names: the initial state
        ``"x0_ 1"`` … ``"x0_13"``, body weight ``"BW"`` (kg), the model constants
        (``"kabs"``, ``"kmax"``, ``"Vg"``, …) and the bookkeeping columns ``"i"`` and
        ``"patient_history"``. A fresh copy on every call.

    Raises
    ------
    ValueError
        If no patient has this name (the message lists the valid names).

    Examples
    --------
    >>> p = patient_params("child#005")
    >>> p["x0_ 4"] / p["Vg"] > 0  # initial plasma glucose, mg/dL
    True
    """
    return _lookup("vpatient_params.csv", "simglucose patient", name)


def pump_names() -> list[str]:
    """Names of the insulin pumps in ``pump_params.csv``."""
    return list(_read_table("pump_params.csv"))


def pump_params(name: str = "Insulet") -> dict[str, float]:
    """One insulin pump's row of ``pump_params.csv``.

    Parameters
    ----------
    name : str, default "Insulet"
        Pump name (see :func:`pump_names`).

    Returns
    -------
    dict of str to float
        ``min_bolus``, ``max_bolus``, ``inc_bolus``, ``min_basal``, ``max_basal``,
        ``inc_basal`` and ``sample_time``.

    Raises
    ------
    ValueError
        If no pump has this name (the message lists the valid names).
    """
    return _lookup("pump_params.csv", "insulin pump", name)


def sensor_names() -> list[str]:
    """Names of the CGM sensors in ``sensor_params.csv``."""
    return list(_read_table("sensor_params.csv"))


def sensor_params(name: str = "Dexcom") -> dict[str, float]:
    """One CGM sensor's row of ``sensor_params.csv``.

    Parameters
    ----------
    name : str, default "Dexcom"
        Sensor name (see :func:`sensor_names`).

    Returns
    -------
    dict of str to float
        Noise model ``PACF``, ``gamma``, ``lambda``, ``delta``, ``xi``; ``sample_time`` (min);
        clipping bounds ``min`` and ``max`` (mg/dL).

    Raises
    ------
    ValueError
        If no sensor has this name (the message lists the valid names).
    """
    return _lookup("sensor_params.csv", "CGM sensor", name)


def basal_rate(patient: str | Mapping[str, float]) -> float:
    """A patient's own basal insulin rate (U/min), the rate that holds it at steady state.

    ``u2ss · BW / 6000``, as simglucose's ``T1DPatient`` computes it: ``u2ss`` is the
    steady-state insulin infusion (pmol/kg/min) and ``BW`` the body weight (kg); 6000
    converts pmol to U (1 U = 6000 pmol).

    Parameters
    ----------
    patient : str or mapping
        A simglucose patient name, or a mapping with ``"u2ss"`` and ``"BW"`` (e.g.
        :func:`patient_params`).

    Returns
    -------
    float
        Units of insulin per minute.

    Examples
    --------
    >>> round(basal_rate("adult#001"), 5)
    0.02112
    >>> basal_rate({"u2ss": 1.5, "BW": 60.0})
    0.015
    """
    params = patient_params(patient) if isinstance(patient, str) else patient
    if not isinstance(params, Mapping) or "u2ss" not in params or "BW" not in params:
        raise ValueError(
            "patient must be a simglucose patient name or a mapping with 'u2ss' and 'BW'; "
            f"got {patient!r}"
        )
    u2ss, bw = float(params["u2ss"]), float(params["BW"])
    if not (u2ss >= 0 and bw > 0) or u2ss == float("inf") or bw == float("inf"):
        raise ValueError(f"patient needs finite u2ss >= 0 and BW > 0; got u2ss={u2ss}, BW={bw}")
    return u2ss * bw / 6000.0
