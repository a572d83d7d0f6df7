"""Bandit logs: OBP's ``bandit_feedback`` dict and the Open Bandit Dataset's CSV files.

See :mod:`pyprog.forecast.readers` for the rule on slates (``position``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Mapping

import numpy as np

from pyprog.forecast.arrays import LOG_PROB_FLOOR, as_timestamps
from pyprog.forecast.logs import LogFormatError, Logs
from pyprog.forecast.readers.common import (
    as_array,
    check_action_dist,
    choose_positions,
    fail,
    log_probabilities,
    need_key,
)
from pyprog.offpolicy.rounds import parse_utc

__all__ = ["OBD_COLUMNS", "from_obp", "read_obd_csv"]

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
        The features of each round; only its length is checked (the forecasts do not use
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
        Time of each round (see :func:`~pyprog.forecast.arrays.as_timestamps`); default:
        ``bandit_feedback["timestamp"]`` if present.

    Returns
    -------
    Logs
        One episode of one step per kept round: ``log π = log action_dist[i, action_i,
        position_i]``, ``log β = log pscore_i``.

    Raises
    ------
    LogFormatError
        Naming the key: missing, wrong shape or length, an action outside 0 .. A−1, a
        ``pscore`` outside (0, 1], ``action_dist`` outside [0, 1] or not summing to 1 over
        the actions, a position outside 0 .. L−1, or several positions without ``position``.

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
    n = int(need_key(bandit_feedback, "n_rounds", source))
    n_actions = int(need_key(bandit_feedback, "n_actions", source))
    action = as_array(need_key(bandit_feedback, "action", source), "action", source, (n,))
    if (action != np.round(action)).any() or (action < 0).any() or (action >= n_actions).any():
        i = int(
            np.flatnonzero((action != np.round(action)) | (action < 0) | (action >= n_actions))[0]
        )
        raise fail(
            source, "action", f"{action[i]:g} at round {i} is not an action in 0 .. {n_actions - 1}"
        )
    action = action.astype(np.int64)
    reward = as_array(need_key(bandit_feedback, "reward", source), "reward", source, (n,))
    pscore = as_array(need_key(bandit_feedback, "pscore", source), "pscore", source, (n,))
    log_beta = log_probabilities(pscore, "pscore", source)
    dist = np.asarray(action_dist, dtype=np.float64)
    if dist.ndim == 2 and dist.shape == (n, n_actions):
        raise fail(
            source,
            "action_dist",
            f"shape {dist.shape}; OBP's is (n, A, L): use action_dist[:, :, None]",
        )
    dist = as_array(dist, "action_dist", source, (n, n_actions, None))
    log_probabilities(dist, "action_dist", source, zero=True)
    check_action_dist(dist, "action_dist", source)
    pos = bandit_feedback.get("position")
    pos = np.zeros(n, np.int64) if pos is None else as_array(pos, "position", source, (n,))
    if (pos != np.round(pos)).any() or (pos < 0).any() or (pos >= dist.shape[2]).any():
        i = int(np.flatnonzero((pos != np.round(pos)) | (pos < 0) | (pos >= dist.shape[2]))[0])
        raise fail(
            source,
            "position",
            f"{pos[i]:g} at round {i} is not in 0 .. {dist.shape[2] - 1} (action_dist's L)",
        )
    pos = pos.astype(np.int64)
    context = bandit_feedback.get("context")
    if context is not None and len(context) != n:
        raise fail(source, "context", f"{len(context)} rows for n_rounds={n}")
    if timestamp is None:
        timestamp = bandit_feedback.get("timestamp")
    if timestamp is not None:
        timestamp = as_timestamps(timestamp, "timestamp", source)
        if len(timestamp) != n:
            raise fail(source, "timestamp", f"{len(timestamp)} times for n_rounds={n}")
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


# -- the Open Bandit Dataset's CSV files -------------------------------------------------------


def _parse_time(text: str) -> np.datetime64:
    return np.datetime64(parse_utc(text), "ns")


def read_obd_csv(
    path: str | os.PathLike,
    *,
    evaluation_pscore: float | np.ndarray | Callable[[dict], np.ndarray],
    position: int | str | None = None,
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
        hyphen in the name); passed to a callable ``evaluation_pscore``, otherwise unused.

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

    Returns
    -------
    Logs
        One episode of one step per kept row, sorted by ``timestamp`` (a stable sort, as
        OBP's loader sorts them), with :attr:`~pyprog.forecast.logs.Logs.timestamps` in UTC;
        the episode ids are the rows' indices in the file (0-based).

    Raises
    ------
    LogFormatError
        Naming the file, line and column: a missing column, a value that is not a number
        or a time, a ``propensity_score`` outside (0, 1], an ``evaluation_pscore`` outside
        [0, 1] or of the wrong length, several positions without ``position``.

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
    name = os.fspath(path)
    try:
        with open(name, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise LogFormatError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{name}: not UTF-8 text ({exc.reason})") from None
    if not rows:
        raise LogFormatError(f"{name}, line 1: the file is empty; expected a header")
    header = [h.strip() for h in rows[0]]
    if "propensity_score" not in header and "action_prob" in header:
        header[header.index("action_prob")] = "propensity_score"
    for col in OBD_COLUMNS:
        if col not in header:
            raise LogFormatError(
                f"{name}, line 1, column {col!r}: missing column; the Open Bandit Dataset's "
                f"files have {', '.join(OBD_COLUMNS)} (got {', '.join(header)})"
            )
    body = [(k + 2, r) for k, r in enumerate(rows[1:]) if any(f.strip() for f in r)]
    if not body:
        raise LogFormatError(f"{name}, line 2: no data rows after the header")
    for lineno, r in body:
        if len(r) != len(header):
            raise LogFormatError(
                f"{name}, line {lineno}: {len(r)} fields where the header has {len(header)}"
            )
    columns: dict[str, np.ndarray] = {}
    for j, col in enumerate(header):
        if col == "" and j == 0:
            continue
        columns[col] = np.array([r[j] for _, r in body])

    def parse(col: str, convert):
        out = []
        for (lineno, _), text in zip(body, columns[col], strict=True):
            try:
                out.append(convert(text))
            except ValueError:
                raise LogFormatError(
                    f"{name}, line {lineno}, column {col!r}: {str(text)!r} is not "
                    + ("a time (ISO 8601)" if col == "timestamp" else "a number")
                ) from None
        return out

    columns["timestamp"] = np.array(parse("timestamp", _parse_time), dtype="datetime64[ns]")
    for col in ("item_id", "position"):
        columns[col] = np.array(parse(col, int), dtype=np.int64)
    for col in ("click", "propensity_score"):
        columns[col] = np.array(parse(col, float))
    lines = np.array([lineno for lineno, _ in body])

    def check(values: np.ndarray, col: str, zero: bool) -> np.ndarray:
        try:
            return log_probabilities(values, col, name, zero=zero)
        except LogFormatError:
            low_ok = (values >= 0) if zero else (values > 0)
            i = int(np.flatnonzero(~(low_ok & (values <= 1)))[0])
            rng = "[0, 1]" if zero else "(0, 1]"
            raise LogFormatError(
                f"{name}, line {lines[i]}, column {col!r}: {values[i]} is not a probability "
                f"in {rng}"
            ) from None

    if not np.isfinite(columns["click"]).all():
        i = int(np.flatnonzero(~np.isfinite(columns["click"]))[0])
        raise LogFormatError(f"{name}, line {lines[i]}, column 'click': must be finite")
    log_beta = check(columns["propensity_score"], "propensity_score", zero=False)
    n = len(body)
    pi = evaluation_pscore(dict(columns)) if callable(evaluation_pscore) else evaluation_pscore
    pi = np.asarray(pi, dtype=np.float64)
    if pi.ndim == 0:
        pi = np.full(n, float(pi))
    if pi.shape != (n,):
        raise fail(name, "evaluation_pscore", f"shape {pi.shape}, expected ({n},): one per row")
    bad = ~((pi >= 0) & (pi <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise fail(
            name, "evaluation_pscore", f"{pi[i]} for line {lines[i]} is not a probability in [0, 1]"
        )
    with np.errstate(divide="ignore"):
        log_pi = np.maximum(np.log(pi), LOG_PROB_FLOOR)
    keep = choose_positions(columns["position"], position, "position", name)
    order = np.flatnonzero(keep)
    order = order[np.argsort(columns["timestamp"][order], kind="stable")]
    return Logs.from_arrays(
        columns["click"][order],
        log_pi[order],
        log_beta[order],
        episode=order,
        timestamp=columns["timestamp"][order],
        source=f"{name} (Open Bandit Dataset)",
    )
