"""The UVa/Padova type-1-diabetes model of simglucose: its state, parameters and dx/dt.

:func:`patient_rhs` is ``T1DPatient.model`` term by term (same operations, same order), a
numba-jitted function over plain float64 arrays (cached per user, see
:mod:`pyprog.utils.cache`); :func:`blood_glucose` is what simglucose reports as BG. The
state vector is laid out as ``STATE_NAMES``; :mod:`pyprog.envs.diabetes.dopri5` integrates
it and :mod:`pyprog.envs.diabetes.patient` steps and simulates a patient.

Packed patient parameters
-------------------------
The jitted functions take a patient as one float64 vector of length ``N_PARAMS`` laid out as
``PARAM_NAMES``: the initial state (CSV columns ``"x0_ 1"`` … ``"x0_13"``) in ``[0:13]``, then
the model constants (``"BW"``, ``"kabs"``, …) at the index constants of this module
(``BW``, ``KABS``, …). :func:`pyprog.envs.diabetes.patient.pack_patient` builds it from a
name or a parameter mapping.
"""

from __future__ import annotations

import math

import numpy as np

from pyprog.utils.cache import cached_njit

__all__ = [
    "INITIAL_STATE_COLUMNS",
    "MODEL_CONSTANTS",
    "N_PARAMS",
    "N_STATES",
    "PARAM_NAMES",
    "STATE_NAMES",
    "blood_glucose",
    "patient_rhs",
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


# NumPy's error model: a float division by zero gives inf/NaN, as in simglucose's NumPy
# arithmetic, instead of raising; broken states are then reported as IntegrationError.
_jit = cached_njit(error_model="numpy")


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
