"""OBP's bandit feedback and the Open Bandit Dataset as rounds for pyprog.forecast_value
(``rounds_from_obp``, ``read_obd_rounds`` in ``pyprog.logs.readers``).

OBP is not installable here: its feedback dicts are built by hand from their documented keys,
as tests/test_readers.py builds them. The real Open Bandit Dataset sample (in obp 0.5.7's
source distribution) is read when PYPROG_OBD_PATH points to its ``obd`` folder.
"""

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import pyprog
from pyprog.logs.episodes import LogFormatError
from pyprog.logs.readers import read_obd_csv, read_obd_rounds, rounds_from_obp

OBD = os.environ.get("PYPROG_OBD_PATH", "/tmp/obp/obp-0.5.7/obp/dataset/obd")


def feedback(n=60, n_actions=4, len_list=3, seed=0):
    """OBP's bandit feedback and an action_dist, as the episode readers' tests build them."""
    from test_readers import obp_feedback

    return obp_feedback(n, n_actions, len_list, seed)


# -- OBP's feedback ------------------------------------------------------------------------------


def test_feedback_round_trips_to_the_columns():
    fb, dist = feedback()
    times = np.arange(60) / 4.0
    rounds = rounds_from_obp(fb, dist, times=times, position="all")
    assert list(rounds) == ["time", "x0", "x1", "action", "reward", "pscore", "position",
                            "pi_0", "pi_1", "pi_2", "pi_3"]  # fmt: skip
    np.testing.assert_array_equal(rounds["time"], times)
    np.testing.assert_array_equal(rounds["x1"], fb["context"][:, 1])
    for key in ("action", "reward", "pscore", "position"):
        np.testing.assert_array_equal(rounds[key], fb[key])
    at_position = dist[np.arange(60), :, fb["position"]]
    for a in range(4):
        np.testing.assert_array_equal(rounds[f"pi_{a}"], at_position[:, a])
    assert rounds["action"].dtype == np.int64


def test_one_position_two_dimensional_dist_dates_and_no_policy():
    fb, dist = feedback()
    at1 = fb["position"] == 1
    dates = np.datetime64("2024-01-01") + np.arange(60).astype("timedelta64[h]")
    rounds = rounds_from_obp(fb, dist[:, :, 0], times=dates, position=1)
    assert rounds["time"].dtype == np.dtype("datetime64[ns]")
    np.testing.assert_array_equal(rounds["time"], dates[at1])
    np.testing.assert_array_equal(rounds["pi_2"], dist[at1, 2, 0])  # (n, A): every position
    fb["position"], fb["timestamp"] = None, np.arange(60.0)
    del fb["context"]
    rounds = rounds_from_obp(fb)  # no policy columns, no context, the dict's timestamps
    assert list(rounds) == ["time", "action", "reward", "pscore"]


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        ({}, {"times": None}, r"'times': required: OBP's bandit feedback holds no times"),
        ({}, {"times": np.arange(59.0)}, r"'times': 59 times for n_rounds=60"),
        ({}, {"position": None}, r"'position': the rows hold 3 positions"),
        ({"context": [["a", "b"]] * 60}, {}, r"'context': must be numbers"),
        ({"pscore": np.zeros(60)}, {}, r"'pscore': 0\.0 at \[0\] is not a probability"),
    ],
)
def test_bad_feedback_names_the_key(change, kwargs, match):
    fb, dist = feedback()
    fb.update(change)
    kw = {"times": np.arange(60.0), "position": "all", **kwargs}
    with pytest.raises(LogFormatError, match=match):
        rounds_from_obp(fb, dist, **kw)


def test_an_action_dist_bounds_the_positions():
    fb, dist = feedback()
    with pytest.raises(LogFormatError, match=r"'position': 2 at round \d+ is not in 0 \.\. 1"):
        rounds_from_obp(fb, dist[:, :, :2] / dist[:, :, :2].sum(1, keepdims=True),
                        times=np.arange(60.0), position="all")  # fmt: skip
    with pytest.raises(LogFormatError, match=r"'action_dist': shape \(60, 3, 3\), expected"):
        rounds_from_obp(fb, dist[:, :3], times=np.arange(60.0), position="all")


def test_forecast_value_takes_the_rounds_as_they_are():
    rng = np.random.default_rng(0)
    n = 3000
    t = np.sort(rng.uniform(0, 365, n))
    x = rng.normal(size=(n, 2))
    a = rng.integers(0, 2, n)
    r = (a == 1) * (1 + np.sin(2 * np.pi * t / 365.25)) + rng.normal(0, 0.3, n)
    p1 = 1 / (1 + np.exp(-x[:, 0]))
    dist = np.stack([1 - p1, p1], axis=1)[:, :, None]  # (n, A, L=1)
    fb = {"n_rounds": n, "n_actions": 2, "action": a, "reward": r, "pscore": np.full(n, 0.5),
          "context": x, "position": None}  # fmt: skip
    got = pyprog.forecast_value(rounds_from_obp(fb, dist, times=t), "pi_", at=365.25 + 91.3)
    log = {"time": t, "x0": x[:, 0], "x1": x[:, 1], "action": a, "reward": r,
           "pscore": np.full(n, 0.5)}  # fmt: skip
    want = pyprog.forecast_value(log, dist[:, :, 0], at=365.25 + 91.3)
    assert (got.value, got.low, got.high, got.model) == (want.value, want.low, want.high,
                                                         want.model)  # fmt: skip


# -- the Open Bandit Dataset's files -------------------------------------------------------------

HEADER = ",timestamp,item_id,position,click,propensity_score,user_feature_0,user_feature_1\n"


def _obd_file(path, rows):
    path.write_text(HEADER + "".join(f"{i},{row}\n" for i, row in enumerate(rows)))
    return path


ROWS = [
    "2019-11-24 00:00:19+00:00,2,1,0,0.25,b,u",
    "2019-11-24 00:00:17+00:00,0,2,1,0.5,a,u",
    "2019-11-24 09:00:00+09:00,1,1,0,0.5,c,v",  # 00:00 UTC: the first
    "2019-11-24 00:00:18+00:00,1,2,0,0.25,a,v",
]


def test_an_obd_file_as_rounds_sorted_by_time_with_obps_context(tmp_path):
    path = _obd_file(tmp_path / "all.csv", ROWS)
    rounds = read_obd_rounds(path, position="all")
    order = [2, 1, 3, 0]  # by time, in UTC
    assert rounds["action"].tolist() == [[2, 0, 1, 1][i] for i in order]
    assert rounds["reward"].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert rounds["position"].tolist() == [1, 2, 2, 1]
    assert str(rounds["time"][0]) == "2019-11-24T00:00:00.000000000"
    # OBP's one-hot user features: user_feature_0 a|b|c -> b, c; user_feature_1 u|v -> v
    x = np.column_stack([rounds[f"x{j}"] for j in range(3)])
    assert "x3" not in rounds
    np.testing.assert_array_equal(x, [[0, 1, 1], [0, 0, 0], [0, 0, 1], [1, 0, 0]])
    logs = read_obd_csv(path, evaluation_pscore=0.5, position="all")  # the same rows
    np.testing.assert_array_equal(rounds["reward"], logs.rewards[:, 0])
    np.testing.assert_array_equal(rounds["time"], logs.timestamps)
    assert list(read_obd_rounds(path, position=2, context=False)) == [
        "time", "action", "reward", "pscore", "position"]  # fmt: skip


def test_an_action_dist_is_taken_at_each_rows_position(tmp_path):
    path = _obd_file(tmp_path / "all.csv", ROWS)
    rng = np.random.default_rng(0)
    dist = rng.dirichlet(np.ones(3), size=(4, 2)).transpose(0, 2, 1)  # (rows, A=3, L=2)
    rounds = read_obd_rounds(path, action_dist=dist, position="all")
    slot = np.array([0, 1, 0, 1])  # the file's positions 1, 2 are slots 0, 1
    want = dist[np.arange(4), :, slot][[2, 1, 3, 0]]
    np.testing.assert_array_equal(np.column_stack([rounds[f"pi_{a}"] for a in range(3)]), want)
    flat = read_obd_rounds(path, action_dist=dist[:, :, 0], position=1)  # (rows, A)
    np.testing.assert_array_equal(flat["pi_1"], dist[[2, 0], 1, 0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_actions": 2}, r"line 2, column 'item_id': 2 is not an item in 0 \.\. 1"),
        ({"action_dist": np.full((4, 3, 1), 1 / 3)}, r"'action_dist': 1 positions .* at 2 \(1"),
        ({"action_dist": np.full((3, 3), 1 / 3)}, r"'action_dist': shape \(3, 3\), expected"),
        ({"action_dist": np.full((4, 3), 0.5)}, r"'action_dist': sums to 1\.5"),
        ({}, r"'position': the rows hold 2 positions"),
    ],
)
def test_bad_obd_input_names_the_file_and_the_column(tmp_path, kwargs, match):
    path = _obd_file(tmp_path / "all.csv", ROWS)
    kwargs = {"position": "all", **kwargs} if kwargs else {}
    with pytest.raises(LogFormatError, match=rf"all\.csv.*{match}"):
        read_obd_rounds(path, **kwargs)


@pytest.mark.skipif(
    not (Path(OBD) / "bts" / "all" / "all.csv").is_file(),
    reason="PYPROG_OBD_PATH does not point to the Open Bandit Dataset sample "
    "(obp-0.5.7/obp/dataset/obd from `pip download --no-deps --no-binary :all: "
    "--ignore-requires-python obp==0.5.7`)",
)
@pytest.mark.parametrize("policy", ["bts", "random"])
def test_the_real_sample_one_week_of_10000_rows_per_policy(policy):
    rounds = read_obd_rounds(Path(OBD) / policy / "all" / "all.csv", position="all")
    n = len(rounds["time"])
    assert n == 10_000 and rounds["action"].max() == 79
    days = rounds["time"].astype("datetime64[D]")
    assert (str(days[0]), str(days[-1])) == ("2019-11-24", "2019-11-30")
    assert np.all(np.diff(rounds["time"]) >= np.timedelta64(0))
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(Path(OBD) / policy / "all" / "all.csv", index_col=0)
    frame = frame.sort_values("timestamp", kind="stable")
    users = frame.loc[:, frame.columns.str.contains("user_feature")]
    obp = pd.get_dummies(users, drop_first=True).to_numpy(dtype=float)  # OBP's context
    np.testing.assert_array_equal(np.column_stack([rounds[f"x{j}"] for j in range(
        obp.shape[1])]), obp)  # fmt: skip
    assert f"x{obp.shape[1]}" not in rounds
    # the uniform random policy's value, from this week of rounds (8 bins a day)
    uniform = np.full((n, 80), 1 / 80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BTS rarely shows some items: poor support
        f = pyprog.forecast_value(rounds, uniform, at="2019-12-01", bin_width=1 / 8,
                                  estimator="is")  # fmt: skip
    assert f.n_rounds == 10_000 and 0 < f.value < 0.01 and f.low < f.value < f.high
