"""Robustness, fourth round (issue 48): the CLI's and the rounds CSV reader's items.

One class per item; each test failed on main before the fix it names. CLI behaviour goes
through ``main([...])``: exit code 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import pyprog
from pyprog.cli.main import main
from pyprog.value.forecast import forecast_value


def write_log(path, n=300, seed=0, days=60.0, header=None, times=None):
    """A small CSV log of rounds: time (days), x0, x1, action, reward, pscore, pi_0, pi_1."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, days, n)) if times is None else times
    x = rng.normal(size=(n, 2))
    a = rng.integers(0, 2, n)
    r = 0.5 * a + rng.normal(0, 0.3, n)
    head = header or "time,x0,x1,action,reward,pscore,pi_0,pi_1"
    rows = [f"{t[i]},{x[i, 0]:.4f},{x[i, 1]:.4f},{a[i]},{r[i]:.4f},0.5,0.2,0.8" for i in range(n)]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


def one_line_error(capsys, argv, *needles):
    """``pyprog ARGV`` exits 2 with one line on stderr holding every needle."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


class TestItem0LazyImports:
    """An argument error of ``pyprog forecast`` comes before the forecasting code is
    imported (it took 9-13 s on a loaded machine); ``import pyprog`` still offers every
    public name."""

    HEAVY = ("pyprog.value.forecast", "pyprog.offpolicy", "pyprog.forecast.estimators",
             "pyprog.learn.learners", "scipy.stats", "matplotlib", "pandas", "numba")  # fmt: skip

    @pytest.mark.parametrize(
        "argv",
        [
            ["forecast", "missing.csv", "--time", "t", "--at", "5"],
            ["forecast", "missing.csv", "--time", "t"],
            ["forecast", "missing.csv"],
        ],
    )
    def test_a_cli_error_imports_nothing_heavy(self, tmp_path, argv):
        code = (
            "import sys; from pyprog.cli.main import main; code = main(sys.argv[1:]); "
            f"print(code, [m for m in {self.HEAVY!r} if m in sys.modules])"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.stdout.split(maxsplit=1) == ["2", "[]\n"], (done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr

    def test_every_public_name_resolves_and_is_listed(self):
        for name in pyprog.__all__:
            assert getattr(pyprog, name) is not None, name
        assert set(pyprog.__all__) <= set(dir(pyprog))
        from pyprog import ValueForecast, forecast_value, run

        assert forecast_value.__module__ == "pyprog.value.forecast"
        assert ValueForecast.__name__ == "ValueForecast" and callable(run)
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            pyprog.nope  # noqa: B018


class TestItem1NoOutputOverwritesAnInput:
    """``--json`` (or ``--plot``) naming the log's file is refused before anything is read
    or written: the same file through ``./``, a relative path or a symlink."""

    @pytest.mark.parametrize("time", [True, False])
    @pytest.mark.parametrize("spell", ["same", "dot", "relative", "symlink"])
    def test_json_onto_the_log(self, tmp_path, capsys, monkeypatch, time, spell):
        log = write_log(tmp_path / "log.csv")
        before = log.read_bytes()
        monkeypatch.chdir(tmp_path)
        (tmp_path / "sub").mkdir()
        if spell == "symlink":
            (tmp_path / "link.csv").symlink_to(log)
        given = {"same": str(log), "dot": "./log.csv", "relative": "sub/../log.csv",
                 "symlink": "link.csv"}[spell]  # fmt: skip
        argv = ["forecast", str(log), "--json", given]
        if time:
            argv += ["--time", "time", "--at", "70"]
        one_line_error(capsys, argv, "would overwrite LOGS", "write it elsewhere")
        assert log.read_bytes() == before

    def test_plot_onto_the_log_and_json_onto_the_plot(self, tmp_path, capsys):
        log = tmp_path / "log.png"
        log.write_text("episode,step,reward,log_pi,log_beta\n")
        before = log.read_bytes()
        one_line_error(capsys, ["forecast", str(log), "--plot", str(log)], "--plot")
        out = str(tmp_path / "f.png")
        one_line_error(capsys, ["forecast", str(tmp_path / "log.png"), "--plot", out,
                                "--json", out], "--plot", "would overwrite --json")  # fmt: skip
        assert log.read_bytes() == before

    def test_best_and_reproduce_keep_their_store(self, tmp_path, capsys):
        store = tmp_path / "runs.sqlite"
        store.write_bytes(b"not touched")
        one_line_error(capsys, ["best", "--store", str(store), "--json", str(store)],
                       "--json", "would overwrite --store")  # fmt: skip
        one_line_error(capsys, ["reproduce", "--quick", "--store", str(store), "--out",
                                str(tmp_path)], "would overwrite --store")  # fmt: skip
        assert store.read_bytes() == b"not touched"

    def test_a_directory_as_the_log_is_named(self, tmp_path, capsys):
        # with --time a folder is a Parquet dataset (issue 51): one without data is named
        one_line_error(capsys, ["forecast", str(tmp_path), "--time", "time", "--at", "5"],
                       "a folder with no Parquet files")  # fmt: skip
        one_line_error(capsys, ["forecast", str(tmp_path)], "is a directory")

    def test_a_result_next_to_the_log_is_still_written(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        out = tmp_path / "out.json"
        assert main(["forecast", str(log), "--time", "time", "--at", "65", "--json", str(out)]) == 0
        assert json.loads(out.read_text())["n_rounds"] == 300


def small_frame(n=300, seed=0):
    """The rounds of :func:`write_log` as a dict of arrays."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    return {"time": np.sort(rng.uniform(0, 60, n)), "x0": rng.normal(size=n),
            "action": a, "reward": 0.5 * a + rng.normal(0, 0.3, n), "pscore": np.full(n, 0.5),
            "pi_0": np.full(n, 0.2), "pi_1": np.full(n, 0.8)}  # fmt: skip


class TestItem4And9ColumnNames:
    """A column's own name is that column; a prefix matching nothing is an error; policy
    columns with a gap or a zero-padded number are refused."""

    def test_one_context_column_by_name_is_used(self):
        frame = small_frame()
        by_name = pyprog.forecast_value(frame, "pi_", at=65, context="x0")
        by_list = pyprog.forecast_value(frame, "pi_", at=65, context=["x0"])
        none = pyprog.forecast_value(frame, "pi_", at=65, context=None)
        assert by_name.value == by_list.value != none.value

    def test_a_prefix_matching_nothing_names_it_and_the_columns(self):
        with pytest.raises(ValueError, match=r"context: no columns named 'z' .*'x0'"):
            pyprog.forecast_value(small_frame(), "pi_", at=65, context="z")

    def test_the_default_prefix_without_contexts_means_no_context(self):
        frame = small_frame()
        del frame["x0"]
        assert pyprog.forecast_value(frame, "pi_", at=65).n_rounds == 300

    @pytest.mark.parametrize(
        "rename, match",
        [({"pi_1": "pi_2"}, r"skip action 1 \(pi_1\)"),
         ({"pi_0": "pi_00", "pi_1": "pi_01"}, "'pi_00' has a zero-padded action number")],
    )  # fmt: skip
    def test_policy_columns_with_gaps_or_padding(self, rename, match):
        frame = {rename.get(k, k): v for k, v in small_frame().items()}
        with pytest.raises(ValueError, match=match):
            pyprog.forecast_value(frame, "pi_", at=65)

    def test_cli_context_by_name(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "65",
                                "--context", "z"], "--context: no columns named 'z'")  # fmt: skip


class TestItem5CompactDates:
    """Eight digits that are a date are refused unless ``compact_dates`` says how to read
    them, in a CSV's time column and in a target."""

    def ymd_log(self, tmp_path):
        import datetime as dt

        start = dt.date(2023, 1, 1)
        times = [
            f"{start + dt.timedelta(days=int(d)):%Y%m%d}" for d in np.sort(np.arange(300) % 40)
        ]
        return write_log(tmp_path / "ymd.csv", times=times)

    def test_a_column_of_yyyymmdd_is_refused_naming_both_readings(self, tmp_path):
        with pytest.raises(ValueError, match=r"line 2, column 'time': '20230101' is both the "
                           r"date 2023-01-01 .* day 20,230,101.*compact_dates"):  # fmt: skip
            pyprog.forecast_value(self.ymd_log(tmp_path), "pi_", at="2023-02-01")

    def test_compact_dates_says_which(self, tmp_path):
        from pyprog.logs.rounds_csv import read_rounds_csv

        log = self.ymd_log(tmp_path)
        dates = read_rounds_csv(log, compact_dates="date")["time"]
        days = read_rounds_csv(log, compact_dates="days")["time"]
        assert dates[0] == 19358.0 and days[0] == 20230101.0  # 2023-01-01 is day 19358
        with pytest.raises(ValueError, match="compact_dates must be None, 'date' or 'days'"):
            read_rounds_csv(log, compact_dates="yes")

    def test_a_target_of_eight_digits_is_refused(self):
        with pytest.raises(ValueError, match=r"at: '20230301' is both the date 2023-03-01"):
            pyprog.forecast_value(small_frame(), "pi_", at="20230301")
        # not a date (month 13): a number of days, as before
        with pytest.raises(ValueError, match="days after the log's end"):
            pyprog.forecast_value(small_frame(), "pi_", at="20231301")

    def test_cli_compact_dates(self, tmp_path, capsys):
        log = self.ymd_log(tmp_path)
        argv = ["forecast", str(log), "--time", "time", "--at", "20230215"]
        one_line_error(capsys, argv, "--compact-dates date")
        out = tmp_path / "o.json"
        assert main([*argv, "--compact-dates", "date", "--json",
                     str(out)]) == 0  # fmt: skip
        summary = json.loads(out.read_text())
        assert summary["target"] == ["at", 19403.0] and summary["target_utc"] == [
            "2023-02-15T00:00Z"
        ]


class TestItem10NoTraceback:
    """Inputs that raised a raw traceback: one line, exit 2."""

    def test_a_field_over_the_csv_limit(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        with log.open("a") as fh:
            fh.write("1" * 140_000 + ",0,0,0,0,0.5,0.2,0.8\n")
        err = one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "65"],
                             "line 302", "longer than 131,072 characters")  # fmt: skip
        assert len(err) < 300

    def test_a_scalar_reward_names_the_column(self):
        frame = small_frame()
        frame["reward"] = 1.0
        with pytest.raises(ValueError, match="column 'reward' is a single value"):
            pyprog.forecast_value(frame, "pi_", at=65)

    @pytest.mark.parametrize("at", ["abc", "nan", "1e400", "2023-13-45", "inf"])
    def test_targets_that_do_not_parse(self, tmp_path, capsys, at):
        log = write_log(tmp_path / "log.csv")
        one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", at], "--at")

    def test_a_binary_file_is_not_echoed(self, tmp_path, capsys):
        log = tmp_path / "log.csv"
        log.write_bytes(bytes(range(256)) * 40)
        err = one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "5"],
                             "binary data")  # fmt: skip
        assert len(err) < 200

    def test_n_boot_with_time_is_refused_before_work(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        argv = ["forecast", str(log), "--time", "time", "--at", "65", "--n-boot", "1" + "0" * 300]
        one_line_error(capsys, argv, "--n-boot: for logs of episodes, not with --time")

    def test_safety_alpha_with_time_is_refused(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        argv = ["forecast", str(log), "--time", "time", "--at", "65", "--safety-alpha", "0.1"]
        one_line_error(capsys, argv, "--safety-alpha: for logs of episodes, not with --time")


class TestItem11Messages:
    """Encodings, trailing delimiters, ragged dict columns, --bin-width, --max-horizon in
    the CLI's words, the file's line numbers, plain short numbers."""

    def test_utf16_and_latin1_name_the_file_and_the_encoding(self, tmp_path, capsys):
        text = write_log(tmp_path / "log.csv").read_text()
        (tmp_path / "u16.csv").write_text(text, encoding="utf-16")
        (tmp_path / "lat.csv").write_text(text.replace("x1", "é"), encoding="latin-1")
        for name, found in (("u16.csv", "is UTF-16 text"), ("lat.csv", "Latin-1")):
            path = str(tmp_path / name)
            one_line_error(capsys, ["forecast", path, "--time", "time", "--at", "65"],
                           repr(path), found)  # fmt: skip

    def test_a_trailing_delimiter_on_every_line_is_read_as_pandas_does(self, tmp_path):
        from pyprog.logs.rounds_csv import read_rounds_csv

        log = write_log(tmp_path / "log.csv")
        plain = read_rounds_csv(log)
        log.write_text("".join(line + ",\n" for line in log.read_text().splitlines()))
        trailing = read_rounds_csv(log)
        assert list(trailing) == list(plain)
        for name in plain:
            np.testing.assert_array_equal(trailing[name], plain[name])
        log.write_text(log.read_text().replace("0.8,\n", "0.8,7\n", 1))
        with pytest.raises(ValueError, match=r"line 2: '7' under the header's unnamed last"):
            read_rounds_csv(log)

    def test_dict_columns_of_different_lengths_name_the_column(self):
        frame = small_frame()
        frame["pscore"] = frame["pscore"][:-5]
        with pytest.raises(ValueError, match="column 'pscore' has 295 values but column 'time'"):
            pyprog.forecast_value(frame, "pi_", at=65)

    def test_bin_width_from_the_cli(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "65",
                                "--bin-width", "0"], "--bin-width must be")  # fmt: skip
        out = tmp_path / "o.json"
        argv = ["forecast", str(log), "--time", "time", "--at", "65", "--bin-width", "2"]
        assert main([*argv, "--json", str(out)]) == 0
        assert json.loads(out.read_text())["n_bins"] <= 31

    def test_the_horizon_refusal_speaks_each_users_words(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        err = one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "700"],
                             "Pass --max-horizon to")  # fmt: skip
        assert "max_horizon=" not in err
        with pytest.raises(pyprog.ForecastError, match="Pass max_horizon= to"):
            pyprog.forecast_value(str(log), "pi_", at=700)

    def test_max_horizon_that_is_not_a_number_is_one_line(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "65",
                                "--max-horizon", "abc"], "--max-horizon", "'abc'")  # fmt: skip

    def test_rows_are_named_by_the_files_line(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        lines = log.read_text().splitlines()
        lines[5] = lines[5].replace(",0.5,", ",0,")  # the 5th round, on the file's line 6
        log.write_text("\n".join([*lines[:3], "", *lines[3:]]) + "\n")  # a blank line 4
        one_line_error(capsys, ["forecast", str(log), "--time", "time", "--at", "65"],
                       f"got 0.0 at line 7 of {log}")  # fmt: skip

    def test_numbers_in_messages_are_plain_and_short(self):
        from pyprog.cli.common import plain_numbers
        from pyprog.utils.validation import shorten

        assert plain_numbers("got np.int64(0); got " + "7" * 300) == "got 0; got 7.778e+299"
        assert shorten(np.int64(0)) == "0" and shorten(np.float64(0.5)) == "0.5"
        assert shorten(10**300) == "1e+300" and shorten("1" * 300).endswith("(300 characters)")


class TestItem14Defaults:
    """One default alpha (the function's); unsorted times said once; the guides' table."""

    def test_cli_alpha_default_is_forecast_values(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        out = tmp_path / "o.json"
        assert main(["forecast", str(log), "--time", "time", "--at", "65",
                     "--json", str(out)]) == 0  # fmt: skip
        assert "90% prediction interval" in capsys.readouterr().out
        direct = pyprog.forecast_value(str(log), "pi_", at=65)
        summary = json.loads(out.read_text())
        assert summary["alpha"] == 0.1 and summary["low"] == pytest.approx(direct.low)

    def test_unsorted_times_are_said_once(self, tmp_path, capsys):
        frame = small_frame()
        order = np.random.default_rng(1).permutation(300)
        shuffled = {k: np.asarray(v)[order] for k, v in frame.items()}
        with pytest.warns(UserWarning, match=r"not in time order \(\d+ of 300 rows") as rec:
            pyprog.forecast_value(shuffled, "pi_", at=65)
        assert len([w for w in rec if "time order" in str(w.message)]) == 1
        log = write_log(tmp_path / "log.csv")
        head, *rows = log.read_text().splitlines()
        log.write_text("\n".join([head, *rows[::-1]]) + "\n")
        assert main(["forecast", str(log), "--time", "time", "--at", "65"]) == 0
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["pyprog forecast: warning: time column 'time': the log is not in time "
                       "order (299 of 300 rows are earlier than the row before them)"]  # fmt: skip

    def test_sorted_times_say_nothing(self, recwarn):
        pyprog.forecast_value(small_frame(), "pi_", at=65)
        assert not [w for w in recwarn if "time order" in str(w.message)]


# -- forecast_value's numeric options, checked before the log is read (issue 48 items 11, 13)


@pytest.mark.parametrize(
    "option, message",
    [
        ({"max_horizon": "abc"}, "max_horizon must be a number of days > 0; got 'abc'"),
        ({"max_horizon": True}, "max_horizon must be a number of days > 0; got True"),
        ({"interval": "both"}, "interval must be 'prediction' or 'mean'; got 'both'"),
        ({"bin_width": 0}, "bin_width must be a finite number of days > 0; got 0"),
        ({"bin_width": np.nan}, "bin_width must be a finite number of days > 0; got nan"),
        ({"alpha": np.int64(2)}, r"alpha must be a number in \(0, 1\), e.g. 0.05, or None; got 2"),
    ],
)
def test_forecast_value_checks_its_options_before_reading_the_log(tmp_path, option, message):
    missing = tmp_path / "never-read.csv"  # does not exist: the option's error comes first
    with pytest.raises(ValueError, match=message):
        forecast_value(missing, "pi_", at=5.0, **option)


# -- the forecast depends on the rounds, not on how they are handed over (items 6, 7)


def _small_log(n: int = 600, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 60, n)  # unsorted on purpose
    x = rng.normal(size=(n, 2))
    a = rng.integers(0, 2, n)
    r = (a == 1) * (1 + 0.01 * t) + x[:, 0] + rng.normal(0, 0.5, n)
    return {"time": t, "x0": x[:, 0], "x1": x[:, 1], "action": a, "reward": r,
            "pscore": np.full(n, 0.5)}  # fmt: skip


def _greedy(x, t):
    return np.column_stack([x[:, 0] < 0, x[:, 0] >= 0]).astype(float)


def test_shuffled_rows_give_the_same_forecast():
    log = _small_log()
    perm = np.random.default_rng(1).permutation(len(log["time"]))
    shuffled = {k: v[perm] for k, v in log.items()}
    kw = {"at": 70.0, "n_actions": 2, "random_state": 3}
    one = forecast_value(log, _greedy, **kw)
    two = forecast_value(shuffled, _greedy, **kw)
    assert (one.value, one.low, one.high, one.model) == (two.value, two.low, two.high, two.model)
    pi = _greedy(np.column_stack([log["x0"], log["x1"]]), log["time"])  # an array policy too
    three = forecast_value(shuffled, pi[perm], **{**kw, "n_actions": None})
    assert three.value == forecast_value(log, pi, **{**kw, "n_actions": None}).value


def test_a_policy_that_writes_into_its_arguments_changes_nothing():
    def rude(x, t):
        out = _greedy(x, t)
        x *= 10.0  # in place: the log's contexts must not see it
        t += 100.0
        return out

    log = _small_log()
    kw = {"at": 70.0, "n_actions": 2, "random_state": 3}
    assert forecast_value(log, rude, **kw).value == forecast_value(log, _greedy, **kw).value


def test_a_policy_on_an_action_the_log_never_played_is_refused():
    """IS scored it 0 and DR gave an interval 0.003 wide around a guess (item 2)."""
    log = _small_log()
    log["action"] = np.zeros_like(log["action"])  # only action 0 was ever played
    log["pscore"] = np.full(len(log["time"]), 0.5)
    kw = {"at": 70.0}
    with pytest.raises(ValueError, match=r"0\.5\d* of its mass on action 1, which the log never"):
        forecast_value(log, _greedy, n_actions=2, **kw)
    pi = np.tile([0.99, 0.01], (len(log["time"]), 1))
    with pytest.raises(ValueError, match=r"0\.01 of its mass on action 1"):
        forecast_value(log, pi, **kw)
    only_0 = np.tile([1.0, 0.0], (len(log["time"]), 1))  # no mass there: forecast
    assert np.isfinite(forecast_value(log, only_0, **kw).value)


# -- targets, seeds, reward models and rewards of the Python API (items 9, 10, 11)


def test_targets_as_users_write_them():
    import datetime as dt

    import pandas as pd

    log = _small_log()
    log["time"] = np.sort(log["time"])
    dates = {**log, "time": pd.Timestamp("2020-01-01") + pd.to_timedelta(log["time"], unit="D")}
    kw = {"random_state": 0}
    pi = np.tile([0.5, 0.5], (600, 1))
    ref = forecast_value(dates, pi, at="2020-03-15", **kw)
    assert forecast_value(dates, pi, at=dt.date(2020, 3, 15), **kw).value == ref.value
    for many in (pd.DatetimeIndex(["2020-03-15"]), pd.Series([pd.Timestamp("2020-03-15")])):
        (one,) = forecast_value(dates, pi, at=many, **kw)
        assert one.value == ref.value
    with pytest.raises(ValueError, match="at is NaT"):
        forecast_value(dates, pi, at=pd.NaT, **kw)
    with pytest.raises(ValueError, match=r"at\[1\] is NaT"):
        forecast_value(dates, pi, at=[pd.Timestamp("2020-03-15"), pd.NaT], **kw)
    zero_d = forecast_value(dates, pi, at=np.array(np.datetime64("2020-03-15")), **kw)
    assert zero_d.value == ref.value
    # ISO-8601 strings and date objects in a dict's time column, as the CSV reader takes them
    iso = {**dates, "time": np.array([d.isoformat() for d in dates["time"]], dtype=object)}
    # ISO strings keep microseconds, not the timestamps' nanoseconds: times 1e-11 days apart
    assert forecast_value(iso, pi, at="2020-03-15", **kw).value == pytest.approx(
        ref.value, rel=1e-9
    )
    days = {**dates, "time": np.array([d.date() for d in dates["time"]], dtype=object)}
    assert np.isfinite(forecast_value(days, pi, at="2020-03-15", **kw).value)


@pytest.mark.parametrize("seed", [1.5, "seed", True])
def test_a_bad_random_state_is_named(seed):
    with pytest.raises(ValueError, match="random_state must be None, an integer or a numpy"):
        forecast_value(_small_log(), _greedy, at=70.0, n_actions=2, random_state=seed)


def test_a_reward_model_that_cannot_be_copied_is_named():
    class NoCopy:
        affine_features = True

        def __deepcopy__(self, memo):
            raise RuntimeError("no copies")

        def fit(self, X, y):
            return self

        def predict(self, X):
            return np.zeros(len(X))

    with pytest.raises(ValueError, match=r"copy\.deepcopy raised RuntimeError \(no copies\)"):
        forecast_value(_small_log(), _greedy, at=70.0, n_actions=2, reward_model=NoCopy())


def test_huge_rewards_are_refused_not_overflowed():
    log = _small_log()
    log["reward"] = log["reward"] * 1e300  # returned [-inf, inf] before
    with pytest.raises(ValueError, match=r"reward must be at most 1e\+100 in magnitude"):
        forecast_value(log, _greedy, at=70.0, n_actions=2)


def test_probabilities_within_rounding_of_0_and_1_are_taken():
    """One ulp outside [0, 1] was refused, while the row sums had a tolerance (item 11)."""
    log = _small_log()
    pi = np.tile([0.5, 0.5], (600, 1))
    kw = {"at": 70.0, "random_state": 0}
    ref = forecast_value(log, pi, **kw).value
    ulp = pi.copy()
    ulp[0] = [np.nextafter(1.0, 2.0), np.nextafter(0.0, -1.0)]
    assert np.isfinite(forecast_value(log, ulp, **kw).value)
    ps = {**log, "pscore": np.where(np.arange(600) == 3, np.nextafter(1.0, 2.0), 0.5)}
    assert np.isfinite(forecast_value(ps, pi, **kw).value)
    assert forecast_value(log, pi, **kw).value == ref
    bad = pi.copy()
    bad[0] = [1.01, -0.01]
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\] \(to 1e-06\); got 1.01 at"):
        forecast_value(log, bad, **kw)


def test_the_horizon_refusal_quotes_the_max_horizon_given():
    from pyprog.timeseries.errors import ForecastError

    with pytest.raises(ForecastError, match=r"beyond max_horizon=30 days"):
        forecast_value(_small_log(), _greedy, at=200.0, n_actions=2, max_horizon=30)
