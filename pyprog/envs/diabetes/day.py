"""One NS-Diabetes day, in numba: simglucose's ``T1DSimEnv`` driven by SPEC §5's bolus rule.

SPEC §5 defines the day with simglucose's own classes::

    env = T1DSimEnv(patient, CGMSensor.withName("Dexcom", seed=seed),
                    InsulinPump.withName("Insulet"),
                    RandomScenario(start_time=<midnight>, seed=seed))
    obs, _, _, info = env.reset();  total = n = 0
    while env.patient.t < 1440:
        meal, g = info["meal"], obs.CGM
        bolus = meal / CR + (g > 150) * (g - 140) / CF if meal > 0 else 0.0
        obs, r, _, info = env.step(Action(basal=0, bolus=bolus / info["sample_time"]),
                                   reward_fun=lambda cgm_hist: -risk_index([cgm_hist[-1]], 1)[2])
        total += r;  n += 1
    return 2 * (total / n + 26.5)

This module splits that loop in two:

* what does not depend on the patient or the action is drawn once, in Python, exactly as
  simglucose draws it for the same seed: the day's meals (:func:`scenario_meals`, with
  ``RandomScenario``'s ``RandomState`` and scipy's ``truncnorm``) and the CGM noise sequence
  (:func:`cgm_noise`, ``CGMNoise``'s Johnson-distributed AR(1) every 15 min, interpolated by
  scipy's cubic ``interp1d`` to the sensor's sample times);
* the rest — pump, patient, sensor, bolus rule, risk — is :func:`diabetes_day`, one jitted
  call per day over plain float64 arrays.

simglucose details the kernel reproduces (they all change the score):

* ``T1DSimEnv.step`` runs ``sample_time`` (3) one-minute ``mini_step`` calls with the same action
  and reports their running averages ``x += x_i / sample_time`` (CHO, insulin, BG, CGM); the
  bolus rule sees the *averaged* meal and CGM of the previous sample.
* The sensor reads ``BG + noise`` only when ``patient.t % sample_time == 0`` and holds its
  last reading otherwise; ``env.reset()`` reads it twice at t = 0 (``_reset`` and ``reset``),
  so the reset observation uses the sequence's *second* value.
* ``RandomScenario`` draws a scenario when it is reset, then draws the day's meals *again*
  from the same generator when asked for the meal at midnight (``t_sec < 1``): the meals
  eaten are the second draw of ``RandomState(seed)``.
* The pump rounds every dose to its increment (``inc_bolus`` pmol/min) and clips it to
  ``[min_bolus, max_bolus]`` U/min, every minute.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import interp1d
from scipy.stats import truncnorm

from pyprog.envs.diabetes.dopri5 import STATUS_NOT_FINITE, STATUS_OK, new_workspace
from pyprog.envs.diabetes.model import N_STATES, VG
from pyprog.envs.diabetes.patient import new_eating_state, patient_step
from pyprog.utils.cache import cached_njit

__all__ = [
    "DAY_MINUTES",
    "N_TRACE",
    "STATUS_NOISE_EXHAUSTED",
    "cgm_noise",
    "diabetes_day",
    "pack_pump",
    "pack_sensor",
    "risk",
    "scenario_meals",
]

DAY_MINUTES = 1440  # one episode: midnight to midnight
U2PMOL = 6000.0  # InsulinPump.U2PMOL: 1 U of insulin = 6000 pmol

# The bolus rule of SPEC §5 (Bastani 2014): correct above 150 mg/dL towards 140 mg/dL
BG_TARGET = 140.0
BG_CORRECTION_THRESHOLD = 150.0
# The day's score 2 * (mean reward + 26.5): roughly in [-10, 10] (the authors' normalisation)
SCORE_OFFSET = 26.5
SCORE_SCALE = 2.0

# Packed pump (N_PUMP,): pump_params.csv columns
PUMP_INC_BOLUS, PUMP_MIN_BOLUS, PUMP_MAX_BOLUS = 0, 1, 2
PUMP_INC_BASAL, PUMP_MIN_BASAL, PUMP_MAX_BASAL = 3, 4, 5
N_PUMP = 6
# Packed sensor (N_SENSOR,): sensor_params.csv columns
SENSOR_SAMPLE_TIME, SENSOR_MIN, SENSOR_MAX = 0, 1, 2
N_SENSOR = 3

# Columns of the per-sample trace (n_samples, N_TRACE): what T1DSimEnv.step records
TRACE_CHO = 0  # announced carbohydrate, averaged over the sample (g/min)
TRACE_INSULIN = 1  # delivered insulin, averaged over the sample (U/min)
TRACE_BG = 2  # blood glucose, averaged over the sample (mg/dL)
TRACE_CGM = 3  # CGM reading, averaged over the sample (mg/dL); the bolus rule's input
TRACE_RISK = 4  # risk index of that CGM; the sample's reward is its negative
N_TRACE = 5

# Kernel status beyond the patient's (pyprog.envs.diabetes.dopri5.STATUS_*)
STATUS_NOISE_EXHAUSTED = -10  # the day needed more CGM readings than were drawn

# CGMNoise: one Johnson-SU draw every 15 min, PRECOMPUTE draws interpolated at a time
NOISE_MODEL_SAMPLE_TIME = 15.0
NOISE_PRECOMPUTE = 10

# RandomScenario.create_scenario: breakfast, snack, lunch, snack, dinner, snack
MEAL_PROBABILITY = (0.95, 0.3, 0.95, 0.3, 0.95, 0.3)
MEAL_TIME_LOWER = np.array([5, 9, 10, 14, 16, 20]) * 60  # min after midnight
MEAL_TIME_UPPER = np.array([9, 10, 14, 16, 20, 23]) * 60
MEAL_TIME_MEAN = np.array([7, 9.5, 12, 15, 18, 21.5]) * 60
MEAL_TIME_STD = np.array([60, 30, 60, 30, 60, 30])
MEAL_AMOUNT_MEAN = (45, 10, 70, 10, 80, 10)  # g of carbohydrate
MEAL_AMOUNT_STD = (10, 5, 10, 5, 10, 5)

_jit = cached_njit(error_model="numpy")


# --------------------------------------------------------------------------------------------
# Drawn once per seed, in Python, with simglucose's generators
# --------------------------------------------------------------------------------------------
def _create_scenario(rng: np.random.RandomState) -> list[tuple[float, float]]:
    """``RandomScenario.create_scenario``: ``[(minute, grams), ...]`` with the same draws."""
    meals = []
    for p, tlb, tub, tbar, tsd, mbar, msd in zip(
        MEAL_PROBABILITY,
        MEAL_TIME_LOWER,
        MEAL_TIME_UPPER,
        MEAL_TIME_MEAN,
        MEAL_TIME_STD,
        MEAL_AMOUNT_MEAN,
        MEAL_AMOUNT_STD,
        strict=True,
    ):
        if rng.rand() < p:
            minute = np.round(
                truncnorm.rvs(
                    a=(tlb - tbar) / tsd,
                    b=(tub - tbar) / tsd,
                    loc=tbar,
                    scale=tsd,
                    random_state=rng,
                )
            )
            grams = max(round(rng.normal(mbar, msd)), 0)
            meals.append((float(minute), float(grams)))
    return meals


def scenario_meals(seed: int, n_minutes: int = DAY_MINUTES) -> np.ndarray:
    """The day's meals of ``RandomScenario(start_time=<midnight>, seed=seed)`` after a reset.

    Parameters
    ----------
    seed : int
        Scenario seed, ``0 <= seed < 2**32`` (``numpy.random.RandomState``).
    n_minutes : int, default 1440
        Length of the returned day.

    Returns
    -------
    numpy.ndarray, shape (n_minutes,)
        Carbohydrate announced in each minute after midnight (g); 0 outside meals.

    Notes
    -----
    ``scenario.reset()`` draws one scenario, then ``get_action(<midnight>)`` draws the day's
    scenario from the same generator: the second draw is the one eaten. Two meals rounded to
    the same minute keep the first one only (``list.index`` finds the first).

    Examples
    --------
    >>> meals = scenario_meals(0)
    >>> meals.shape, int((meals > 0).sum()) >= 1
    ((1440,), True)
    """
    rng = np.random.RandomState(seed)
    _create_scenario(rng)  # RandomScenario.reset()
    meals = np.zeros(n_minutes)
    seen = set()
    for minute, grams in _create_scenario(rng):  # get_action at t_sec < 1
        if minute in seen:
            continue
        seen.add(minute)
        if 0 <= minute < n_minutes:
            meals[int(minute)] = grams
    return meals


def _johnson_su(sensor: dict[str, float], e: float) -> float:
    """``johnson_transform_SU(xi, lambda, gamma, delta, e)`` of simglucose's noise model."""
    return sensor["xi"] + sensor["lambda"] * np.sinh((e - sensor["gamma"]) / sensor["delta"])


def cgm_noise(sensor: dict[str, float], seed: int, n: int) -> np.ndarray:
    """The first ``n`` values of ``CGMNoise(sensor, seed=seed)``, as simglucose draws them.

    Parameters
    ----------
    sensor : dict
        A row of ``sensor_params.csv`` (:func:`pyprog.envs.diabetes.parameters.sensor_params`).
    seed : int
        Sensor seed, ``0 <= seed < 2**32``.
    n : int
        Number of readings.

    Returns
    -------
    numpy.ndarray, shape (n,)
        Additive noise (mg/dL) of the sensor's successive readings.

    Notes
    -----
    Every 15 min, ``e_0 = z_0``, ``e_k = PACF (e_{k-1} + z_k)`` with ``z ~ N(0, 1)`` from
    ``RandomState(seed)``, and the noise is ``xi + lambda sinh((e - gamma) / delta)``. Blocks
    of 10 such values, each starting from the previous block's last, are interpolated by
    scipy's cubic ``interp1d`` at the sensor's sample times; the block's first point is
    dropped (it was the previous block's last).

    Examples
    --------
    >>> from pyprog.envs.diabetes.parameters import sensor_params
    >>> cgm_noise(sensor_params("Dexcom"), seed=0, n=5).shape
    (5,)
    """
    rng = np.random.RandomState(seed)
    pacf = sensor["PACF"]
    e = rng.randn()
    noise_init = _johnson_su(sensor, e)
    t15 = np.array(range(NOISE_PRECOMPUTE + 1)) * NOISE_MODEL_SAMPLE_TIME
    n_sample = math.floor(NOISE_PRECOMPUTE * NOISE_MODEL_SAMPLE_TIME / sensor["sample_time"])
    t = np.array(range(n_sample + 1)) * sensor["sample_time"]
    blocks = []
    drawn = 0
    while drawn < n:
        noise15 = [noise_init]
        for _ in range(NOISE_PRECOMPUTE):
            e = pacf * (e + rng.randn())
            noise15.append(_johnson_su(sensor, e))
        noise_init = noise15[-1]
        block = interp1d(t15, np.array(noise15), kind="cubic")(t)[1:]
        blocks.append(block)
        drawn += block.shape[0]
    return np.concatenate(blocks)[:n]


def pack_pump(pump: dict[str, float]) -> np.ndarray:
    """A row of ``pump_params.csv`` as the kernel's pump vector (N_PUMP,)."""
    return np.array(
        [
            pump["inc_bolus"],
            pump["min_bolus"],
            pump["max_bolus"],
            pump["inc_basal"],
            pump["min_basal"],
            pump["max_basal"],
        ]
    )


def pack_sensor(sensor: dict[str, float]) -> np.ndarray:
    """A row of ``sensor_params.csv`` as the kernel's sensor vector (N_SENSOR,)."""
    return np.array([sensor["sample_time"], sensor["min"], sensor["max"]])


def n_readings(sample_time: float, n_minutes: int = DAY_MINUTES) -> int:
    """CGM noise values a day uses: two reads at reset (t = 0), then one per sample."""
    return math.ceil(n_minutes / sample_time) + 2


# --------------------------------------------------------------------------------------------
# Jitted: one day
# --------------------------------------------------------------------------------------------
@_jit
def _py_min(a: float, b: float) -> float:
    """Python's ``min(a, b)``: ``a`` unless ``b < a``."""
    return b if b < a else a


@_jit
def _py_max(a: float, b: float) -> float:
    """Python's ``max(a, b)``: ``a`` unless ``b > a``."""
    return b if b > a else a


@_jit
def _pump_dose(amount: float, increment: float, lowest: float, highest: float) -> float:
    """``InsulinPump.bolus`` / ``.basal``: round to the increment in pmol/min, clip in U/min."""
    dose = amount * U2PMOL
    dose = np.rint(dose / increment) * increment  # np.round: half to even
    dose = dose / U2PMOL
    dose = _py_min(dose, highest)
    return _py_max(dose, lowest)


@_jit
def risk(bg: float) -> float:
    """``risk_index([bg], 1)[2]``: LBGI + HBGI of one glucose value (mg/dL).

    ``f = 1.509 (log(bg)^1.084 - 5.381)``; the risk is ``10 f^2`` (low if ``f < 0``,
    high if ``f > 0``, the other index being 0).
    """
    f = 1.509 * (math.log(bg) ** 1.084 - 5.381)
    return 10.0 * f**2 + 0.0


@_jit
def _minute_of_day(t: float) -> int:
    """``floor(t_sec / 60)`` of ``RandomScenario.get_action(start + timedelta(minutes=t))``.

    ``timedelta`` keeps whole microseconds (rounded half to even), so a patient time a hair
    below an integer minute still reads as that minute.
    """
    microseconds = np.rint(t * 60e6)
    return math.floor(microseconds / 1e6 / 60.0) % DAY_MINUTES


@_jit
def diabetes_day(params, meals, noise, cr, cf, pump, sensor, trace):
    """One day of SPEC §5's loop: the bolus rule with ``(CR, CF)`` on one patient.

    Parameters
    ----------
    params : ndarray, shape (N_PARAMS,)
        Packed patient (:func:`pyprog.envs.diabetes.patient.pack_patient`); the day starts from
        ``params[:13]`` at t = 0 (midnight).
    meals : ndarray, shape (1440,)
        Carbohydrate announced in each minute after midnight (g), :func:`scenario_meals`.
    noise : ndarray, shape (R,)
        CGM noise of the successive readings, :func:`cgm_noise`; ``R >= n_readings(...)``.
        ``noise[0]`` is consumed by ``T1DSimEnv._reset`` and ``noise[1]`` gives the reset
        observation.
    cr, cf : float
        Carbohydrate ratio (g/U) and correction factor (mg/dL per U).
    pump : ndarray, shape (N_PUMP,)
        :func:`pack_pump`.
    sensor : ndarray, shape (N_SENSOR,)
        :func:`pack_sensor`.
    trace : ndarray, shape (S, N_TRACE)
        Filled with the first ``n_samples`` rows (``TRACE_*`` columns); ``S >= 1440 /
        sample_time`` (one more row for safety is never used).

    Returns
    -------
    status : int
        ``STATUS_OK``, a patient failure code, or ``STATUS_NOISE_EXHAUSTED``.
    failed_minute : int
        The minute (0-based) whose integration failed; -1 on success.
    n_samples : int
        Samples taken (480 for the Dexcom's 3 min).
    score : float
        ``2 * (total / n + 26.5)``, ``total`` the sum of ``-risk(CGM)`` over the samples.
    """
    sample_time = sensor[SENSOR_SAMPLE_TIME]
    cgm_low = sensor[SENSOR_MIN]
    cgm_high = sensor[SENSOR_MAX]
    mini_steps = int(sample_time)

    x = params[:N_STATES].copy()
    eating = new_eating_state(x)
    work = new_workspace()
    t = 0.0

    # env.reset(): the sensor reads at t = 0 in _reset (noise[0]) and again in reset (noise[1])
    bg = x[12] / params[VG]
    last_cgm = _py_min(_py_max(bg + noise[1], cgm_low), cgm_high)
    reading = 2
    obs_cgm = last_cgm
    info_meal = 0.0

    # Basal is 0 every minute: only the pump's rounding and clipping of 0 remain
    basal = _pump_dose(0.0, pump[PUMP_INC_BASAL], pump[PUMP_MIN_BASAL], pump[PUMP_MAX_BASAL])

    total = 0.0
    n = 0
    minute = 0
    while t < DAY_MINUTES:
        # The bolus rule, on the previous sample's averaged meal and CGM
        if info_meal > 0:
            correction = (obs_cgm - BG_TARGET) / cf if obs_cgm > BG_CORRECTION_THRESHOLD else 0.0
            bolus = info_meal / cr + correction
        else:
            bolus = 0.0
        # Spread over the sample: the pump repeats the action every minute
        bolus_rate = bolus / sample_time
        dose = _pump_dose(
            bolus_rate, pump[PUMP_INC_BOLUS], pump[PUMP_MIN_BOLUS], pump[PUMP_MAX_BOLUS]
        )
        insulin = basal + dose

        cho_avg = 0.0
        insulin_avg = 0.0
        bg_avg = 0.0
        cgm_avg = 0.0
        for _ in range(mini_steps):
            cho = meals[_minute_of_day(t)]
            status, t, _n_rhs = patient_step(x, t, params, eating, cho, insulin, work)
            if status == STATUS_OK:
                for i in range(N_STATES):
                    if not math.isfinite(x[i]):
                        status = STATUS_NOT_FINITE
            if status != STATUS_OK:
                return status, minute, n, math.nan
            minute += 1
            bg = x[12] / params[VG]
            # The sensor reads on its sample times and holds the last reading in between
            if t % sample_time == 0:
                if reading >= noise.shape[0]:
                    return STATUS_NOISE_EXHAUSTED, minute, n, math.nan
                last_cgm = _py_min(_py_max(bg + noise[reading], cgm_low), cgm_high)
                reading += 1
            cho_avg += cho / sample_time
            insulin_avg += insulin / sample_time
            bg_avg += bg / sample_time
            cgm_avg += last_cgm / sample_time

        sample_risk = risk(cgm_avg)
        total += -sample_risk
        if n < trace.shape[0]:
            trace[n, TRACE_CHO] = cho_avg
            trace[n, TRACE_INSULIN] = insulin_avg
            trace[n, TRACE_BG] = bg_avg
            trace[n, TRACE_CGM] = cgm_avg
            trace[n, TRACE_RISK] = sample_risk
        n += 1
        obs_cgm = cgm_avg
        info_meal = cho_avg

    return STATUS_OK, -1, n, SCORE_SCALE * (total / n + SCORE_OFFSET)
