"""Read logged episodes from a CSV file, for ``pyprog forecast``.

One row per step, with (at least) the columns ``episode,step,reward,log_pi,log_beta``
in any order (more columns are ignored); the rows of an episode are contiguous, steps
increase by 1 within it, and episodes come in the order they were played::

    episode,step,reward,log_pi,log_beta
    0,0,1.0,-0.36,-0.69
    0,1,0.0,-1.20,-0.69
    1,0,0.5,-0.36,-0.69

``log_pi`` is the log-probability of the logged action under the policy to evaluate,
``log_beta`` under the policy that played it; both must be <= 0 (log-probabilities).
With continuous actions, whose log-densities may exceed 0, subtract the same constant
from both columns: only their difference matters.

The file is parsed by NumPy (about 1 s for 10^6 rows); only when something is wrong is
it scanned again with the :mod:`csv` module, to say on which line and in which column.
"""

from __future__ import annotations

import csv
import os
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["COLUMNS", "LogFormatError", "Logs", "read_logs"]

#: The columns a log file must have.
COLUMNS = ("episode", "step", "reward", "log_pi", "log_beta")


class LogFormatError(ValueError):
    """A log file that cannot be used; the message names the file, line and column."""


@dataclass(frozen=True)
class Logs:
    """Logged episodes as padded (N, H) arrays, in play order."""

    #: Episode ids as they appear in the file, shape (N,).
    episode_ids: np.ndarray
    #: ``log π`` of the logged actions, shape (N, H) (0 in padding).
    log_pi: np.ndarray
    #: ``log β`` of the logged actions, shape (N, H) (0 in padding).
    log_beta: np.ndarray
    #: Rewards, shape (N, H) (0 in padding).
    rewards: np.ndarray
    #: 1 for real steps, 0 for padding, shape (N, H).
    mask: np.ndarray
    #: The file read.
    path: str
    #: Number of data rows (steps) in the file.
    rows: int

    @property
    def episodes(self) -> int:
        """Number of episodes N."""
        return len(self.episode_ids)

    def line_of_row(self, row: int) -> int:
        """Line of the file holding data row ``row`` (0-based; -1 for the last)."""
        return int(_line_numbers(self.path, np.array([row % self.rows]))[0])


def _fail(path, line: int, column: str | None, what: str) -> LogFormatError:
    where = f"{os.fspath(path)}, line {line}" + (f", column {column!r}" if column else "")
    return LogFormatError(f"{where}: {what}")


def _header(path) -> tuple[list[int], int]:
    """Indices of COLUMNS in the header, and the number of fields of a row."""
    with open(path, newline="") as fh:
        try:
            header = next(csv.reader(fh))
        except StopIteration:
            raise _fail(
                path, 1, None, f"the file is empty; expected a header {','.join(COLUMNS)}"
            ) from None
    names = [h.strip() for h in header]
    for name in COLUMNS:
        if name not in names:
            raise _fail(
                path,
                1,
                name,
                f"missing column; the header must name "
                f"{', '.join(COLUMNS)} (got {', '.join(names) or 'nothing'})",
            )
    return [names.index(name) for name in COLUMNS], len(names)


def _blank(line: str) -> bool:
    return not line.strip()


def _data_lines(path):
    """(line number, fields) of every non-blank data row, as NumPy's parser sees them."""
    with open(path, newline="") as fh:
        next(fh)
        for lineno, line in enumerate(fh, start=2):
            if not _blank(line):
                yield lineno, next(csv.reader([line]))


def _find_bad_field(path, index: list[int], n_fields: int) -> LogFormatError | None:
    """The first row with a wrong number of fields or a field that is not a number."""
    for lineno, fields in _data_lines(path):
        if len(fields) != n_fields:
            return _fail(
                path, lineno, None, f"{len(fields)} fields where the header has {n_fields}"
            )
        for name, i in zip(COLUMNS, index, strict=True):
            try:
                float(fields[i])
            except ValueError:
                return _fail(path, lineno, name, f"{fields[i].strip()!r} is not a number")
    return None


def _line_numbers(path, rows: np.ndarray) -> np.ndarray:
    """File line of each data row index in ``rows`` (blank lines are skipped)."""
    wanted = {int(r) for r in rows}
    found = {}
    for k, (lineno, _) in enumerate(_data_lines(path)):
        if k in wanted:
            found[k] = lineno
            if len(found) == len(wanted):
                break
    return np.array([found[int(r)] for r in rows])


def read_logs(path) -> Logs:
    """Read and check a CSV log of episodes (see the module docstring for the format).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Logs

    Raises
    ------
    LogFormatError
        (a ``ValueError``) naming the line and column of the first problem: a missing
        column, a value that is not a number, NaN or inf, a log-probability > 0, an
        episode id or step that is not an integer, steps that do not increase by 1
        within an episode, an episode whose rows are not contiguous, or no rows.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "logs.csv"
    >>> _ = path.write_text("episode,step,reward,log_pi,log_beta\\n"
    ...                     "7,0,1.0,-0.5,-0.7\\n7,1,2.0,-0.1,-0.7\\n8,0,0.5,-0.2,-0.7\\n")
    >>> logs = read_logs(path)
    >>> logs.episodes, logs.rewards.tolist(), logs.mask.tolist()
    (2, [[1.0, 2.0], [0.5, 0.0]], [[1.0, 1.0], [1.0, 0.0]])
    """
    try:
        index, n_fields = _header(path)
    except OSError as exc:
        raise LogFormatError(f"{os.fspath(path)}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _fail(path, 1, None, "not a text (UTF-8) CSV file") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            # NumPy opens the file itself: faster than reading from a Python file object
            data = np.loadtxt(
                os.fspath(path),
                delimiter=",",
                skiprows=1,
                usecols=index,
                ndmin=2,
                comments=None,
                dtype=np.float64,
            )
    except ValueError as exc:
        error = _find_bad_field(path, index, n_fields)
        if error is not None:
            raise error from None
        raise LogFormatError(f"{os.fspath(path)}: cannot be read as CSV numbers: {exc}") from None
    if data.shape[0] == 0:
        raise _fail(path, 2, None, "no data rows after the header")

    def bad(rows_mask: np.ndarray, column: str, what) -> None:
        rows = np.flatnonzero(rows_mask)
        if rows.size:
            r = int(rows[0])
            line = int(_line_numbers(path, rows[:1])[0])
            value = data[r, COLUMNS.index(column)]
            raise _fail(path, line, column, what(value) if callable(what) else what)

    finite = np.isfinite(data)
    for j, name in enumerate(COLUMNS):
        bad(
            ~finite[:, j],
            name,
            lambda v: f"{v} is not allowed; every value must be a finite number",
        )
    for name in ("log_pi", "log_beta"):
        bad(
            data[:, COLUMNS.index(name)] > 0.0,
            name,
            lambda v: f"{v:g} is a log-probability > 0 (a probability > 1)",
        )
    episode, step = data[:, 0], data[:, 1]
    for name, col in (("episode", episode), ("step", step)):
        bad(col != np.round(col), name, lambda v: f"{v:g} is not an integer")

    # episodes: contiguous runs of equal ids, each id once
    new = np.ones(len(episode), dtype=bool)
    new[1:] = episode[1:] != episode[:-1]
    starts = np.flatnonzero(new)
    ids = episode[starts]
    order = np.argsort(ids, kind="stable")
    repeated = np.zeros(len(ids), dtype=bool)
    repeated[order[1:]] = ids[order[1:]] == ids[order[:-1]]
    if repeated.any():
        first_repeat = np.zeros(len(episode), dtype=bool)
        first_repeat[starts[repeated]] = True
        bad(
            first_repeat,
            "episode",
            lambda v: (
                f"episode {v:g} appears again after other "
                "episodes; the rows of an episode must be contiguous, in play order"
            ),
        )
    # steps: +1 within an episode
    jump = np.zeros(len(step), dtype=bool)
    jump[1:] = (~new[1:]) & (step[1:] != step[:-1] + 1)
    bad(
        jump,
        "step",
        lambda v: f"step {v:g} is out of order; steps must increase by 1 within an episode",
    )

    # (N, H) arrays: row r is step r - starts[e] of episode e
    lengths = np.diff(np.append(starts, len(episode)))
    n, h = len(starts), int(lengths.max())
    which = np.repeat(np.arange(n), lengths)
    pos = np.arange(len(episode)) - starts[which]
    arrays = []
    for name in ("log_pi", "log_beta", "reward"):
        a = np.zeros((n, h))
        a[which, pos] = data[:, COLUMNS.index(name)]
        arrays.append(a)
    mask = np.zeros((n, h))
    mask[which, pos] = 1.0
    return Logs(ids.astype(np.int64), *arrays, mask, os.fspath(path), len(episode))
