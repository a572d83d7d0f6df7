"""The UVa/Padova type-1-diabetes patient of simglucose, at numba speed.

simglucose's ``T1DPatient`` advances its 13-state ODE one minute at a time: it turns the
announced carbohydrate into what the patient eats this minute (at most 5 g/min), updates its
meal bookkeeping, then calls ``scipy.integrate.ode(...).set_integrator("dopri5").integrate(t + 1)``
with the inputs held constant over the minute. This module does the same with numba-jitted
functions over plain float64 arrays (cached per user, see :mod:`pyprog.utils.cache`):

* :func:`patient_rhs` is ``T1DPatient.model`` term by term (same operations, same order);
* :func:`dopri5_minute` is one ``integrate(t + 1)`` call of scipy's dopri5 (Hairer's DOPRI5 as
  translated to C in SciPy): with scipy's defaults (rtol 1e-6, atol 1e-12, nsteps 500, safety
  0.9, step ratio in [0.2, 10], Lund stabilisation beta 0.04) and, as in simglucose, a fresh
  start every minute: the first derivative and the initial step (``HINIT``) are recomputed at
  each call, because scipy never writes the last step size back for the next call;
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
the model constants (``"BW"``, ``"kabs"``, …) at the index constants of this module
(``BW``, ``KABS``, …). :func:`pack_patient` builds it from a name or a parameter mapping.

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
# State vector x (13,), in simglucose's order and units
# --------------------------------------------------------------------------------------------
STATE_NAMES = (
    "Qsto1",  # 0  solid glucose in the stomach (mg)
    "Qsto2",  # 1  liquid glucose in the stomach (mg)
    "Qgut",  # 2  glucose in the intestine (mg)
    "Gp",  # 3  plasma glucose (mg/kg)
    "Gt",  # 4  tissue glucose (mg/kg)
    "Ip",  # 5  plasma insulin (pmol/kg)
    "X",  # 6  insulin action on glucose utilisation
    "I1",  # 7  delayed insulin signal
    "Id",  # 8  insulin action on glucose production
    "Il",  # 9  liver insulin (pmol/kg)
    "Isc1",  # 10 subcutaneous insulin, first compartment (pmol/kg)
    "Isc2",  # 11 subcutaneous insulin, second compartment (pmol/kg)
    "Gs",  # 12 subcutaneous glucose (mg/kg); BG = Gs / Vg
)
N_STATES = 13

# --------------------------------------------------------------------------------------------
# Packed patient parameters (N_PARAMS,): x0 in [0:13], then the model constants
# --------------------------------------------------------------------------------------------
INITIAL_STATE_COLUMNS = tuple(f"x0_{i:2d}" for i in range(1, N_STATES + 1))
MODEL_CONSTANTS = (
    "BW", "kabs", "kmax", "kmin", "b", "d", "Vg", "Vi", "Vmx", "Km0", "k1", "k2", "p2u",
    "m1", "m2", "m4", "m30", "ki", "kp1", "kp2", "kp3", "f", "ke1", "ke2", "Fsnc", "Vm0",
    "kd", "ksc", "ka1", "ka2", "Ib", "u2ss",
)  # fmt: skip
PARAM_NAMES = INITIAL_STATE_COLUMNS + MODEL_CONSTANTS
N_PARAMS = len(PARAM_NAMES)

# Index constants into the packed vector (numba folds module-level ints into the code).
BW = 13  # body weight (kg)
KABS = 14  # intestinal absorption rate (1/min)
KMAX = 15  # maximal gastric emptying rate (1/min)
KMIN = 16  # minimal gastric emptying rate (1/min)
B = 17  # fraction of the meal at which emptying starts to slow down
D = 18  # fraction of the meal at which emptying is back to kmax
VG = 19  # glucose distribution volume (dL/kg)
VI = 20  # insulin distribution volume (L/kg)
VMX = 21  # insulin-dependent utilisation, slope
KM0 = 22  # Michaelis-Menten constant of utilisation (mg/kg)
K1 = 23  # plasma -> tissue glucose rate (1/min)
K2 = 24  # tissue -> plasma glucose rate (1/min)
P2U = 25  # insulin action on utilisation, rate (1/min)
M1 = 26  # liver insulin clearance / transfer rates (1/min)
M2 = 27
M4 = 28
M30 = 29
KI = 30  # delay of insulin action on production (1/min)
KP1 = 31  # endogenous glucose production at zero glucose and insulin (mg/kg/min)
KP2 = 32  # ... its dependence on plasma glucose (1/min)
KP3 = 33  # ... its dependence on delayed insulin (mg/kg/min per pmol/L)
F = 34  # fraction of intestinal absorption that appears in plasma
KE1 = 35  # renal excretion rate (1/min)
KE2 = 36  # renal threshold (mg/kg)
FSNC = 37  # insulin-independent utilisation (mg/kg/min)
VM0 = 38  # insulin-dependent utilisation, intercept (mg/kg/min)
KD = 39  # subcutaneous insulin transfer rate (1/min)
KSC = 40  # subcutaneous glucose rate (1/min)
KA1 = 41  # subcutaneous insulin absorption rates (1/min)
KA2 = 42
IB = 43  # basal plasma insulin (pmol/L)
U2SS = 44  # steady-state basal insulin (pmol/kg/min); basal rate = u2ss * BW / 6000 U/min

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

# --------------------------------------------------------------------------------------------
# scipy's dopri5 (scipy/integrate/_ode.py defaults; scipy/integrate/src/dop.c)
# --------------------------------------------------------------------------------------------
RTOL = 1e-6
ATOL = 1e-12
NMAX = 500  # ode(...).set_integrator("dopri5") nsteps
SAFE = 0.9
FAC1 = 0.2  # the new step is at least 0.2 times ...
FAC2 = 10.0  # ... and at most 10 times the old one
BETA = 0.04  # scipy passes beta=0, which DOPRI5 reads as "use the default 0.04"
UROUND = 2.220446049250313e-16
SAMPLE_TIME = 1.0  # min, one integrate() call per minute

# Dormand-Prince 5(4) coefficients (Hairer's CDOPRI)
C2 = 0.2
C3 = 0.3
C4 = 0.8
C5 = 8.0 / 9.0
A21 = 0.2
A31 = 3.0 / 40.0
A32 = 9.0 / 40.0
A41 = 44.0 / 45.0
A42 = -56.0 / 15.0
A43 = 32.0 / 9.0
A51 = 19372.0 / 6561.0
A52 = -25360.0 / 2187.0
A53 = 64448.0 / 6561.0
A54 = -212.0 / 729.0
A61 = 9017.0 / 3168.0
A62 = -355.0 / 33.0
A63 = 46732.0 / 5247.0
A64 = 49.0 / 176.0
A65 = -5103.0 / 18656.0
A71 = 35.0 / 384.0
A73 = 500.0 / 1113.0
A74 = 125.0 / 192.0
A75 = -2187.0 / 6784.0
A76 = 11.0 / 84.0
E1 = 71.0 / 57600.0
E3 = -71.0 / 16695.0
E4 = 71.0 / 1920.0
E5 = -17253.0 / 339200.0
E6 = 22.0 / 525.0
E7 = -1.0 / 40.0

# Integrator status codes (scipy's IDID where one exists)
STATUS_OK = 1
STATUS_TOO_MANY_STEPS = -2  # more than NMAX steps in one minute
STATUS_STEP_TOO_SMALL = -3  # step size underflow
STATUS_NOT_FINITE = -5  # a state became NaN or infinite
_STATUS_REASONS = {
    STATUS_TOO_MANY_STEPS: f"more than {NMAX} steps were needed in one minute",
    STATUS_STEP_TOO_SMALL: "the step size became too small",
    STATUS_NOT_FINITE: "a state became NaN or infinite",
}

# Workspace rows (N_WORK, N_STATES)
_K1, _K2, _K3, _K4, _K5, _K6, _Y1, _YSTI = range(8)
N_WORK = 8


class IntegrationError(RuntimeError):
    """DOPRI5 could not advance a patient through a minute within its tolerances.

    Attributes
    ----------
    patient : str
        Patient name (or ``"patient <index>"`` in a batch of unnamed parameter sets).
    minute : int
        The minute (0-based index into the inputs) whose integration failed.
    status : int
        ``STATUS_TOO_MANY_STEPS``, ``STATUS_STEP_TOO_SMALL`` or ``STATUS_NOT_FINITE``.
    """

    def __init__(self, patient: str, minute: int, status: int) -> None:
        self.patient = patient
        self.minute = minute
        self.status = status
        reason = _STATUS_REASONS.get(status, f"unexpected status {status}")
        super().__init__(
            f"the patient ODE of {patient} could not be integrated over minute {minute} "
            f"(t = {minute} -> {minute + 1} min): {reason} (DOPRI5, rtol={RTOL:g}, "
            f"atol={ATOL:g}, nsteps={NMAX}, as scipy's dopri5 in simglucose); check the patient "
            "parameters and the cho/insulin inputs"
        )


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
def _fmin(a: float, b: float) -> float:
    """C ``fmin``: a NaN operand is ignored."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a < b else b


@_jit
def _fmax(a: float, b: float) -> float:
    """C ``fmax``: a NaN operand is ignored."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a > b else b


@_jit
def blood_glucose(x: np.ndarray, params: np.ndarray) -> float:
    """BG (mg/dL) of state ``x`` (13,): subcutaneous glucose over volume, ``x[12] / Vg``."""
    return x[12] / params[VG]


@_jit
def patient_rhs(x, params, cho, insulin, last_qsto, last_foodtaken, dxdt):
    """``T1DPatient.model``: write dx/dt of the UVa/Padova model into ``dxdt`` (13,).

    Parameters
    ----------
    x : ndarray, shape (13,)
        State (see ``STATE_NAMES``).
    params : ndarray, shape (N_PARAMS,)
        Packed patient parameters.
    cho : float
        Carbohydrate eaten this minute (g/min), after the 5 g/min eating-rate cap.
    insulin : float
        Insulin delivered (U/min).
    last_qsto, last_foodtaken : float
        Stomach content at the start of the current meal (mg) and carbohydrate eaten since (g).
    dxdt : ndarray, shape (13,)
        Output.

    Notes
    -----
    Every expression keeps simglucose's operand order so that the floating-point results match.
    """
    d = cho * 1000.0  # g/min -> mg/min
    insulin_in = insulin * 6000.0 / params[BW]  # U/min -> pmol/kg/min

    # Glucose in the stomach
    qsto = x[0] + x[1]
    # Dbar (mg): the meal being digested, including what is still being eaten
    dbar = last_qsto + last_foodtaken * 1000.0

    # Stomach solid
    dxdt[0] = -params[KMAX] * x[0] + d

    # Gastric emptying slows down between fractions b and d of the meal
    if dbar > 0:
        aa = 5.0 / (2.0 * dbar * (1.0 - params[B]))
        cc = 5.0 / (2.0 * dbar * params[D])
        kgut = params[KMIN] + (params[KMAX] - params[KMIN]) / 2.0 * (
            math.tanh(aa * (qsto - params[B] * dbar))
            - math.tanh(cc * (qsto - params[D] * dbar))
            + 2.0
        )
    else:
        kgut = params[KMAX]

    # Stomach liquid
    dxdt[1] = params[KMAX] * x[0] - x[1] * kgut

    # Intestine
    dxdt[2] = kgut * x[1] - params[KABS] * x[2]

    # Rate of appearance of meal glucose in plasma
    rat = params[F] * params[KABS] * x[2] / params[BW]
    # Endogenous glucose production EGPt
    egpt = params[KP1] - params[KP2] * x[3] - params[KP3] * x[8]
    # Insulin-independent glucose utilisation
    uiit = params[FSNC]

    # Renal excretion Et above the threshold ke2
    if x[3] > params[KE2]:
        et = params[KE1] * (x[3] - params[KE2])
    else:
        et = 0.0

    # Glucose kinetics; max(EGPt, 0) as Python's max: EGPt unless 0 > EGPt
    egpt_pos = 0.0 if 0.0 > egpt else egpt
    dxdt[3] = egpt_pos + rat - uiit - et - params[K1] * x[3] + params[K2] * x[4]
    # Non-negativity gates, simglucose's (x >= 0) * dxdt: a state below zero is frozen (a NaN
    # derivative stays NaN, so a broken state is reported rather than hidden)
    if not x[3] >= 0:
        dxdt[3] *= 0.0

    # Insulin-dependent utilisation Uidt, Michaelis-Menten with Vmt = Vm0 + Vmx X, Kmt = Km0
    vmt = params[VM0] + params[VMX] * x[6]
    kmt = params[KM0]
    uidt = vmt * x[4] / (kmt + x[4])
    dxdt[4] = -uidt + params[K1] * x[3] - params[K2] * x[4]
    if not x[4] >= 0:
        dxdt[4] *= 0.0

    # Insulin kinetics
    dxdt[5] = (
        -(params[M2] + params[M4]) * x[5]
        + params[M1] * x[9]
        + params[KA1] * x[10]
        + params[KA2] * x[11]
    )
    it = x[5] / params[VI]
    if not x[5] >= 0:
        dxdt[5] *= 0.0

    # Insulin action on glucose utilisation
    dxdt[6] = -params[P2U] * x[6] + params[P2U] * (it - params[IB])

    # Insulin action on glucose production (two-compartment delay)
    dxdt[7] = -params[KI] * (x[7] - it)
    dxdt[8] = -params[KI] * (x[8] - x[7])

    # Insulin in the liver (pmol/kg)
    dxdt[9] = -(params[M1] + params[M30]) * x[9] + params[M2] * x[5]
    if not x[9] >= 0:
        dxdt[9] *= 0.0

    # Subcutaneous insulin kinetics
    dxdt[10] = insulin_in - (params[KA1] + params[KD]) * x[10]
    if not x[10] >= 0:
        dxdt[10] *= 0.0
    dxdt[11] = params[KD] * x[10] - params[KA2] * x[11]
    if not x[11] >= 0:
        dxdt[11] *= 0.0

    # Subcutaneous glucose
    dxdt[12] = -params[KSC] * x[12] + params[KSC] * x[3]
    if not x[12] >= 0:
        dxdt[12] *= 0.0


@_jit
def _initial_step(x, params, cho, insulin, last_qsto, last_foodtaken, f0, f1, y1, hmax):
    """DOPRI5's ``HINIT`` (order 5, scalar tolerances): a first step size guess.

    ``f0`` holds f(t, x) on entry; ``f1`` and ``y1`` (13,) are scratch.
    """
    n = x.shape[0]
    # h = 0.01 * ||x|| / ||f0||, norms weighted by the tolerances
    dnf = 0.0
    dny = 0.0
    for i in range(n):
        sk = ATOL + RTOL * abs(x[i])
        dnf += (f0[i] / sk) * (f0[i] / sk)
        dny += (x[i] / sk) * (x[i] / sk)
    if dnf <= 1.0e-10 or dny <= 1.0e-10:
        h = 1.0e-6
    else:
        h = math.sqrt(dny / dnf) * 0.01
    h = _fmin(h, hmax)
    # One explicit Euler step to estimate the second derivative
    for i in range(n):
        y1[i] = x[i] + h * f0[i]
    patient_rhs(y1, params, cho, insulin, last_qsto, last_foodtaken, f1)
    der2 = 0.0
    for i in range(n):
        sk = ATOL + RTOL * abs(x[i])
        der2 += ((f1[i] - f0[i]) / sk) * ((f1[i] - f0[i]) / sk)
    der2 = math.sqrt(der2) / h
    # h^5 * max(||f0||, ||f''||) = 0.01
    der12 = _fmax(abs(der2), math.sqrt(dnf))
    if der12 <= 1.0e-15:
        h1 = _fmax(1.0e-6, abs(h) * 1.0e-3)
    else:
        h1 = (0.01 / der12) ** (1.0 / 5.0)
    return _fmin(_fmin(100.0 * abs(h), h1), hmax)


@_jit
def dopri5_minute(x, t, params, cho, insulin, last_qsto, last_foodtaken, work):
    """One ``ode.integrate(t + 1)`` of scipy's dopri5 with the inputs held constant.

    Parameters
    ----------
    x : ndarray, shape (13,)
        State at ``t``; overwritten with the state at the end of the minute.
    t : float
        Start time (min).
    params : ndarray, shape (N_PARAMS,)
        Packed patient parameters.
    cho, insulin, last_qsto, last_foodtaken : float
        Inputs of :func:`patient_rhs`, constant over the minute.
    work : ndarray, shape (N_WORK, 13)
        Scratch space (:func:`new_workspace`).

    Returns
    -------
    status : int
        ``STATUS_OK`` or a failure code (``STATUS_TOO_MANY_STEPS``, ``STATUS_STEP_TOO_SMALL``).
    t : float
        Time reached (``t + 1`` up to rounding, as scipy computes it).
    n_rhs : int
        Right-hand-side evaluations (scipy's ``NFCN``).

    Notes
    -----
    scipy's stiffness test runs after every 1000th accepted step, which ``nsteps=500`` never
    reaches, so it is left out.
    """
    n = x.shape[0]
    k1 = work[_K1]
    k2 = work[_K2]
    k3 = work[_K3]
    k4 = work[_K4]
    k5 = work[_K5]
    k6 = work[_K6]
    y1 = work[_Y1]
    ysti = work[_YSTI]

    xend = t + SAMPLE_TIME
    hmax = abs(xend - t)  # WORK(6) = 0: the whole interval
    facold = 1.0e-4
    expo1 = 0.2 - BETA * 0.75
    facc1 = 1.0 / FAC1
    facc2 = 1.0 / FAC2

    # Every integrate() call starts afresh: f(t, x), then HINIT (scipy keeps WORK(7) = 0)
    patient_rhs(x, params, cho, insulin, last_qsto, last_foodtaken, k1)
    h = _initial_step(x, params, cho, insulin, last_qsto, last_foodtaken, k1, k2, k3, hmax)
    n_rhs = 2
    nstep = 0
    reject = False
    last = False
    while True:
        if nstep > NMAX:
            return STATUS_TOO_MANY_STEPS, t, n_rhs
        if 0.1 * abs(h) <= abs(t) * UROUND:
            return STATUS_STEP_TOO_SMALL, t, n_rhs
        if t + 1.01 * h - xend > 0.0:
            h = xend - t
            last = True
        nstep += 1

        # The 7 stages (the 7th, at the new point, is the next step's first: FSAL)
        for i in range(n):
            y1[i] = x[i] + h * A21 * k1[i]
        patient_rhs(y1, params, cho, insulin, last_qsto, last_foodtaken, k2)
        for i in range(n):
            y1[i] = x[i] + h * (A31 * k1[i] + A32 * k2[i])
        patient_rhs(y1, params, cho, insulin, last_qsto, last_foodtaken, k3)
        for i in range(n):
            y1[i] = x[i] + h * (A41 * k1[i] + A42 * k2[i] + A43 * k3[i])
        patient_rhs(y1, params, cho, insulin, last_qsto, last_foodtaken, k4)
        for i in range(n):
            y1[i] = x[i] + h * (A51 * k1[i] + A52 * k2[i] + A53 * k3[i] + A54 * k4[i])
        patient_rhs(y1, params, cho, insulin, last_qsto, last_foodtaken, k5)
        for i in range(n):
            ysti[i] = x[i] + h * (
                A61 * k1[i] + A62 * k2[i] + A63 * k3[i] + A64 * k4[i] + A65 * k5[i]
            )
        xph = t + h
        patient_rhs(ysti, params, cho, insulin, last_qsto, last_foodtaken, k6)
        for i in range(n):
            y1[i] = x[i] + h * (A71 * k1[i] + A73 * k3[i] + A74 * k4[i] + A75 * k5[i] + A76 * k6[i])
        patient_rhs(y1, params, cho, insulin, last_qsto, last_foodtaken, k2)
        # Embedded 4th-order error estimate (k4 is reused to hold it)
        for i in range(n):
            k4[i] = (
                E1 * k1[i] + E3 * k3[i] + E4 * k4[i] + E5 * k5[i] + E6 * k6[i] + E7 * k2[i]
            ) * h
        n_rhs += 6

        # err = RMS of the local error over RTOL * max(|x|, |x_new|) + ATOL
        err = 0.0
        for i in range(n):
            sk = ATOL + RTOL * _fmax(abs(x[i]), abs(y1[i]))
            err += (k4[i] / sk) * (k4[i] / sk)
        err = math.sqrt(err / n)

        # New step size, Lund-stabilised, with FAC1 <= hnew / h <= FAC2
        fac11 = err**expo1
        fac = fac11 / facold**BETA
        fac = _fmax(facc2, _fmin(facc1, fac / SAFE))
        hnew = h / fac

        if err <= 1.0:
            # Step accepted
            facold = _fmax(err, 1.0e-4)
            for i in range(n):
                k1[i] = k2[i]
                x[i] = y1[i]
            t = xph
            if last:
                return STATUS_OK, t, n_rhs
            if abs(hnew) > hmax:
                hnew = hmax
            if reject:
                hnew = _fmin(abs(hnew), abs(h))
            reject = False
        else:
            # Step rejected: shrink, but by no more than FAC1
            hnew = h / _fmin(facc1, fac11 / SAFE)
            reject = True
            last = False
        h = hnew


@_jit
def new_eating_state(x0):
    """Meal bookkeeping of a freshly reset ``T1DPatient`` (``N_EATING``,) for state ``x0``."""
    eating = np.zeros(N_EATING)
    eating[LAST_QSTO] = x0[0] + x0[1]
    return eating


@_jit
def new_workspace():
    """Scratch space (N_WORK, 13) for :func:`dopri5_minute` and :func:`patient_step`."""
    return np.empty((N_WORK, N_STATES))


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
