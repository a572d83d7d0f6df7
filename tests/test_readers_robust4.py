"""Fuzz round 4 (issue 48) on the readers and the time parser: dates outside 1677-2262,
duplicate Minari ids, non-integers, NaT, 1e300 rewards, raw tracebacks, unclear messages and
the Open Bandit Dataset reader's memory.

Each test fails on the code before the fix; they run on both backends (the readers are
NumPy either way).
"""

import dataclasses
import datetime as dt
import tracemalloc
import zoneinfo

import numpy as np
import pytest
from test_readers import (
    OBD_FIXTURE,
    minari_episodes,
    obp_feedback,
    pi_log_prob,
    scope_rl_dataset,
)

from pyprog.logs.episodes import LogFormatError
from pyprog.logs.readers import from_minari, from_obp, from_scope_rl, read_obd_csv
from pyprog.logs.times import as_days, fits_ns

EPOCH = dt.datetime(1970, 1, 1)
DAY = dt.timedelta(days=1)
#: The last microseconds datetime64[ns] holds, and the first ones it does not.
NS_FIRST, NS_LAST = (
    dt.datetime(1677, 9, 21, 0, 12, 43, 145225),
    dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
)
NS_BEFORE, NS_AFTER = (
    NS_FIRST - dt.timedelta(microseconds=1),
    NS_LAST + dt.timedelta(microseconds=1),
)


def exact_days(d: dt.datetime) -> float:
    return (d - EPOCH) / DAY


# -- item 3: dates outside 1677-2262 -----------------------------------------------------------


class TestAsDaysAnyYear:
    @pytest.mark.parametrize("year", [1, 1500, 1677, 2263, 2300, 9999])
    def test_far_years_are_exact_in_every_form(self, year):
        d = dt.datetime(year, 6, 1, 12, 30, 0, 250000)
        want = exact_days(d)
        forms = [
            [d],
            np.array([d], dtype="datetime64[us]"),
            np.array([d], dtype="datetime64[ms]"),
        ]
        for form in forms:
            assert as_days(form)[0] == pytest.approx(want, abs=1e-9)
        noon = np.array([d.replace(hour=12, minute=0, microsecond=0)], dtype="datetime64[s]")
        assert as_days(noon)[0] == exact_days(d.replace(hour=12, minute=0, microsecond=0))
        day = np.array([d.date()], dtype="datetime64[D]")
        assert as_days(day)[0] == exact_days(dt.datetime(year, 6, 1))

    def test_the_boundaries_of_datetime64_ns(self):
        inside = np.array([NS_FIRST, NS_LAST], dtype="datetime64[us]")
        outside = np.array([NS_BEFORE, NS_AFTER], dtype="datetime64[us]")
        assert fits_ns(inside).all() and not fits_ns(outside).any()
        # inside: the numbers of before (int64 ns / ns a day), bit for bit
        before = inside.astype("datetime64[ns]").astype(np.int64) / 86_400e9
        np.testing.assert_array_equal(as_days(inside), before)
        np.testing.assert_allclose(
            as_days(outside), [exact_days(NS_BEFORE), exact_days(NS_AFTER)], rtol=0, atol=1e-9
        )
        # whole days: 2262-04-11 fits, 2262-04-12 and 1677-09-21 do not
        days = np.array(["2262-04-11", "2262-04-12", "1677-09-21", "1677-09-22"], "datetime64[D]")
        assert fits_ns(days).tolist() == [True, False, False, True]
        assert as_days(days).tolist() == [106751.0, 106752.0, -106752.0, -106751.0]

    def test_in_range_numbers_are_unchanged_and_time_zones_still_convert(self):
        rng = np.random.default_rng(0)
        us = np.datetime64("1990-01-01", "us") + rng.integers(0, 3 * 10**15, 200).astype(
            "timedelta64[us]"
        )
        before = us.astype("datetime64[ns]").astype(np.int64) / 86_400e9
        np.testing.assert_array_equal(as_days(us), before)
        np.testing.assert_array_equal(as_days(us.astype(object)), before)  # datetime objects
        berlin = zoneinfo.ZoneInfo("Europe/Berlin")
        summer = dt.datetime(2300, 7, 1, 2, 0, tzinfo=berlin)  # CEST, +02:00
        winter = dt.datetime(2300, 1, 1, 1, 0, tzinfo=berlin)  # CET, +01:00
        got = as_days([summer, winter])
        np.testing.assert_allclose(
            got, [exact_days(dt.datetime(2300, 7, 1)), exact_days(dt.datetime(2300, 1, 1))]
        )
        leap = as_days(np.array(["2400-02-29", "2400-03-01"], dtype="datetime64[D]"))
        assert np.diff(leap).tolist() == [1.0]

    def test_pandas_timestamps_of_a_coarser_unit(self):
        pd = pytest.importorskip("pandas")
        s = pd.Series(pd.to_datetime(["2300-01-01T09:00+09:00"]))  # unit s or us, not ns
        assert as_days(s)[0] == exact_days(dt.datetime(2300, 1, 1))
        assert as_days(pd.DatetimeIndex(s))[0] == exact_days(dt.datetime(2300, 1, 1))


class TestReadersRefuseDatesTheLogsCannotHold:
    """Logs hold datetime64[ns] timestamps: the readers refuse the others, never wrap them."""

    @pytest.mark.parametrize(
        "when",
        [NS_AFTER, NS_BEFORE, dt.datetime(2300, 1, 1), dt.datetime(1500, 1, 1)],
    )
    def test_obp(self, when):
        fb, dist = obp_feedback(len_list=1)
        times = [dt.datetime(2020, 1, 1)] * 60
        times[7] = when
        with pytest.raises(LogFormatError, match=r"'timestamp': .* at round 7 is outside 1677"):
            from_obp(fb, dist, timestamp=times)
        for unit in ("us", "s") if when.microsecond == 0 else ("us",):
            arr = np.array(times, dtype=f"datetime64[{unit}]")
            with pytest.raises(LogFormatError, match="at round 7 is outside"):
                from_obp(fb, dist, timestamp=arr)

    def test_obp_keeps_the_last_dates_inside(self):
        fb, dist = obp_feedback(len_list=1)
        times = [NS_FIRST] * 30 + [NS_LAST] * 30
        logs = from_obp(fb, dist, timestamp=times)
        want = np.array(times, dtype="datetime64[us]").astype("datetime64[ns]")
        np.testing.assert_array_equal(logs.timestamps, want)

    def test_obd_names_the_line(self, tmp_path):
        text = OBD_FIXTURE.read_text().splitlines()
        text[2] = text[2].replace("2019-11-24", "2300-11-24")
        path = tmp_path / "far.csv"
        path.write_text("\n".join(text) + "\n")
        with pytest.raises(LogFormatError, match=r"line 3, column 'timestamp': '2300-11-24"):
            read_obd_csv(path, evaluation_pscore=0.1, position="all")

    def test_scope_rl_and_minari(self):
        data, dist = scope_rl_dataset()
        times = np.array(["2020-01-01"] * 5 + ["2300-01-01"], dtype="datetime64[s]")
        with pytest.raises(LogFormatError, match="at trajectory 5 is outside"):
            from_scope_rl(data, evaluation_policy_action_dist=dist, timestamp=times)
        eps = minari_episodes()
        eps[1].infos["time"] = np.array(["2300-01-01"] * 2, dtype="datetime64[D]")
        with pytest.raises(LogFormatError, match=r"episode 11: 'time': .* outside"):
            from_minari(
                eps,
                evaluation_log_prob=pi_log_prob,
                behavior_log_prob_key="behavior_log_prob",
                timestamp_key="time",
            )


# -- item 8: duplicate Minari ids --------------------------------------------------------------


def minari_kwargs(**kw):
    return dict(evaluation_log_prob=pi_log_prob, behavior_log_prob_key="behavior_log_prob") | kw


class TestMinariIds:
    def test_adjacent_duplicates_are_refused_not_merged(self):
        eps = minari_episodes()
        eps[1] = dataclasses.replace(eps[1], id=eps[0].id)
        with pytest.raises(
            LogFormatError, match=r"episode id 10 appears twice, at positions 0 and 1"
        ):
            from_minari(eps, **minari_kwargs())
        eps = minari_episodes()
        eps[2] = dataclasses.replace(eps[2], id=eps[0].id)
        with pytest.raises(LogFormatError, match=r"id 10 appears twice, at positions 0 and 2"):
            from_minari(eps, **minari_kwargs())

    @pytest.mark.parametrize(
        "bad, match",
        [(1.5, "'id': 1.5 is not"), ("a", "'id': 'a' is not"), (None, "'id': None is not")],
    )
    def test_ids_must_be_integers(self, bad, match):
        eps = minari_episodes()
        eps[1] = dataclasses.replace(eps[1], id=bad)
        with pytest.raises(LogFormatError, match=f"episode at position 1: {match}"):
            from_minari(eps, **minari_kwargs())

    def test_integral_ids_of_any_type_are_kept(self):
        eps = minari_episodes()
        eps[0] = dataclasses.replace(eps[0], id=np.int64(5))
        eps[1] = dataclasses.replace(eps[1], id=6.0)
        assert from_minari(eps, **minari_kwargs()).episode_ids.tolist() == [5, 6, 12]


# -- items 9 and 10: non-integers, NaT, 1e300, raw tracebacks ----------------------------------


def obp_change(**changes):
    fb, dist = obp_feedback(len_list=1)
    fb.update(changes)
    return fb, dist


class TestOBP:
    @pytest.mark.parametrize(
        "changes, match",
        [
            (dict(n_rounds=60.5), "'n_rounds': 60.5; must be an integer >= 1"),
            (dict(n_rounds="60"), "'n_rounds': '60'; must be an integer"),
            (dict(n_rounds=1e300), r"'n_rounds': 1e\+300; must be an integer"),
            (dict(n_actions=0), "'n_actions': 0; must be an integer >= 1"),
            (dict(n_actions=True), "'n_actions': True"),
            (dict(context=3.0), r"'context': a scalar \(3.0\)"),
            (dict(context=[[1.0], [1.0, 2.0]] * 30), "'context': ragged"),
            (dict(reward=[1.0, [1.0, 2.0]] + [0.0] * 58), "'reward': ragged"),
            (dict(reward=np.full(60, 1e300)), r"'reward': 1e\+300 at round 0 is beyond"),
            (dict(reward=np.r_[np.nan, np.zeros(59)]), "'reward': nan at round 0 is not finite"),
            (
                dict(timestamp=np.array(["2020-01-01", "NaT"] * 30, "datetime64[s]")),
                "'timestamp': NaT at round 1",
            ),
        ],
    )
    def test_bad_input_is_one_error_naming_the_key(self, changes, match):
        fb, dist = obp_change(**changes)
        with pytest.raises(LogFormatError, match=match):
            from_obp(fb, dist)

    def test_out_of_range_actions_are_printed_as_given(self):
        fb, dist = obp_feedback(len_list=1)
        fb["action"] = fb["action"].astype(np.int64)
        fb["action"][4] = 2**62 + 1
        with pytest.raises(LogFormatError, match=f"'action': {2**62 + 1} at round 4 is not"):
            from_obp(fb, dist)

    def test_ragged_action_dist_and_messages_without_numpy_reprs(self):
        fb, _ = obp_feedback(len_list=1)
        with pytest.raises(LogFormatError, match="'action_dist': ragged"):
            from_obp(fb, [[[1.0]], [[0.5], [0.5]]] * 30)
        fb, dist = obp_feedback(len_list=2)
        dist[3, :, 1] *= 0.5
        with pytest.raises(LogFormatError, match="at round 3, position 1; must be 1") as err:
            from_obp(fb, dist, position="all")
        assert "np." not in str(err.value)

    def test_rewards_up_to_1e100_are_taken(self):
        fb, dist = obp_change(reward=np.full(60, -1e100))
        assert from_obp(fb, dist).rewards[0, 0] == -1e100


class TestScopeRL:
    @pytest.mark.parametrize(
        "bad, match",
        [
            (np.nan, "'action': nan at step 3 is not an action in 0 .. 2"),
            (1.5, "'action': 1.5 at step 3 is not an action"),
            ("x", "'action': 'x' at step 3 is not an integer"),
        ],
    )
    def test_actions_that_are_not_integers(self, bad, match):
        data, dist = scope_rl_dataset()
        action = data["action"].astype(object if isinstance(bad, str) else float)
        action[3] = bad
        data["action"] = action
        with pytest.raises(LogFormatError, match=match):
            from_scope_rl(data, evaluation_policy_action_dist=dist)
        with pytest.raises(LogFormatError, match=match.split(" in 0")[0]):
            from_scope_rl(data, evaluation_policy_log_prob=np.full(24, -1.0))

    def test_string_arrays_counts_and_extreme_rewards(self):
        data, dist = scope_rl_dataset()
        with pytest.raises(LogFormatError, match="'action': must be integers; got dtype <U1"):
            from_scope_rl(
                data | dict(action=np.array(["a"] * 24)), evaluation_policy_action_dist=dist
            )
        with pytest.raises(LogFormatError, match=r"'size': 24.5; must be an integer"):
            from_scope_rl(data | dict(size=24.5), evaluation_policy_action_dist=dist)
        with pytest.raises(LogFormatError, match=r"'reward': -1e\+300 at step 5 is beyond"):
            reward = data["reward"].copy()
            reward[5] = -1e300
            from_scope_rl(data | dict(reward=reward), evaluation_policy_action_dist=dist)
        with pytest.raises(LogFormatError, match="'pscore': ragged"):
            from_scope_rl(
                data | dict(pscore=[0.5, [0.5, 0.5]] + [0.5] * 22),
                evaluation_policy_action_dist=dist,
            )
        nat = np.array(["2020-01-01"] * 5 + ["NaT"], dtype="datetime64[s]")
        with pytest.raises(LogFormatError, match="'timestamp': NaT at trajectory 5"):
            from_scope_rl(data, evaluation_policy_action_dist=dist, timestamp=nat)

    def test_messages_print_plain_numbers(self):
        data, dist = scope_rl_dataset()
        dist[4] *= 0.9
        with pytest.raises(LogFormatError, match="over the actions at step 4; must be 1") as err:
            from_scope_rl(data, evaluation_policy_action_dist=dist)
        assert "np." not in str(err.value)
        data, _ = scope_rl_dataset(continuous=True)
        data["pscore"][2, 1] = -1.0
        with pytest.raises(LogFormatError, match=r"-1.0 at step 2, dimension 1 is not") as err:
            from_scope_rl(data, evaluation_policy_log_prob=np.zeros(24))
        assert "np." not in str(err.value)


class TestMinariShapes:
    @pytest.mark.parametrize(
        "attr, value, match",
        [
            ("observations", np.float64(1.0), "'observations': a scalar"),
            ("observations", {}, "'observations': a scalar .or an empty dict."),
            ("observations", np.zeros((0, 2)), "'observations': 0 for 3 rewards"),
            ("actions", 1, "'actions': a scalar for 3 rewards"),
            ("actions", np.array([]), "'actions': 0 actions for 3 rewards"),
            ("terminations", 0, "'terminations': a scalar"),
            ("infos", 3, "'infos': got int; Minari's infos is a dict"),
            ("infos", [1, 2], "'infos': got list"),
            ("rewards", np.array([1e300, 0.0, 0.0]), r"'rewards': 1e\+300 at step 0 is beyond"),
            ("rewards", 2.0, r"'rewards': shape \(\)"),
        ],
    )
    def test_bad_episode_fields(self, attr, value, match):
        eps = minari_episodes()
        eps[0] = dataclasses.replace(eps[0], **{attr: value})
        with pytest.raises(LogFormatError, match=match):
            from_minari(eps, **minari_kwargs())

    def test_callables_that_raise_and_empty_or_nat_times(self):
        eps = minari_episodes()

        def broken(obs, act):
            raise KeyError("weights")

        for kwargs, key in [
            (dict(evaluation_log_prob=broken), "evaluation_log_prob"),
            (dict(behavior_policy=broken, behavior_log_prob_key=None), "behavior_policy"),
        ]:
            with pytest.raises(
                LogFormatError, match=f"'{key}': the policy callable raised KeyError: 'weights'"
            ):
                from_minari(eps, **minari_kwargs(**kwargs))
        eps[0].infos["time"] = np.array([])
        with pytest.raises(LogFormatError, match="'time': no times"):
            from_minari(eps, **minari_kwargs(timestamp_key="time"))
        eps[0].infos["time"] = np.array(["NaT"] * 4, dtype="datetime64[s]")
        with pytest.raises(LogFormatError, match="episode 10: 'time': NaT at step 0"):
            from_minari(eps, **minari_kwargs(timestamp_key="time"))


# -- items 9-11 on the Open Bandit Dataset's CSV -----------------------------------------------


def obd_file(tmp_path, edit):
    path = tmp_path / "all.csv"
    lines = OBD_FIXTURE.read_text().splitlines()
    edit(lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def replace_field(lines, row, column, value):
    """Set field ``column`` (a header name) of data row ``row`` (line row + 2)."""
    header = lines[0].split(",")
    fields = lines[row + 1].split(",")
    fields[header.index(column)] = value
    lines[row + 1] = ",".join(fields)


class TestOBD:
    def test_integral_floats_are_integers(self, tmp_path):
        def edit(lines):
            for row in range(1, 30):
                for col in ("item_id", "position"):
                    value = lines[row].split(",")[lines[0].split(",").index(col)]
                    replace_field(lines, row - 1, col, f"{value}.0")

        got = read_obd_csv(obd_file(tmp_path, edit), evaluation_pscore=0.1, position="all")
        want = read_obd_csv(OBD_FIXTURE, evaluation_pscore=0.1, position="all")
        np.testing.assert_array_equal(got.steps, want.steps)
        np.testing.assert_array_equal(got.episode_ids, want.episode_ids)

    @pytest.mark.parametrize(
        "column, value, match",
        [
            ("item_id", "1.5", "line 5, column 'item_id': '1.5' is not an integer"),
            ("position", "nan", "line 5, column 'position': 'nan' is not an integer"),
            ("item_id", "x", "line 5, column 'item_id': 'x' is not a number"),
            (
                "item_id",
                "99999999999999999999",
                "line 5, column 'item_id': '99999999999999999999' is outside the integers int64",
            ),
            ("item_id", "1e30", "'1e30' is outside the integers int64"),
            ("click", "1e300", r"line 5, column 'click': 1e\+300; a reward must be finite"),
            ("click", "nan", "line 5, column 'click': nan; a reward must be finite"),
            ("timestamp", "NaT", "line 5, column 'timestamp': 'NaT' is not a time"),
        ],
    )
    def test_bad_fields_name_the_line(self, tmp_path, column, value, match):
        path = obd_file(tmp_path, lambda lines: replace_field(lines, 3, column, value))
        with pytest.raises(LogFormatError, match=match):
            read_obd_csv(path, evaluation_pscore=0.1, position="all")

    def test_lines_are_the_files_with_a_quoted_newline_before(self, tmp_path):
        def edit(lines):
            replace_field(lines, 0, "user_feature_0", '"two\nlines"')
            replace_field(lines, 4, "propensity_score", "0.0")

        path = obd_file(tmp_path, edit)  # data row 4 is on line 7 of the file
        with pytest.raises(LogFormatError, match=r"line 7, column 'propensity_score': 0.0 is not"):
            read_obd_csv(path, evaluation_pscore=0.1, position="all")

    def test_evaluation_pscore_callables_that_raise_or_return_junk(self):
        def broken(columns):
            return columns["no such column"]

        with pytest.raises(
            LogFormatError,
            match="'evaluation_pscore': the policy callable raised KeyError: 'no such column'",
        ):
            read_obd_csv(OBD_FIXTURE, evaluation_pscore=broken, position="all")
        with pytest.raises(LogFormatError, match="'evaluation_pscore': ragged"):
            read_obd_csv(
                OBD_FIXTURE, evaluation_pscore=lambda c: [0.1, [0.1, 0.2]] * 15, position="all"
            )
        with pytest.raises(LogFormatError, match=r"'evaluation_pscore': 1e\+300 for line 2"):
            read_obd_csv(
                OBD_FIXTURE, evaluation_pscore=lambda c: np.full(30, 1e300), position="all"
            )

    def test_the_callable_gets_the_columns_asked_for(self, tmp_path):
        seen = {}

        def record(columns):
            seen.update(columns)
            return np.full(len(columns["item_id"]), 0.1)

        read_obd_csv(OBD_FIXTURE, evaluation_pscore=record, position="all")
        assert "user_feature_0" in seen and "user-item_affinity_4" in seen
        assert seen["user_feature_0"].dtype.kind == "U"
        seen.clear()
        read_obd_csv(
            OBD_FIXTURE, evaluation_pscore=record, position="all", extra_columns=["user_feature_1"]
        )
        assert set(seen) == {
            "timestamp",
            "item_id",
            "position",
            "click",
            "propensity_score",
            "user_feature_1",
        }
        with pytest.raises(LogFormatError, match="extra_columns names 'colour'"):
            read_obd_csv(OBD_FIXTURE, evaluation_pscore=record, extra_columns="colour")


# -- item 12: read_obd_csv streams ------------------------------------------------------------


def test_read_obd_csv_streams_and_keeps_only_the_columns_it_uses(tmp_path):
    """Before: about 17x the file's size (a list of every row's fields, then str arrays of
    every column); now the typed columns used, about 50 bytes a row (bench/bench_obd_reader.py
    measures 50 MB files)."""
    lines = OBD_FIXTURE.read_text().splitlines()
    header, body = lines[0], lines[1:]
    path = tmp_path / "big.csv"
    with open(path, "w") as fh:
        fh.write(header + "\n")
        for k in range(1000):  # 30,000 rows, about 3.4 MB
            fh.write("\n".join(f"{k * 30 + i}," + b.split(",", 1)[1] for i, b in enumerate(body)))
            fh.write("\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        logs = read_obd_csv(path, evaluation_pscore=0.1, position="all")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert logs.episodes == 30_000
    # before: about 2,000 bytes a row of this file (110 bytes a line), 17x its size
    per_row = peak / logs.episodes
    assert per_row < 250, f"{per_row:.0f} bytes a row, {peak / size:.2f}x the file's size"


def test_obd_line_numbers_skip_blank_lines_as_before(tmp_path):
    path = obd_file(
        tmp_path,
        lambda lines: (lines.insert(3, ""), replace_field(lines, 4, "click", "x")),
    )
    with pytest.raises(LogFormatError, match="line 6, column 'click': 'x'"):
        read_obd_csv(path, evaluation_pscore=0.1, position="all")


# -- the same checks for a log built from arrays, not only through the readers


def test_from_arrays_refuses_far_dates_nat_and_huge_rewards():
    from pyprog.logs.episodes import logs_from_arrays

    base = {"reward": [1.0, 2.0], "log_pi": [-0.5, -0.1], "log_beta": [-0.7, -0.7]}
    far = np.array(["2020-01-01", "2300-01-01"], dtype="datetime64[s]")
    with pytest.raises(LogFormatError, match=r"2300-01-01.* at position 1 is outside 1677-09-21"):
        logs_from_arrays(**base, timestamp=far)
    nat = np.array(["2020-01-01", "NaT"], dtype="datetime64[s]")
    with pytest.raises(LogFormatError, match="NaT at position 1"):
        logs_from_arrays(**base, timestamp=nat)
    with pytest.raises(
        LogFormatError, match=r"1e\+300 at row 0; rewards must be finite and at most"
    ):
        logs_from_arrays(**{**base, "reward": [1e300, 1.0]})
    ok = logs_from_arrays(**base, timestamp=np.array(["2020-01-01", "2262-04-11"], "datetime64[D]"))
    assert ok.timestamps.dtype == np.dtype("datetime64[ns]")
