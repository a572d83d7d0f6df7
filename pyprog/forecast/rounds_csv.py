"""A CSV file of timestamped rounds, read for :func:`pyprog.forecast_value`.

Times are numbers (days) or ISO-8601 dates (``2023-03-01``, ``2023-03-01T09:30:00+09:00``);
dates are converted to UTC (an offset is honoured, naive dates are UTC) and counted in days
since 1970-01-01 (:func:`pyprog.offpolicy.rounds.parse_utc`).
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
from array import array

import numpy as np

from pyprog.offpolicy.rounds import parse_utc

__all__ = ["parse_time_text", "read_rounds_csv"]

_EPOCH = _dt.datetime(1970, 1, 1)


def parse_time_text(text: str) -> float:
    """One number, or ISO-8601 date (:func:`~pyprog.offpolicy.rounds.parse_utc`), as days.

    Examples
    --------
    >>> parse_time_text("2.5"), parse_time_text("1970-01-02T12:00Z")
    (2.5, 1.5)
    """
    try:
        return float(text)
    except ValueError:
        pass
    return (parse_utc(text) - _EPOCH).total_seconds() / 86_400.0


def read_rounds_csv(path, *, time: str = "time") -> dict[str, np.ndarray]:
    """A CSV file of rounds as a dict of float64 columns (``time`` as days, UTC).

    Every field but ``time`` must be a number; ``time`` holds numbers (days) or ISO-8601
    dates (``2023-03-01``, ``2023-03-01T09:30:00+09:00``; naive dates are UTC). Memory is
    8 bytes per kept field.

    Parameters
    ----------
    path : str or os.PathLike
    time : str
        The time column's name.

    Returns
    -------
    dict of str to numpy.ndarray, shape (n,) each

    Raises
    ------
    ValueError
        A missing file or column, a row with the wrong number of fields, or a field that
        is not a number (named by line and column).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = p.write_text("time,action,reward\\n2023-01-02,1,0.5\\n2023-01-03T12:00Z,0,1\\n")
    >>> cols = read_rounds_csv(p)
    >>> cols["time"] - 19358, cols["action"]
    (array([1. , 2.5]), array([1., 0.]))
    """
    if not os.path.isfile(path):
        raise ValueError(f"log: no such file {os.fspath(path)!r}")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            raise ValueError(f"log {os.fspath(path)!r}: empty file; expected a header line")
        header = [h.strip() for h in header]
        if time not in header:
            raise ValueError(
                f"log {os.fspath(path)!r}: no time column {time!r} (columns: "
                f"{', '.join(header)}); name it with time= (--time)"
            )
        if len(set(header)) != len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise ValueError(f"log {os.fspath(path)!r}: column {dup!r} appears twice")
        cols = [array("d") for _ in header]
        it = header.index(time)
        for fields in reader:
            line = reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            if len(fields) != len(header):
                raise ValueError(
                    f"log {os.fspath(path)!r}, line {line}: {len(fields)} fields, the header "
                    f"has {len(header)}"
                )
            for j, text in enumerate(fields):
                try:
                    value = parse_time_text(text) if j == it else float(text)
                except ValueError:
                    what = "a number or an ISO-8601 date" if j == it else "a number"
                    raise ValueError(
                        f"log {os.fspath(path)!r}, line {line}, column {header[j]!r}: "
                        f"{text!r} is not {what}"
                    ) from None
                cols[j].append(value)
    return {h: np.frombuffer(c, dtype=np.float64) if len(c) else np.empty(0) for h, c in
            zip(header, cols, strict=True)}  # fmt: skip
