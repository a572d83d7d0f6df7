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

The file is UTF-8 (a byte-order mark is skipped), read as pandas' CSV reader would:
blank lines (empty, or of spaces) are skipped, a number may be quoted (``"1.5"``), but
``1_000``, ``0x10`` or ``1,5`` are errors. The file is parsed by NumPy (about 1 s for 10^6 rows);
only when something is wrong is it scanned again, to say on which line and in which
column.

Episode ids. The order of the rows is the order of play; the ids only label the
episodes, and must be integers of at most 2^53 in absolute value (the largest a float64
holds exactly). Ids that do not go up by 1 from one episode to the next (gaps, or ids
going down) are accepted with an :class:`~pyprog.logs.episodes.EpisodeIdWarning`, since
the forecast treats the episodes as equally spaced in play order: if episodes are missing
from the log, the forecast's time axis is compressed there.

Memory. The steps are stored flat (about 40 bytes a step); :func:`pyprog.forecast_logs`
works on them in blocks of similar-length episodes, so one long episode among many short
ones costs memory in proportion to the steps. Only the padded (N, H) views
(:attr:`Logs.log_pi` and the like, built on first use) need N·H cells, at most
:data:`~pyprog.logs.episodes.MAX_PADDED_CELLS`.
"""

from __future__ import annotations

import csv
import os
import re
import warnings

import numpy as np

from pyprog.logs.episodes import (
    MAX_EPISODE_ID,
    MAX_LINE_BYTES,
    EpisodeIdWarning,
    LogFormatError,
    Logs,
    data_lines,
    line_numbers,
)

__all__ = ["COLUMNS", "read_logs"]

#: The columns a log file must have.
COLUMNS = ("episode", "step", "reward", "log_pi", "log_beta")
# the file is checked in blocks of this many bytes before it is parsed
_BLOCK = 1 << 22

# a number as pandas (and NumPy's loadtxt) read it: no digit separators, no 0x
_NUMBER = re.compile(
    r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)\s*", re.IGNORECASE
)


def _fail(path, line: int, column: str | None, what: str) -> LogFormatError:
    where = f"{os.fspath(path)}, line {line}" + (f", column {column!r}" if column else "")
    return LogFormatError(f"{where}: {what}")


def _decode(path, lineno: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start : exc.start + 1].hex()
        raise _fail(
            path,
            lineno,
            None,
            f"byte 0x{byte} at position {exc.start + 1} is not UTF-8; save the file as UTF-8 text",
        ) from None


def _header(path) -> tuple[list[int], int]:
    """Indices of COLUMNS in the header, and the number of fields of a row."""
    with open(path, "rb") as fh:
        raw = fh.readline(MAX_LINE_BYTES + 1)
    if not raw:
        raise _fail(path, 1, None, f"the file is empty; expected a header {','.join(COLUMNS)}")
    if len(raw) > MAX_LINE_BYTES:
        raise _fail(
            path,
            1,
            None,
            f"no end of line in the first {MAX_LINE_BYTES} bytes; expected a CSV header "
            f"{','.join(COLUMNS)}",
        )
    if b"\r" in raw.rstrip(b"\r\n"):
        raise _fail(
            path,
            1,
            None,
            "the lines end with a lone carriage return (CR, classic Mac OS); save the file "
            "with LF or CRLF line endings (e.g. tr '\\r' '\\n' < old.csv > new.csv)",
        )
    names = [h.strip() for h in next(csv.reader([_decode(path, 1, raw)]))]
    for name in COLUMNS:
        if name not in names:
            hint = ""
            for sep, called in ((";", "semicolons"), ("\t", "tabs")):
                if len(names) == 1 and sep in names[0]:
                    hint = (
                        f"; the header is separated by {called}: pyprog reads comma-separated "
                        "values, save the file with ',' as the delimiter"
                    )
            raise _fail(
                path,
                1,
                name,
                f"missing column; the header must name "
                f"{', '.join(COLUMNS)} (got {', '.join(names) or 'nothing'}){hint}",
            )
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            where = [i + 1 for i, n in enumerate(names) if n == name]
            raise _fail(
                path,
                1,
                name,
                f"the column appears {len(where)} times (fields {', '.join(map(str, where))}); "
                "each column must be named once",
            )
    return [names.index(name) for name in COLUMNS], len(names)


def _find_bad_field(path, index: list[int], n_fields: int) -> LogFormatError | None:
    """The first row that is not UTF-8, has a wrong number of fields or a non-number."""
    for lineno, raw in data_lines(path):
        try:
            fields = next(csv.reader([_decode(path, lineno, raw)]))
        except csv.Error as exc:  # e.g. a lone carriage return inside a field
            return _fail(path, lineno, None, f"not a CSV row ({exc})")
        if len(fields) != n_fields:
            return _fail(
                path, lineno, None, f"{len(fields)} fields where the header has {n_fields}"
            )
        for name, i in zip(COLUMNS, index, strict=True):
            if not _NUMBER.fullmatch(fields[i]):
                return _fail(path, lineno, name, f"{fields[i].strip()!r} is not a number")
    return None


def _check_field_counts(path, body: bytes, first_line: int, n_fields: int) -> None:
    """Every non-blank line of ``body`` (whole lines) has ``n_fields`` fields, else a
    LogFormatError naming the first that does not (more fields are not dropped)."""
    arr = np.frombuffer(body, dtype=np.uint8)
    ends = np.flatnonzero(arr == ord("\n"))
    if b'"' in body:  # quoted fields may hold commas: count them as the csv module does
        suspects = range(len(ends))
    else:
        # commas per line: each comma's line by a binary search among the line ends
        line_of = np.searchsorted(ends, np.flatnonzero(arr == ord(",")))
        commas = np.bincount(line_of, minlength=len(ends))
        suspects = np.flatnonzero(commas != n_fields - 1)
    starts = np.concatenate(([0], ends[:-1] + 1))
    for k in suspects:
        raw = body[starts[k] : ends[k] + 1]
        if not raw.strip():
            continue  # blank lines are skipped
        try:
            fields = next(csv.reader([_decode(path, first_line + int(k), raw)]))
        except csv.Error as exc:
            raise _fail(path, first_line + int(k), None, f"not a CSV row ({exc})") from None
        if len(fields) != n_fields:
            raise _fail(
                path,
                first_line + int(k),
                None,
                f"{len(fields)} fields where the header has {n_fields}"
                + (" (a decimal comma?)" if len(fields) > n_fields else ""),
            )


def _scan(path, n_fields: int) -> None:
    """One pass over the file in blocks of :data:`_BLOCK` bytes, before any parsing: no
    line longer than :data:`MAX_LINE_BYTES` (a file of NUL bytes is refused at once, not
    after reading it whole), and every row with as many fields as the header."""
    with open(path, "rb") as fh:
        fh.readline(MAX_LINE_BYTES + 1)
        line, carry = 2, b""
        while True:
            block = fh.read(_BLOCK)
            data = carry + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            body, carry = data[:cut], data[cut:]
            if len(carry) > MAX_LINE_BYTES:
                raise _fail(path, line + body.count(b"\n"), None, _too_long())
            if body:
                if not body.endswith(b"\n"):
                    body += b"\n"
                lengths = np.diff(np.flatnonzero(np.frombuffer(body, np.uint8) == 10), prepend=-1)
                if lengths.max() > MAX_LINE_BYTES:
                    raise _fail(path, line + int(np.argmax(lengths)), None, _too_long())
                _check_field_counts(path, body, line, n_fields)
                line += body.count(b"\n")
            if not block:
                return


def _too_long() -> str:
    return (
        f"a line of more than {MAX_LINE_BYTES} bytes (pyprog.logs.episodes.MAX_LINE_BYTES); "
        "not a log of steps (a file of NUL bytes, or a binary file?)"
    )


def _load(path, index: list[int], n_fields: int) -> np.ndarray:
    """The five columns as floats, shape (rows, 5); LogFormatError naming the bad line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            # NumPy opens the file itself: faster than reading from a Python file object
            return np.loadtxt(
                os.fspath(path),
                delimiter=",",
                skiprows=1,
                usecols=index,
                ndmin=2,
                comments=None,
                quotechar='"',
                encoding="utf-8",
                dtype=np.float64,
            )
    except ValueError:  # UnicodeDecodeError included
        error = _find_bad_field(path, index, n_fields)
        if error is not None:
            raise error from None
    # every row is good: only lines of spaces were in NumPy's way; parse without them
    lines = (raw.decode("utf-8") for _, raw in data_lines(path))
    try:
        return np.loadtxt(
            lines, delimiter=",", usecols=index, ndmin=2, comments=None, quotechar='"'
        )
    except ValueError as exc:
        raise LogFormatError(f"{os.fspath(path)}: cannot be read as CSV numbers: {exc}") from None


def read_logs(path) -> Logs:
    """Read and check a CSV log of episodes (see the module docstring for the format).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Logs
        The steps stored flat, ``N`` episodes; padded (N, H) views on demand.

    Raises
    ------
    LogFormatError
        (a ``ValueError``) naming the line and column of the first problem: a header
        without a newline in its first :data:`MAX_LINE_BYTES` bytes, bytes that are not
        UTF-8, a missing column, a value that is not a number, NaN or inf, a
        log-probability > 0, an episode id or step that is not an integer or is beyond
        ±2^53, steps that do not increase by 1 within an episode, an episode whose rows
        are not contiguous, or no rows.

    Warns
    -----
    EpisodeIdWarning
        Where an episode's id is not the previous one's plus 1 (the first such line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "logs.csv"
    >>> _ = path.write_text("episode,step,reward,log_pi,log_beta\\n"
    ...                     "7,0,1.0,-0.5,-0.7\\n7,1,2.0,-0.1,-0.7\\n8,0,0.5,-0.2,-0.7\\n")
    >>> logs = read_logs(path)
    >>> logs.episodes, logs.lengths.tolist(), logs.rewards.tolist(), logs.mask.tolist()
    (2, [2, 1], [[1.0, 2.0], [0.5, 0.0]], [[1.0, 1.0], [1.0, 0.0]])
    """
    try:
        index, n_fields = _header(path)
        _scan(path, n_fields)
        data = _load(path, index, n_fields)
    except OSError as exc:
        raise LogFormatError(f"{os.fspath(path)}: cannot read: {exc.strerror or exc}") from None
    if data.shape[0] == 0:
        raise _fail(path, 2, None, "no data rows after the header")

    def bad(rows_mask: np.ndarray, column: str, what) -> None:
        rows = np.flatnonzero(rows_mask)
        if rows.size:
            r = int(rows[0])
            line = int(line_numbers(path, rows[:1])[0])
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
        col = data[:, COLUMNS.index(name)]
        hint = ""
        if np.all((col >= 0.0) & (col <= 1.0)):
            hint = (
                f"; every {name} is in [0, 1]: probabilities? the column holds their "
                f"logarithms ({name} = log p)"
            )
        bad(
            col > 0.0,
            name,
            lambda v, h=hint: f"{v:g} is a log-probability > 0 (a probability > 1){h}",
        )
    episode, step = data[:, 0], data[:, 1]
    for name, col in (("episode", episode), ("step", step)):
        bad(
            np.abs(col) > MAX_EPISODE_ID,
            name,
            lambda v: f"{v:g} is beyond ±2^53 (±{MAX_EPISODE_ID}), where float64 loses integers",
        )
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
    ids = ids.astype(np.int64)
    skips = np.flatnonzero(np.diff(ids) != 1)
    if skips.size:
        k = int(skips[0]) + 1
        line = int(line_numbers(path, starts[k : k + 1])[0])
        warnings.warn(
            f"{os.fspath(path)}, line {line}, column 'episode': episode {ids[k]} follows "
            f"episode {ids[k - 1]} ({skips.size} such place(s)); the episodes are taken as "
            "equally spaced in the order of the rows, whatever their ids",
            EpisodeIdWarning,
            stacklevel=2,
        )
    lengths = np.diff(np.append(starts, len(episode))).astype(np.int64)
    steps = np.ascontiguousarray(
        data[:, [COLUMNS.index(c) for c in ("log_pi", "log_beta", "reward")]]
    )
    return Logs(ids, lengths, steps, os.fspath(path), len(episode))
