"""The UVa/Padova type-1-diabetes patient of simglucose, at numba speed.

simglucose's ``T1DPatient`` advances its 13-state ODE one minute at a time: it turns the
announced carbohydrate into what the patient eats this minute (at most 5 g/min), updates its
meal bookkeeping, then calls ``scipy.integrate.ode(...).set_integrator("dopri5").integrate(t + 1)``
with the inputs held constant over the minute. This module does the same with numba-jitted
functions over plain float64 arrays (cached per user, see :mod:`pyprog.utils.cache`):

* :func:`patient_rhs` is ``T1DPatient.model`` term by term (same operations, same order), in
  :mod:`pyprog.envs.diabetes.model`;
* :func:`dopri5_minute` (:mod:`pyprog.envs.diabetes.dopri5`) is one ``integrate(t + 1)`` call
  of scipy's dopri5 (Hairer's DOPRI5 as translated to C in SciPy): with scipy's defaults (rtol
  1e-6, atol 1e-12, nsteps 500, safety 0.9, step ratio in [0.2, 10], Lund stabilisation beta
  0.04) and, as in simglucose, a fresh start every minute: the first derivative and the
  initial step (``HINIT``) are recomputed at each call, because scipy never writes the last
  step size back for the next call;
* :func:`patient_step` is ``T1DPatient.step``: meal announcement, eating at 5 g/min, the
  ``_last_Qsto`` / ``_last_foodtaken`` / ``is_eating`` bookkeeping, then :func:`dopri5_minute`.

:func:`simulate_patient` and :func:`simulate_patients` run whole days (the per-minute loop is
jitted, so Python is touched once per day). Blood glucose is what simglucose reports as BG,
``patient.observation.Gsub = x[12] / Vg``: the subcutaneous glucose mass over the glucose
distribution volume (mg/dL).

The results agree with simglucose to about 1e-11 mg/dL (and take the same number of RHS calls),
not bit for bit: NumPy evaluates ``np.tanh`` (the gastric emptying rate) with its own SIMD
routines on CPUs with AVX-512, which differ from the C library's ``tanh`` in the last bit.

Packed patient parameters
-------------------------
The jitted functions take a patient as one float64 vector of length ``N_PARAMS`` laid out as
``PARAM_NAMES``: the initial state (CSV columns ``"x0_ 1"`` … ``"x0_13"``) in ``[0:13]``, then
the model constants (``"BW"``, ``"kabs"``, …) at the index constants of
:mod:`pyprog.envs.diabetes.model` (``BW``, ``KABS``, …). :func:`pack_patient` builds it from
a name or a parameter mapping.

Examples
--------
>>> import numpy as np
>>> from pyprog.envs.diabetes.patient import simulate_patient
>>> cho = np.zeros(1440); cho[420] = 50.0          # a 50 g breakfast announced at 7:00
>>> insulin = np.full(1440, 0.0108)                 # U/min, about the basal rate
>>> insulin[420] += 5.0                             # a 5 U bolus with the meal
>>> trace = simulate_patient("adolescent#003", cho, insulin)
>>> trace.bg.shape, trace.states.shape
((1441,), (1441, 13))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numba
import numpy as np
from numpy.typing import ArrayLike

# The model and its integrator moved out of this module; names that code imports from here
# (N_WORK, STATUS_*, KM0, U2SS, ... : tests, benchmarks, day.py) are re-exported (noqa: F401).
from pyprog.envs.diabetes.dopri5 import (  # noqa: F401
    N_WORK,
    STATUS_NOT_FINITE,
    STATUS_OK,
    STATUS_STEP_TOO_SMALL,
    STATUS_TOO_MANY_STEPS,
    IntegrationError,
    dopri5_minute,
    new_workspace,
)
from pyprog.envs.diabetes.model import (  # noqa: F401
    BW,
    KM0,
    N_PARAMS,
    N_STATES,
    PARAM_NAMES,
    STATE_NAMES,
    U2SS,
    VG,
    VI,
    blood_glucose,
    patient_rhs,
)
from pyprog.envs.diabetes.parameters import patient_params
from pyprog.utils.cache import cached_njit

__all__ = [
    "N_PARAMS",
    "N_STATES",
    "PARAM_NAMES",
    "STATE_NAMES",
    "IntegrationError",
    "PatientTrace",
    "blood_glucose",
    "dopri5_minute",
    "new_eating_state",
    "new_workspace",
    "pack_patient",
    "patient_rhs",
    "patient_step",
    "simulate_patient",
    "simulate_patients",
]


# --------------------------------------------------------------------------------------------
# Meal bookkeeping of T1DPatient, one small float64 vector (N_EATING,)
# --------------------------------------------------------------------------------------------
PLANNED_MEAL = 0  # announced carbohydrate not eaten yet (g)
LAST_CHO = 1  # what was eaten in the previous minute (g/min)
LAST_QSTO = 2  # stomach content when the current meal started (mg)
LAST_FOODTAKEN = 3  # carbohydrate eaten since the current meal started (g)
IS_EATING = 4  # 1.0 while eating
N_EATING = 5
EAT_RATE = 5.0  # g/min, T1DPatient.EAT_RATE


class PatientTrace(NamedTuple):
    """One simulated patient-day.

    Attributes
    ----------
    bg : numpy.ndarray, shape (T + 1,)
        Blood glucose (mg/dL) before the first minute and after each minute, as simglucose's
        ``patient.observation.Gsub`` = ``x[12] / Vg``.
    states : numpy.ndarray, shape (T + 1, 13)
        The ODE state at the same times (see ``STATE_NAMES``).
    t : numpy.ndarray, shape (T + 1,)
        The integrator's time at the same instants (min), as simglucose's ``patient.t``; it
        accumulates ``t + 1`` in floating point exactly as scipy does.
    n_rhs : int
        Number of right-hand-side evaluations over the day (scipy's ``NFCN`` summed over minutes).
    """

    bg: np.ndarray
    states: np.ndarray
    t: np.ndarray
    n_rhs: int


# --------------------------------------------------------------------------------------------
# Jitted kernels
# --------------------------------------------------------------------------------------------
# NumPy's error model: a float division by zero gives inf/NaN, as in simglucose's NumPy
# arithmetic, instead of raising; broken states are then reported as IntegrationError.
_jit = cached_njit(error_model="numpy")


@_jit
def new_eating_state(x0):
    """Meal bookkeeping of a freshly reset ``T1DPatient`` (``N_EATING``,) for state ``x0``."""
    eating = np.zeros(N_EATING)
    eating[LAST_QSTO] = x0[0] + x0[1]
    return eating


@_jit
def patient_step(x, t, params, eating, cho, insulin, work):
    """``T1DPatient.step(Action(CHO=cho, insulin=insulin))``: one minute of the patient.

    Parameters
    ----------
    x : ndarray, shape (13,)
        State at ``t``; overwritten with the state one minute later.
    t : float
        Current time (min), as ``patient.t``.
    params : ndarray, shape (N_PARAMS,)
        Packed patient parameters.
    eating : ndarray, shape (N_EATING,)
        Meal bookkeeping (:func:`new_eating_state`); updated in place.
    cho : float
        Carbohydrate announced this minute (g). It is added to the planned meal, which the
        patient eats at ``EAT_RATE`` = 5 g/min.
    insulin : float
        Insulin delivered this minute (U/min).
    work : ndarray, shape (N_WORK, 13)
        Scratch space (:func:`new_workspace`).

    Returns
    -------
    status : int
        ``STATUS_OK`` or a failure code of :func:`dopri5_minute`.
    t : float
        The new time.
    n_rhs : int
        Right-hand-side evaluations in this minute.
    """
    # _announce_meal: eat at most EAT_RATE of the planned meal this minute
    planned = eating[PLANNED_MEAL] + cho
    if planned > 0:
        to_eat = EAT_RATE if planned >= EAT_RATE else planned
        planned -= to_eat
        planned = planned if planned > 0 else 0.0
    else:
        to_eat = 0.0
    eating[PLANNED_MEAL] = planned

    # A meal starts: remember the stomach content it is digested on top of
    if to_eat > 0 and eating[LAST_CHO] <= 0:
        eating[LAST_QSTO] = x[0] + x[1]
        eating[LAST_FOODTAKEN] = 0.0
        eating[IS_EATING] = 1.0
    if eating[IS_EATING] > 0:
        eating[LAST_FOODTAKEN] += to_eat
    # The meal ends
    if to_eat <= 0 and eating[LAST_CHO] > 0:
        eating[IS_EATING] = 0.0
    eating[LAST_CHO] = to_eat

    return dopri5_minute(
        x, t, params, to_eat, insulin, eating[LAST_QSTO], eating[LAST_FOODTAKEN], work
    )


@_jit
def _simulate_day(params, cho, insulin, states, times):
    """Run ``len(cho)`` minutes from ``params[:13]``; fill ``states`` (T+1, 13), ``times`` (T+1,).

    Returns ``(status, failed_minute, n_rhs)``; ``failed_minute`` is -1 on success.
    """
    x = params[:N_STATES].copy()
    eating = new_eating_state(x)
    work = new_workspace()
    t = 0.0
    n_rhs = 0
    states[0] = x
    times[0] = t
    for minute in range(cho.shape[0]):
        status, t, n = patient_step(x, t, params, eating, cho[minute], insulin[minute], work)
        n_rhs += n
        if status == STATUS_OK:
            for i in range(N_STATES):
                if not math.isfinite(x[i]):
                    status = STATUS_NOT_FINITE
        if status != STATUS_OK:
            return status, minute, n_rhs
        states[minute + 1] = x
        times[minute + 1] = t
    return STATUS_OK, -1, n_rhs


@cached_njit(parallel=True, error_model="numpy")
def _simulate_batch(params, cho, insulin, bg, status, failed_minute, n_rhs):
    """:func:`_simulate_day` for each row, in parallel; BG (B, T+1) into ``bg``."""
    n_days, n_minutes = cho.shape
    for k in numba.prange(n_days):
        states = np.empty((n_minutes + 1, N_STATES))
        times = np.empty(n_minutes + 1)
        status[k], failed_minute[k], n_rhs[k] = _simulate_day(
            params[k], cho[k], insulin[k], states, times
        )
        for m in range(n_minutes + 1):
            bg[k, m] = states[m, 12] / params[k, VG]


# --------------------------------------------------------------------------------------------
# Public API: validation once at the boundary, then one jitted call per day (or batch)
# --------------------------------------------------------------------------------------------
PatientLike = str | Mapping[str, float] | np.ndarray


def _patient_label(patient: PatientLike, default: str) -> str:
    if isinstance(patient, str):
        return repr(patient)
    if isinstance(patient, Mapping) and isinstance(patient.get("Name"), str):
        return repr(patient["Name"])
    return default


def pack_patient(patient: PatientLike) -> np.ndarray:
    """Pack a patient's parameters into the float64 vector the jitted kernels use.

    Parameters
    ----------
    patient : str, mapping or ndarray
        A simglucose patient name (``"adolescent#003"``), a mapping with at least the keys
        ``PARAM_NAMES`` (e.g. a row of ``vpatient_params.csv`` as returned by
        :func:`pyprog.envs.diabetes.parameters.patient_params`; other keys are ignored), or an
        already packed vector of shape (N_PARAMS,).

    Returns
    -------
    numpy.ndarray, shape (N_PARAMS,)
        Initial state in ``[0:13]``, model constants at ``BW``, ``KABS``, … (see ``PARAM_NAMES``).

    Raises
    ------
    ValueError
        Unknown patient name (the valid names are listed), missing or non-finite parameters,
        or a non-positive body weight or distribution volume.

    Examples
    --------
    >>> from pyprog.envs.diabetes.patient import BW, pack_patient
    >>> float(pack_patient("adolescent#003")[BW])
    44.791
    """
    if isinstance(patient, str):
        patient = patient_params(patient)
    if isinstance(patient, Mapping):
        missing = [name for name in PARAM_NAMES if name not in patient]
        if missing:
            raise ValueError(
                f"patient parameters are missing {missing}; pass a simglucose patient name or a "
                "row of vpatient_params.csv (pyprog.envs.diabetes.parameters.patient_params)"
            )
        packed = np.array([_param_value(name, patient[name]) for name in PARAM_NAMES])
    else:
        raw = np.asarray(patient)
        if raw.dtype.kind not in "biuf":
            raise ValueError(
                f"a packed patient must hold real numbers; got dtype {raw.dtype}. Pass a "
                "patient name or a parameter mapping instead"
            )
        packed = np.array(raw, dtype=np.float64)
        if packed.shape != (N_PARAMS,):
            raise ValueError(
                f"a packed patient must have shape ({N_PARAMS},); got {packed.shape}. Pass a "
                "patient name or a parameter mapping instead"
            )
    bad = np.flatnonzero(~np.isfinite(packed))
    if bad.size:
        name = PARAM_NAMES[bad[0]]
        raise ValueError(f"patient parameter {name!r} must be finite; got {packed[bad[0]]}")
    for index in (BW, VG, VI):
        if packed[index] <= 0:
            raise ValueError(
                f"patient parameter {PARAM_NAMES[index]!r} must be > 0; got {packed[index]}"
            )
    return packed


def _param_value(name: str, value: object) -> float:
    """A patient parameter as a float: a real number (int, float, NumPy scalar, numeric
    string as in the CSV), never None, a list, a complex or a bool."""
    if isinstance(value, (bool, np.bool_, complex, np.complexfloating)) or value is None:
        raise ValueError(f"patient parameter {name!r} must be a real number; got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"patient parameter {name!r} must be a real number; got {value!r}"
        ) from None


def _first_non_finite(bg: np.ndarray) -> int:
    """Index of the first non-finite blood glucose, or -1."""
    bad = np.flatnonzero(~np.isfinite(bg))
    return int(bad[0]) if bad.size else -1


def _validate_inputs(values: ArrayLike, argument: str, unit: str, ndim: int) -> np.ndarray:
    try:
        array = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{argument} must be an array of numbers ({unit}); {exc}") from None
    if array.ndim != ndim:
        shape = "(T,)" if ndim == 1 else "(B, T)"
        raise ValueError(f"{argument} must have shape {shape}; got shape {array.shape}")
    bad = ~np.isfinite(array) | (array < 0)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        where = index[0] if ndim == 1 else index
        raise ValueError(
            f"{argument} must be finite and >= 0 ({unit}); got {array[index]} at index {where}"
        )
    return array


def simulate_patient(patient: PatientLike, cho: ArrayLike, insulin: ArrayLike) -> PatientTrace:
    """Simulate one patient minute by minute, as simglucose's ``T1DPatient`` does.

    Equivalent to ``p = T1DPatient.withName(name)`` followed by, for each minute ``m``,
    ``p.step(Action(CHO=cho[m], insulin=insulin[m]))``.

    Parameters
    ----------
    patient : str, mapping or ndarray
        Patient name, parameter mapping or packed vector (see :func:`pack_patient`).
    cho : array_like, shape (T,)
        Carbohydrate announced in each minute (g); the patient eats it at 5 g/min.
    insulin : array_like, shape (T,)
        Insulin delivered in each minute (U/min), basal plus bolus.

    Returns
    -------
    PatientTrace
        ``bg`` (T+1,) in mg/dL, ``states`` (T+1, 13), ``t`` (T+1,) and ``n_rhs``.

    Raises
    ------
    ValueError
        Bad patient (see :func:`pack_patient`); ``cho`` or ``insulin`` not 1-D, of different
        lengths, non-finite or negative (the message names the argument and the index).
    IntegrationError
        The integrator could not meet its tolerance in some minute (named in the message).

    Examples
    --------
    >>> import numpy as np
    >>> trace = simulate_patient("child#005", np.zeros(60), np.zeros(60))
    >>> bool(trace.bg[-1] > trace.bg[0])  # no insulin for an hour: glucose rises
    True
    """
    params = pack_patient(patient)
    cho = _validate_inputs(cho, "cho", "g of announced carbohydrate per minute", ndim=1)
    insulin = _validate_inputs(insulin, "insulin", "U/min", ndim=1)
    if cho.shape != insulin.shape:
        raise ValueError(
            f"cho and insulin must have the same length; got {cho.shape[0]} and {insulin.shape[0]}"
        )
    n_minutes = cho.shape[0]
    states = np.empty((n_minutes + 1, N_STATES))
    times = np.empty(n_minutes + 1)
    status, failed_minute, n_rhs = _simulate_day(params, cho, insulin, states, times)
    if status != STATUS_OK:
        raise IntegrationError(
            _patient_label(patient, "the given patient"), int(failed_minute), int(status)
        )
    with np.errstate(over="ignore", invalid="ignore"):
        bg = states[:, 12] / params[VG]
    bad = _first_non_finite(bg)
    if bad >= 0:  # e.g. a tiny Vg: finite states, glucose beyond float64
        raise IntegrationError(
            _patient_label(patient, "the given patient"), max(bad - 1, 0), STATUS_NOT_FINITE
        )
    return PatientTrace(bg, states, times, int(n_rhs))


def simulate_patients(
    params_batch: np.ndarray | Sequence[PatientLike],
    cho_batch: ArrayLike,
    insulin_batch: ArrayLike,
) -> np.ndarray:
    """Simulate many patient-days in parallel (``numba.prange`` over days).

    Parameters
    ----------
    params_batch : ndarray of shape (B, N_PARAMS), or sequence of B patients
        Packed patients (:func:`pack_patient`), or names / parameter mappings.
    cho_batch : array_like, shape (B, T)
        Carbohydrate announced in each minute of each day (g).
    insulin_batch : array_like, shape (B, T)
        Insulin delivered in each minute of each day (U/min).

    Returns
    -------
    numpy.ndarray, shape (B, T + 1)
        Blood glucose (mg/dL); row ``k`` equals ``simulate_patient(...).bg`` for day ``k``.

    Raises
    ------
    ValueError
        Bad patients or inputs (the message names the argument and the index).
    IntegrationError
        The integrator failed for some day (the first failing one is named).

    Examples
    --------
    >>> import numpy as np
    >>> cho = np.zeros((2, 60)); cho[1, 10] = 40.0
    >>> bg = simulate_patients(["adult#001", "adult#001"], cho, np.zeros((2, 60)))
    >>> bg.shape, bool(bg[1, -1] > bg[0, -1])
    ((2, 61), True)
    """
    if not isinstance(params_batch, np.ndarray):
        params_batch = list(params_batch)  # a generator is read once, here
    if isinstance(params_batch, np.ndarray) and params_batch.ndim == 2:
        packed = np.stack([pack_patient(row) for row in params_batch])
        labels = [f"patient {k} of the batch" for k in range(packed.shape[0])]
    else:
        packed = np.stack([pack_patient(p) for p in params_batch])
        labels = [
            f"{_patient_label(p, 'patient')} (day {k} of the batch)"
            for k, p in enumerate(params_batch)
        ]
    cho = _validate_inputs(cho_batch, "cho_batch", "g of announced carbohydrate per minute", 2)
    insulin = _validate_inputs(insulin_batch, "insulin_batch", "U/min", ndim=2)
    if cho.shape != insulin.shape or cho.shape[0] != packed.shape[0]:
        raise ValueError(
            "params_batch, cho_batch and insulin_batch must describe the same days: got "
            f"{packed.shape[0]} patients, cho_batch {cho.shape}, insulin_batch {insulin.shape}"
        )
    n_days, n_minutes = cho.shape
    bg = np.empty((n_days, n_minutes + 1))
    status = np.empty(n_days, dtype=np.int64)
    failed_minute = np.empty(n_days, dtype=np.int64)
    n_rhs = np.empty(n_days, dtype=np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        _simulate_batch(packed, cho, insulin, bg, status, failed_minute, n_rhs)
    for k in range(n_days):  # glucose beyond float64 with finite states (e.g. a tiny Vg)
        bad = _first_non_finite(bg[k]) if status[k] == STATUS_OK else -1
        if bad >= 0:
            status[k], failed_minute[k] = STATUS_NOT_FINITE, max(bad - 1, 0)
    failed = np.flatnonzero(status != STATUS_OK)
    if failed.size:
        k = int(failed[0])
        raise IntegrationError(labels[k], int(failed_minute[k]), int(status[k]))
    return bg
