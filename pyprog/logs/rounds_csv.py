"""A CSV file of timestamped rounds, read for :func:`pyprog.forecast_value`.

Times are numbers (days) or ISO-8601 dates (``2023-03-01``, ``2023-03-01T09:30:00+09:00``);
dates are converted to UTC (an offset is honoured, naive dates are UTC) and counted in days
since 1970-01-01 (:func:`pyprog.logs.times.parse_utc`).

Eight digits that are a calendar date (``20230101``) are both ISO 8601's basic form of a
date and a number of days: such a time is refused unless ``compact_dates`` says which
(``"date"`` or ``"days"``). A careful reader cannot tell: day 20,230,101 is 55,000 years
after 1970, yet spreadsheets and ``date +%Y%m%d`` write dates this way, and reading one as
the other silently moves every round (and the target) by millennia.

The file must be UTF-8 text (a byte-order mark is allowed); another encoding (UTF-16,
Latin-1) or binary data is a ValueError naming the file and the encoding found. Every error
names the file's line (1 is the header).
"""

from __future__ import annotations

import csv
import os
from array import array

import numpy as np

from pyprog.logs.times import COMPACT_DATES, AmbiguousDate, parse_time_text
from pyprog.utils.validation import listing, shorten

__all__ = [
    "read_rounds",
    "read_rounds_csv",
]


def _not_utf8(path: str) -> str:
    """Why the file at ``path`` is not UTF-8 text: the encoding found, and the line."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        utf32 = head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"))
        found = "UTF-32" if utf32 else "UTF-16"
        return f"is {found} text (a byte-order mark); save it as UTF-8"
    if b"\x00" in head:
        half = head[1::2] if head[::2].count(0) < head[1::2].count(0) else head[::2]
        if half and half.count(0) > 0.9 * len(half):
            return "looks like UTF-16 text without a byte-order mark; save it as UTF-8"
        return "holds binary data (NUL bytes), not CSV text"
    with open(path, "rb") as fh:
        for line, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start]
                try:
                    raw.decode("cp1252")
                    guess = "; it looks like Latin-1 / Windows-1252 text: save it as UTF-8"
                except UnicodeDecodeError:
                    guess = "; save it as UTF-8"
                return f"is not UTF-8 text: byte 0x{byte:02x} on line {line}{guess}"
    return "is not UTF-8 text; save it as UTF-8"


def _header(path: str, fields: list[str] | None, time: str) -> tuple[list[str], bool]:
    """The header's column names, and whether it ends in a delimiter (an unnamed last
    column, as spreadsheets write: its fields must be empty, and it is dropped)."""
    where = f"log {path!r}"
    if not fields:
        raise ValueError(f"{where}: empty file; expected a header line")
    header = [h.strip() for h in fields]
    trailing = len(header) > 1 and header[-1] == ""
    if trailing:
        header = header[:-1]
    if "" in header:
        raise ValueError(
            f"{where}, line 1: column {header.index('') + 1} of the header has no name"
        )
    if time not in header:
        raise ValueError(
            f"{where}: no time column {time!r} (columns: {listing(header)}); name it "
            f"with time= (--time)"
        )
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise ValueError(f"{where}: column {shorten(dup)} appears twice")
    return header, trailing


def read_rounds(
    path, *, time: str = "time", compact_dates: str | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """:func:`read_rounds_csv`, and the file's line of each row (to name it in messages).

    Returns
    -------
    columns : dict of str to numpy.ndarray, shape (n,) each
    lines : numpy.ndarray of int, shape (n,)
        Row i's line in the file (the header is line 1).
    """
    where = f"log {os.fspath(path)!r}"
    if os.path.isdir(path):
        raise ValueError(f"{where} is a directory; give a CSV file")
    if not os.path.isfile(path):
        raise ValueError(f"log: no such file {os.fspath(path)!r}")
    if compact_dates not in COMPACT_DATES:
        raise ValueError(
            f"compact_dates must be None, 'date' or 'days'; got {shorten(compact_dates)}"
        )
    try:
        return _read(os.fspath(path), time, compact_dates)
    except UnicodeDecodeError:
        raise ValueError(f"{where} {_not_utf8(os.fspath(path))}") from None


def _read(path: str, time: str, compact_dates: str | None):
    where = f"log {path!r}"
    with open(path, "rb") as fh:
        if b"\x00" in fh.read(4096):  # UTF-16 or binary: say so, not its header
            raise ValueError(f"{where} {_not_utf8(path)}")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        try:
            header, trailing = _header(path, next(reader, None), time)
            width = len(header) + trailing
            cols, lines = [array("d") for _ in header], array("q")
            it = header.index(time)
            for fields in reader:
                line = reader.line_num
                if not fields or (len(fields) == 1 and not fields[0].strip()):
                    continue
                if len(fields) != width:
                    raise ValueError(
                        f"{where}, line {line}: {len(fields)} fields, the header has {width}"
                        + (" (the last unnamed and empty)" if trailing else "")
                    )
                if trailing and fields[-1].strip():
                    raise ValueError(
                        f"{where}, line {line}: {shorten(fields[-1])} under the header's "
                        f"unnamed last column (the header ends in a delimiter); name the column"
                    )
                for j, text in enumerate(fields[: len(header)]):
                    cols[j].append(_field(text, j == it, compact_dates, header[j]))
                lines.append(line)
        except csv.Error as exc:
            why = str(exc)
            if "field larger than field limit" in why:
                why = f"a field longer than {csv.field_size_limit():,} characters (not a number)"
            raise ValueError(f"{where}, line {reader.line_num}: {why}") from None
        except _FieldError as exc:
            raise ValueError(f"{where}, line {reader.line_num}, column {exc}") from None
    columns = {h: np.frombuffer(c, dtype=np.float64) if len(c) else np.empty(0)
               for h, c in zip(header, cols, strict=True)}  # fmt: skip
    return columns, np.frombuffer(lines, dtype=np.int64) if len(lines) else np.empty(0, int)


class _FieldError(Exception):
    """A field that is not what its column holds (the reader adds the line)."""


def _field(text: str, is_time: bool, compact_dates: str | None, name: str) -> float:
    try:
        if is_time:
            value = parse_time_text(text, compact_dates)
            if not np.isfinite(value):
                raise ValueError(f"{shorten(text)} is not a finite time")
            return value
        return float(text)
    except AmbiguousDate as exc:
        why = f"{exc}, or read all such times with compact_dates='date' or compact_dates='days'"
        raise _FieldError(f"{shorten(name)}: {why}") from None
    except ValueError as exc:
        why = str(exc) if is_time else f"{shorten(text)} is not a number"
        raise _FieldError(f"{shorten(name)}: {why}") from None


def read_rounds_csv(
    path, *, time: str = "time", compact_dates: str | None = None
) -> dict[str, np.ndarray]:
    """A CSV file of rounds as a dict of float64 columns (``time`` as days, UTC).

    Every field but ``time`` must be a number; ``time`` holds numbers (days) or ISO-8601
    dates (``2023-03-01``, ``2023-03-01T09:30:00+09:00``; naive dates are UTC). A header
    line ending in a delimiter (every line ending in one, as some spreadsheets write) is
    read as pandas reads it, the empty last column dropped. Memory is 8 bytes per kept
    field.

    Parameters
    ----------
    path : str or os.PathLike
    time : str
        The time column's name.
    compact_dates : {None, "date", "days"}
        How eight digits that are a date (``20230101``) are read: as that date, or as a
        number of days. None (default) refuses them: they could be either (module
        docstring).

    Returns
    -------
    dict of str to numpy.ndarray, shape (n,) each

    Raises
    ------
    ValueError
        A missing file, a directory, a file that is not UTF-8 text (naming the encoding
        found), a missing column, a row with the wrong number of fields, or a field that
        is not a number (named by the file's line and the column).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = p.write_text("time,action,reward\\n2023-01-02,1,0.5\\n2023-01-03T12:00Z,0,1\\n")
    >>> cols = read_rounds_csv(p)
    >>> cols["time"] - 19358, cols["action"]
    (array([1. , 2.5]), array([1., 0.]))
    """
    return read_rounds(path, time=time, compact_dates=compact_dates)[0]
