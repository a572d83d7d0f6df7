"""The numba UVa/Padova patient against simglucose's own T1DPatient, the oracle.

simglucose needs ~5 s per patient-day, so the default run compares one seeded day for each of
four patients (adolescent, adult, child) and caches the oracle traces for the session; the
broader sweep over all 30 patients is marked ``slow``.
"""

import warnings

import numpy as np
import pytest
from simglucose_oracle import simglucose_classes

from pyprog.envs.diabetes import parameters as simglucose_data
from pyprog.envs.diabetes.patient import (
    BW,
    IS_EATING,
    LAST_CHO,
    LAST_FOODTAKEN,
    LAST_QSTO,
    N_PARAMS,
    N_STATES,
    PARAM_NAMES,
    PLANNED_MEAL,
    STATUS_OK,
    STATUS_TOO_MANY_STEPS,
    U2SS,
    VG,
    IntegrationError,
    new_eating_state,
    new_workspace,
    pack_patient,
    patient_step,
    simulate_patient,
    simulate_patients,
)

ORACLE_PATIENTS = ["adolescent#003", "adolescent#008", "adult#001", "child#005"]
BG_TOLERANCE = 0.1  # mg/dL, anywhere in the day
# NumPy's SIMD tanh differs from libm's in the last bit, which can flip one accept/reject
# decision of the step-size control in a day (seen once in 90 days: 6 of 30,000 RHS calls);
# a different step-size control (no restart per minute, other beta) is off by far more.
RHS_COUNT_RTOL = 1e-3
N_MINUTES = 1440


def random_day(name, seed, n_minutes=N_MINUTES):
    """Seeded announced meals (g) and insulin (U/min) for one day of patient ``name``.

    Basal insulin scaled by a random factor, 3-6 meals of 5-100 g with boluses, one meal announced
    while the previous one is still being eaten, correction boluses, and a pump pause. Deliberately
    harsh: BG ranges from 0 to several hundred mg/dL, so renal excretion and the non-negativity
    gates of the model are exercised too.
    """
    rng = np.random.default_rng(seed)
    params = pack_patient(name)
    basal = params[U2SS] * params[BW] / 6000.0 * rng.uniform(0.6, 1.4)
    cho = np.zeros(n_minutes)
    insulin = np.full(n_minutes, basal)
    meal_minutes = np.sort(rng.choice(np.arange(0, n_minutes - 120), size=rng.integers(3, 7)))
    for minute in meal_minutes:
        grams = rng.uniform(5.0, 100.0)
        cho[minute] += grams
        insulin[minute] += grams / rng.uniform(8.0, 25.0)
    # A snack announced 3 min into the first meal, before the patient has finished eating it
    cho[meal_minutes[0] + 3] += rng.uniform(10.0, 30.0)
    for minute in rng.choice(n_minutes, size=3, replace=False):
        insulin[minute] += rng.uniform(0.5, 3.0)
    pause = rng.integers(0, n_minutes - 60)
    insulin[pause : pause + 45] = 0.0
    return cho, insulin


# --------------------------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------------------------
def _import_t1dpatient():
    sg = simglucose_classes()
    return sg["T1DPatient"], sg["PatientAction"]


def run_simglucose(patient, cho, insulin):
    """Step simglucose's T1DPatient through the inputs; BG, patient.t, RHS calls, success."""
    _, action_cls = _import_t1dpatient()
    bg = [patient.observation.Gsub]
    times = [patient.t]
    rhs = patient._odesolver.f
    n_rhs = 0

    def counted_rhs(*args):
        nonlocal n_rhs
        n_rhs += 1
        return rhs(*args)

    patient._odesolver.f = counted_rhs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns when dopri5 fails; the caller checks
        for minute, (carbs, units) in enumerate(zip(cho, insulin, strict=True)):
            patient.step(action_cls(CHO=float(carbs), insulin=float(units)))
            if not patient._odesolver.successful():
                return np.array(bg), np.array(times), n_rhs, minute
            bg.append(patient.observation.Gsub)
            times.append(patient.t)
    return np.array(bg), np.array(times), n_rhs, None


@pytest.fixture(scope="module")
def oracle():
    """``oracle(name, seed)``: simglucose's day for ``random_day(name, seed)``, computed once."""
    patient_cls, _ = _import_t1dpatient()
    cache = {}

    def day(name, seed):
        if (name, seed) not in cache:
            cho, insulin = random_day(name, seed)
            cache[name, seed] = run_simglucose(patient_cls.withName(name), cho, insulin)
        return cache[name, seed]

    return day


@pytest.mark.parametrize("name", ORACLE_PATIENTS)
def test_bg_matches_simglucose(oracle, name):
    cho, insulin = random_day(name, seed=0)
    expected_bg, _, _, failed = oracle(name, 0)
    assert failed is None
    trace = simulate_patient(name, cho, insulin)
    assert trace.bg.shape == expected_bg.shape == (N_MINUTES + 1,)
    max_diff = np.max(np.abs(trace.bg - expected_bg))
    assert max_diff < BG_TOLERANCE, f"{name}: max |dBG| = {max_diff:.3g} mg/dL"
    # The meals must actually move BG, or the comparison above says little
    assert np.ptp(expected_bg) > 20.0


@pytest.mark.parametrize("name", ORACLE_PATIENTS)
def test_integrator_mirrors_scipy_dopri5(oracle, name):
    """The same RHS calls and the same patient.t: the step-size control is scipy's."""
    cho, insulin = random_day(name, seed=0)
    _, expected_t, expected_n_rhs, _ = oracle(name, 0)
    trace = simulate_patient(name, cho, insulin)
    assert abs(trace.n_rhs - expected_n_rhs) <= RHS_COUNT_RTOL * expected_n_rhs
    np.testing.assert_array_equal(trace.t, expected_t)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", simglucose_data.patient_names())
def test_bg_matches_simglucose_all_patients(name, seed):
    patient_cls, _ = _import_t1dpatient()
    cho, insulin = random_day(name, seed)
    expected_bg, expected_t, expected_n_rhs, failed = run_simglucose(
        patient_cls.withName(name), cho, insulin
    )
    assert failed is None
    trace = simulate_patient(name, cho, insulin)
    assert np.max(np.abs(trace.bg - expected_bg)) < BG_TOLERANCE
    assert abs(trace.n_rhs - expected_n_rhs) <= RHS_COUNT_RTOL * expected_n_rhs
    np.testing.assert_array_equal(trace.t, expected_t)


def test_parameters_match_simglucose_tables():
    """The stdlib CSV reader gives simglucose's pandas values, bit for bit."""
    patient_cls, _ = _import_t1dpatient()
    for name in ORACLE_PATIENTS:
        expected = patient_cls.withName(name)._params
        ours = simglucose_data.patient_params(name)
        assert ours.keys() == set(expected.index) - {"Name"}
        for column, value in ours.items():
            assert value == expected[column], (name, column)


def test_integration_failure_matches_simglucose():
    """A negative Michaelis-Menten constant breaks both integrators in the same minute."""
    patient_cls, _ = _import_t1dpatient()
    params = simglucose_data.patient_params("adolescent#003")
    params["Km0"] = -100.0
    cho, insulin = np.zeros(240), np.full(240, 0.01)

    sg_patient = patient_cls.withName("adolescent#003")
    sg_patient._params = sg_patient._params.copy()
    sg_patient._params["Km0"] = -100.0
    *_, failed_minute = run_simglucose(sg_patient, cho, insulin)
    assert failed_minute is not None

    with pytest.raises(IntegrationError) as info:
        simulate_patient(params, cho, insulin)
    assert info.value.minute == failed_minute
    assert info.value.status == STATUS_TOO_MANY_STEPS


# --------------------------------------------------------------------------------------------
# The model and the API on their own
# --------------------------------------------------------------------------------------------
def test_bg_is_subcutaneous_glucose_over_volume():
    cho, insulin = random_day("adult#001", seed=5, n_minutes=300)
    trace = simulate_patient("adult#001", cho, insulin)
    params = pack_patient("adult#001")
    np.testing.assert_array_equal(trace.bg, trace.states[:, 12] / params[VG])
    np.testing.assert_array_equal(trace.states[0], params[:N_STATES])
    assert trace.t[0] == 0.0 and trace.t[-1] == 300.0


@pytest.mark.parametrize("name", ORACLE_PATIENTS)
def test_basal_insulin_keeps_the_patient_at_steady_state(name):
    params = pack_patient(name)
    basal = params[U2SS] * params[BW] / 6000.0
    bg = simulate_patient(name, np.zeros(N_MINUTES), np.full(N_MINUTES, basal)).bg
    np.testing.assert_allclose(bg, bg[0], atol=1e-6)


def test_meal_raises_and_insulin_lowers_bg():
    name = "adolescent#008"
    params = pack_patient(name)
    basal = np.full(600, params[U2SS] * params[BW] / 6000.0)
    meal = np.zeros(600)
    meal[60] = 60.0
    fasting = simulate_patient(name, np.zeros(600), basal).bg
    fed = simulate_patient(name, meal, basal).bg
    bolus = basal.copy()
    bolus[60] += 6.0
    treated = simulate_patient(name, meal, bolus).bg
    assert fed.max() > fasting.max() + 40.0
    assert treated.max() < fed.max() and treated[-1] < fed[-1]


def test_eating_bookkeeping_of_patient_step():
    """A 12 g meal is eaten at 5 g/min (5, 5, 2), a snack mid-meal extends it."""
    params = pack_patient("child#005")
    x = params[:N_STATES].copy()
    eating = new_eating_state(x)
    work = new_workspace()
    assert eating[LAST_QSTO] == x[0] + x[1] and eating[IS_EATING] == 0.0

    t = 0.0
    eaten = []
    for minute, cho in enumerate([12.0, 0.0, 3.0, 0.0, 0.0, 0.0]):
        status, t, n_rhs = patient_step(x, t, params, eating, cho, 0.01, work)
        assert status == STATUS_OK and t == minute + 1 and n_rhs >= 8
        eaten.append(eating[LAST_CHO])
        if minute == 0:
            # The meal starts on top of an empty stomach
            assert eating[LAST_QSTO] == 0.0
    assert eaten == [5.0, 5.0, 5.0, 0.0, 0.0, 0.0]
    assert eating[LAST_FOODTAKEN] == 15.0
    assert eating[PLANNED_MEAL] == 0.0 and eating[IS_EATING] == 0.0
    # The stomach took the carbohydrate: 15 g = 15000 mg spread over the gut compartments
    assert 0.0 < x[0] + x[1] + x[2] < 15000.0


def test_batch_equals_single():
    names = ["adolescent#003", "adult#001", "child#005"]
    days = [random_day(name, seed=10 + k, n_minutes=400) for k, name in enumerate(names)]
    cho = np.stack([day[0] for day in days])
    insulin = np.stack([day[1] for day in days])
    single = np.stack(
        [simulate_patient(n, c, i).bg for n, c, i in zip(names, cho, insulin, strict=True)]
    )
    np.testing.assert_array_equal(simulate_patients(names, cho, insulin), single)
    packed = np.stack([pack_patient(name) for name in names])
    np.testing.assert_array_equal(simulate_patients(packed, cho, insulin), single)


def test_parameter_mapping_and_packed_vector_agree_with_name():
    cho, insulin = random_day("adolescent#008", seed=3, n_minutes=200)
    by_name = simulate_patient("adolescent#008", cho, insulin).bg
    mapping = simglucose_data.patient_params("adolescent#008")
    np.testing.assert_array_equal(simulate_patient(mapping, cho, insulin).bg, by_name)
    packed = pack_patient(mapping)
    assert packed.shape == (N_PARAMS,) and packed[BW] == mapping["BW"]
    np.testing.assert_array_equal(simulate_patient(packed, cho, insulin).bg, by_name)
    assert PARAM_NAMES[BW] == "BW" and PARAM_NAMES[VG] == "Vg" and PARAM_NAMES[U2SS] == "u2ss"


def test_unknown_patient_name_lists_valid_names():
    with pytest.raises(ValueError, match="unknown simglucose patient 'adult#011'") as info:
        simulate_patient("adult#011", np.zeros(5), np.zeros(5))
    for valid in ("adolescent#001", "adult#010", "child#010"):
        assert valid in str(info.value)


def test_missing_or_bad_parameters_are_named():
    params = simglucose_data.patient_params("adult#001")
    del params["kabs"]
    with pytest.raises(ValueError, match=r"missing.*kabs"):
        simulate_patient(params, np.zeros(5), np.zeros(5))
    params = simglucose_data.patient_params("adult#001")
    params["ke1"] = np.nan
    with pytest.raises(ValueError, match="'ke1' must be finite"):
        pack_patient(params)
    params = simglucose_data.patient_params("adult#001")
    params["BW"] = 0.0
    with pytest.raises(ValueError, match="'BW' must be > 0"):
        pack_patient(params)
    with pytest.raises(ValueError, match=f"shape \\({N_PARAMS},\\)"):
        pack_patient(np.zeros(10))


@pytest.mark.parametrize("argument", ["cho", "insulin"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_bad_inputs_name_argument_and_index(argument, bad):
    inputs = {"cho": np.zeros(30), "insulin": np.full(30, 0.01)}
    inputs[argument][17] = bad
    with pytest.raises(ValueError, match=f"{argument} must be finite and >= 0.*at index 17"):
        simulate_patient("adult#001", **inputs)


def test_bad_input_shapes():
    with pytest.raises(ValueError, match="same length"):
        simulate_patient("adult#001", np.zeros(10), np.zeros(11))
    with pytest.raises(ValueError, match=r"cho must have shape \(T,\)"):
        simulate_patient("adult#001", np.zeros((2, 10)), np.zeros(10))
    with pytest.raises(ValueError, match="insulin must be an array of numbers"):
        simulate_patient("adult#001", np.zeros(3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="same days"):
        simulate_patients(["adult#001"], np.zeros((2, 10)), np.zeros((2, 10)))
    cho = np.zeros((2, 10))
    cho[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"cho_batch must be finite.*index \(1, 4\)"):
        simulate_patients(["adult#001", "child#001"], cho, np.zeros((2, 10)))


def test_absurd_parameters_raise_integration_error():
    params = simglucose_data.patient_params("adult#001")
    params["p2u"] = 1e8  # insulin action a hundred million times too fast: no step is stable
    with pytest.raises(IntegrationError, match=r"minute 0 .*more than 500 steps") as info:
        simulate_patient(params, np.zeros(10), np.full(10, 0.01))
    assert info.value.minute == 0 and isinstance(info.value, RuntimeError)

    params = simglucose_data.patient_params("adult#001")
    params["kp1"] = 1e300  # glucose production overflows to inf: never silent NaN
    with pytest.raises(IntegrationError, match="minute 0"):
        simulate_patient(params, np.zeros(10), np.zeros(10))

    packed = np.stack([pack_patient("adult#001"), pack_patient(params)])
    with pytest.raises(IntegrationError, match="patient 1 of the batch"):
        simulate_patients(packed, np.zeros((2, 10)), np.zeros((2, 10)))


def test_kabs_failure_is_reported_at_the_meal_minute():
    name = "adolescent#003"
    params = simglucose_data.patient_params(name)
    params["kabs"] = 1e7
    cho = np.zeros(450)
    cho[400] = 60.0
    with pytest.raises(IntegrationError) as info:
        simulate_patients([params, name], np.stack([cho, cho]), np.full((2, 450), 0.01))
    assert info.value.minute == 400 and "day 0 of the batch" in str(info.value)


# --------------------------------------------------------------------------------------------
# The parameter tables
# --------------------------------------------------------------------------------------------
def test_parameter_tables():
    names = simglucose_data.patient_names()
    assert len(names) == 30 and names[0] == "adolescent#001" and names[-1] == "child#010"
    params = simglucose_data.patient_params("adolescent#003")
    assert params["BW"] == 44.791 and params["x0_13"] == params["x0_ 4"]
    params["BW"] = -1.0  # a copy: the cache is untouched
    assert simglucose_data.patient_params("adolescent#003")["BW"] == 44.791
    assert simglucose_data.pump_params()["max_bolus"] == 30.0
    assert simglucose_data.sensor_params()["sample_time"] == 3.0
    assert "Insulet" in simglucose_data.pump_names()
    assert "GuardianRT" in simglucose_data.sensor_names()
    with pytest.raises(ValueError, match=r"unknown insulin pump 'Omnipod'.*Insulet"):
        simglucose_data.pump_params("Omnipod")
    with pytest.raises(ValueError, match=r"unknown CGM sensor 'Libre'.*Dexcom"):
        simglucose_data.sensor_params("Libre")
