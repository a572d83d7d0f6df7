"""Bandit logs: OBP's ``bandit_feedback`` dict and the Open Bandit Dataset's CSV files.

Each as episode :class:`~pyprog.logs.episodes.Logs` (:func:`from_obp`, :func:`read_obd_csv`)
or as rounds, the columns :func:`pyprog.forecast_value` reads (:func:`rounds_from_obp`,
:func:`read_obd_rounds`). See :mod:`pyprog.logs.readers` for the rule on slates
(``position``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from pyprog.logs.episodes import LOG_PROB_FLOOR, LogFormatError, Logs, as_timestamps
from pyprog.logs.readers.common import (
    MAX_ABS_REWARD,
    as_array,
    as_index,
    call,
    check_rewards,
    check_sums_to_one,
    choose_positions,
    count,
    fail,
    log_probabilities,
    need_key,
    numbers,
    show,
)
from pyprog.logs.times import fits_ns, parse_utc

__all__ = ["OBD_COLUMNS", "from_obp", "read_obd_csv", "read_obd_rounds", "rounds_from_obp"]

#: The columns :func:`read_obd_csv` needs (``action_prob`` is taken for ``propensity_score``).
OBD_COLUMNS = ("timestamp", "item_id", "position", "click", "propensity_score")


# -- Open Bandit Pipeline ----------------------------------------------------------------------


def from_obp(
    bandit_feedback: Mapping,
    action_dist,
    *,
    position: int | str | None = None,
    timestamp=None,
) -> Logs:
    """Logs from Open Bandit Pipeline's ``bandit_feedback`` dict: one round, one episode.

    The dict's keys (OBP's ``obp.types.BanditFeedback``; ``OpenBanditDataset`` and
    ``SyntheticBanditDataset`` return it):

    ``n_rounds`` (int)
        Number of rounds n.
    ``n_actions`` (int)
        Number of actions A.
    ``action`` (n,) int
        The action (item) chosen in each round, in 0 .. A−1.
    ``reward`` (n,)
        Its reward (a click: 0 or 1 in the Open Bandit Dataset).
    ``pscore`` (n,)
        The behaviour policy's probability of that action (at that position), in (0, 1].
    ``position`` (n,) int, optional
        The slot of a slate the action was shown at, in 0 .. L−1 (absent or None: 0).
    ``context`` (n, d), optional
        The features of each round; only its shape is checked (the forecasts do not use
        contexts yet).
    ``timestamp`` (n,), optional
        Not an OBP key (its loader drops the times); read when present, as the
        ``timestamp`` argument.

    Parameters
    ----------
    bandit_feedback : dict
        The dict above, rounds in play (time) order.
    action_dist : array_like, shape (n, A, L)
        The policy to evaluate: its probability of each action at each position in each
        round (what OBP's policies' ``predict`` returns; the 3-D shape even when L = 1).
    position : int or "all", optional
        Which rows, when they hold more than one position (the module docstring's rule).
    timestamp : array_like, shape (n,), optional
        Time of each round (see :func:`~pyprog.logs.episodes.as_timestamps`); default:
        ``bandit_feedback["timestamp"]`` if present.

    Returns
    -------
    Logs
        One episode of one step per kept round: ``log π = log action_dist[i, action_i,
        position_i]``, ``log β = log pscore_i``.

    Raises
    ------
    LogFormatError
        Naming the key: missing, wrong shape or length (ragged arrays too), ``n_rounds`` or
        ``n_actions`` not an integer >= 1, an action that is not an integer in 0 .. A−1 (1.5
        is refused, not truncated), a reward that is not finite or beyond ±1e100
        (:data:`~pyprog.logs.readers.common.MAX_ABS_REWARD`), a ``pscore`` outside
        (0, 1], ``action_dist`` outside [0, 1] or not summing to 1 over the actions, a
        position that is not an integer in 0 .. L−1, a ``timestamp`` that is NaT or outside
        1677-2262 (what ``datetime64[ns]`` holds), or several positions without
        ``position``.

    Examples
    --------
    >>> import numpy as np
    >>> feedback = {"n_rounds": 4, "n_actions": 2, "action": np.array([0, 1, 1, 0]),
    ...             "reward": np.array([1.0, 0.0, 1.0, 0.0]),
    ...             "pscore": np.array([0.5, 0.5, 0.5, 0.5]), "position": None}
    >>> pi = np.tile([[0.8], [0.2]], (4, 1, 1))    # (n, A, L) = (4, 2, 1)
    >>> logs = from_obp(feedback, pi)
    >>> logs.episodes, np.exp(logs.log_pi[:, 0] - logs.log_beta[:, 0]).round(2).tolist()
    (4, [1.6, 0.4, 0.4, 1.6])
    """
    source = "OBP bandit feedback"
    n, n_actions, action, reward, pscore = _obp_rounds(bandit_feedback, source)
    log_beta = log_probabilities(pscore, "pscore", source)
    dist = _obp_action_dist(action_dist, source, n, n_actions)
    pos = _obp_positions(bandit_feedback, source, n, dist.shape[2])
    _obp_context(bandit_feedback, source, n)
    if timestamp is None:
        timestamp = bandit_feedback.get("timestamp")
    if timestamp is not None:
        timestamp = _obp_times(timestamp, "timestamp", source, n)
    keep = choose_positions(pos, position, "position", source)
    with np.errstate(divide="ignore"):
        log_pi = np.maximum(np.log(dist[np.arange(n), action, pos]), LOG_PROB_FLOOR)
    return Logs.from_arrays(
        reward[keep],
        log_pi[keep],
        log_beta[keep],
        episode=np.flatnonzero(keep),  # the episode ids are the rounds' indices
        timestamp=None if timestamp is None else timestamp[keep],
        source=source,
    )


def _obp_rounds(bandit_feedback: Mapping, source: str) -> tuple:
    """The rounds of OBP's feedback, checked: n, A, action (n,) int, reward and pscore (n,)
    (pscore not yet checked to be a probability)."""
    n = count(bandit_feedback, "n_rounds", source, low=1)
    n_actions = count(bandit_feedback, "n_actions", source, low=1)
    action = need_key(bandit_feedback, "action", source)
    action = as_index(action, "action", source, n_actions, "round", "an action ")
    if len(action) != n:
        raise fail(source, "action", f"shape {action.shape}, expected ({n},)")
    reward = as_array(need_key(bandit_feedback, "reward", source), "reward", source, (n,))
    check_rewards(reward, "reward", source, "round")
    pscore = as_array(need_key(bandit_feedback, "pscore", source), "pscore", source, (n,))
    return n, n_actions, action, reward, pscore


def _obp_action_dist(
    action_dist, source: str, n: int, n_actions: int, flat: bool = False
) -> np.ndarray:
    """OBP's ``action_dist``, (n, A, L), checked (with ``flat``, also (n, A))."""
    dist = numbers(action_dist, "action_dist", source)
    shape = (n, n_actions, None)
    if dist.ndim == 2 and dist.shape == (n, n_actions):
        if not flat:
            raise fail(
                source,
                "action_dist",
                f"shape {dist.shape}; OBP's is (n, A, L): use action_dist[:, :, None]",
            )
        shape = (n, n_actions)
    dist = as_array(dist, "action_dist", source, shape)
    log_probabilities(dist, "action_dist", source, zero=True)
    check_sums_to_one(dist, "action_dist", source, ("round", "position")[: dist.ndim - 1])
    return dist


def _obp_positions(bandit_feedback: Mapping, source: str, n: int, n_slots: int) -> np.ndarray:
    """The feedback's ``position`` (n,) in 0 .. n_slots−1 (absent or None: all 0)."""
    pos = bandit_feedback.get("position")
    if pos is None:
        return np.zeros(n, np.int64)
    pos = as_index(pos, "position", source, n_slots, "round")
    if len(pos) != n:
        raise fail(source, "position", f"shape {pos.shape}, expected ({n},)")
    return pos


def _obp_context(bandit_feedback: Mapping, source: str, n: int):
    """The feedback's ``context`` (None if absent), its shape checked: n rows."""
    context = bandit_feedback.get("context")
    if context is not None:
        try:
            shape = np.shape(context)
        except ValueError:
            raise fail(source, "context", "ragged: its rows have different lengths") from None
        if len(shape) == 0:
            raise fail(source, "context", f"a scalar ({show(context)}); expected (n_rounds, d)")
        if shape[0] != n:
            raise fail(source, "context", f"{shape[0]} rows for n_rounds={n}")
    return context


def _obp_times(values, key: str, source: str, n: int) -> np.ndarray:
    """One time per round (:func:`~pyprog.logs.episodes.as_timestamps`), n of them."""
    times = as_timestamps(values, key, source, "round")
    if len(times) != n:
        raise fail(source, key, f"{len(times)} times for n_rounds={n}")
    return times


# -- the Open Bandit Dataset's CSV files -------------------------------------------------------


#: Rows converted at a time: the reader holds the strings of one chunk, never the file's.
_CHUNK = 8192
_INT64 = 2**63


def _time(text: str):
    try:
        return parse_utc(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a time (ISO 8601)") from None


def _integer(text: str) -> int:
    """An integer field; an integral float ("1.0", "2e3") is that integer."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if not number.is_integer():
            raise ValueError(f"{text!r} is not an integer") from None
        value = int(number)
    if not -_INT64 <= value < _INT64:
        raise ValueError(f"{text!r} is outside the integers int64 holds (±9.2e18)")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None


#: How each column :func:`read_obd_csv` uses is converted, and to what.
_CONVERT = {
    "timestamp": (_time, "datetime64[us]"),
    "item_id": (_integer, np.int64),
    "position": (_integer, np.int64),
    "click": (_number, np.float64),
    "propensity_score": (_number, np.float64),
}


def _convert(name: str, col: str, texts: list[str], lines: list[int]) -> np.ndarray:
    """One chunk of a column as an array; the first bad field named by file, line, column."""
    convert, dtype = _CONVERT[col]
    try:
        out = np.array([convert(t) for t in texts], dtype=dtype)
    except ValueError:
        for text, line in zip(texts, lines, strict=True):
            try:
                convert(text)
            except ValueError as exc:
                raise LogFormatError(f"{name}, line {line}, column {col!r}: {exc}") from None
        raise
    if col == "timestamp":
        out_of_range = ~fits_ns(out)
        if out_of_range.any():
            i = int(np.flatnonzero(out_of_range)[0])
            raise LogFormatError(
                f"{name}, line {lines[i]}, column 'timestamp': {texts[i]!r} is outside "
                "1677-09-21 .. 2262-04-11, the dates the logs' timestamps (datetime64[ns]) hold"
            )
        out = out.astype("datetime64[ns]")
    return out


def _header(name: str, header: list[str]) -> list[str]:
    header = [h.strip() for h in header]
    if "propensity_score" not in header and "action_prob" in header:
        header[header.index("action_prob")] = "propensity_score"
    for col in OBD_COLUMNS:
        if col not in header:
            raise LogFormatError(
                f"{name}, line 1, column {col!r}: missing column; the Open Bandit Dataset's "
                f"files have {', '.join(OBD_COLUMNS)} (got {', '.join(header)})"
            )
    return header


def _read_columns(name: str, fh, extra) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Stream the file: the columns used (those of OBD_COLUMNS, typed, and the ``extra``
    ones as str), and each row's line in the file, converted one chunk of rows at a time."""
    reader = csv.reader(fh)
    first = next(reader, None)
    if first is None:
        raise LogFormatError(f"{name}, line 1: the file is empty; expected a header")
    header = _header(name, first)
    named = {col: j for j, col in enumerate(header) if not (col == "" and j == 0)}
    if extra == "all":
        extra = [col for col in named if col not in OBD_COLUMNS]
    elif callable(extra):
        extra = [col for col in named if col not in OBD_COLUMNS and extra(col)]
    for col in extra:
        if col not in named:
            raise LogFormatError(
                f"{name}, line 1: extra_columns names {col!r}, which the file does not have"
            )
    wanted = list(OBD_COLUMNS) + [col for col in extra if col not in OBD_COLUMNS]
    where = [named[col] for col in wanted]
    chunks: dict[str, list[np.ndarray]] = {col: [] for col in wanted}
    line_chunks: list[np.ndarray] = []
    texts: list[list[str]] = [[] for _ in wanted]
    lines: list[int] = []

    def flush() -> None:
        for col, column in zip(wanted, texts, strict=True):
            if col in _CONVERT:
                chunks[col].append(_convert(name, col, column, lines))
            else:
                chunks[col].append(np.array(column, dtype=str))
            column.clear()
        line_chunks.append(np.array(lines, dtype=np.int64))
        lines.clear()

    start = reader.line_num + 1
    for row in reader:
        line, start = start, reader.line_num + 1
        if not any(f.strip() for f in row):
            continue
        if len(row) != len(header):
            raise LogFormatError(
                f"{name}, line {line}: {len(row)} fields where the header has {len(header)}"
            )
        for column, j in zip(texts, where, strict=True):
            column.append(row[j])
        lines.append(line)
        if len(lines) == _CHUNK:
            flush()
    if lines:
        flush()
    if not line_chunks:
        raise LogFormatError(f"{name}, line 2: no data rows after the header")
    columns = {col: np.concatenate(chunks.pop(col)) for col in wanted}
    return columns, np.concatenate(line_chunks)


def read_obd_csv(
    path: str | os.PathLike,
    *,
    evaluation_pscore: float | np.ndarray | Callable[[dict], np.ndarray],
    position: int | str | None = None,
    extra_columns: str | Sequence[str] | None = None,
) -> Logs:
    """Logs from a CSV file of the Open Bandit Dataset (Saito et al., 2021), sorted by time.

    The dataset (ZOZOTOWN's fashion recommendations, late November 2019; a uniform random
    policy and Bernoulli Thompson sampling, each logging its own impressions) ships as
    ``{random,bts}/{all,men,women}/{campaign}.csv``; a 10,000-row sample of each is inside
    Open Bandit Pipeline's source distribution. One row per item shown, with the columns:

    (a first, unnamed column)
        The row number (the pandas index the file was written with); ignored.
    ``timestamp``
        When the impression was logged, ISO 8601 with a UTC offset
        (``2019-11-24 00:00:17.004101+00:00``).
    ``item_id``
        The item (action) shown, an integer (0 .. 79 in campaign "all").
    ``position``
        The slot it was shown in: 1, 2 or 3 (left, centre, right of ZOZOTOWN's
        recommendation widget). OBP's loader renumbers them 0, 1, 2; this reader keeps the
        file's numbers.
    ``click``
        The reward: 1 if the item was clicked, else 0.
    ``propensity_score``
        The behaviour policy's probability of showing this item at this position, in
        (0, 1] (1/80 for the random policy of campaign "all"). The dataset's README calls
        it ``action_prob``, which is also accepted.
    ``user_feature_0`` .. ``user_feature_3``, ``user-item_affinity_0`` .. ``_K``
        The user's hashed categorical features and their affinity to each item (a
        hyphen in the name); passed to a callable ``evaluation_pscore``, otherwise not
        kept (see ``extra_columns``).

    The file is read as a stream, a few thousand rows at a time, keeping only the columns
    used: about 180 bytes a row at the peak whatever the row's width (the full dataset's
    26 million rows about 5 GB), and the columns passed to a callable on top (as str, 4
    bytes a character).

    Parameters
    ----------
    path : str or os.PathLike
    evaluation_pscore : float, array_like of shape (rows,), or callable
        The policy to evaluate's probability of each row's item at its position, in
        [0, 1]: one number for all rows (1/80 for the uniform random policy of campaign
        "all"), one per row in the file's order, or a function of the file's columns
        (a dict of arrays in the file's row order: ``timestamp`` as UTC ``datetime64``,
        ``item_id`` and ``position`` as int, ``click`` and ``propensity_score`` as float,
        the other columns as str) returning one per row.
    position : int or "all", optional
        Which rows (the module docstring's rule, with the file's 1, 2, 3).
    extra_columns : "all", str or sequence of str, optional
        The columns besides the five above to pass to a callable ``evaluation_pscore``
        (default: all of them when it is callable, none otherwise). Name the ones it uses
        to read a large file in less memory.

    Returns
    -------
    Logs
        One episode of one step per kept row, sorted by ``timestamp`` (a stable sort, as
        OBP's loader sorts them), with :attr:`~pyprog.logs.episodes.Logs.timestamps` in UTC;
        the episode ids are the rows' indices in the file (0-based).

    Raises
    ------
    LogFormatError
        Naming the file, line (the file's, counted from 1 with the header) and column: a
        missing column, a value that is not a number or a time, an ``item_id`` or
        ``position`` that is not an integer (an integral float such as ``1.0`` is taken)
        or is beyond int64, a time outside 1677-2262 (what ``datetime64[ns]`` holds), a
        ``click`` not finite or beyond ±1e100, a ``propensity_score`` outside (0, 1], an
        ``evaluation_pscore`` outside [0, 1] or of the wrong length (or a callable one that
        raises), several positions without ``position``.

    References
    ----------
    Y. Saito, S. Aihara, M. Matsutani, Y. Narita. "Open Bandit Dataset and Pipeline:
    Towards Realistic and Reproducible Off-Policy Evaluation." NeurIPS Datasets and
    Benchmarks, 2021 (arXiv:2008.07146).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "all.csv"
    >>> _ = path.write_text(
    ...     ",timestamp,item_id,position,click,propensity_score,user_feature_0\\n"
    ...     "0,2019-11-24 00:00:19+00:00,14,1,0,0.0125,81ce\\n"
    ...     "1,2019-11-24 00:00:17+00:00,79,1,1,0.0125,81ce\\n")
    >>> logs = read_obd_csv(path, evaluation_pscore=1 / 80)
    >>> logs.episode_ids.tolist(), logs.rewards[:, 0].tolist()
    ([1, 0], [1.0, 0.0])
    """
    if extra_columns is None:
        extra_columns = "all" if callable(evaluation_pscore) else ()
    elif isinstance(extra_columns, str) and extra_columns != "all":
        extra_columns = (extra_columns,)
    name, columns, lines = _read_obd_columns(path, extra_columns)
    log_beta = np.log(columns["propensity_score"])
    n = len(lines)
    if callable(evaluation_pscore):
        pi = call(evaluation_pscore, "evaluation_pscore", name, dict(columns))
    else:
        pi = evaluation_pscore
    pi = numbers(pi, "evaluation_pscore", name)
    if pi.ndim == 0:
        pi = np.full(n, float(pi))
    if pi.shape != (n,):
        raise fail(name, "evaluation_pscore", f"shape {pi.shape}, expected ({n},): one per row")
    bad = ~((pi >= 0) & (pi <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise fail(
            name,
            "evaluation_pscore",
            f"{show(pi[i])} for line {lines[i]} is not a probability in [0, 1]",
        )
    with np.errstate(divide="ignore"):
        log_pi = np.maximum(np.log(pi), LOG_PROB_FLOOR)
    order = _obd_time_order(
        columns, choose_positions(columns["position"], position, "position", name)
    )
    return Logs.from_arrays(
        columns["click"][order],
        log_pi[order],
        log_beta[order],
        episode=order,
        timestamp=columns["timestamp"][order],
        source=f"{name} (Open Bandit Dataset)",
    )


def _obd_time_order(columns: dict, keep: np.ndarray) -> np.ndarray:
    """The kept rows' indices sorted by ``timestamp`` (stable, as OBP's loader sorts)."""
    order = np.flatnonzero(keep)
    return order[np.argsort(columns["timestamp"][order], kind="stable")]


def _read_obd_columns(path, extra_columns) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    """The file's name, its columns (:data:`OBD_COLUMNS` typed, ``extra_columns`` as str:
    "all", a sequence, or a test of a column's name) and each row's line, the clicks and
    propensity scores checked."""
    name = os.fspath(path)
    try:
        with open(name, newline="", encoding="utf-8-sig") as fh:
            columns, lines = _read_columns(name, fh, extra_columns)
    except OSError as exc:
        raise LogFormatError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{name}: not UTF-8 text ({exc.reason})") from None
    except csv.Error as exc:
        raise LogFormatError(f"{name}: not a CSV file the reader can split ({exc})") from None

    click = columns["click"]
    bad = ~(np.abs(click) <= MAX_ABS_REWARD)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LogFormatError(
            f"{name}, line {lines[i]}, column 'click': {show(click[i])}; a reward must be "
            f"finite and at most {MAX_ABS_REWARD:g} in magnitude"
        )
    pscore = columns["propensity_score"]
    bad = ~((pscore > 0) & (pscore <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LogFormatError(
            f"{name}, line {lines[i]}, column 'propensity_score': {show(pscore[i])} is not a "
            "probability in (0, 1]"
        )
    return name, columns, lines


# -- as rounds, for pyprog.forecast_value ------------------------------------------------------

#: Positions allowed without an ``action_dist`` to bound them: any integer from 0.
_ANY_POSITION = 2**31


def rounds_from_obp(
    bandit_feedback: Mapping,
    action_dist=None,
    *,
    times=None,
    position: int | str | None = None,
) -> dict[str, np.ndarray]:
    """Rounds from Open Bandit Pipeline's ``bandit_feedback`` dict, for
    :func:`pyprog.forecast_value`: a dict of columns it reads as they are.

    The dict's keys are those :func:`from_obp` reads; ``context`` (n, d) must hold numbers
    here (the reward model uses it). OBP's feedback has no times: neither its synthetic
    data (``SyntheticBanditDataset``) nor its Open Bandit Dataset loader keeps any (read
    the dataset's files with :func:`read_obd_rounds` for theirs), so ``times`` is required
    unless the dict holds a ``timestamp``.

    Parameters
    ----------
    bandit_feedback : dict
        OBP's ``bandit_feedback``.
    action_dist : array_like, shape (n, A, L) or (n, A), optional
        The policy to evaluate: its probability of each action (at each position) in each
        round, as OBP's policies' ``predict`` returns it; (n, A) is a policy that does not
        look at the position. Without it, the rounds have no policy columns: pass the
        policy to :func:`pyprog.forecast_value` (an array or a callable).
    times : array_like, shape (n,)
        Time of each round: numbers (days) or dates (see
        :func:`~pyprog.logs.episodes.as_timestamps`); default
        ``bandit_feedback["timestamp"]``, required if it has none.
    position : int or "all", optional
        Which rows, when they hold more than one position (:mod:`pyprog.logs.readers`).

    Returns
    -------
    dict of str to numpy.ndarray, shape (rows,) each
        The kept rounds in the feedback's order: ``time`` (float64 days, or UTC
        ``datetime64[ns]`` dates), ``x0`` .. ``x{d-1}`` (the context's columns; none
        without a context), ``action`` (int64), ``reward`` and ``pscore`` (float64),
        ``position`` (int64, when the feedback has positions), and with ``action_dist``
        ``pi_0`` .. ``pi_{A-1}``: π's probability of each action at the round's position.

    Raises
    ------
    LogFormatError
        As :func:`from_obp`, naming the key; also no ``times``, a context that is not
        numbers of shape (n, d), ``action_dist`` of (n, A, L) with fewer positions than
        the rounds use.

    Examples
    --------
    >>> import numpy as np
    >>> feedback = {"n_rounds": 3, "n_actions": 2, "action": np.array([0, 1, 1]),
    ...             "reward": np.array([1.0, 0.0, 1.0]), "pscore": np.full(3, 0.5),
    ...             "context": np.array([[0.1], [0.2], [0.3]]), "position": None}
    >>> pi = np.tile([[0.8], [0.2]], (3, 1, 1))    # (n, A, L) = (3, 2, 1)
    >>> rounds = rounds_from_obp(feedback, pi, times=[0.0, 0.5, 1.0])
    >>> list(rounds), rounds["pi_0"].tolist()
    (['time', 'x0', 'action', 'reward', 'pscore', 'pi_0', 'pi_1'], [0.8, 0.8, 0.8])
    """
    source = "OBP bandit feedback"
    n, n_actions, action, reward, pscore = _obp_rounds(bandit_feedback, source)
    log_probabilities(pscore, "pscore", source)
    dist = None
    if action_dist is not None:
        dist = _obp_action_dist(action_dist, source, n, n_actions, flat=True)
    slots = dist.shape[2] if dist is not None and dist.ndim == 3 else _ANY_POSITION
    pos = _obp_positions(bandit_feedback, source, n, slots)
    context = _obp_context(bandit_feedback, source, n)
    if context is not None:
        context = as_array(context, "context", source, (n, None))
    if times is None:
        times = bandit_feedback.get("timestamp")
    if times is None:
        raise fail(
            source,
            "times",
            "required: OBP's bandit feedback holds no times (its synthetic data has none, "
            "its Open Bandit Dataset loader drops them); pass times=, one per round (days "
            "as numbers, or dates), or read the dataset's files with read_obd_rounds",
        )
    when = _obp_times(times, "times", source, n)
    keep = choose_positions(pos, position, "position", source)
    pi = dist if dist is None or dist.ndim == 2 else dist[np.arange(n), :, pos]
    has_position = bandit_feedback.get("position") is not None
    return _as_rounds(
        np.flatnonzero(keep), when, context, action, reward, pscore,
        pos if has_position else None, pi,
    )  # fmt: skip


def _as_rounds(rows, time, context, action, reward, pscore, position, pi) -> dict:
    """The columns :func:`pyprog.forecast_value` reads (its default names), of ``rows``."""
    out = {"time": time[rows]}
    if context is not None:
        out.update({f"x{j}": context[rows, j] for j in range(context.shape[1])})
    out.update(action=action[rows], reward=reward[rows], pscore=pscore[rows])
    if position is not None:
        out["position"] = position[rows]
    if pi is not None:
        out.update({f"pi_{a}": pi[rows, a] for a in range(pi.shape[1])})
    return out


def _is_user_feature(column: str) -> bool:
    """The user's features, as OBP's loader finds them (``str.contains("user_feature")``)."""
    return "user_feature" in column


def _one_hot_users(columns: dict) -> np.ndarray | None:
    """The user features one-hot, each one's first category dropped, as OBP's loader
    (``pandas.get_dummies(..., drop_first=True)``): (rows, d); None without any."""
    blocks = []
    for col in [c for c in columns if _is_user_feature(c)]:
        levels, codes = np.unique(columns[col], return_inverse=True)
        blocks.append(codes.reshape(-1, 1) == np.arange(1, len(levels)))
    return np.hstack(blocks).astype(np.float64) if blocks else None


def _obd_actions(name: str, item: np.ndarray, lines: np.ndarray, dist, n_actions) -> int:
    """A: ``n_actions``, else ``action_dist``'s, else the largest item + 1 (as OBP's loader);
    every ``item_id`` in 0 .. A−1."""
    if n_actions is not None:
        n_actions = count({"n_actions": n_actions}, "n_actions", name, low=1)
    elif dist is not None and dist.ndim >= 2:
        n_actions = int(dist.shape[1])
    else:
        n_actions = int(item.max()) + 1
    bad = (item < 0) | (item >= n_actions)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LogFormatError(
            f"{name}, line {lines[i]}, column 'item_id': {show(item[i])} is not an item in "
            f"0 .. {n_actions - 1} (n_actions={n_actions})"
        )
    return n_actions


def _obd_pi(name: str, dist: np.ndarray, position: np.ndarray, n_actions: int) -> np.ndarray:
    """π's probability of each action at each row's position, (rows, A): slot k of
    ``action_dist`` is the file's k-th smallest position (OBP's numbering: 1, 2, 3 are
    slots 0, 1, 2)."""
    n = len(position)
    dist = _obp_action_dist(dist, name, n, n_actions, flat=True)
    if dist.ndim == 2:
        return dist
    levels, slot = np.unique(position, return_inverse=True)
    if len(levels) > dist.shape[2]:
        raise fail(
            name,
            "action_dist",
            f"{dist.shape[2]} positions on its last axis, but the file's rows are at "
            f"{len(levels)} ({', '.join(map(str, levels.tolist()))})",
        )
    return dist[np.arange(n), :, slot]


def read_obd_rounds(
    path: str | os.PathLike,
    *,
    position: int | str | None = None,
    action_dist=None,
    n_actions: int | None = None,
    context: bool = True,
) -> dict[str, np.ndarray]:
    """Rounds from a CSV file of the Open Bandit Dataset, for :func:`pyprog.forecast_value`:
    a dict of columns it reads as they are, sorted by time.

    The file as :func:`read_obd_csv` reads it (its columns, its checks, the same rows in
    the same order), its ``timestamp`` the rounds' times. The context is OBP's: the user
    features (``user_feature_0`` ..) one-hot encoded, each one's first category (in sorted
    order) dropped, as OBP's loader encodes them (``pandas.get_dummies(...,
    drop_first=True)``): 22 columns in campaign "all".

    Parameters
    ----------
    path : str or os.PathLike
    position : int or "all", optional
        Which rows (:mod:`pyprog.logs.readers`' rule, with the file's positions 1, 2, 3).
    action_dist : array_like, shape (rows, A, L) or (rows, A), optional
        The policy to evaluate, one row per row of the file, in the file's order: its
        probability of each item at each position (slot k is the file's k-th position,
        OBP's numbering), or of each item whatever the position. Without it, no policy
        columns: pass the policy to :func:`pyprog.forecast_value`.
    n_actions : int, optional
        A, the number of items; default ``action_dist``'s, else the largest ``item_id`` + 1
        (as OBP's loader counts them: 80 in campaign "all").
    context : bool
        Whether to give the context columns (default True).

    Returns
    -------
    dict of str to numpy.ndarray, shape (rows,) each
        The kept rows sorted by time (stable): ``time`` (UTC ``datetime64[ns]``), ``x0`` ..
        ``x{d-1}`` (the context), ``action`` (the ``item_id``, int64), ``reward`` (the
        ``click``), ``pscore`` (the ``propensity_score``), ``position`` (the file's), and
        with ``action_dist`` ``pi_0`` .. ``pi_{A-1}``: π's probability of each item at the
        row's position.

    Raises
    ------
    LogFormatError
        As :func:`read_obd_csv`, naming the file, line and column; also an ``item_id``
        outside 0 .. A−1, an ``action_dist`` of the wrong shape, outside [0, 1], not
        summing to 1 over the items, or with fewer positions than the file's rows use.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "all.csv"
    >>> _ = path.write_text(
    ...     ",timestamp,item_id,position,click,propensity_score,user_feature_0\\n"
    ...     "0,2019-11-24 00:00:19+00:00,1,1,0,0.5,81ce\\n"
    ...     "1,2019-11-24 00:00:17+00:00,0,1,1,0.5,03a5\\n")
    >>> rounds = read_obd_rounds(path, action_dist=[[0.9, 0.1], [0.9, 0.1]])
    >>> rounds["action"].tolist(), rounds["x0"].tolist(), rounds["pi_0"].tolist()
    ([0, 1], [0.0, 1.0], [0.9, 0.9])
    """
    name, columns, lines = _read_obd_columns(path, _is_user_feature if context else ())
    item = columns["item_id"]
    dist = None if action_dist is None else numbers(action_dist, "action_dist", name)
    n_actions = _obd_actions(name, item, lines, dist, n_actions)
    pi = None if dist is None else _obd_pi(name, dist, columns["position"], n_actions)
    keep = choose_positions(columns["position"], position, "position", name)
    return _as_rounds(
        _obd_time_order(columns, keep), columns["timestamp"],
        _one_hot_users(columns) if context else None, item, columns["click"],
        columns["propensity_score"], columns["position"], pi,
    )  # fmt: skip
