"""Per-round estimators as classes in a registry: a new one is one class, and every path
(``round_estimates``, ``forecast_value``) takes it by name; bad registrations are refused."""

import numpy as np
import pytest
from contextual_year import YearOfRounds

import pyprog
from pyprog.offpolicy import round_estimates
from pyprog.offpolicy.estimates import (
    ESTIMATORS,
    ROUND_ESTIMATORS,
    RoundEstimator,
    register_round_estimator,
    round_estimator,
)

GEN = YearOfRounds("blocks")


@pytest.fixture(scope="module")
def log():
    return GEN.sample(800, np.random.default_rng(5))


def args(log):
    keys = ("context", "times", "action", "reward", "pscore", "action_dist")
    return [log[k] for k in keys]


@pytest.fixture
def registered():
    """Register estimators for one test, and forget them after it."""
    added = []

    def add(cls):
        register_round_estimator(cls)
        added.append(cls)
        return cls

    yield add
    for cls in added:
        ROUND_ESTIMATORS.pop(cls.name)
        for alias in (cls.name, *cls.aliases):
            ESTIMATORS.pop(alias)


def test_the_built_ins_and_obp_aliases_are_registered():
    assert set(ROUND_ESTIMATORS) == {"is", "snis", "dm", "dr"}
    assert {k: v for k, v in ESTIMATORS.items() if k != v} == {
        "ipw": "is",
        "ips": "is",
        "snipw": "snis",
    }
    assert round_estimator("IPS").name == "is"  # case is ignored
    assert ROUND_ESTIMATORS["dr"].uses_reward_model and not ROUND_ESTIMATORS["is"].uses_reward_model


def test_a_new_estimator_is_one_class(log, registered):
    @registered
    class ClippedIS(RoundEstimator):
        name = "clipped-is"
        aliases = ("cis",)

        def pseudo_outcomes(self, inputs):
            return np.minimum(inputs.weights, 1.5) * inputs.reward

    est = round_estimates(*args(log), estimator="cis")
    pi, rows = log["action_dist"], np.arange(len(log["reward"]))
    w = pi[rows, log["action"]] / log["pscore"]
    np.testing.assert_allclose(est.values, np.minimum(w, 1.5) * log["reward"])
    assert est.estimator == "clipped-is"


def test_a_new_estimator_with_a_reward_model_sees_q_hat(log, registered):
    @registered
    class HalfDR(RoundEstimator):  # halfway between DM and DR
        name = "half-dr"
        uses_reward_model = True

        def pseudo_outcomes(self, inputs):
            return 0.5 * inputs.weights * (inputs.reward - inputs.q_logged) + inputs.direct

    half = round_estimates(*args(log), estimator="half-dr", random_state=0)
    dr = round_estimates(*args(log), estimator="dr", random_state=0)
    dm = round_estimates(*args(log), estimator="dm", random_state=0)
    np.testing.assert_allclose(half.values, 0.5 * (dr.values + dm.values), rtol=1e-12, atol=1e-12)
    assert half.q_hat is not None and half.fold is not None


def test_forecast_value_takes_a_registered_estimator(log, registered):
    @registered
    class Plain(RoundEstimator):
        name = "plain-is"

        def pseudo_outcomes(self, inputs):
            return inputs.weights * inputs.reward

    frame = {k: log[k] for k in ("action", "reward", "pscore")}
    frame["time"] = log["times"]
    frame.update({f"x{j}": log["context"][:, j] for j in range(log["context"].shape[1])})
    at = float(log["times"].max()) + 7
    ours = pyprog.forecast_value(frame, log["action_dist"], at=at, estimator="plain-is")
    built_in = pyprog.forecast_value(frame, log["action_dist"], at=at, estimator="is")
    assert ours.estimator == "plain-is"
    assert ours.value == pytest.approx(built_in.value, rel=1e-12)
    assert (ours.low, ours.high) == pytest.approx((built_in.low, built_in.high), rel=1e-12)


@pytest.mark.parametrize(
    ("cls_body", "match"),
    [
        ({}, "name must be a lower-case string"),
        ({"name": "DR2"}, "name must be a lower-case string"),
        ({"name": "dr"}, "the estimator name 'dr' is taken"),
        ({"name": "mine", "aliases": ("ipw",)}, "the estimator name 'ipw' is taken"),
        ({"name": "auto"}, "the estimator name 'auto' is taken"),
        ({"name": "mine", "aliases": ("Mine",)}, "aliases must be lower-case strings"),
    ],
)
def test_bad_registrations_are_refused(cls_body, match):
    cls = type("Bad", (RoundEstimator,), dict(cls_body))
    before = (dict(ROUND_ESTIMATORS), dict(ESTIMATORS))
    with pytest.raises(ValueError, match=match):
        register_round_estimator(cls)
    assert (ROUND_ESTIMATORS, ESTIMATORS) == before  # nothing half-registered


def test_only_a_round_estimator_can_be_registered():
    with pytest.raises(ValueError, match="must subclass RoundEstimator"):
        register_round_estimator(object)


def test_an_unknown_estimator_names_the_choices(log):
    with pytest.raises(ValueError, match=r"estimator must be one of \['dm', 'dr', 'ips'"):
        round_estimates(*args(log), estimator="switch")
    frame = {"time": log["times"], "action": log["action"], "reward": log["reward"],
             "pscore": log["pscore"]}  # fmt: skip
    with pytest.raises(ValueError, match="estimator must be one of 'auto', 'is', 'snis'"):
        pyprog.forecast_value(frame, log["action_dist"], at=400.0, context=None, estimator="switch")
