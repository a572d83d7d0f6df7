"""NS-Diabetes against SPEC §5, with simglucose's own classes as the oracle.

The oracle is SPEC §5's loop, verbatim, around ``T1DSimEnv`` built from simglucose's classes
and a ``T1DPatient`` made from the interpolated parameter row. simglucose needs ~5 s per
day, so the default run holds one whole episode (and its per-sample trace) against it, plus
the cheap pieces (meals, CGM noise, pump, risk) over many seeds; the sweep over speeds,
episodes, actions and seeds is marked ``slow``.
"""

from __future__ import annotations

import doctest
import math
import warnings
from datetime import datetime, timedelta

import gymnasium as gym
import numpy as np
import pytest
from gym_checks import check_env
from simglucose_oracle import simglucose_classes

import pyprog  # noqa: F401  (importing pyprog registers the environments)
from pyprog.envs.diabetes import day as day_module
from pyprog.envs.diabetes import env as diabetes_module
from pyprog.envs.diabetes.env import (
    NSDiabetes,
    compile_kernels,
    is_compiled,
    simulate_day,
)
from pyprog.envs.diabetes.parameters import patient_params, pump_params, sensor_params
from pyprog.envs.diabetes.patient import KM0, N_PARAMS, N_STATES, IntegrationError, pack_patient
from pyprog.runner.loop import run

PATIENT_A, PATIENT_B = "adolescent#003", "adolescent#008"
MIDNIGHT = datetime(2018, 1, 1, 0, 0, 0)  # the authors' start time; any midnight will do
RETURN_RTOL = 1e-6
# Only Gymnasium's advice for Box actions: SPEC §5 fixes the box to [3, 30] x [5, 50].
BOX_ADVICE = "we recommend using a symmetric and normalized space"


# --------------------------------------------------------------------------------------------
# The oracle: simglucose's classes and SPEC §5's loop
# --------------------------------------------------------------------------------------------
def interpolated_row(alpha: float):
    """``alpha * row(A) + (1 - alpha) * row(B)`` over every numeric column (a pandas Series)."""
    sg = simglucose_classes()
    a = sg["T1DPatient"].withName(PATIENT_A)._params
    b = sg["T1DPatient"].withName(PATIENT_B)._params
    row = a.copy()
    for key, value in a.items():
        if isinstance(value, (int, float, np.number)):
            row[key] = alpha * a[key] + (1 - alpha) * b[key]
    return row


def oracle_day(alpha: float, cr: float, cf: float, seed: int) -> dict:
    """SPEC §5's loop, verbatim, on the interpolated patient; the score and the histories."""
    sg = simglucose_classes()
    risk_index, action_cls = sg["risk_index"], sg["Action"]
    patient = sg["T1DPatient"](interpolated_row(alpha))
    env = sg["T1DSimEnv"](
        patient,
        sg["CGMSensor"].withName("Dexcom", seed=seed),
        sg["InsulinPump"].withName("Insulet"),
        sg["RandomScenario"](start_time=MIDNIGHT, seed=seed),
    )
    obs, _, _, info = env.reset()
    total = n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while env.patient.t < 1440:
            meal, g = info["meal"], obs.CGM
            bolus = meal / cr + (g > 150) * (g - 140) / cf if meal > 0 else 0.0
            obs, r, _, info = env.step(
                action_cls(basal=0, bolus=bolus / info["sample_time"]),
                reward_fun=lambda cgm_hist: -risk_index([cgm_hist[-1]], 1)[2],
            )
            total += r
            n += 1
    return {
        "score": 2 * (total / n + 26.5),
        "cgm": np.array(env.CGM_hist[1:]),
        "bg": np.array(env.BG_hist[1:]),
        "cho": np.array(env.CHO_hist),
        "insulin": np.array(env.insulin_hist),
        "risk_of_bg": np.array(env.risk_hist[1:]),
    }


def ns_diabetes_return(speed: float, episode: int, action, seed: int) -> tuple[float, float]:
    """(reward, alpha) of NS-Diabetes' episode ``episode`` with ``action``."""
    env = NSDiabetes(speed=speed, seed=seed)
    _, info = env.reset(options={"episode": episode})
    _, reward, terminated, truncated, step_info = env.step(np.asarray(action, dtype=float))
    assert terminated and not truncated and step_info["alpha"] == info["alpha"]
    return reward, info["alpha"]


@pytest.fixture(scope="module")
def default_case():
    """One whole episode, ours and the oracle's: speed 2, day 300, (CR, CF) = (12, 35)."""
    speed, episode, cr, cf, seed = 2.0, 300, 12.0, 35.0, 3
    reward, alpha = ns_diabetes_return(speed, episode, (cr, cf), seed)
    expected = oracle_day(alpha, cr, cf, seed)
    return {"reward": reward, "alpha": alpha, "cr": cr, "cf": cf, "seed": seed, **expected}


def test_episode_matches_simglucose_oracle(default_case):
    case = default_case
    assert 0.05 < case["alpha"] < 0.95  # a genuine mix of the two patients
    assert case["reward"] == pytest.approx(case["score"], rel=RETURN_RTOL)


def test_day_trace_matches_simglucose_oracle(default_case):
    """Sample by sample: meals eaten, pump doses, BG and CGM (noise and zero-order hold)."""
    case = default_case
    env = NSDiabetes(speed=2, seed=case["seed"])
    trace = simulate_day(env.patient_params(300), case["cr"], case["cf"], seed=case["seed"])
    assert trace.score == case["reward"]  # the environment runs the very same kernel
    assert trace.cgm.shape == case["cgm"].shape == (480,)
    np.testing.assert_array_equal(trace.cho, case["cho"])
    np.testing.assert_allclose(trace.insulin, case["insulin"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(trace.bg, case["bg"], rtol=1e-8)
    np.testing.assert_allclose(trace.cgm, case["cgm"], rtol=1e-8)
    # The day exercises the rule: meals, boluses, correction above 150 mg/dL
    assert (trace.cho > 0).sum() >= 3 and (trace.insulin > 0).sum() >= 3
    assert trace.cgm.max() > 150


@pytest.mark.slow
@pytest.mark.parametrize(
    ("speed", "episode", "action", "seed"),
    [
        (0.0, 1, (15.0, 40.0), 0),
        (1.0, 700, (3.0, 5.0), 0),  # the most insulin the box allows: CGM at its 39 mg/dL floor
        (2.0, 524, (30.0, 50.0), 2),  # alpha = 0: adolescent#008 alone
        (3.0, 123, (7.5, 12.0), 11),
        (4.0, 999, (20.0, 25.0), 2**32 - 1),
        (2.0, 17, (120.0, -3.0), 5),  # clipped to (30, 5)
    ],
)
def test_episodes_match_simglucose_oracle_sweep(speed, episode, action, seed):
    reward, alpha = ns_diabetes_return(speed, episode, action, seed)
    cr, cf = np.clip(action, (3.0, 5.0), (30.0, 50.0))
    expected = oracle_day(alpha, float(cr), float(cf), seed)
    assert reward == pytest.approx(expected["score"], rel=RETURN_RTOL)


# --------------------------------------------------------------------------------------------
# The pieces against simglucose (cheap: no patient)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 7, 42, 12345, 2**32 - 1])
def test_meals_are_random_scenarios_meals(seed):
    """Minute by minute, ``get_action`` of a freshly reset RandomScenario (midnight first)."""
    sg = simglucose_classes()
    scenario = sg["RandomScenario"](start_time=MIDNIGHT, seed=seed)
    scenario.reset()
    expected = np.array(
        [scenario.get_action(MIDNIGHT + timedelta(minutes=m)).meal for m in range(1440)],
        dtype=float,
    )
    meals = day_module.scenario_meals(seed)
    np.testing.assert_array_equal(meals, expected)
    assert meals.sum() > 0


def test_meals_are_the_second_scenario_of_the_seed():
    """The reset draws a scenario, midnight draws the day's: the first one is never eaten."""
    rng = np.random.RandomState(4)
    first = day_module._create_scenario(rng)
    second = day_module._create_scenario(rng)
    assert first != second
    meals = day_module.scenario_meals(4)
    assert sorted(np.flatnonzero(meals).tolist()) == sorted({int(m) for m, _ in second})


@pytest.mark.parametrize("seed", [0, 3, 99, 2**31 + 5])
def test_cgm_noise_is_simglucoses_sequence(seed):
    sg = simglucose_classes()
    sensor = sensor_params("Dexcom")
    generator = sg["CGMNoise"](sg["CGMSensor"].withName("Dexcom")._params, seed=seed)
    expected = np.array([next(generator) for _ in range(482)])
    np.testing.assert_array_equal(day_module.cgm_noise(sensor, seed, 482), expected)


def test_pump_rounds_and_clips_like_insulin_pump():
    sg = simglucose_classes()
    pump = sg["InsulinPump"].withName("Insulet")
    packed = day_module.pack_pump(pump_params("Insulet"))
    rng = np.random.default_rng(0)
    amounts = np.concatenate([rng.uniform(0, 0.05, 500), rng.uniform(0, 40, 100), [0.0, 30.0]])
    # Exact half increments (ties): np.round goes to even
    amounts = np.concatenate([amounts, (np.arange(20) + 0.5) * 0.05 / 6000])
    for amount in amounts:
        ours = day_module._pump_dose(amount, *packed[:3])
        assert ours == pump.bolus(amount), amount
        assert day_module._pump_dose(amount, *packed[3:]) == pump.basal(amount), amount


def test_risk_is_risk_index():
    sg = simglucose_classes()
    for bg in np.concatenate([[39.0, 112.5, 112.517, 600.0], np.linspace(39, 600, 101)]):
        expected = sg["risk_index"]([bg], 1)[2]
        assert day_module.risk(bg) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert day_module.risk(112.517) < 1e-3  # the risk's zero is near 112.5 mg/dL


# --------------------------------------------------------------------------------------------
# The environment's contract
# --------------------------------------------------------------------------------------------
def _check_env_warnings(env) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    return [str(w.message) for w in caught if BOX_ADVICE not in str(w.message)]


def test_check_env_passes():
    assert _check_env_warnings(NSDiabetes(speed=2)) == []
    assert _check_env_warnings(gym.make("pyprog/NSDiabetes-v0").unwrapped) == []


def test_spaces_and_one_step_episodes():
    env = NSDiabetes()
    assert env.action_space == gym.spaces.Box(
        np.array([3.0, 5.0]), np.array([30.0, 50.0]), dtype=np.float64
    )
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (1,), np.float64)
    obs, info = env.reset(seed=0)
    assert obs.tolist() == [1.0] and obs in env.observation_space
    assert info == {"episode": 1, "alpha": env.alpha(1)}
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs.tolist() == [1.0] and terminated and not truncated
    assert isinstance(reward, float) and -30 < reward < 30
    with pytest.raises(RuntimeError, match="reset"):
        env.step([10.0, 30.0])


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        NSDiabetes().step([10.0, 30.0])


def test_gymnasium_make_forwards_kwargs_and_runs():
    env = gym.make("pyprog/NSDiabetes-v0", speed=3, seed=9)
    assert isinstance(env.unwrapped, NSDiabetes)
    assert (env.unwrapped.speed, env.unwrapped.seed) == (3.0, 9)
    env.reset()
    _, reward, terminated, *_ = env.step(np.array([12.0, 30.0]))
    assert terminated and math.isfinite(reward)


def test_same_seed_same_returns():
    def returns(env, seed):
        env.reset(seed=seed)
        out = [env.step([14.0, 30.0])[1]]
        for action in ([5.0, 10.0], [25.0, 45.0]):
            env.reset()
            out.append(env.step(action)[1])
        return out

    first = returns(NSDiabetes(speed=4, seed=1), seed=77)
    second = returns(NSDiabetes(speed=4, seed=2), seed=77)  # the reset seed rules
    assert first == second
    assert returns(NSDiabetes(speed=4), seed=78) != first


def test_day_is_fixed_across_episodes():
    """Only the patient changes: at speed 0 every day is the same day, bit for bit."""
    env = NSDiabetes(speed=0, seed=5)
    meals = env.meals.copy()
    rewards = []
    for _ in range(4):
        env.reset()
        rewards.append(env.step([12.0, 30.0])[1])
    assert len(set(rewards)) == 1
    np.testing.assert_array_equal(env.meals, meals)
    env.reset(seed=5)  # the same seed again: the same day
    assert env.step([12.0, 30.0])[1] == rewards[0]
    with pytest.raises(ValueError, match="read-only"):
        env.meals[0] = 1.0


def test_reset_seed_replaces_the_day_and_reset_keeps_it():
    env = NSDiabetes(speed=0, seed=0)
    assert env.seed == 0
    env.reset(seed=8)
    assert env.seed == 8
    np.testing.assert_array_equal(env.meals, day_module.scenario_meals(8))
    reward_8 = env.step([12.0, 30.0])[1]
    env.reset()
    assert env.seed == 8 and env.step([12.0, 30.0])[1] == reward_8
    assert simulate_day(PATIENT_A, 12.0, 30.0, seed=8).score == reward_8
    assert simulate_day(PATIENT_A, 12.0, 30.0, seed=0).score != reward_8


@pytest.mark.parametrize("speed", [0.5, 2, 4])
def test_alpha_schedule_starts_at_one_and_interpolates_every_parameter(speed):
    env = NSDiabetes(speed=speed)
    a, b = pack_patient(PATIENT_A), pack_patient(PATIENT_B)
    for k in range(1, 6):
        _, info = env.reset()
        alpha = 0.5 + 0.5 * math.cos(k * (speed * 0.003))
        assert info == {"episode": k, "alpha": alpha} and env.episode == k
        params = env.patient_params(k)
        np.testing.assert_array_equal(params, alpha * a + (1 - alpha) * b)
    assert params.shape == (N_PARAMS,)
    # The initial state moves too: episode 1 starts (almost) from A, the trough from B
    trough = round(math.pi / (speed * 0.003))
    assert np.abs(a[:N_STATES] - b[:N_STATES]).max() > 10.0  # mg/kg: the two starts differ
    np.testing.assert_allclose(env.patient_params(trough)[:N_STATES], b[:N_STATES], rtol=1e-4)
    _, info = env.reset(options={"episode": trough})
    assert info["episode"] == trough and info["alpha"] < 1e-5
    assert env.reset()[1]["episode"] == trough + 1
    np.testing.assert_allclose(env.alpha([0, trough]), [1.0, 0.0], atol=1e-5)


def test_speed_zero_keeps_the_first_patient_every_day():
    """alpha_k = 0.5 + 0.5 cos(0) = 1: SPEC's formula keeps adolescent#003 itself."""
    env = NSDiabetes(speed=0, seed=1)
    expected = simulate_day(PATIENT_A, 10.0, 25.0, seed=1).score
    for k in (1, 2, 500):
        _, info = env.reset(options={"episode": k})
        assert info["alpha"] == 1.0
        np.testing.assert_array_equal(env.patient_params(k), pack_patient(PATIENT_A))
        assert env.step([10.0, 25.0])[1] == expected
    assert expected != simulate_day(PATIENT_B, 10.0, 25.0, seed=1).score


def test_patients_drift_changes_the_return():
    env = NSDiabetes(speed=2, seed=0)
    env.reset(options={"episode": 1})
    first = env.step([10.0, 30.0])[1]
    env.reset(options={"episode": 524})  # alpha ~ 0
    assert env.step([10.0, 30.0])[1] != first


@pytest.mark.parametrize(
    ("action", "bound"),
    [
        ([100.0, 20.0], [30.0, 20.0]),
        ([1.0, 20.0], [3.0, 20.0]),
        ([10.0, 1e6], [10.0, 50.0]),
        ([-4.0, -4.0], [3.0, 5.0]),
    ],
)
def test_out_of_bounds_actions_are_clipped(action, bound):
    env = NSDiabetes(speed=1, seed=2)
    env.reset(options={"episode": 40})
    _, clipped, _, _, info = env.step(np.array(action))
    env.reset(options={"episode": 40})
    _, at_bound, *_ = env.step(np.array(bound))
    assert clipped == at_bound
    assert info["action"].tolist() == bound


@pytest.mark.parametrize(
    "action", [[math.nan, 20.0], [10.0, math.inf], [-math.inf, 5.0], np.array([np.nan, np.nan])]
)
def test_non_finite_action_raises(action):
    env = NSDiabetes()
    env.reset()
    with pytest.raises(ValueError, match=r"action \(CR, CF\) must be finite"):
        env.step(action)


@pytest.mark.parametrize("action", [10.0, [1.0, 2.0, 3.0], [[10.0, 30.0]], "ab", None])
def test_malformed_action_raises(action):
    env = NSDiabetes()
    env.reset()
    with pytest.raises(ValueError, match=r"action must be \(CR, CF\)"):
        env.step(action)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, "0", None, True])
def test_bad_seed_raises(seed):
    with pytest.raises(ValueError, match="seed"):
        NSDiabetes(seed=seed)
    if seed is not None:  # reset(seed=None) means "keep the day"
        with pytest.raises(ValueError, match="seed"):
            NSDiabetes().reset(seed=seed)


@pytest.mark.parametrize("speed", [-1, math.nan, math.inf, "2", None, True])
def test_bad_speed_raises(speed):
    with pytest.raises(ValueError, match="speed"):
        NSDiabetes(speed=speed)


def test_bad_constructor_arguments_raise():
    with pytest.raises(ValueError, match="render_mode"):
        NSDiabetes(render_mode="human")
    with pytest.raises(ValueError, match="adolescent#001"):  # the valid names are listed
        NSDiabetes(patients=("adolescent#003", "teenager#008"))
    with pytest.raises(ValueError, match="two simglucose patient names"):
        NSDiabetes(patients="adolescent#003")
    with pytest.raises(ValueError, match="options"):
        NSDiabetes().reset(options={"time": 3})
    with pytest.raises(ValueError, match="episode"):
        NSDiabetes().reset(options={"episode": -1})


def test_integration_error_names_patient_and_minute():
    """A negative Michaelis-Menten constant breaks the integrator (see test_patient.py)."""
    broken = patient_params(PATIENT_A)
    broken["Km0"] = -100.0
    with pytest.raises(IntegrationError) as info:
        simulate_day(broken, 10.0, 30.0)
    assert 0 <= info.value.minute < 1440

    env = NSDiabetes(speed=2)
    env.reset(options={"episode": 7})
    env._params = env._params.copy()
    env._params[KM0] = -100.0
    with pytest.raises(IntegrationError, match=r"adolescent#003/adolescent#008.*episode 7"):
        env.step([10.0, 30.0])


def test_simulate_day_validates_its_arguments():
    with pytest.raises(ValueError, match="cr"):
        simulate_day(PATIENT_A, 0.0, 30.0)
    with pytest.raises(ValueError, match="cf"):
        simulate_day(PATIENT_A, 10.0, math.nan)
    with pytest.raises(ValueError, match="valid names"):
        simulate_day("adult#099", 10.0, 30.0)


def test_insulin_matters_in_the_expected_direction():
    """No correction at all vs a sensible one vs far too much insulin, on the same day."""
    sensible = simulate_day(PATIENT_A, 12.0, 40.0, seed=0)
    overdose = simulate_day(PATIENT_A, 3.0, 5.0, seed=0)
    assert overdose.bg.min() < sensible.bg.min()
    assert overdose.insulin.sum() > sensible.insulin.sum()
    # The CGM never leaves the Dexcom's range [39, 600]
    assert overdose.cgm.min() >= 39.0 and sensible.cgm.max() <= 600.0


def test_compile_helpers():
    compile_kernels()
    assert is_compiled()
    assert compile_kernels() == 0.0


def test_run_pro_wls_on_diabetes():
    result = run("diabetes", "pro-wls", speed=2, seed=0, episodes=20)
    assert result.returns.shape == (20,)
    assert np.isfinite(result.returns).all()
    assert len(set(result.returns.tolist())) > 1  # the policy explores: the returns differ
    again = run("diabetes", "pro-wls", speed=2, seed=0, episodes=20)
    np.testing.assert_array_equal(result.returns, again.returns)


@pytest.mark.parametrize("module", [diabetes_module, day_module], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
