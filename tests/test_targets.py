"""One parser of a forecast's targets for both paths (``pyprog.logs.times``)."""

import datetime as dt

import numpy as np
import pytest

from pyprog.logs.times import forecast_targets, many_targets
from pyprog.timeseries import time_forecast, trend


def test_every_spelling_of_a_time_is_the_same_target():
    want = [("at", 19783.0)]
    for at in (19783, 19783.0, "2024-03-01", np.datetime64("2024-03-01"), dt.date(2024, 3, 1)):
        assert forecast_targets(at, None, last=19000.0) == want
    assert forecast_targets(["2024-03-01", 19790], None, 0.0) == [("at", 19783.0), ("at", 19790.0)]
    assert forecast_targets(None, ("2024-03-01", 19790), 0.0) == [("over", 19783.0, 19790.0)]


def test_several_targets_are_recognised():
    assert many_targets(np.array([1.0, 2.0]), None)
    assert not many_targets(np.float64(3.0), None)
    assert not many_targets(None, (1.0, 2.0))


@pytest.mark.parametrize(
    ("at", "over", "match"),
    [
        (None, None, "exactly one of at="),
        (5.0, (6.0, 7.0), "exactly one of at="),
        ([], None, "at must hold at least one time"),
        (5.0, None, r"at must be after the log \(a forecast\): 5 <= the log's last time 9"),
        ([12.0, 9.0], None, r"at\[1\] must be after the log"),
        ([9.0], None, r"at\[0\] must be after the log"),
        (None, (9.0, 12.0), "over must start after the log"),
        (None, (13.0, 12.0), "over must have t1 < t2"),
        (None, [1.0], r"over must be a pair \(t1, t2\)"),
        ("tomorrow", None, "at must be a number or an ISO-8601 date"),
        (np.datetime64("NaT"), None, "at is NaT"),
        (float("inf"), None, "at must be a finite time"),
    ],
)
def test_bad_targets_are_named(at, over, match):
    with pytest.raises(ValueError, match=match):
        forecast_targets(at, over, last=9.0)


def test_time_forecast_takes_the_same_targets_as_forecast_value():
    t = np.arange(0.0, 60.0)
    y = 0.5 + 0.01 * t
    by_date = time_forecast(y, t, trend(), at="1970-03-11")  # day 69
    assert by_date.target == ("at", 69.0)
    assert by_date.value == pytest.approx(0.5 + 0.69)
    with pytest.raises(ValueError, match="at must be one time"):
        time_forecast(y, t, trend(), at=[65.0, 70.0])
