"""Fuzz round 4 (issue 48) on the readers and the time parser: dates outside 1677-2262,
duplicate Minari ids, non-integers, NaT, 1e300 rewards, raw tracebacks, unclear messages and
the Open Bandit Dataset reader's memory.

Each test fails on the code before the fix; they run on both backends (the readers are
NumPy either way).
"""

import datetime as dt
import zoneinfo

import numpy as np
import pytest

from pyprog.offpolicy.rounds import as_days, fits_ns

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
