"""Benchmarks: one NS-Diabetes day (numba env.step vs simglucose), a 1000-day run, compile time.

Run with ``python -m pytest bench/bench_diabetes.py`` (pytest-benchmark). Steady-state timings
come after a warm-up, so numba's compilation is measured only in the "compile" group, in fresh
subprocesses (cold: empty numba cache; cached: the cache written by the cold run).
"""

import importlib.util
import warnings
from datetime import datetime

import numpy as np
import pytest
from fresh_process import first_call_timings

from pyprog.envs.diabetes.env import NSDiabetes, compile_kernels
from pyprog.runner.loop import run

SPEED, EPISODE, CR, CF, SEED = 2.0, 300, 12.0, 35.0, 0
RUN_EPISODES = 1000
RUN_TARGET_S = 30.0


@pytest.fixture(scope="module")
def env():
    compile_kernels()  # warm-up: compile or load from numba's cache
    return NSDiabetes(speed=SPEED, seed=SEED)


def simglucose_day(alpha, cr, cf, seed):
    """SPEC §5's loop on simglucose's T1DSimEnv with the interpolated patient: the score."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pkg_resources' deprecation notice from gym
        from simglucose.actuator.pump import InsulinPump
        from simglucose.analysis.risk import risk_index
        from simglucose.controller.base import Action
        from simglucose.patient.t1dpatient import T1DPatient
        from simglucose.sensor.cgm import CGMSensor
        from simglucose.simulation.env import T1DSimEnv
        from simglucose.simulation.scenario_gen import RandomScenario

    a = T1DPatient.withName("adolescent#003")._params
    b = T1DPatient.withName("adolescent#008")._params
    row = a.copy()
    for key, value in a.items():
        if isinstance(value, (int, float, np.number)):
            row[key] = alpha * a[key] + (1 - alpha) * b[key]
    sim = T1DSimEnv(
        T1DPatient(row),
        CGMSensor.withName("Dexcom", seed=seed),
        InsulinPump.withName("Insulet"),
        RandomScenario(start_time=datetime(2018, 1, 1), seed=seed),
    )
    obs, _, _, info = sim.reset()
    total = n = 0
    while sim.patient.t < 1440:
        meal, g = info["meal"], obs.CGM
        bolus = meal / cr + (g > 150) * (g - 140) / cf if meal > 0 else 0.0
        obs, r, _, info = sim.step(
            Action(basal=0, bolus=bolus / info["sample_time"]),
            reward_fun=lambda cgm_hist: -risk_index([cgm_hist[-1]], 1)[2],
        )
        total += r
        n += 1
    return 2 * (total / n + 26.5)


@pytest.mark.benchmark(group="one NS-Diabetes day (480 samples, 1440 min)")
def test_day_numba(benchmark, env):
    def one_day():
        env.reset(options={"episode": EPISODE})
        return env.step(np.array([CR, CF]))[1]

    reward = benchmark(one_day)
    benchmark.extra_info.update(role="candidate", impl="numba", target=1000)
    benchmark.extra_info["reward"] = reward
    benchmark.extra_info["ms_per_day"] = 1e3 * benchmark.stats.stats.median


@pytest.mark.benchmark(group="one NS-Diabetes day (480 samples, 1440 min)")
def test_day_simglucose(benchmark, env):
    if importlib.util.find_spec("simglucose") is None:
        pytest.skip('simglucose is not installed: pip install "pyprog[test]"')
    _, info = env.reset(options={"episode": EPISODE})
    ours = env.step(np.array([CR, CF]))[1]
    score = benchmark.pedantic(
        simglucose_day, args=(info["alpha"], CR, CF, SEED), rounds=2, iterations=1
    )
    benchmark.extra_info.update(role="baseline", impl="simglucose")
    benchmark.extra_info["reward"] = score
    benchmark.extra_info["relative_difference_vs_numba"] = abs(ours - score) / abs(score)


@pytest.mark.benchmark(group=f"pyprog.run diabetes pro-wls, speed 2, {RUN_EPISODES} days")
def test_run_1000_days(benchmark, env):
    run("diabetes", "pro-wls", speed=SPEED, seed=0, episodes=3)  # warm up the learner too
    result = benchmark.pedantic(
        run,
        args=("diabetes", "pro-wls"),
        kwargs={"speed": SPEED, "seed": 0, "episodes": RUN_EPISODES},
        rounds=1,
        iterations=1,
    )
    seconds = benchmark.stats.stats.max
    benchmark.extra_info.update(impl="numba", seconds=seconds, target_s=RUN_TARGET_S)
    benchmark.extra_info["mean_return"] = result.mean_return
    benchmark.extra_info["updates"] = result.updates
    assert np.isfinite(result.returns).all()
    assert seconds < RUN_TARGET_S, f"{RUN_EPISODES} days took {seconds:.1f} s"


FIRST_CALL = """
import json, time
t0 = time.perf_counter()
from pyprog.envs.diabetes.env import NSDiabetes, compile_kernels
t1 = time.perf_counter()
compile_s = compile_kernels()
env = NSDiabetes(speed=2, seed=0)
env.reset()
t2 = time.perf_counter()
env.step([12.0, 35.0])
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "compile_kernels_s": compile_s,
                  "env_setup_s": t2 - t1 - compile_s, "first_day_s": t3 - t2}))
"""


@pytest.mark.benchmark(group="compile (fresh process: import + compile_kernels + first day)")
@pytest.mark.parametrize("numba_cache", ["cold", "cached"])
def test_first_call(benchmark, tmp_path_factory, numba_cache):
    """Wall time of a fresh process up to its first day; the split is in extra_info."""
    cache_dir = tmp_path_factory.getbasetemp() / "numba-cache-diabetes"
    first_call_timings(benchmark, cache_dir, FIRST_CALL, numba_cache)
