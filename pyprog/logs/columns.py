"""The columns of a log of rounds, read and checked for :func:`pyprog.forecast_value`.

What a log may be (:func:`log_columns`: a CSV or Parquet path, a DataFrame of pandas or
Polars, a pyarrow table, a dict of arrays; the columnar formats in :mod:`pyprog.logs.tables`),
which columns (a column's own name, a prefix followed by numbers, or a list;
:func:`column_names`), each column checked as it is read (a dict's columns are one value
per round, of one length: :class:`DictLog`), the time column as days with its order said
once (:func:`time_values`), and a target time as days (:func:`target_time`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from pyprog.logs.tables import is_parquet_path, is_table, parquet_columns, table_columns
from pyprog.utils.validation import listing, shorten

__all__ = [
    "DictLog",
    "column",
    "column_names",
    "log_columns",
    "numbers_of",
]


def log_columns(log) -> tuple[Mapping | None, str]:
    """The log's columns, and its name for messages.

    A Parquet path (a ``.parquet`` or ``.pq`` file, or a folder:
    :func:`pyprog.logs.tables.parquet_columns`) is read now; a CSV path gives None, for the
    caller to read with its own options (:func:`pyprog.logs.rounds_csv.read_rounds_csv`). A
    pyarrow ``Table`` or ``RecordBatch`` and a Polars ``DataFrame`` give their columns as
    NumPy arrays (:func:`pyprog.logs.tables.table_columns`), a pandas DataFrame itself, a
    dict its arrays (each checked as it is read: :class:`DictLog`).
    """
    if isinstance(log, (str, os.PathLike)):
        if is_parquet_path(log):
            return parquet_columns(log), os.fspath(log)
        return None, os.fspath(log)
    if is_table(log):  # before "columns": a pyarrow Table's are its arrays, not its names
        return DictLog(table_columns(log)), "log"
    if hasattr(log, "columns"):  # a DataFrame: its columns have one length
        return log, "log"
    if isinstance(log, Mapping):
        return DictLog(log), "log"
    raise ValueError(
        "log must be a CSV path, a Parquet path (a file or a folder of them), a pandas or "
        "Polars DataFrame, a pyarrow Table or RecordBatch, or a dict of arrays; got "
        f"{type(log).__name__}"
    )


class DictLog(Mapping):
    """A dict of columns whose every column read is checked: one value per round, the
    length of the first column read (a scalar, or a column of another length, is a
    ValueError naming the column)."""

    def __init__(self, columns: Mapping) -> None:
        self.log_columns = columns
        self._first: tuple[str, int] | None = None

    def __getitem__(self, name):
        values = self.log_columns[name]
        shape = np.shape(values)
        if not shape:
            raise ValueError(
                f"log: column {name!r} is a single value ({shorten(values)}); give one value "
                f"per round (an array)"
            )
        if self._first is None:
            self._first = (name, shape[0])
        elif shape[0] != self._first[1]:
            first, n = self._first
            raise ValueError(
                f"log: column {name!r} has {shape[0]} values but column {first!r} has {n}: "
                f"every column holds one value per round"
            )
        return values

    def __iter__(self):
        return iter(self.log_columns)

    def __len__(self) -> int:
        return len(self.log_columns)


def column_names(frame, spec, what: str) -> list[str]:
    """Column names from a list, a column's own name, or every column that is a prefix
    followed by a number, in numeric order.

    A prefix that matches no column is an error (but the default context prefix ``"x"``,
    which means no context when the log has no ``x0``, ``x1``, ...). Policy columns are
    the actions 0..A-1 in order, so their numbers must run 0, 1, ..., A-1 written plainly
    (``pi_0, pi_2`` or ``pi_00`` are refused: a gap or a padded name would shift actions).
    """
    keys = [str(k) for k in (frame.columns if hasattr(frame, "columns") else frame.keys())]
    if isinstance(spec, str):
        if spec in keys:  # a column's own name is that column
            return [spec]
        found = [k for k in keys if k.startswith(spec) and _is_number(k[len(spec) :])]
        if not found:
            if what == "context" and spec == "x":
                return []  # the default, on a log without context columns
            raise ValueError(
                f"{what}: no columns named {spec!r} followed by a number ({spec}0, "
                f"{spec}1, ...), nor a column {spec!r}; columns: {listing(keys)}"
            )
        found.sort(key=lambda k: int(k[len(spec) :]))
        if what == "policy":
            _check_actions(spec, found)
        return found
    names = [str(s) for s in spec]
    missing = [s for s in names if s not in keys]
    if missing:
        raise ValueError(
            f"{what}: no column(s) [{listing(missing)}] in the log (columns: {listing(keys)})"
        )
    return names


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _check_actions(prefix: str, found: list[str]) -> None:
    """Policy columns ``prefix0 .. prefix{A-1}``: no gap, no zero-padded number."""
    numbers_ = [k[len(prefix) :] for k in found]
    padded = [k for k, d in zip(found, numbers_, strict=True) if d != str(int(d))]
    if padded:
        raise ValueError(
            f"policy: column {padded[0]!r} has a zero-padded action number; name the columns "
            f"{prefix}0, {prefix}1, ... (or list them in action order)"
        )
    missing = sorted(set(range(int(numbers_[-1]) + 1)) - {int(d) for d in numbers_})
    if missing:
        raise ValueError(
            f"policy: columns {listing(found)} skip action {missing[0]} ({prefix}{missing[0]}); "
            f"the columns {prefix}0, {prefix}1, ... are the actions 0, 1, ... in order: give "
            f"every action's column (or list them)"
        )


def column(frame, name: str, what: str):
    keys = frame.columns if hasattr(frame, "columns") else frame.keys()
    if name not in keys:
        raise ValueError(
            f"{what}: no column {name!r} in the log (columns: {listing([str(k) for k in keys])})"
        )
    return frame[name]


def numbers_of(frame, name: str, what: str) -> np.ndarray:
    """Column ``name`` as float64, or a ValueError naming it."""
    values = np.asarray(frame[name])
    if values.dtype.kind not in "biuf":
        raise ValueError(f"{what}: column {name!r} must hold numbers; got dtype {values.dtype}")
    return values.astype(np.float64)
