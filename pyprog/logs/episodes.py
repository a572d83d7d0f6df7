"""Logged episodes: the :class:`Logs` container, and logs from arrays and DataFrames.

:class:`Logs` holds the episodes flat (one entry per step) in play order; the CSV reader
(:func:`pyprog.logs.episodes_csv.read_logs`), :meth:`Logs.from_arrays`,
:meth:`Logs.from_frame` and the readers of :mod:`pyprog.logs.readers` all end in one.
From arrays, a log comes in one of three forms:

* **one step per episode** (a bandit log): 1-D ``reward``, ``log_pi``, ``log_beta`` of
  shape (N,);
* **flat steps**: 1-D arrays of shape (rows,) with an ``episode`` id per step, the rows of
  an episode contiguous and in step order, episodes in play order (the CSV file's layout);
* **padded**: 2-D arrays of shape (N, H) with a ``mask`` (1 for a real step, then 0 for
  padding), the layout of :func:`pyprog.pdis`.

Checks, each naming the argument (or column) and the first bad position: equal lengths,
finite rewards, ``log_beta`` finite and <= 0, ``log_pi`` <= 0 and not NaN, episodes
contiguous, timestamps nondecreasing. A ``log_pi`` of −inf (the policy to evaluate never
takes the logged action) is stored as :data:`LOG_PROB_FLOOR`, since the estimators take
finite log-probabilities: the importance ratio is then about 1e-300 instead of 0.

Timestamps (optional, one per episode; for flat steps, one per step and the episode keeps
its first step's) are numbers (float64) or dates: ``datetime64``, Python ``datetime`` or
pandas timestamps. Dates with a time zone are converted to UTC and stored as naive
``datetime64[ns]`` in UTC; naive dates are taken as they are. The forecasts do not use
them yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from pyprog.logs.rounds import MAX_ABS_REWARD
from pyprog.logs.times import fits_ns, utc_dates

__all__ = [
    "LOG_PROB_FLOOR",
    "MAX_EPISODE_ID",
    "MAX_LINE_BYTES",
    "MAX_PADDED_CELLS",
    "EpisodeIdWarning",
    "LogFormatError",
    "Logs",
    "as_timestamps",
    "line_numbers",
    "logs_from_arrays",
    "logs_from_frame",
]

#: What a log-probability of −inf is stored as: log of the smallest normal float64 (≈ −708.4).
LOG_PROB_FLOOR = float(np.log(np.finfo(np.float64).tiny))


#: Longest line read (bytes): a file without a newline in its first MiB is not a log.
MAX_LINE_BYTES = 1 << 20


#: Largest absolute episode id or step (2^53: float64 holds every integer up to it).
MAX_EPISODE_ID = 2**53


#: Largest N·H of the padded (N, H) views of :class:`Logs` (2^26 cells: 512 MiB each).
MAX_PADDED_CELLS = 1 << 26


class LogFormatError(ValueError):
    """A log file that cannot be used; the message names the file, line and column."""


class EpisodeIdWarning(UserWarning):
    """Episode ids that do not go up by 1 in play order (gaps, or ids going down)."""


@dataclass(frozen=True)
class Logs:
    """Logged episodes, stored flat (one entry per step), in play order.

    The padded (N, H) arrays the estimators take (:attr:`log_pi`, :attr:`log_beta`,
    :attr:`rewards`, :attr:`mask`) are built on first use; with very unequal episode
    lengths they can be far larger than the file, and are refused beyond
    :data:`MAX_PADDED_CELLS` cells (:func:`pyprog.forecast_logs` does not need them).
    """

    #: Episode ids as they appear in the file, shape (N,).
    episode_ids: np.ndarray
    #: Number of steps of each episode, shape (N,).
    lengths: np.ndarray
    #: ``log π``, ``log β`` and the reward of every step, shape (rows, 3), episode by episode.
    steps: np.ndarray = field(repr=False)
    #: The file read.
    path: str
    #: Number of data rows (steps) in the file.
    rows: int
    #: Time of each episode (its first step), shape (N,), nondecreasing: float64 numbers or
    #: ``datetime64[ns]`` in UTC; None when the log has no times. The forecasts do not use
    #: it yet (they take the episodes as equally spaced in play order).
    timestamps: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: Whether :attr:`path` is a file whose lines :meth:`line_of_row` can count (False
    #: for logs built from arrays, where ``path`` names their source).
    from_file: bool = field(default=True, repr=False)

    @property
    def episodes(self) -> int:
        """Number of episodes N."""
        return len(self.episode_ids)

    @property
    def horizon(self) -> int:
        """Length H of the longest episode."""
        return int(self.lengths.max())

    @cached_property
    def starts(self) -> np.ndarray:
        """Row of the first step of each episode, shape (N,)."""
        return np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)

    def line_of_row(self, row: int) -> int:
        """Line of the file holding data row ``row`` (0-based; -1 for the last)."""
        return int(line_numbers(self.path, np.array([row % self.rows]))[0])

    def where(self, row: int) -> str:
        """Where data row ``row`` (0-based; -1 for the last) came from, for messages.

        ``"logs.csv, line 12"`` for a file; ``"OBP bandit feedback, row 11 (episode 7)"``
        for logs built from arrays.
        """
        if self.from_file:
            return f"{self.path}, line {self.line_of_row(row)}"
        row = row % self.rows
        episode = int(np.searchsorted(self.starts, row, side="right")) - 1
        return f"{self.path}, row {row} (episode {self.episode_ids[episode]})"

    @classmethod
    def from_arrays(
        cls,
        reward,
        log_pi,
        log_beta,
        *,
        mask=None,
        episode=None,
        timestamp=None,
        source: str = "arrays",
    ) -> Logs:
        """Logs from arrays: one step per episode, flat steps with episode ids, or padded.

        See :func:`logs_from_arrays` for the parameters, the checks
        and an example.
        """
        return logs_from_arrays(
            reward,
            log_pi,
            log_beta,
            mask=mask,
            episode=episode,
            timestamp=timestamp,
            source=source,
        )

    @classmethod
    def from_frame(cls, frame, *, timestamp: str | None = None, source: str = "frame") -> Logs:
        """Logs from a pandas DataFrame (or a dict of columns) with the CSV file's columns.

        See :func:`logs_from_frame` for the columns and an example.
        """
        return logs_from_frame(frame, timestamp=timestamp, source=source)

    def padded(self, episodes=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(log_pi, log_beta, rewards, mask)`` of some episodes, padded to (n, h).

        Parameters
        ----------
        episodes : array_like of int, shape (n,), optional
            Which episodes (default: all); ``h`` is the longest of them.

        Raises
        ------
        ValueError
            If ``n·h`` exceeds :data:`MAX_PADDED_CELLS` (and ``n > 1``).
        """
        idx = np.arange(self.episodes) if episodes is None else np.asarray(episodes, np.int64)
        lengths = self.lengths[idx]
        n, h = len(idx), int(lengths.max()) if len(idx) else 0
        if n > 1 and n * h > MAX_PADDED_CELLS:  # one episode alone costs what its steps do
            longest = int(idx[np.argmax(lengths)])
            raise ValueError(
                f"{self.path}: padding {n} episodes to the longest ({h} steps, episode "
                f"{self.episode_ids[longest]}) needs {n}×{h} = {n * h:.3g} cells, "
                f"{n * h * 8 / 2**30:.3g} GiB per array, more than the {MAX_PADDED_CELLS} "
                "allowed (pyprog.logs.episodes.MAX_PADDED_CELLS); pyprog.forecast_logs does "
                "not pad, or pass fewer episodes, or split the long ones"
            )
        pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        which = np.repeat(np.arange(n), lengths)
        rows = np.repeat(self.starts[idx], lengths) + pos
        out = []
        for j in range(3):
            a = np.zeros((n, h))
            a[which, pos] = self.steps[rows, j]
            out.append(a)
        mask = np.zeros((n, h))
        mask[which, pos] = 1.0
        return out[0], out[1], out[2], mask

    @cached_property
    def _padded(self):
        return self.padded()

    @property
    def log_pi(self) -> np.ndarray:
        """``log π`` of the logged actions, shape (N, H) (0 in padding)."""
        return self._padded[0]

    @property
    def log_beta(self) -> np.ndarray:
        """``log β`` of the logged actions, shape (N, H) (0 in padding)."""
        return self._padded[1]

    @property
    def rewards(self) -> np.ndarray:
        """Rewards, shape (N, H) (0 in padding)."""
        return self._padded[2]

    @property
    def mask(self) -> np.ndarray:
        """1 for real steps, 0 for padding, shape (N, H)."""
        return self._padded[3]


def data_lines(path):
    """(line number, raw line) of every data row of the CSV file at ``path``.

    Blank lines, empty or of spaces only, are skipped, as pandas does (NumPy skips the
    empty ones; the CSV reader parses again without the others).
    """
    with open(path, "rb") as fh:
        fh.readline(MAX_LINE_BYTES + 1)
        for lineno, raw in enumerate(fh, start=2):
            if raw.strip():
                yield lineno, raw


def line_numbers(path, rows: np.ndarray) -> np.ndarray:
    """File line of each data row index in ``rows`` (empty lines are skipped)."""
    wanted = {int(r) for r in rows}
    found = {}
    for k, (lineno, _) in enumerate(data_lines(path)):
        if k in wanted:
            found[k] = lineno
            if len(found) == len(wanted):
                break
    return np.array([found[int(r)] for r in rows])


def _fail(source: str, name: str, what: str) -> LogFormatError:
    return LogFormatError(f"{source}: {name!r}: {what}")


def as_timestamps(
    values, name: str = "timestamp", source: str = "arrays", noun: str = "position"
) -> np.ndarray:
    """Times as float64 numbers or UTC ``datetime64[ns]`` (see the module docstring).

    NaT and dates ``datetime64[ns]`` cannot hold (outside 1677-09-21 .. 2262-04-11, which
    its cast wraps around) are refused, naming the ``noun`` and its position.

    Parameters
    ----------
    values : array_like, shape (n,)
        Numbers, ``datetime64``, Python ``datetime`` objects or pandas timestamps (a
        Series or DatetimeIndex, with or without a time zone).
    name, source : str
        For error messages.

    Returns
    -------
    numpy.ndarray, shape (n,)

    Examples
    --------
    >>> import datetime as dt
    >>> jst = dt.timezone(dt.timedelta(hours=9))
    >>> as_timestamps([dt.datetime(2019, 11, 24, 9, 0, tzinfo=jst)])
    array(['2019-11-24T00:00:00.000000000'], dtype='datetime64[ns]')
    """
    arr = utc_dates(values)
    if arr.ndim != 1:
        raise _fail(source, name, f"must be 1-D, one time per episode; got shape {arr.shape}")
    if arr.dtype.kind == "M":
        nat = np.isnat(arr)
        if nat.any():
            i = int(np.flatnonzero(nat)[0])
            raise _fail(source, name, f"NaT at {noun} {i}: every time must be a date")
        outside = ~fits_ns(arr)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise _fail(
                source,
                name,
                f"{arr[i]} at {noun} {i} is outside 1677-09-21 .. 2262-04-11, the dates "
                "the logs' timestamps (datetime64[ns]) hold",
            )
        return arr.astype("datetime64[ns]")
    if arr.dtype.kind in "biuf":
        out = arr.astype(np.float64)
        if not np.isfinite(out).all():
            i = int(np.flatnonzero(~np.isfinite(out))[0])
            raise _fail(source, name, f"{out[i]} at position {i}; times must be finite")
        return out
    raise _fail(
        source,
        name,
        f"times must be numbers or dates (datetime64, datetime, pandas); got dtype {arr.dtype}",
    )


def _vector(source: str, name: str, values, ndim: tuple[int, ...] = (1,)) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise _fail(source, name, f"must be numbers ({exc})") from None
    if arr.ndim not in ndim:
        want = " or ".join(f"{d}-D" for d in ndim)
        raise _fail(source, name, f"must be {want}; got shape {arr.shape}")
    return arr


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_log_probs(source: str, log_pi: np.ndarray, log_beta: np.ndarray) -> np.ndarray:
    """log_pi with −inf floored; LogFormatError naming the first bad value."""
    for name, arr in (("log_pi", log_pi), ("log_beta", log_beta)):
        bad = np.isnan(arr) | (arr == np.inf)
        if name == "log_beta":
            bad |= arr == -np.inf
        if bad.any():
            i = _first(bad)
            why = (
                "the logged action had probability 0 under the behaviour policy"
                if name == "log_beta" and arr[i] == -np.inf
                else "not a log-probability"
            )
            raise _fail(source, name, f"{arr[i]} at row {i} ({why})")
        if (arr > 0).any():
            i = _first(arr > 0)
            hint = ""
            if ((arr > 0) & (arr <= 1) | (arr == 0)).all():
                hint = "; these look like probabilities: pass their logarithms (np.log)"
            raise _fail(
                source,
                name,
                f"{arr[i]:g} at row {i} is a log-probability > 0 (a probability > 1){hint}",
            )
    return np.where(log_pi == -np.inf, LOG_PROB_FLOOR, log_pi)


def logs_from_arrays(  # noqa: C901, PLR0912  (reviewed: docs/guides/development.md)
    reward,
    log_pi,
    log_beta,
    *,
    mask=None,
    episode=None,
    timestamp=None,
    source: str = "arrays",
) -> Logs:
    """Logs from arrays, checked as the CSV reader checks a file.

    Parameters
    ----------
    reward, log_pi, log_beta : array_like, shape (N,), (rows,) or (N, H)
        The reward of each step and the log-probabilities of its logged action under the
        policy to evaluate (π) and the behaviour policy (β). 1-D without ``episode``: one
        step per episode; 1-D with ``episode``: flat steps; 2-D: padded episodes.
    mask : array_like, shape (N, H), optional
        With 2-D arrays: 1 for each real step, 0 for padding after the episode's last step
        (default: all steps are real).
    episode : array_like of int, shape (rows,), optional
        With 1-D arrays: the episode id of each step (as the CSV's ``episode`` column).
    timestamp : array_like, shape (N,) (or (rows,) with ``episode``), optional
        Time of each episode (of each step with ``episode``: the episode keeps its first
        step's), nondecreasing; see the module docstring for the types.
    source : str
        What the arrays are, for error messages (e.g. ``"OBP bandit feedback"``).

    Returns
    -------
    Logs
        With ``from_file=False`` and ``path=source``.

    Raises
    ------
    LogFormatError
        (a ``ValueError``) naming the argument: mismatched shapes, a value that is not a
        number, a non-finite reward, a log-probability > 0, a NaN, ``log_beta`` = −inf, an
        episode whose steps are not contiguous, a mask that is not 1s then 0s, or times that
        go back.

    Examples
    --------
    >>> import numpy as np
    >>> logs = Logs.from_arrays([1.0, 0.0, 1.0], np.log([0.5, 0.2, 0.5]), np.log([0.25] * 3))
    >>> logs.episodes, logs.lengths.tolist()
    (3, [1, 1, 1])
    >>> flat = Logs.from_arrays([1.0, 2.0, 0.5], [-0.5, -0.1, -0.2], [-0.7] * 3,
    ...                         episode=[7, 7, 8])
    >>> flat.lengths.tolist(), flat.rewards.tolist()
    ([2, 1], [[1.0, 2.0], [0.5, 0.0]])
    """
    r = _vector(source, "reward", reward, (1, 2))
    lp = _vector(source, "log_pi", log_pi, (r.ndim,))
    lb = _vector(source, "log_beta", log_beta, (r.ndim,))
    for name, arr in (("log_pi", lp), ("log_beta", lb)):
        if arr.shape != r.shape:
            raise _fail(source, name, f"shape {arr.shape} differs from reward's {r.shape}")
    if r.size == 0:
        raise _fail(source, "reward", "no steps")
    if r.ndim == 2:
        if episode is not None:
            raise _fail(source, "episode", "only with 1-D arrays; 2-D arrays are padded (N, H)")
        m = np.ones(r.shape) if mask is None else _vector(source, "mask", mask, (2,))
        if m.shape != r.shape:
            raise _fail(source, "mask", f"shape {m.shape} differs from reward's {r.shape}")
        if not np.isin(m, (0.0, 1.0)).all():
            raise _fail(source, "mask", "must hold only 0 and 1")
        lengths = m.sum(axis=1).astype(np.int64)
        prefix = np.arange(r.shape[1]) < lengths[:, None]
        if (prefix != (m == 1)).any() or (lengths == 0).any():
            i = _first(((prefix != (m == 1)).any(axis=1)) | (lengths == 0))
            raise _fail(source, "mask", f"episode {i} is not 1s then 0s with at least one 1")
        keep = m == 1
        r, lp, lb = r[keep], lp[keep], lb[keep]  # row-major: episode by episode
        ids = np.arange(len(lengths), dtype=np.int64)
        first_rows = None
    else:
        if mask is not None:
            raise _fail(source, "mask", "only with 2-D (padded) arrays")
        if episode is None:
            lengths = np.ones(len(r), dtype=np.int64)
            ids = np.arange(len(r), dtype=np.int64)
            first_rows = None
        else:
            ep = np.asarray(episode)
            if ep.shape != r.shape:
                raise _fail(source, "episode", f"shape {ep.shape} differs from reward's {r.shape}")
            if ep.dtype.kind not in "iu":
                epf = _vector(source, "episode", ep)
                if not (np.isfinite(epf).all() and (epf == np.round(epf)).all()):
                    raise _fail(source, "episode", "ids must be integers")
                ep = epf.astype(np.int64)
            new = np.ones(len(ep), dtype=bool)
            new[1:] = ep[1:] != ep[:-1]
            first_rows = np.flatnonzero(new)
            ids = ep[first_rows].astype(np.int64)
            if len(np.unique(ids)) != len(ids):
                _, counts = np.unique(ids, return_counts=True)
                again = np.unique(ids)[counts > 1][0]
                raise _fail(
                    source,
                    "episode",
                    f"episode {again} appears again after other episodes; the steps of an "
                    "episode must be contiguous, in play order",
                )
            lengths = np.diff(np.append(first_rows, len(ep))).astype(np.int64)
    if not (np.abs(r) <= MAX_ABS_REWARD).all():
        i = _first(~(np.abs(r) <= MAX_ABS_REWARD))
        raise _fail(
            source,
            "reward",
            f"{r[i]:.4g} at row {i}; rewards must be finite and at most {MAX_ABS_REWARD:g} in "
            "magnitude (the forecasts square importance-weighted returns): rescale them",
        )
    lp = _check_log_probs(source, lp, lb)
    times = None
    if timestamp is not None:
        times = as_timestamps(timestamp, "timestamp", source)
        if first_rows is not None and len(times) == len(r):
            times = times[first_rows]
        if len(times) != len(lengths):
            raise _fail(
                source,
                "timestamp",
                f"{len(times)} times for {len(lengths)} episodes"
                + (f" ({len(r)} steps)" if first_rows is not None else ""),
            )
        back = times[1:] < times[:-1]
        if back.any():
            i = _first(back) + 1
            raise _fail(
                source,
                "timestamp",
                f"episode {i} is earlier than episode {i - 1}; episodes must be in play "
                "order (sort them by time first)",
            )
    steps = np.ascontiguousarray(np.column_stack([lp, lb, r]))
    return Logs(ids, lengths, steps, source, len(r), timestamps=times, from_file=False)


def logs_from_frame(frame, *, timestamp: str | None = None, source: str = "frame") -> Logs:
    """Logs from a pandas DataFrame, or a dict of 1-D arrays, with the CSV file's columns.

    Parameters
    ----------
    frame : pandas.DataFrame or Mapping of str to array_like
        Columns ``reward``, ``log_pi``, ``log_beta`` (required), ``episode`` (optional: flat
        steps, else one step per episode) and ``step`` (optional: checked to go up by 1
        within an episode); other columns are ignored. pandas is not needed for a dict.
    timestamp : str, optional
        The column holding each step's time (see :func:`logs_from_arrays`).
    source : str
        What the frame is, for error messages.

    Returns
    -------
    Logs

    Raises
    ------
    LogFormatError
        A missing column (named), or any error of :func:`logs_from_arrays`.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"episode": [0, 0, 1], "step": [0, 1, 0],
    ...                       "reward": [1.0, 2.0, 0.5], "log_pi": [-0.5, -0.1, -0.2],
    ...                       "log_beta": [-0.7, -0.7, -0.7]})
    >>> logs = Logs.from_frame(frame)
    >>> logs.episodes, logs.rewards.tolist()
    (2, [[1.0, 2.0], [0.5, 0.0]])
    """
    if not (isinstance(frame, Mapping) or hasattr(frame, "columns")):
        raise _fail(
            source,
            "frame",
            f"expected a pandas DataFrame or a dict of columns; got {type(frame).__name__}",
        )
    names = list(frame.columns) if hasattr(frame, "columns") else list(frame)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise _fail(source, str(dup), "the column appears twice")
    for name in ("reward", "log_pi", "log_beta") + ((timestamp,) if timestamp else ()):
        if name not in names:
            raise _fail(
                source, name, f"missing column (the frame has {', '.join(map(str, names))})"
            )

    def column(name):
        values = frame[name]
        return values if name == timestamp else np.asarray(values)

    episode = column("episode") if "episode" in names else None
    if "step" in names:
        if episode is None:
            raise _fail(source, "step", "a step column needs an episode column")
        step = _vector(source, "step", column("step"))
        same = np.asarray(episode)[1:] == np.asarray(episode)[:-1]
        jump = same & (step[1:] != step[:-1] + 1)
        if jump.any():
            i = _first(jump) + 1
            raise _fail(
                source, "step", f"{step[i]:g} at row {i}: steps must increase by 1 in an episode"
            )
    return logs_from_arrays(
        column("reward"),
        column("log_pi"),
        column("log_beta"),
        episode=episode,
        timestamp=None if timestamp is None else column(timestamp),
        source=source,
    )
