"""Benchmarks: one simglucose patient-day, numba vs simglucose; a batch of 64 days; compile time.

Run with ``python -m pytest bench/bench_patient.py`` (pytest-benchmark). Each group's table puts
the contenders side by side; the parenthesised ratios are the speed-ups. Steady-state timings
come after a warm-up call, so numba's compilation is measured only in the "compile" group, in
fresh subprocesses (cold: empty numba cache; cached: the cache written by the cold run).
"""

import importlib.util
import warnings

import numba
import numpy as np
import pytest
from fresh_process import first_call_timings

from pyprog.envs.diabetes.parameters import patient_names
from pyprog.envs.diabetes.patient import BW, U2SS, pack_patient, simulate_patient, simulate_patients

PATIENT = "adolescent#003"
N_MINUTES = 1440
BATCH = 64


def meal_day(name, seed):
    """Three meals with boluses on top of basal insulin: (cho (T,), insulin (T,))."""
    rng = np.random.default_rng(seed)
    params = pack_patient(name)
    cho = np.zeros(N_MINUTES)
    insulin = np.full(N_MINUTES, params[U2SS] * params[BW] / 6000.0)
    for center in (7 * 60, 12 * 60, 19 * 60):
        minute = center + int(rng.integers(-45, 46))
        grams = rng.uniform(30.0, 90.0)
        cho[minute] += grams
        insulin[minute] += grams / 15.0
    return cho, insulin


@pytest.fixture(scope="module")
def day():
    cho, insulin = meal_day(PATIENT, seed=0)
    simulate_patient(PATIENT, cho, insulin)  # warm-up: compile or load from numba's cache
    return cho, insulin


@pytest.fixture(scope="module")
def batch():
    names = [patient_names()[k % 30] for k in range(BATCH)]
    days = [meal_day(name, seed=k) for k, name in enumerate(names)]
    packed = np.stack([pack_patient(name) for name in names])
    cho = np.stack([d[0] for d in days])
    insulin = np.stack([d[1] for d in days])
    simulate_patients(packed[:2], cho[:2], insulin[:2])  # warm-up of the parallel kernel
    return packed, cho, insulin


@pytest.mark.benchmark(group="one patient-day (1440 min)")
def test_day_numba(benchmark, day):
    trace = benchmark(simulate_patient, PATIENT, *day)
    benchmark.extra_info["rhs_calls_per_day"] = trace.n_rhs
    benchmark.extra_info["ms_per_day"] = 1e3 * benchmark.stats.stats.mean


@pytest.mark.benchmark(group="one patient-day (1440 min)")
def test_day_simglucose(benchmark, day):
    if importlib.util.find_spec("simglucose") is None:
        pytest.skip('simglucose is not installed: pip install "pyprog[test]"')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pkg_resources' deprecation notice from gym
        from simglucose.patient.t1dpatient import Action, T1DPatient
    cho, insulin = day

    def simglucose_day():
        patient = T1DPatient.withName(PATIENT)
        bg = [patient.observation.Gsub]
        for carbs, units in zip(cho, insulin, strict=True):
            patient.step(Action(CHO=carbs, insulin=units))
            bg.append(patient.observation.Gsub)
        return np.array(bg)

    bg = benchmark.pedantic(simglucose_day, rounds=3, iterations=1)
    ours = simulate_patient(PATIENT, cho, insulin).bg
    benchmark.extra_info["max_abs_dbg_vs_numba"] = float(np.max(np.abs(bg - ours)))


@pytest.mark.benchmark(group=f"batch of {BATCH} patient-days")
def test_batch_parallel(benchmark, batch):
    benchmark(simulate_patients, *batch)
    benchmark.extra_info["patient_days_per_s"] = BATCH / benchmark.stats.stats.mean
    benchmark.extra_info["threads"] = numba.get_num_threads()


@pytest.mark.benchmark(group=f"batch of {BATCH} patient-days")
def test_batch_sequential(benchmark, batch):
    packed, cho, insulin = batch

    def one_by_one():
        return [simulate_patient(p, c, i).bg for p, c, i in zip(packed, cho, insulin, strict=True)]

    benchmark(one_by_one)
    benchmark.extra_info["patient_days_per_s"] = BATCH / benchmark.stats.stats.mean


FIRST_CALL = """
import json, time
t0 = time.perf_counter()
import numba
import numpy as np
from pyprog.envs.diabetes.patient import simulate_patient, simulate_patients
t1 = time.perf_counter()
cho, insulin = np.zeros(1440), np.full(1440, 0.01)
simulate_patient("adult#001", cho, insulin)
t2 = time.perf_counter()
simulate_patients(["adult#001"], cho[None], insulin[None])
t3 = time.perf_counter()
simulate_patient("adult#001", cho, insulin)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_day_s": t2 - t1, "first_batch_s": t3 - t2,
                  "steady_day_s": t4 - t3}))
"""


@pytest.mark.benchmark(group="compile (fresh process: import + first day + first batch)")
@pytest.mark.parametrize("numba_cache", ["cold", "cached"])
def test_first_call(benchmark, tmp_path_factory, numba_cache):
    """Wall time of a fresh process's first day; in-process split in extra_info."""
    cache_dir = tmp_path_factory.getbasetemp() / "numba-cache"
    timings = first_call_timings(benchmark, cache_dir, FIRST_CALL, numba_cache)
    compile_s = timings["first_day_s"] + timings["first_batch_s"] - 2 * timings["steady_day_s"]
    benchmark.extra_info["compile_or_cache_load_s"] = compile_s
