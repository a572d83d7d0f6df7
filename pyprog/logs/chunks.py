"""A log of rounds as chunks: what the rounds path's passes read, wherever the log lives.

:func:`pyprog.forecast_value` reads a log in passes, each a map over chunks of rounds and a
merge of what each chunk gives (:mod:`pyprog.offpolicy.chunked`). A :class:`RoundSource`
says how the chunks come: :class:`ArraySource` from columns in memory (a dict of arrays,
a DataFrame, a CSV read whole), sliced into chunks so that no pass holds more than a
chunk's temporaries. :meth:`RoundSource.map_reduce` runs a pass; a source on a cluster
runs it there.

:func:`rounds_of` reads the columns of a log into checked :class:`~pyprog.logs.rounds.Rounds`
and π_e at them; a :class:`Chunk` is both; :class:`Scan` is what a first look at the whole
log says (its size, span, the contexts' mean, the number of actions).

May import :mod:`pyprog.utils` and :mod:`pyprog._ext`.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pyprog.logs.columns import column, column_names, numbers_of
from pyprog.logs.rounds import Rounds, check_action_dist, check_rounds
from pyprog.logs.times import time_values

__all__ = [
    "CHUNK_ROWS",
    "ArraySource",
    "Chunk",
    "RoundSource",
    "Scan",
    "policy_columns",
    "rounds_of",
]

#: Rounds per chunk: a pass's temporaries (the reward model's inputs, q̂ for every action)
#: stay near CHUNK_ROWS · (d + k + A) doubles, a few hundred MB at most.
CHUNK_ROWS = 1 << 14


@dataclass(frozen=True)
class Chunk:
    """Rounds of a log and π_e at them.

    Attributes
    ----------
    rounds : Rounds
        Checked (:func:`pyprog.logs.rounds.check_rounds`).
    pi : numpy.ndarray of shape (n, A), or None
        π_e at the logged rounds, from the log's columns; None when π_e is a callable.
    """

    rounds: Rounds
    pi: np.ndarray | None = None

    def rows(self, lo: int, hi: int) -> Chunk:
        """Rounds ``lo:hi`` (views, no copy)."""
        r = self.rounds
        part = Rounds(r.context[lo:hi], r.times[lo:hi], r.action[lo:hi], r.reward[lo:hi],
                      r.pscore[lo:hi], r.n_actions)  # fmt: skip
        return Chunk(part, None if self.pi is None else self.pi[lo:hi])


@dataclass(frozen=True)
class Scan:
    """What a first look at a whole log says: its rounds, span and contexts' mean.

    Attributes
    ----------
    n : int
    t_first, t_last : float
    context_sum : numpy.ndarray, shape (d,)
    n_actions : int
    """

    n: int
    t_first: float
    t_last: float
    context_sum: np.ndarray
    n_actions: int

    @classmethod
    def of(cls, chunk: Chunk) -> Scan:
        r = chunk.rounds
        return cls(r.n, float(r.times.min()), float(r.times.max()), r.context.sum(axis=0),
                   r.n_actions)  # fmt: skip

    def merge(self, other: Scan) -> Scan:
        return Scan(
            self.n + other.n, min(self.t_first, other.t_first), max(self.t_last, other.t_last),
            self.context_sum + other.context_sum, self.n_actions,
        )  # fmt: skip

    @property
    def context_mean(self) -> np.ndarray:
        return self.context_sum / self.n


class RoundSource:
    """Where a log's chunks come from. Subclasses define :meth:`chunks` (and may run
    :meth:`map_reduce` elsewhere, as on a cluster)."""

    #: Whether the log's times were dates (a plot reads them so).
    dated: bool = False
    #: Whether chunks may run on several threads at once (not with a user's callable,
    #: which need not be thread-safe).
    threads: bool = True
    _scan: Scan | None = None

    @property
    def scan(self) -> Scan:
        """The whole log's :class:`Scan`: a first pass, once."""
        if self._scan is None:
            self._scan = self.map_reduce(Scan.of)
        return self._scan

    @property
    def one_chunk(self) -> bool:
        """Whether the whole log comes as one chunk (what a non-mergeable step needs)."""
        return False

    def chunks(self) -> Iterator[Chunk]:
        """The log's chunks, each a :class:`Chunk`."""
        raise NotImplementedError

    def map_reduce(self, fn: Callable, *args):
        """``fn(chunk, *args)`` for every chunk, merged (``a.merge(b)``) into one.

        The chunks run on :func:`workers` threads when :attr:`threads` (NumPy releases the
        GIL in its loops; BLAS kept to one thread each), at most twice as many in flight as
        threads, and are merged in their order, so the result does not depend on the
        threads' timing.
        """
        from threadpoolctl import threadpool_limits

        n = workers() if self.threads else 1
        if n == 1:
            out = None
            for chunk in self.chunks():
                out = _merged(out, fn(chunk, *args))
            return out
        out, pending = None, deque()
        with ThreadPoolExecutor(n) as pool, threadpool_limits(1, user_api="blas"):
            for chunk in self.chunks():
                pending.append(pool.submit(fn, chunk, *args))
                if len(pending) > 2 * n:
                    out = _merged(out, pending.popleft().result())
            while pending:
                out = _merged(out, pending.popleft().result())
        return out


def workers() -> int:
    """The threads a pass runs on: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _merged(out, part):
    return part if out is None else out.merge(part)


class ArraySource(RoundSource):
    """A log held in memory, checked once, read in chunks of ``chunk_rows`` rounds.

    Parameters
    ----------
    chunk : Chunk
        The whole log (:func:`rounds_of`).
    chunk_rows : int or None
        Rounds per chunk; None: the whole log as one chunk.
    dated : bool

    Examples
    --------
    >>> r = check_rounds(None, [0.0, 1.0, 2.0], [0, 1, 0], [1.0, 0.0, 1.0], [0.5] * 3, 2)
    >>> src = ArraySource(Chunk(r), chunk_rows=2)
    >>> [c.rounds.n for c in src.chunks()], src.scan.n
    ([2, 1], 3)
    """

    def __init__(self, chunk: Chunk, chunk_rows: int | None = CHUNK_ROWS, dated: bool = False):
        self.whole, self.dated = chunk, dated
        self.chunk_rows = chunk.rounds.n if chunk_rows is None else max(1, int(chunk_rows))

    @property
    def scan(self) -> Scan:
        return Scan.of(self.whole)

    @property
    def one_chunk(self) -> bool:
        return self.chunk_rows >= self.whole.rounds.n

    def chunks(self) -> Iterator[Chunk]:
        n = self.whole.rounds.n
        for lo in range(0, n, self.chunk_rows):
            yield self.whole.rows(lo, min(n, lo + self.chunk_rows))


def rounds_of(frame, columns: dict, policy, n_actions: int | None, canonical: bool = True):
    """A log's columns as checked rounds in their canonical order, and π_e at them.

    Parameters
    ----------
    frame : mapping of column name to array_like
    columns : dict
        The column names: ``time``, ``context`` (a prefix, a list or None), ``action``,
        ``reward``, ``pscore``.
    policy : array_like, str, list of str, or callable
        π_e (:func:`policy_columns`).
    n_actions : int or None
    canonical : bool
        Put the rounds in their canonical order (a shuffled log gives the same rounds);
        a chunk of a streamed log keeps its order (the sums it gives do not depend on it).

    Returns
    -------
    chunk : Chunk
        The rounds and π_e at them (None for a callable).
    n_actions : int
    dated : bool
        Whether the times were dates.
    """
    time = columns["time"]
    raw = column(frame, time, "time")
    times = time_values(raw, name=f"time column {time!r}")
    spec = columns["context"]
    names = [] if spec is None else column_names(frame, spec, "context")
    ctx = np.column_stack([numbers_of(frame, c, "context") for c in names]) if names else None
    acts = np.asarray(column(frame, columns["action"], "action"))
    rews = np.asarray(column(frame, columns["reward"], "reward"))
    ps = np.asarray(column(frame, columns["pscore"], "pscore"))
    pi, n_actions = policy_columns(frame, policy, n_actions, rews.shape[0])
    rounds = check_rounds(ctx, times, acts, rews, ps, n_actions)
    chunk = Chunk(rounds, pi)
    if canonical and not _in_canonical_order(rounds.times):
        order = rounds.canonical_order()
        chunk = Chunk(rounds.take(order), None if pi is None else pi[order])
    return chunk, n_actions, np.asarray(raw).dtype.kind not in "biuf"


def _in_canonical_order(times: np.ndarray) -> bool:
    """Whether the times increase strictly: then the canonical order is the log's own (no
    copy of the log needed)."""
    return bool(np.all(times[1:] > times[:-1]))


def policy_columns(frame, policy, n_actions: int | None, n: int):
    """π_e's probabilities at the logged rounds, (n, A) (None for a callable), and A.

    ``policy`` is an (n, A) array, the log's columns (a prefix such as ``"pi_"`` or a list
    of names), or a callable (then ``n_actions`` is required).
    """
    if callable(policy):
        if n_actions is None:
            raise ValueError("n_actions is required when policy is a callable")
        return None, n_actions
    if isinstance(policy, (str, list, tuple)) and (
        isinstance(policy, str) or all(isinstance(p, str) for p in policy)
    ):
        names = column_names(frame, policy, "policy")
        if not names:
            raise ValueError(
                f"policy: no columns named {policy!r} followed by an action number in the log"
            )
        pi = np.column_stack([numbers_of(frame, c, "policy") for c in names])
    else:
        pi = np.asarray(policy)
    if n_actions is None:
        if pi.ndim < 2:
            raise ValueError(f"policy must have shape (n, n_actions); got {pi.shape}")
        n_actions = int(pi.shape[1])
    return check_action_dist("policy", pi, n, n_actions), n_actions
