"""learn_for_future, its learners, FuturePolicy and ``pyprog learn`` (issue 50).

The statistical claims (the learned policy's true value against the baselines', the
interval's coverage, the safety test's false deployments) are measured by
tests/learn_montecarlo.py and reported in the guide; here: the mechanism, exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pyprog import FuturePolicy, LearnedPolicy, learn_for_future
from pyprog._ext import fallback
from pyprog.cli.main import main
from pyprog.logs.rounds import check_rounds
from pyprog.offpolicy.future_value import opfv, opfv_action_values
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.features import PeriodBlocks
from pyprog.value.future_policy import softmax_pass
from pyprog.value.learners import (
    DEFAULT_OPFV_FEATURE,
    FUTURE_LEARNERS,
    FutureLearner,
    Objective,
    Training,
    correction_shrinkage,
    register_future_learner,
)

YEAR = 365.25


def season_log(n: int = 3000, seed: int = 0, d: int = 1) -> dict:
    """A year of rounds, two actions: action 1 pays the season, action 0 the context."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 365, n))
    x = rng.normal(size=(n, d))
    a = rng.integers(0, 2, n)
    r = np.where(a == 1, np.sin(2 * np.pi * t / YEAR), x[:, 0]) + rng.normal(0, 0.3, n)
    log = {"time": t, "action": a, "reward": r, "pscore": np.full(n, 0.5)}
    log.update({f"x{j}": x[:, j] for j in range(d)})
    return log


@pytest.fixture(scope="module")
def learned() -> LearnedPolicy:
    return learn_for_future(season_log(), at=YEAR + 91.3)  # the season's peak


# -- the policy -----------------------------------------------------------------------


def test_policy_probabilities_are_the_members_mixture():
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3))
    pi = FuturePolicy(w, b, np.array([0.25, 0.75]))
    x = rng.normal(size=(5, 4))
    each = [softmax_pass(x, w[k], b[k])[1] for k in range(2)]
    np.testing.assert_allclose(pi.probabilities(x), 0.25 * each[0] + 0.75 * each[1])
    np.testing.assert_allclose(pi(x, np.zeros(5)).sum(axis=1), 1.0)


def test_greedy_policy_takes_the_highest_logit():
    w = np.array([[[1.0], [-1.0]]])
    pi = FuturePolicy(w, np.zeros((1, 2)), np.ones(1), greedy=True)
    np.testing.assert_array_equal(pi.probabilities([[2.0], [-2.0]]), [[1.0, 0.0], [0.0, 1.0]])


def test_policy_saves_and_loads_as_plain_json(tmp_path, learned):
    path = tmp_path / "policy.json"
    learned.policy.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "pyprog.FuturePolicy/1" and data["learner"] == "prognosticator"
    back = FuturePolicy.load(path)
    x = np.random.default_rng(2).normal(size=(7, 1))
    np.testing.assert_array_equal(back.probabilities(x), learned.policy.probabilities(x))
    assert back.target == learned.policy.target


def test_policy_without_context_takes_times_for_n():
    pi = FuturePolicy(np.zeros((1, 2, 0)), np.array([[0.0, 1.0]]), np.ones(1))
    assert pi.probabilities(None, np.arange(3.0)).shape == (3, 2)
    with pytest.raises(ValueError, match="pass times"):
        pi.probabilities(None)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weights": np.zeros((1, 2)), "bias": np.zeros((1, 2)), "shares": np.ones(1)}, "agree"),
        ({"weights": np.zeros((1, 2, 1)), "bias": np.zeros((1, 2)), "shares": [0.5]}, "sum to 1"),
        ({"weights": np.full((1, 2, 1), np.nan), "bias": np.zeros((1, 2)), "shares": [1.0]},
         "finite"),
        ({"weights": np.zeros((1, 2, 3)), "bias": np.zeros((1, 2)), "shares": [1.0],
          "hidden_weights": np.zeros((1, 3, 1))}, "come together"),
        ({"weights": np.zeros((1, 2, 3)), "bias": np.zeros((1, 2)), "shares": [1.0],
          "hidden_weights": np.zeros((1, 4, 1)), "hidden_bias": np.zeros((1, 4))}, "must agree"),
    ],
)  # fmt: skip
def test_bad_policies_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FuturePolicy(**kwargs)


def test_policy_refuses_contexts_of_the_wrong_width_and_foreign_files(tmp_path):
    pi = FuturePolicy(np.zeros((1, 2, 3)), np.zeros((1, 2)), np.ones(1))
    with pytest.raises(ValueError, match=r"context must have shape \(n, 3\)"):
        pi.probabilities(np.zeros((4, 2)))
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a pyprog policy"):
        FuturePolicy.load(tmp_path / "other.json")
    data = pi.as_dict()
    del data["bias"]
    with pytest.raises(ValueError, match="without 'bias'"):
        FuturePolicy.from_dict(data)
    data = pi.as_dict() | {"weights": [[1.0]]}
    with pytest.raises(ValueError, match="not 1 x 2 x 3 numbers"):
        FuturePolicy.from_dict(data)


def test_the_compiled_forward_pass_matches_its_numpy_twin():
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(50, 4)), rng.normal(size=(6, 4)), rng.normal(size=6)
    lp, p, h = softmax_pass(x, w, b)
    _, lp2, p2, _, h2 = fallback.softmax_forward(
        x, np.zeros(50, dtype=np.int64), np.empty((0, 4)), np.empty(0), w, b
    )
    np.testing.assert_allclose(lp, lp2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(p, p2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, h2, rtol=1e-12, atol=1e-12)


# -- the objective ---------------------------------------------------------------------


@pytest.mark.parametrize("hidden", [0, 3])
@pytest.mark.parametrize(("entropy", "l2"), [(0.0, 0.0), (0.3, 0.0), (0.1, 0.05)])
def test_objective_gradient_matches_finite_differences(entropy, l2, hidden):
    rng = np.random.default_rng(4)
    n, d, A = 40, 3, 4
    obj = Objective(rng.normal(size=(n, d)), rng.normal(size=(n, A)) / n, entropy, l2, hidden)
    theta = rng.normal(size=obj.layout.size)
    _, grad = obj.value_and_gradient(theta)
    eps, numeric = 1e-6, np.empty_like(theta)
    for i in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (obj.value_and_gradient(up)[0] - obj.value_and_gradient(down)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def training(log: dict, hidden: int = 0) -> Training:
    rounds = check_rounds(np.column_stack([log["x0"]]), log["time"], log["action"],
                          log["reward"], log["pscore"], 2)  # fmt: skip
    span = (float(log["time"].min()), float(log["time"].max()))
    return Training(rounds, ("at", YEAR + 30), span, 0.01, 0.0, 1.0, 0, DEFAULT_OPFV_FEATURE,
                    hidden)  # fmt: skip


@pytest.mark.parametrize("hidden", [0, 5])
def test_a_member_on_the_raw_context_is_the_policy_the_objective_ascends(hidden):
    # θ acts on the standardised ψ; the member on the raw x through the compiled kernel
    data = training(season_log(500, seed=11), hidden)
    theta = np.random.default_rng(12).normal(size=data.layout.size)
    obj = Objective(data.psi, np.zeros((data.rounds.n, 2)), 0.0, 0.0, hidden)
    w, b, _ = data.layout.unpack(theta)
    expected = softmax_pass(obj.features(theta), w, b)[1]
    member = data.member(theta)
    assert member.n_hidden == hidden and member.n_features == 1
    np.testing.assert_allclose(member.probabilities(data.rounds.context), expected,
                               rtol=1e-10, atol=1e-12)  # fmt: skip


def test_the_correction_is_shrunk_away_where_it_is_noise_and_kept_where_it_shows_signal():
    rng = np.random.default_rng(13)
    n = 4000
    psi, zeta = rng.normal(size=(n, 3)), np.full(n, 1.0 / n)
    noise = rng.normal(size=(n, 5))
    kappas = [correction_shrinkage(zeta, rng.normal(size=(n, 5)), psi) for _ in range(50)]
    assert np.mean(kappas) < 0.2  # E κ under the null: small (positive part of 1 − (p−2)/χ²_p)
    assert correction_shrinkage(zeta, noise + 0.3 * psi[:, :1], psi) > 0.9
    assert correction_shrinkage(zeta, noise[:, :1], psi[:, :0]) == 1.0  # p = 1 < 3: kept


def test_opfv_action_values_give_opfv_for_any_policy():
    log = season_log(2000, seed=5)
    rounds = check_rounds(np.column_stack([log["x0"]]), log["time"], log["action"],
                          log["reward"], log["pscore"], 2)  # fmt: skip
    feature, target = PeriodBlocks(YEAR, 4), YEAR + 100
    C = opfv_action_values(rounds, target, time_feature=feature, random_state=0)
    policy = lambda x, t: np.column_stack([1 / (1 + np.exp(x[:, 0])), 1 / (1 + np.exp(-x[:, 0]))])  # noqa: E731
    res = opfv(rounds.context, rounds.times, rounds.action, rounds.reward, rounds.pscore, policy,
               target, time_feature=feature, n_actions=2, random_state=0)  # fmt: skip
    pi = policy(rounds.context, None)
    assert np.isclose((pi * C).sum(axis=1).mean(), res.value[0], rtol=1e-12)


# -- learn_for_future ------------------------------------------------------------------


def test_the_learned_policy_acts_as_the_target_asks(learned):
    # at the season's peak action 1 pays ~1, action 0 pays x: take 1 unless x > 1
    pi = learned.policy.probabilities([[-1.0], [0.0], [2.5]])
    assert pi.argmax(axis=1).tolist() == [1, 1, 0]
    assert learned.deploy and learned.advantage.low > 0
    assert learned.forecast.low < learned.forecast.value < learned.forecast.high
    assert set(learned.baselines) == {"regression", "ips-pg", "dr-pg", "opfv-pg", "opfv-pg-select"}
    assert "deploy" in str(learned) and "opfv-pg" in str(learned)


def test_a_season_later_the_policy_turns_around():
    res = learn_for_future(season_log(), at=YEAR + 273.9, baselines=())  # the season's trough
    assert res.policy.probabilities([[-0.5], [0.0]]).argmax(axis=1).tolist() == [0, 0]


def test_each_half_policy_is_judged_on_the_other_half(learned):
    # two members, each learned on one half; shares are the other half's share of rounds
    assert learned.policy.weights.shape[0] == 2
    assert np.isclose(learned.policy.shares.sum(), 1.0)
    assert not np.allclose(learned.policy.weights[0], learned.policy.weights[1])


def ring_log(n: int = 4000, seed: int = 0) -> dict:
    """Action 1 pays |x0| − 0.8 (no linear function of x ranks it), action 0 the season."""
    rng = np.random.default_rng(seed)
    t, x = np.sort(rng.uniform(0, 365, n)), rng.normal(size=(n, 2))
    a = rng.integers(0, 2, n)
    q = np.column_stack([0.5 * np.sin(2 * np.pi * t / YEAR), np.abs(x[:, 0]) - 0.8])
    r = q[np.arange(n), a] + rng.normal(0, 0.3, n)
    return {"time": t, "x0": x[:, 0], "x1": x[:, 1], "action": a, "reward": r,
            "pscore": np.full(n, 0.5)}  # fmt: skip


def test_a_hidden_layer_learns_what_a_linear_softmax_cannot(tmp_path):
    at = YEAR + 91.3  # action 0 pays 0.5; action 1 pays more where |x0| > 1.3
    xs = np.random.default_rng(9).normal(size=(20_000, 2))
    q = np.column_stack([np.full(len(xs), 0.5), np.abs(xs[:, 0]) - 0.8])
    value = {}
    for hidden in (0, 8):
        res = learn_for_future(ring_log(), at=at, hidden=hidden, baselines=())
        value[hidden] = (res.policy.probabilities(xs) * q).sum(axis=1).mean()
    best = q.max(axis=1).mean()  # 0.589; always action 0: 0.5
    assert value[0] < 0.52 < best - 0.02 < value[8]
    res.policy.save(tmp_path / "mlp.json")
    back = FuturePolicy.load(tmp_path / "mlp.json")
    assert back.n_hidden == 8
    np.testing.assert_array_equal(back.probabilities(xs[:9]), res.policy.probabilities(xs[:9]))


def test_opfv_pg_select_chooses_its_time_feature_from_the_log():
    from pyprog.value.learners import OPFVSelectPolicyGradient

    flat = season_log(seed=15)  # the same rounds, and no season: one block
    noise = np.random.default_rng(16).normal(0, 0.3, flat["time"].size)
    flat["reward"] = np.where(flat["action"] == 1, 0.2, flat["x0"]) + noise
    for log, blocks in ((season_log(seed=14), lambda b: b > 1), (flat, lambda b: b == 1)):
        rounds = check_rounds(np.column_stack([log["x0"]]), log["time"], log["action"],
                              log["reward"], log["pscore"], 2)  # fmt: skip
        span = (float(log["time"].min()), float(log["time"].max()))
        data = Training(rounds, ("at", YEAR + 91.3), span, 0.01, 0.0, 1.0, 0,
                        DEFAULT_OPFV_FEATURE)  # fmt: skip
        values = OPFVSelectPolicyGradient().action_values(data)
        chosen = [
            b
            for b in (1, 2, 4, 8, 16, 32, 64)
            if np.allclose(
                values,
                opfv_action_values(
                    rounds, YEAR + 91.3, time_feature=PeriodBlocks(365.25, b), random_state=0
                ),
            )
        ]
        assert len(chosen) == 1 and blocks(chosen[0])  # the season's log: more than one block


def test_a_window_target_is_learned_too():
    res = learn_for_future(season_log(), over=(YEAR + 60, YEAR + 120), baselines=("regression",))
    assert res.forecast.target[0] == "over"
    assert res.policy.probabilities([[0.0]]).argmax() == 1


def test_without_a_better_policy_the_logging_one_is_kept():
    rng = np.random.default_rng(6)
    n = 3000
    t = np.sort(rng.uniform(0, 365, n))
    a = rng.integers(0, 3, n)
    r = np.sin(2 * np.pi * t / YEAR) + rng.normal(0, 0.5, n)  # every action pays the same
    log = {"time": t, "x0": rng.normal(size=n), "action": a, "reward": r,
           "pscore": np.full(n, 1 / 3)}  # fmt: skip
    res = learn_for_future(log, at=YEAR + 30, baselines=())
    assert not res.deploy and res.advantage.low <= 0
    assert "keep the logging policy" in res.verdict


@pytest.mark.filterwarnings("ignore:time column")
def test_the_same_log_in_another_form_learns_the_same_policy():
    pd = pytest.importorskip("pandas")
    log = season_log(1500, seed=7)
    a = learn_for_future(log, at=YEAR + 30, baselines=())
    b = learn_for_future(pd.DataFrame(log).sample(frac=1.0, random_state=0), at=YEAR + 30,
                         baselines=())  # fmt: skip
    np.testing.assert_allclose(a.policy.weights, b.policy.weights, rtol=1e-9, atol=1e-12)
    assert a.forecast.value == pytest.approx(b.forecast.value, rel=1e-9)


def test_a_new_learner_is_one_registered_class():
    @register_future_learner
    class AlwaysOne(FutureLearner):
        name = "always-one"

        def learn(self, data):
            w = np.zeros((1, data.rounds.n_actions, data.rounds.context.shape[1]))
            return FuturePolicy(w, np.array([[0.0, 50.0]]), np.ones(1))

    @register_future_learner
    class Untyped(FutureLearner):
        name = "untyped"

        def learn(self, data):
            return np.zeros(2), np.zeros(2), False

    try:
        res = learn_for_future(season_log(), at=YEAR + 91.3, learner="always-one",
                               baselines=("regression",))  # fmt: skip
        assert res.policy.probabilities([[5.0]]).argmax() == 1
        with pytest.raises(TypeError, match="'untyped': learn\\(\\) must return a FuturePolicy"):
            learn_for_future(season_log(), at=YEAR + 91.3, learner="untyped", baselines=())
    finally:
        del FUTURE_LEARNERS["always-one"], FUTURE_LEARNERS["untyped"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"at": 100.0}, ValueError, "after the log"),
        ({"at": [YEAR + 1, YEAR + 2]}, ValueError, "one policy per target"),
        ({"at": YEAR + 1, "over": (YEAR + 1, YEAR + 5)}, ValueError, "exactly one"),
        ({"at": YEAR + 1, "learner": "nope"}, ValueError, "learner: unknown learner 'nope'"),
        ({"at": YEAR + 1, "baselines": "dr-pg"}, ValueError, "baselines must be a sequence"),
        ({"at": YEAR + 1, "entropy": -1.0}, ValueError, "entropy must be a finite number >= 0"),
        ({"at": YEAR + 1, "l2": float("nan")}, ValueError, "l2 must be"),
        ({"at": YEAR + 1, "test_alpha": 1.5}, ValueError, "test_alpha"),
        ({"at": YEAR + 1, "alpha": 0.0}, ValueError, "alpha"),
        ({"at": YEAR + 1, "opfv_feature": "months"}, ValueError, "opfv_feature"),
        ({"at": YEAR + 1, "hidden": -1}, ValueError, "hidden must be an integer"),
        ({"at": YEAR + 1, "hidden": 2.5}, ValueError, "hidden must be an integer"),
        ({"at": YEAR + 1, "hidden": True}, ValueError, "hidden must be an integer"),
        ({"at": YEAR + 1, "hidden": 10_000}, ValueError, r"in \[0, 256\]"),
        ({"at": 3 * YEAR}, ForecastError, "max_horizon"),
    ],
)
def test_bad_input_is_refused_naming_it(kwargs, error, match):
    with pytest.raises(error, match=match):
        learn_for_future(season_log(1200), **kwargs)


def test_an_action_the_log_never_takes_cannot_be_learned():
    log = season_log(1200)
    with pytest.raises(ValueError, match=r"never takes action\(s\) \[2\]"):
        learn_for_future(log, at=YEAR + 1, n_actions=3)
    log["action"] = np.where(log["action"] == 1, 2, 0)  # actions 0 and 2: 1 is never taken
    with pytest.raises(ValueError, match=r"never takes action\(s\) \[1\]"):
        learn_for_future(log, at=YEAR + 1)


# -- pyprog learn ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def rounds_csv(tmp_path_factory):
    pd = pytest.importorskip("pandas")
    log = season_log(2500, seed=8)
    frame = pd.DataFrame(log)
    frame["time"] = (
        pd.Timestamp("2024-01-01") + pd.to_timedelta(frame["time"], unit="D")
    ).dt.strftime("%Y-%m-%dT%H:%M:%S")
    path = tmp_path_factory.mktemp("learn") / "rounds.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_learns_writes_the_policy_and_says_the_verdict(rounds_csv, tmp_path, capsys):
    out, summary = tmp_path / "policy.json", tmp_path / "summary.json"
    code = main(["learn", str(rounds_csv), "--time", "time", "--at", "2025-04-01", "--out",
                 str(out), "--json", str(summary), "--baselines", "regression,dr-pg"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    assert "prognosticator" in printed and "regression" in printed and "dr-pg" in printed
    assert "deploy" in printed or "keep the logging policy" in printed
    policy = FuturePolicy.load(out)
    assert policy.n_actions == 2 and policy.learner == "prognosticator"
    numbers = json.loads(summary.read_text())
    assert set(numbers["baselines"]) == {"regression", "dr-pg"}
    assert numbers["deploy"] in (True, False)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--at", "2024-06-01"], "--at must be after the log"),
        ([], "exactly one of --at"),
        (["--at", "2025-04-01", "--learner", "nope"], "--learner: unknown learner"),
        (["--at", "2025-04-01", "--entropy", "-1"], "--entropy must be"),
        (["--at", "2025-04-01", "--hidden", "-3"], "--hidden must be an integer"),
    ],
)
def test_cli_errors_name_the_option(rounds_csv, capsys, extra, match):
    code = main(["learn", str(rounds_csv), "--time", "time", *extra])
    assert code == 2
    assert match in capsys.readouterr().err


def test_cli_refuses_to_write_over_the_log(rounds_csv, capsys):
    code = main(["learn", str(rounds_csv), "--time", "time", "--at", "2025-04-01",
                 "--out", str(rounds_csv)])  # fmt: skip
    assert code == 2 and "--out" in capsys.readouterr().err


def test_cli_baselines_none_learns_the_learner_alone(rounds_csv, capsys):
    code = main(["learn", str(rounds_csv), "--time", "time", "--at", "2025-04-01",
                 "--baselines", "none", "--learner", "dr-pg"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0 and "dr-pg" in printed
    assert not any(name in printed for name in ("prognosticator", "regression", "opfv-pg"))


def test_a_log_without_context_learns_the_best_action_of_the_day():
    log = season_log(2000, seed=9)
    log["reward"] = np.where(log["action"] == 1, np.sin(2 * np.pi * log["time"] / YEAR), 0.0)
    del log["x0"]
    res = learn_for_future(log, at=YEAR + 91.3, context=None, baselines=("regression",))
    assert res.policy.n_features == 0
    assert res.policy.probabilities(None, [0.0]).argmax() == 1
    with pytest.raises(ValueError, match="hidden: a hidden layer needs context columns"):
        learn_for_future(log, at=YEAR + 91.3, context=None, hidden=4)
