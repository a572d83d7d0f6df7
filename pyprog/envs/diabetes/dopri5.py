"""scipy's dopri5 for the patient ODE, one minute at a time, at numba speed.

:func:`dopri5_minute` is one ``integrate(t + 1)`` call of scipy's dopri5 (Hairer's DOPRI5
as translated to C in SciPy) on :func:`~pyprog.envs.diabetes.model.patient_rhs`: with
scipy's defaults (rtol 1e-6, atol 1e-12, nsteps 500, safety 0.9, step ratio in [0.2, 10],
Lund stabilisation beta 0.04) and, as in simglucose, a fresh start every minute: the first
derivative and the initial step (``HINIT``, :func:`_initial_step`) are recomputed at each
call, because scipy never writes the last step size back for the next call. Its status
codes (``STATUS_*``), its scratch space (:func:`new_workspace`) and the error raised when a
minute cannot be integrated (:class:`IntegrationError`) live here too.
"""

from __future__ import annotations

import math

import numpy as np

from pyprog.envs.diabetes.model import N_STATES, patient_rhs
from pyprog.utils.cache import cached_njit

__all__ = [
    "ATOL",
    "NMAX",
    "N_WORK",
    "RTOL",
    "STATUS_NOT_FINITE",
    "STATUS_OK",
    "STATUS_STEP_TOO_SMALL",
    "STATUS_TOO_MANY_STEPS",
    "IntegrationError",
    "dopri5_minute",
    "new_workspace",
]


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
def new_workspace():
    """Scratch space (N_WORK, 13) for :func:`dopri5_minute` and :func:`patient_step`."""
    return np.empty((N_WORK, N_STATES))
