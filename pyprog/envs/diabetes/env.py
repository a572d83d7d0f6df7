"""NS-Diabetes: tune a type-1-diabetes bolus calculator for a patient whose body drifts."""

from __future__ import annotations

import math
import numbers
import os
import time
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike

from pyprog.envs.diabetes import day
from pyprog.envs.diabetes.dopri5 import STATUS_OK, IntegrationError
from pyprog.envs.diabetes.parameters import pump_params, sensor_params
from pyprog.envs.diabetes.patient import PatientLike, pack_patient
from pyprog.utils.validation import check_int, check_speed, reset_option

__all__ = ["DayTrace", "NSDiabetes", "compile_kernels", "is_compiled", "simulate_day"]

PUMP = "Insulet"
SENSOR = "Dexcom"
MAX_SEED = 2**32 - 1  # numpy.random.RandomState, which simglucose seeds its sensor and meals with


class DayTrace(NamedTuple):
    """One simulated day, sample by sample (every ``sample_time`` = 3 min for the Dexcom).

    Attributes
    ----------
    score : float
        The day's reward, ``2 * (mean(-risk) + 26.5)``.
    cho, insulin, bg, cgm, risk : numpy.ndarray, shape (n_samples,)
        What simglucose's ``T1DSimEnv.step`` reports for each sample: announced carbohydrate
        (g/min), delivered insulin (U/min), blood glucose (mg/dL) and CGM reading (mg/dL),
        each averaged over the sample's minutes, and the risk index of that CGM reading (the
        sample's reward is ``-risk``).
    """

    score: float
    cho: np.ndarray
    insulin: np.ndarray
    bg: np.ndarray
    cgm: np.ndarray
    risk: np.ndarray


def _check_seed(name: str, seed: Any) -> int:
    if (
        isinstance(seed, bool)
        or not isinstance(seed, numbers.Integral)
        or not 0 <= seed <= MAX_SEED
    ):
        raise ValueError(
            f"{name} must be an integer in [0, 2**32 - 1] (simglucose seeds numpy's RandomState "
            f"with it); got {seed!r}"
        )
    return int(seed)


class _Day:
    """The seed-fixed part of a day: meals, CGM noise, pump and sensor, drawn once."""

    def __init__(self, seed: int) -> None:
        sensor = sensor_params(SENSOR)
        self.seed = seed
        self.pump = day.pack_pump(pump_params(PUMP))
        self.sensor = day.pack_sensor(sensor)
        self.sample_time = float(sensor["sample_time"])
        self.meals = day.scenario_meals(seed)
        self.noise = day.cgm_noise(sensor, seed, day.n_readings(self.sample_time))
        self.max_samples = math.ceil(day.DAY_MINUTES / self.sample_time) + 1

    def run(self, params: np.ndarray, cr: float, cf: float, trace: np.ndarray, patient: str):
        """One jitted day; ``(n_samples, score)``, or IntegrationError naming ``patient``."""
        status, minute, n, score = day.diabetes_day(
            params, self.meals, self.noise, cr, cf, self.pump, self.sensor, trace
        )
        if status == day.STATUS_NOISE_EXHAUSTED:  # cannot happen with scipy-exact patient times
            raise RuntimeError(
                f"the day of {patient} needed more than {self.noise.shape[0]} CGM readings "
                f"(minute {minute}); the patient's clock drifted off whole minutes"
            )
        if status != STATUS_OK:
            raise IntegrationError(patient, int(minute), int(status))
        return int(n), float(score)


def _check_ratio(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be a number > 0; got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return float(value)


def simulate_day(patient: PatientLike, cr: float, cf: float, seed: int = 0) -> DayTrace:
    """One NS-Diabetes day of ``patient`` under the bolus rule with ``(CR, CF)``, unclipped.

    Exactly SPEC §5's loop around ``T1DSimEnv(patient, CGMSensor.withName("Dexcom",
    seed=seed), InsulinPump.withName("Insulet"), RandomScenario(<midnight>, seed=seed))``.

    Parameters
    ----------
    patient : str, mapping or ndarray
        A simglucose patient name, a parameter mapping or a packed vector
        (:func:`pyprog.envs.diabetes.patient.pack_patient`).
    cr : float
        Carbohydrate ratio (g of carbohydrate per U of insulin), > 0.
    cf : float
        Correction factor (mg/dL lowered per U of insulin), > 0.
    seed : int, default 0
        Seed of the day's meals and CGM noise, in ``[0, 2**32 - 1]``.

    Returns
    -------
    DayTrace
        The score and the per-sample CHO, insulin, BG, CGM and risk, each of shape (480,).

    Raises
    ------
    ValueError
        Unknown patient (the valid names are listed), bad ``cr``, ``cf`` or ``seed``.
    IntegrationError
        The patient ODE could not be integrated over some minute (named in the message).

    Examples
    --------
    >>> trace = simulate_day("adolescent#003", cr=10.0, cf=30.0, seed=0)
    >>> trace.cgm.shape, round(trace.score, 3)
    ((480,), 14.759)
    >>> float(trace.bg.min().round(1)), float(trace.bg.max().round(1))  # mg/dL
    (38.4, 364.9)
    """
    params = pack_patient(patient)
    cr = _check_ratio("cr", cr)
    cf = _check_ratio("cf", cf)
    fixed = _Day(_check_seed("seed", seed))
    trace = np.zeros((fixed.max_samples, day.N_TRACE))
    label = repr(patient) if isinstance(patient, str) else "the given patient"
    n, score = fixed.run(params, cr, cf, trace, label)
    columns = trace[:n].T.copy()
    return DayTrace(score, *columns)


def is_compiled() -> bool:
    """Whether this process has the day kernel ready (compiled, or loaded from numba's cache)."""
    return bool(day.diabetes_day.signatures)


def is_cached() -> bool:
    """Whether numba's on-disk cache holds the day kernel (loading it then takes < 1 s)."""
    try:
        return os.path.exists(day.diabetes_day._cache._cache_file._index_path)
    except AttributeError:  # numba internals moved: assume not
        return False


def compile_kernels() -> float:
    """Compile the jitted patient day (or load it from numba's on-disk cache).

    The first call in a fresh installation compiles the UVa/Padova model and its integrator
    (tens of seconds, once: the result is cached on disk); later processes load it in well
    under a second. Call it up front to report the wait instead of appearing to hang::

        if not is_compiled():
            print("compiling the patient model (once) ...")
            compile_kernels()

    Returns
    -------
    float
        Seconds spent (0 if already compiled in this process).
    """
    if is_compiled():
        return 0.0
    start = time.perf_counter()
    # A 10-minute day with no noise: the signature the environment uses, at negligible cost
    params = pack_patient("adolescent#003")
    sensor = day.pack_sensor(sensor_params(SENSOR))
    pump = day.pack_pump(pump_params(PUMP))
    meals = np.zeros(day.DAY_MINUTES)
    noise = np.zeros(day.n_readings(sensor[day.SENSOR_SAMPLE_TIME]))
    day.diabetes_day(params, meals, noise, 10.0, 30.0, pump, sensor, np.zeros((0, day.N_TRACE)))
    return time.perf_counter() - start


class NSDiabetes(gym.Env[np.ndarray, np.ndarray]):
    r"""Non-stationary diabetes treatment (Chandak et al., ICML 2020, §9 and appendix D.1).

    ## Description

    A day (1440 min, midnight to midnight) in the life of an in-silico type-1-diabetes
    patient — the UVa/Padova 2008 model of the ``simglucose`` package, integrated in numba
    exactly as simglucose integrates it. The patient eats the meals of simglucose's
    ``RandomScenario``; an insulin pump (Insulet) gives, whenever a meal was announced in the
    previous 3 min, the bolus of the standard bolus calculator

    .. math:: \text{bolus} = \frac{\text{meal}}{CR}
              + \mathbb{1}[g > 150]\,\frac{g - 140}{CF}

    with ``g`` the last Dexcom CGM reading (mg/dL), spread over the next 3 minutes. The agent
    picks the calculator's two parameters once per day. The patient's body drifts between
    two of simglucose's adolescents from day to day, so the best ``(CR, CF)`` drifts too.

    ## Action Space

    ``Box(low=[3, 5], high=[30, 50], float64)``: ``(CR, CF)``, the carbohydrate ratio (g/U)
    and the correction factor (mg/dL per U). Actions outside the box are **clipped** to it
    (the learner's Gaussian samples are unbounded; the policy's density remains that of the
    unclipped sample — the learner's business). NaN or infinite actions raise ``ValueError``.

    ## Observation Space

    ``Box(0, 1, (1,), float64)``; the observation is always ``[1.0]`` (no context).

    ## Rewards

    SPEC §5's loop over simglucose's ``T1DSimEnv`` (Dexcom CGM with its noise model, sampled
    every 3 min; Insulet pump with its rounding and limits; basal insulin 0): each of the
    ``n = 480`` samples earns ``-risk_index([CGM], 1)[2]`` (Kovatchev's LBGI + HBGI of the
    sample's CGM), and the day's single reward is

    .. math:: r = 2\,\Big(\frac{1}{n}\sum_{j=1}^{n} -\text{risk}(\text{CGM}_j) + 26.5\Big),

    at most 53 (risk 0 all day) and roughly in ``[-10, 20]`` over the action box (higher is
    better; the authors' comment says "roughly in [-10, 10]").

    ## Starting State

    Every day starts at midnight from the initial state of the day's patient (interpolated
    like every other parameter), with the same meals and the same CGM noise (see *Arguments*,
    ``seed``).

    ## Episode End

    Every step terminates its episode (``terminated=True``, ``truncated=False``). Stepping
    again before :meth:`reset`, or before the first reset, raises ``RuntimeError``.

    ## Arguments

    speed : float, default 2
        How fast the patient drifts; ``0`` keeps the first patient (``alpha = 1``) every
        day. The paper uses 0–4.
    seed : int, default 0
        Seed of the day (``CGMSensor.withName("Dexcom", seed=seed)`` and
        ``RandomScenario(start_time=<midnight>, seed=seed)``), in ``[0, 2**32 - 1]``.
        ``reset(seed=s)`` replaces it by ``s`` for this and all later days (and seeds
        ``self.np_random``, which the environment does not use); ``reset()`` keeps it. So
        every day of an environment has the same meals and sensor noise, only the patient
        changes, and two environments reset with the same seed give the same returns.
    patients : tuple of two str, default ("adolescent#003", "adolescent#008")
        The two simglucose patients the body oscillates between (the paper's pair: the most
        different best ``(CR, CF)`` among the adolescents).
    render_mode : None
        Rendering is not supported.

    ## Non-stationarity

    The episode counter ``k`` is 1 after the first :meth:`reset` and grows by one at every
    reset (``reset(options={"episode": k})`` sets it). Every numeric patient parameter ``p``,
    the initial state included, is

    .. math:: p_k = \alpha_k\,p(\text{patients}[0]) + (1 - \alpha_k)\,p(\text{patients}[1]),
              \qquad \alpha_k = 0.5 + 0.5\cos(k f),\quad f = 0.003\,\text{speed},

    a full period every ``2 pi / f`` days (about 1047 at speed 2).

    ## Info

    ``reset`` returns ``{"episode": k, "alpha": alpha_k}``; ``step`` adds ``"action"``, the
    clipped ``(CR, CF)`` (2,) that was applied.

    ## Speed

    The whole day (meals, pump, patient ODE, sensor, bolus rule, risk) is one jitted numba
    call, about 2 ms. The first call in a fresh installation compiles it (once; numba caches
    it on disk): :func:`compile_kernels` does that up front.

    Examples
    --------
    >>> env = NSDiabetes(speed=2, seed=0)
    >>> obs, info = env.reset()
    >>> obs, info["episode"], round(info["alpha"], 6)
    (array([1.]), 1, 0.999991)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([15.0, 40.0]))
    >>> terminated, truncated, round(reward, 3)
    (True, False, 7.523)
    >>> _ = env.reset()
    >>> _, clipped, *_ = env.step(np.array([100.0, 40.0]))  # CR is clipped to 30
    >>> _ = env.reset(options={"episode": 2})
    >>> _, at_bound, *_ = env.step(np.array([30.0, 40.0]))
    >>> clipped == at_bound
    True
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class-level convention)
    #: Steps per episode (one): how run loops size their buffers.
    horizon = 1

    def __init__(
        self,
        speed: float = 2.0,
        seed: int = 0,
        patients: tuple[str, str] = ("adolescent#003", "adolescent#008"),
        render_mode: str | None = None,
    ) -> None:
        self.speed = check_speed(speed)
        if render_mode is not None:
            raise ValueError(
                f"render_mode must be None (NSDiabetes does not render); got {render_mode!r}"
            )
        self.render_mode = render_mode
        if (
            isinstance(patients, str)
            or len(patients) != 2
            or not all(isinstance(p, str) for p in patients)
        ):
            raise ValueError(f"patients must be two simglucose patient names; got {patients!r}")
        self.patients = (patients[0], patients[1])

        self.frequency = self.speed * 0.003
        self.cr_bounds = (3.0, 30.0)  # g/U
        self.cf_bounds = (5.0, 50.0)  # mg/dL per U
        self._params_a = pack_patient(self.patients[0])  # raises with the valid names
        self._params_b = pack_patient(self.patients[1])
        self._day = _Day(_check_seed("seed", seed))
        self._trace = np.zeros((self._day.max_samples, day.N_TRACE))  # reused every day

        low = np.array([self.cr_bounds[0], self.cf_bounds[0]])
        high = np.array([self.cr_bounds[1], self.cf_bounds[1]])
        self.action_space = spaces.Box(low, high, dtype=np.float64)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float64)
        self._low = low
        self._high = high

        self._episode = 0
        self._alpha = 1.0
        self._params = self._params_a.copy()
        self._done = True  # no episode until the first reset

    @property
    def episode(self) -> int:
        """The episode counter ``k`` (0 before the first reset)."""
        return self._episode

    @property
    def seed(self) -> int:
        """The seed of the day's meals and CGM noise."""
        return self._day.seed

    @property
    def meals(self) -> np.ndarray:
        """Announced carbohydrate in each minute after midnight (g), (1440,), read-only."""
        view = self._day.meals.view()
        view.flags.writeable = False  # a view: the kernel's own array stays writable (one type)
        return view

    def alpha(self, k: Any) -> np.ndarray | float:
        """Weight ``alpha_k`` of ``patients[0]`` in episode(s) ``k``.

        Parameters
        ----------
        k : int or array_like, shape (...)
            Episode counter(s).

        Returns
        -------
        float or ndarray, shape (...)
            ``0.5 + 0.5 cos(k f)``, ``f = 0.003 speed``.

        Examples
        --------
        >>> NSDiabetes(speed=0).alpha([1, 500]).tolist()
        [1.0, 1.0]
        """
        angle = np.asarray(k, dtype=np.float64) * self.frequency
        out = 0.5 + 0.5 * np.cos(angle)
        return float(out) if out.ndim == 0 else out

    def patient_params(self, k: int) -> np.ndarray:
        """Packed parameters (N_PARAMS,) of episode ``k``'s patient (initial state in [0:13])."""
        alpha = self.alpha(check_int("k", k, 0))
        return alpha * self._params_a + (1.0 - alpha) * self._params_b

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start the next day with the patient of episode ``k``.

        Parameters
        ----------
        seed : int, optional
            The day's seed from now on (meals and CGM noise), in ``[0, 2**32 - 1]``; also
            reseeds ``self.np_random``. ``None`` keeps the current day.
        options : dict, optional
            ``{"episode": k}`` with ``k`` an integer >= 0 starts episode ``k`` instead of
            the next one; later resets count on from ``k``.

        Returns
        -------
        observation : ndarray, shape (1,)
            ``[1.0]``.
        info : dict
            ``{"episode": k, "alpha": alpha_k}``.
        """
        if seed is not None:
            seed = _check_seed("seed", seed)
        super().reset(seed=seed)
        if seed is not None and seed != self._day.seed:
            self._day = _Day(seed)
        episode = reset_option(options, "episode", "NSDiabetes")
        self._episode = self._episode + 1 if episode is None else episode
        self._alpha = self.alpha(self._episode)
        self._params = self.patient_params(self._episode)
        self._done = False
        return np.ones(1), {"episode": self._episode, "alpha": self._alpha}

    def _check_action(self, action: ArrayLike) -> np.ndarray:
        try:
            values = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            values = None
        if values is None or values.shape != (2,):
            raise ValueError(
                f"action must be (CR, CF), an array of 2 numbers in {self.cr_bounds} x "
                f"{self.cf_bounds}; got {action!r}"
            )
        if not np.isfinite(values).all():
            raise ValueError(
                f"action (CR, CF) must be finite; got {action!r} in episode {self._episode}"
            )
        return np.clip(values, self._low, self._high)

    def step(self, action: ArrayLike) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Treat one day with the bolus calculator ``(CR, CF) = action`` (clipped to the box).

        Parameters
        ----------
        action : array_like, shape (2,)
            ``(CR, CF)``; values outside ``[3, 30] x [5, 50]`` are clipped.

        Returns
        -------
        observation : ndarray, shape (1,)
            ``[1.0]``.
        reward : float
            The day's score ``2 * (mean(-risk) + 26.5)``.
        terminated : bool
            Always True (one step per episode).
        truncated : bool
            Always False.
        info : dict
            ``{"episode": k, "alpha": alpha_k, "action": clipped (CR, CF)}``.

        Raises
        ------
        ValueError
            The action is not two numbers, or is NaN or infinite.
        RuntimeError
            No episode is running (call :meth:`reset`).
        IntegrationError
            The patient ODE failed (the message names the patient mix and the minute).
        """
        cr_cf = self._check_action(action)
        if self._done:
            raise RuntimeError(
                "NSDiabetes.step called with no episode running (before the first reset, or "
                "after the day's single step); call reset() first"
            )
        label = (
            f"the {self.patients[0]}/{self.patients[1]} mix of episode {self._episode} "
            f"(alpha = {self._alpha:.6g})"
        )
        _, score = self._day.run(self._params, cr_cf[0], cr_cf[1], self._trace, label)
        self._done = True
        info = {"episode": self._episode, "alpha": self._alpha, "action": cr_cf}
        return np.ones(1), score, True, False, info
