"""Times of a log, parsed in one place: numbers of days, dates, ISO-8601 text.

Every path in (arrays, DataFrames, CSV files, a target passed to a forecast) ends in
float64 days since 1970-01-01 UTC, or, for the episode logs' timestamps, in
``datetime64[ns]`` UTC (:func:`pyprog.logs.episodes.as_timestamps`):

* :func:`parse_utc` — one ISO-8601 string as a naive UTC ``datetime``;
* :func:`parse_time_text` — one CSV field (a number or an ISO-8601 date) as days;
* :func:`utc_dates` — dates with a time zone as naive UTC;
* :func:`as_days` — an array of numbers or dates as days, any year NumPy holds;
* :func:`time_values` — a time column (also ISO-8601 strings and ``datetime.date``);
* :func:`time_point`, :func:`target_time` — one time (a forecast's target) as days;
* :func:`forecast_targets` — a forecast's ``at=`` / ``over=`` targets, checked to lie after
  the log (:func:`many_targets`: whether ``at`` holds several).

Dates with a time zone are converted to UTC; naive dates are taken as UTC.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
import warnings

import numpy as np

from pyprog.utils.validation import shorten

__all__ = [
    "COMPACT_DATES",
    "AmbiguousDate",
    "as_days",
    "fits_ns",
    "forecast_targets",
    "many_targets",
    "parse_time_text",
    "parse_utc",
    "target_time",
    "time_point",
    "time_values",
    "utc_dates",
]


_NS_PER_DAY = 86_400e9


#: Ticks a day in the units coarser than ns that dates are converted from without ns.
_TICKS_PER_DAY = {"D": 1, "h": 24, "m": 1_440, "s": 86_400, "ms": 86_400_000, "us": 86_400_000_000}


_INT64_MAX = 2**63 - 1  # datetime64[ns] holds -(2**63 - 1) .. 2**63 - 1 ns (-2**63 is NaT)


def parse_utc(text: str) -> _dt.datetime:
    """An ISO-8601 date or date-time as a naive UTC ``datetime``.

    An offset (``+09:00``) or ``Z`` is converted to UTC; a naive time is taken as UTC.

    Examples
    --------
    >>> parse_utc("2023-03-01T09:00+09:00"), parse_utc("2023-03-01T00:00Z")
    (datetime.datetime(2023, 3, 1, 0, 0), datetime.datetime(2023, 3, 1, 0, 0))
    """
    text = text.strip()
    if text[-1:] in ("Z", "z"):  # UTC designator: Python < 3.11's fromisoformat lacks it
        text = text[:-1] + "+00:00"
    stamp = _dt.datetime.fromisoformat(text)
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return stamp


def utc_dates(values) -> np.ndarray:
    """``values`` as an array, dates with a time zone as naive UTC ``datetime64[ns]``.

    A pandas Series or DatetimeIndex with a time zone is converted to UTC; a 1-D array of
    Python ``datetime`` objects becomes ``datetime64[us]`` (their own resolution, which holds
    the years 1 .. 9999, where ``datetime64[ns]`` holds only 1677-09-21 .. 2262-04-11),
    those with a ``tzinfo`` converted to UTC first (naive ones are taken as UTC). Anything
    else is ``numpy.asarray(values)``: the callers check its shape and kind.

    Examples
    --------
    >>> import datetime as dt
    >>> utc_dates([_dt.datetime(2019, 11, 24, 9, tzinfo=_dt.timezone(_dt.timedelta(hours=9)))])
    array(['2019-11-24T00:00:00.000000'], dtype='datetime64[us]')
    """
    tz = getattr(getattr(values, "dt", values), "tz", None)  # pandas Series / DatetimeIndex
    if tz is not None:
        values = getattr(values, "dt", values).tz_convert("UTC")
        values = getattr(values, "dt", values).tz_localize(None)
    arr = np.asarray(values)
    if arr.ndim == 1 and arr.dtype.kind == "O" and all(isinstance(v, _dt.datetime) for v in arr):
        utc = _dt.timezone.utc
        naive = [v if v.tzinfo is None else v.astimezone(utc).replace(tzinfo=None) for v in arr]
        arr = np.array(naive, dtype="datetime64[us]")
    return arr


def _coarse_ticks(dates: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``dates`` as int64 ticks of a unit in :data:`_TICKS_PER_DAY`, and the ticks a day;
    None for ns and finer units (which are what ``datetime64[ns]`` holds, or finer)."""
    unit, _ = np.datetime_data(dates.dtype)
    if unit in ("Y", "M", "W"):
        unit = "D"
    if unit not in _TICKS_PER_DAY:
        return None
    return dates.astype(f"datetime64[{unit}]").astype(np.int64), _TICKS_PER_DAY[unit]


def fits_ns(dates: np.ndarray) -> np.ndarray:
    """Which of ``dates`` (``datetime64`` of any unit, no NaT) ``datetime64[ns]`` can hold.

    That is 1677-09-21T00:12:43.145224193 .. 2262-04-11T23:47:16.854775807; a cast to
    ``datetime64[ns]`` wraps the others around silently (the year 2300 becomes 1715).

    Examples
    --------
    >>> fits_ns(np.array(["2262-04-11", "2262-04-12", "1500-01-01"], dtype="datetime64[D]"))
    array([ True, False, False])
    """
    coarse = _coarse_ticks(dates)
    if coarse is None:
        return np.ones(dates.shape, dtype=bool)
    ticks, per_day = coarse
    limit = _INT64_MAX // (86_400 * 10**9 // per_day)  # the last whole tick inside
    return (ticks >= -limit) & (ticks <= limit)


def _dates_as_days(dates: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of ``datetime64`` dates (no NaT), any year numpy holds.

    The dates ``datetime64[ns]`` holds go through it (int64 ns / ns a day, as always, so
    their numbers are unchanged); the others as whole days plus the day's fraction in their
    own unit, never through ns (which would wrap them around).
    """
    coarse = _coarse_ticks(dates)
    if coarse is None:
        return dates.astype("datetime64[ns]").astype(np.int64) / _NS_PER_DAY
    inside = fits_ns(dates)
    out = np.empty(dates.shape, dtype=np.float64)
    out[inside] = dates[inside].astype("datetime64[ns]").astype(np.int64) / _NS_PER_DAY
    ticks, per_day = coarse
    whole, part = np.divmod(ticks[~inside], per_day)
    out[~inside] = whole + part / per_day
    return out


def as_days(times, name: str = "times") -> np.ndarray:
    """Timestamps as float64: numbers unchanged, dates as days since 1970-01-01 UTC.

    Parameters
    ----------
    times : array_like, shape (n,)
        Numbers, ``datetime64``, Python ``datetime`` objects, or a pandas Series /
        DatetimeIndex (with or without a time zone; naive dates are taken as UTC). Any
        year is converted exactly, also outside the 1677-2262 that ``datetime64[ns]``
        holds (give such dates as ``datetime``, or ``datetime64`` of a coarser unit).
    name : str
        The argument's name, for error messages.

    Returns
    -------
    numpy.ndarray, shape (n,), float64

    Examples
    --------
    >>> as_days(np.array(["1970-01-02T12:00"], dtype="datetime64[ns]"))
    array([1.5])
    >>> as_days(np.array(["2300-01-01T06:00"], dtype="datetime64[s]"))
    array([120530.25])
    """
    arr = utc_dates(times)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, one time per round; got shape {arr.shape}")
    if arr.dtype.kind == "M":
        if np.isnat(arr).any():
            i = int(np.flatnonzero(np.isnat(arr))[0])
            raise ValueError(f"{name} must not hold missing dates (NaT); got NaT at row {i}")
        return _dates_as_days(arr)
    if arr.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} must be numbers or dates (datetime64, datetime, pandas timestamps); "
            f"got dtype {arr.dtype}"
        )
    out = arr.astype(np.float64)
    if not np.isfinite(out).all():
        i = int(np.flatnonzero(~np.isfinite(out))[0])
        raise ValueError(f"{name} must be finite; got {out[i]} at row {i}")
    return out


_EPOCH = _dt.datetime(1970, 1, 1)


#: How ``compact_dates`` reads eight digits that are a date (``20230101``); None: refuse.
COMPACT_DATES = (None, "date", "days")


class AmbiguousDate(ValueError):
    """Eight digits that are both a date (ISO 8601's basic form) and a number of days."""


def _compact_date(text: str) -> _dt.datetime | None:
    """``20230101`` → 2023-01-01; None when ``text`` is not eight digits of a date."""
    if len(text) != 8 or not (text.isascii() and text.isdigit()):
        return None
    try:
        return _dt.datetime(int(text[:4]), int(text[4:6]), int(text[6:]))
    except ValueError:
        return None


def parse_time_text(text: str, compact_dates: str | None = None) -> float:
    """One number, or ISO-8601 date (:func:`~pyprog.offpolicy.rounds.parse_utc`), as days.

    Eight digits that are a date (``20230101``) are read as ``compact_dates`` says:
    ``"date"`` (2023-01-01) or ``"days"`` (day 20,230,101); None (default) refuses them.

    Examples
    --------
    >>> parse_time_text("2.5"), parse_time_text("1970-01-02T12:00Z")
    (2.5, 1.5)
    >>> parse_time_text("19700102", compact_dates="date")
    1.0
    """
    text = text.strip()
    date = _compact_date(text)
    if date is not None and compact_dates != "days":
        if compact_dates == "date":
            return (date - _EPOCH).total_seconds() / 86_400.0
        raise AmbiguousDate(
            f"{text!r} is both the date {date:%Y-%m-%d} (ISO 8601's basic form) and day "
            f"{int(text):,}: write {date:%Y-%m-%d} (a date) or {text}.0 (days)"
        )
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return (parse_utc(text) - _EPOCH).total_seconds() / 86_400.0
    except ValueError:
        raise ValueError(f"{shorten(text)} is not a number or an ISO-8601 date") from None


def time_point(name: str, value) -> float:
    """One time as float days: a number as it is, a date as days since 1970-01-01 UTC.

    Examples
    --------
    >>> time_point("at", np.datetime64("1970-01-03"))
    2.0
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        out = float(value)
        if not math.isfinite(out):
            raise ValueError(f"{name} must be a finite time; got {value!r}")
        return out
    return float(as_days(np.asarray([value]), name=name)[0])


def _is_nat(value) -> bool:
    """NaT of NumPy, or pandas' NaT (recognised by its type's name, without importing pandas)."""
    if isinstance(value, np.datetime64):
        return bool(np.isnat(value))
    return type(value).__name__ == "NaTType"


def time_values(values, name: str) -> np.ndarray:
    """A time column as days: :func:`~pyprog.offpolicy.rounds.as_days`, and also ISO-8601
    strings (as the CSV reader reads them) and ``datetime.date`` objects (midnight UTC).
    One warning when the times are not in order (the numbers are not changed)."""
    days = _days(values, name)
    late = int(np.count_nonzero(np.diff(days) < 0))
    if late:
        warnings.warn(
            f"{name}: the log is not in time order ({late} of {days.size} rows are earlier "
            f"than the row before them)",
            stacklevel=2,
        )
    return days


def _days(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 1 and arr.dtype.kind in "OUS" and arr.size:
        first = arr[0]
        if isinstance(first, (str, bytes)):
            out = np.empty(arr.size)
            for i, text in enumerate(arr):
                try:
                    out[i] = parse_time_text(text if isinstance(text, str) else text.decode())
                except (ValueError, AttributeError) as exc:
                    raise ValueError(f"{name}: row {i}: {shorten(text)}: {exc}") from None
            return out
        if isinstance(first, _dt.date) and not isinstance(first, _dt.datetime):
            try:
                arr = arr.astype("datetime64[D]")
            except (TypeError, ValueError):
                raise ValueError(f"{name} mixes dates with other values") from None
    return as_days(arr, name=name)


def target_time(name: str, value) -> float:
    """A target as days: an ISO-8601 string here, numbers and dates by ``time_point``
    (a ``datetime.date`` as its midnight UTC; a 0-d array as its element; NaT refused)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if _is_nat(value):
        raise ValueError(f"{name} is NaT: a target must be a date, a number of days or a string")
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        value = np.datetime64(value, "D")
    if isinstance(value, str):
        try:
            days = parse_time_text(value)
        except AmbiguousDate as exc:
            raise ValueError(f"{name}: {exc}") from None
        except ValueError:
            what = f"{name} must be a number or an ISO-8601 date; got {shorten(value)}"
            raise ValueError(what) from None
        if not math.isfinite(days):
            raise ValueError(f"{name} must be a finite time; got {value!r}")
        return days
    try:
        return time_point(name, value)
    except ValueError:
        if isinstance(value, numbers.Real):
            raise  # a non-finite number: time_point says so
        raise ValueError(
            f"{name} must be a number (days), a date or an ISO-8601 string; got {shorten(value)}"
        ) from None


def many_targets(at, over) -> bool:
    """Whether ``at`` is a sequence of targets; exactly one of ``at`` and ``over`` is given.

    Examples
    --------
    >>> many_targets([400.0, 430.0], None), many_targets("2024-06-01", None)
    (True, False)
    """
    if (at is None) == (over is None):
        raise ValueError("give exactly one of at= (a time) and over= (a window (t1, t2))")
    # a sequence of targets: a list, an array, a pandas DatetimeIndex or Series (not 0-d)
    many = at is not None and not isinstance(at, (str, bytes)) and np.ndim(at) == 1
    if many and len(at) == 0:
        raise ValueError("at must hold at least one time; got an empty sequence")
    return many


def forecast_targets(at, over, last: float) -> list[tuple]:
    """The targets of a forecast after a log that ends at ``last``, as days.

    Parameters
    ----------
    at : time or sequence of times, optional
        A time (a number of days, a date, an ISO-8601 string) or several.
    over : (time, time), optional
        A window ``(t1, t2)``, ``t1 < t2``; exactly one of ``at`` and ``over``.
    last : float
        The log's last time (days); every target must lie after it.

    Returns
    -------
    list of tuple
        ``("at", t')`` for each time, or ``[("over", t1, t2)]``.

    Examples
    --------
    >>> forecast_targets("1970-01-11", None, last=9.0)
    [('at', 10.0)]
    >>> forecast_targets(None, (10, 12), last=9.0)
    [('over', 10.0, 12.0)]
    """
    many = many_targets(at, over)
    if at is not None:
        points = list(at) if many else [at]
        names = [f"at[{i}]" for i in range(len(points))] if many else ["at"]
        goals = [("at", target_time(k, p)) for k, p in zip(names, points, strict=True)]
    else:
        if not isinstance(over, (tuple, list)) or len(over) != 2:
            raise ValueError(f"over must be a pair (t1, t2); got {over!r}")
        a, b = target_time("over[0]", over[0]), target_time("over[1]", over[1])
        if not a < b:
            raise ValueError(f"over must have t1 < t2; got ({a:g}, {b:g})")
        names, goals = ["over"], [("over", a, b)]
    for name, goal in zip(names, goals, strict=True):
        if goal[1] <= last:
            what = "over must start" if goal[0] == "over" else f"{name} must be"
            raise ValueError(
                f"{what} after the log (a forecast): {goal[1]:g} <= the log's last time "
                f"{last:g} (days since 1970-01-01 for dates)"
            )
    return goals
