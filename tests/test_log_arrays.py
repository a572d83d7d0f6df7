"""Logs from arrays and DataFrames (``Logs.from_arrays``, ``Logs.from_frame``), and
``forecast_logs`` on them: the same numbers as the CSV path."""

import datetime as dt

import numpy as np
import pytest
from test_logs import write_logs

import pyprog
from pyprog.logs.episodes import LOG_PROB_FLOOR, LogFormatError, Logs
from pyprog.logs.episodes_csv import read_logs

pd = pytest.importorskip("pandas")


@pytest.fixture
def padded():
    rng = np.random.default_rng(3)
    n, h = 60, 3
    lengths = rng.integers(1, h + 1, size=n)
    mask = (np.arange(h) < lengths[:, None]).astype(float)
    log_beta = np.log(rng.uniform(0.2, 1.0, (n, h))) * mask
    log_pi = np.log(rng.uniform(0.2, 1.0, (n, h))) * mask
    rewards = rng.normal(size=(n, h)) * mask
    return log_pi, log_beta, rewards, mask, lengths


def _same(a: Logs, b: Logs):
    np.testing.assert_array_equal(a.lengths, b.lengths)
    np.testing.assert_array_equal(a.steps, b.steps)
    np.testing.assert_array_equal(a.episode_ids, b.episode_ids)


class TestRoundTrip:
    def test_padded_flat_frame_and_csv_agree(self, tmp_path, padded):
        log_pi, log_beta, rewards, mask, lengths = padded
        from_csv = read_logs(write_logs(tmp_path / "l.csv", log_pi, log_beta, rewards, lengths))
        from_padded = Logs.from_arrays(rewards, log_pi, log_beta, mask=mask)
        keep = mask == 1
        episode = np.repeat(np.arange(len(lengths)), lengths)
        step = np.concatenate([np.arange(k) for k in lengths])
        from_flat = Logs.from_arrays(rewards[keep], log_pi[keep], log_beta[keep], episode=episode)
        frame = pd.DataFrame(
            {"episode": episode, "step": step, "reward": rewards[keep], "log_pi": log_pi[keep]}
            | {"log_beta": log_beta[keep], "note": "x"}
        )
        from_frame = Logs.from_frame(frame)
        for logs in (from_padded, from_flat, from_frame):
            _same(logs, from_csv)
            assert not logs.from_file and logs.timestamps is None

    def test_forecast_logs_takes_a_frame_or_a_dict_with_the_csv_numbers(self, tmp_path, padded):
        log_pi, log_beta, rewards, mask, lengths = padded
        path = write_logs(tmp_path / "l.csv", log_pi, log_beta, rewards, lengths)
        keep = mask == 1
        columns = {
            "episode": np.repeat(np.arange(len(lengths)), lengths),
            "reward": rewards[keep],
            "log_pi": log_pi[keep],
            "log_beta": log_beta[keep],
        }
        opts = dict(basis="linear", d=2, n_boot=200)
        want = pyprog.forecast_logs(path, **opts).as_dict()
        for logs in (pd.DataFrame(columns), columns):
            got = pyprog.forecast_logs(logs, **opts).as_dict()
            assert got.pop("file") == "logs"
            assert got == {k: v for k, v in want.items() if k != "file"}

    def test_one_step_per_episode_without_episode_column(self):
        logs = Logs.from_frame({"reward": [1.0, 0.0], "log_pi": [-1.0, -2.0], "log_beta": [-1, -1]})
        assert logs.episodes == 2 and logs.horizon == 1

    def test_timestamps_tz_aware_to_utc_and_first_step_of_each_episode(self):
        times = pd.to_datetime(["2019-11-24 09:00", "2019-11-24 09:30", "2019-11-25 10:00"])
        frame = pd.DataFrame(
            {"episode": [0, 0, 1], "reward": [1.0, 1.0, 0.0], "log_pi": [-1.0] * 3}
            | {"log_beta": [-1.0] * 3, "time": times.tz_localize("Asia/Tokyo")}
        )
        logs = Logs.from_frame(frame, timestamp="time")
        want = np.array(["2019-11-24T00:00", "2019-11-25T01:00"], dtype="datetime64[ns]")
        np.testing.assert_array_equal(logs.timestamps, want)
        naive = Logs.from_arrays([1.0], [-1.0], [-1.0], timestamp=[dt.datetime(2020, 1, 1)])
        assert naive.timestamps.dtype == np.dtype("datetime64[ns]")
        numbers = Logs.from_arrays([1.0, 2.0], [-1.0] * 2, [-1.0] * 2, timestamp=[0, 1.5])
        assert numbers.timestamps.tolist() == [0.0, 1.5]

    def test_zero_probability_under_pi_is_floored(self):
        logs = Logs.from_arrays([1.0], [-np.inf], [-1.0])
        assert logs.log_pi[0, 0] == LOG_PROB_FLOOR
        assert pyprog.pdis(logs.log_pi, logs.log_beta, logs.rewards, logs.mask, 1.0).J[0] < 1e-300


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(reward=[1.0, 2.0], log_pi=[-1.0], log_beta=[-1.0, -1.0]), "'log_pi': shape"),
        (dict(reward=[np.nan], log_pi=[-1.0], log_beta=[-1.0]), "'reward': nan at row 0"),
        (dict(reward=[1.0], log_pi=[0.5], log_beta=[-1.0]), "'log_pi'.*look like probabilities"),
        (dict(reward=[1.0], log_pi=[-1.0], log_beta=[-np.inf]), "'log_beta'.*probability 0"),
        (dict(reward=[1.0], log_pi=[np.nan], log_beta=[-1.0]), "'log_pi': nan"),
        (
            dict(reward=[[1.0, 1.0]], log_pi=[[-1, -1]], log_beta=[[-1, -1]], mask=[[0, 1]]),
            "'mask'",
        ),
        (
            dict(reward=[1.0] * 3, log_pi=[-1] * 3, log_beta=[-1] * 3, episode=[0, 1, 0]),
            "'episode'",
        ),
        (dict(reward=[1.0] * 2, log_pi=[-1] * 2, log_beta=[-1] * 2, timestamp=[2, 1]), "earlier"),
        (dict(reward=[1.0] * 2, log_pi=[-1] * 2, log_beta=[-1] * 2, timestamp=[1]), "'timestamp'"),
        (dict(reward=[], log_pi=[], log_beta=[]), "no steps"),
    ],
)
def test_bad_arrays_name_the_argument(kwargs, match):
    with pytest.raises(LogFormatError, match=match):
        Logs.from_arrays(**kwargs)


def test_bad_frames_name_the_column():
    with pytest.raises(LogFormatError, match="'log_beta': missing column"):
        Logs.from_frame(pd.DataFrame({"reward": [1.0], "log_pi": [-1.0]}))
    with pytest.raises(LogFormatError, match=r"'step'.*increase by 1"):
        Logs.from_frame(
            {"episode": [0, 0], "step": [0, 2], "reward": [1.0, 1], "log_pi": [-1.0] * 2}
            | {"log_beta": [-1.0] * 2}
        )
    dup = pd.DataFrame(
        [[1.0, -1.0, -1.0, -1.0]], columns=["reward", "log_pi", "log_beta", "log_pi"]
    )
    with pytest.raises(LogFormatError, match="'log_pi': the column appears twice"):
        Logs.from_frame(dup)
    with pytest.raises(LogFormatError, match="'time': missing column"):
        Logs.from_frame({"reward": [1.0], "log_pi": [-1.0], "log_beta": [-1.0]}, timestamp="time")


def test_forecast_errors_on_arrays_say_where_without_a_file():
    logs = Logs.from_arrays([1.0] * 2, [-1.0] * 2, [-1.0] * 2)
    with pytest.raises(LogFormatError, match=r"^arrays, row 1 \(episode 1\), column 'episode'"):
        pyprog.forecast_logs(logs, basis="linear", d=2)
