"""Logs larger than memory: Parquet folders read in batches, and Dask DataFrames on a cluster.

Both are :class:`~pyprog.logs.chunks.RoundSource` objects, so :func:`pyprog.forecast_value`
runs its passes over them as over a log in memory, and gives the same numbers (to rounding:
the sums merge in another order):

* :class:`ParquetSource` reads a Parquet file or a folder of them (hive-partitioned or not)
  file by file, ``chunk_rows`` rows at a time and only the columns the forecast uses; the
  memory a pass holds is a chunk's, whatever the log's size. The folder is checked before
  any pass (:mod:`pyprog.logs.tables`: the same columns of the same kinds in every file,
  the same partition keys); a bad value in a chunk is named by its file and its row there.
* :class:`DaskSource` maps a pass over the partitions of a ``dask.dataframe.DataFrame``
  with ``dask.delayed`` and merges the partitions' sums in a tree: on the current
  ``dask.distributed`` client when there is one (a ``LocalCluster`` or a real cluster),
  else on Dask's local scheduler. No scheduler of pyprog's own.

May import :mod:`pyprog.utils` (and the other modules of :mod:`pyprog.logs`).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Iterator

from pyprog.logs.chunks import CHUNK_ROWS, Chunk, RoundSource, rounds_of
from pyprog.logs.columns import column_names
from pyprog.logs.tables import _read_parts

__all__ = ["DaskSource", "ParquetSource", "is_dask_frame"]


class _Spec:
    """How a frame's columns become a chunk: the column names, π_e and A."""

    def __init__(self, columns: dict, policy, n_actions: int | None) -> None:
        self.columns, self.policy, self.n_actions = columns, policy, n_actions

    def names(self, available: list[str]) -> list[str]:
        """The columns a chunk needs, of those ``available``."""
        c = self.columns
        need = [c["time"], c["action"], c["reward"], c["pscore"]]
        if c["context"] is not None:
            need += column_names(_Names(available), c["context"], "context")
        if isinstance(self.policy, (str, list, tuple)) and not callable(self.policy):
            need += column_names(_Names(available), self.policy, "policy")
        return list(dict.fromkeys(n for n in need if n in available)) or available

    def chunk(self, frame, where: str, first_row: int = 0) -> Chunk:
        """The chunk of ``frame``'s rows (their order kept); a ValueError names ``where``
        and the row there."""
        try:
            with warnings.catch_warnings():  # a chunk's own order does not matter
                warnings.filterwarnings("ignore", message=r".*not in time order")
                chunk, _, _ = rounds_of(frame, self.columns, self.policy, self.n_actions,
                                        canonical=False)  # fmt: skip
        except ValueError as exc:
            shifted = re.sub(r"\brow (\d+)\b", lambda m: f"row {int(m.group(1)) + first_row}",
                             str(exc))  # fmt: skip
            raise ValueError(f"{where}: {shifted}") from None
        return chunk


class _Names(dict):
    """Column names only, for :func:`~pyprog.logs.columns.column_names`."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(dict.fromkeys(names))


class ParquetSource(RoundSource):
    """A Parquet file or folder, read in chunks of ``chunk_rows`` rows, file by file.

    Parameters
    ----------
    path : str or os.PathLike
    columns : dict
        The column names (``time``, ``context``, ``action``, ``reward``, ``pscore``).
    policy : str, list of str, or callable
        π_e's columns, or ``policy(context, times) -> (n, A)``.
    n_actions : int or None
    chunk_rows : int

    Examples
    --------
    >>> import pathlib, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rounds.parquet"
    >>> cols = {"time": "time", "context": None, "action": "action", "reward": "reward",
    ...         "pscore": "pscore"}
    >>> pq.write_table(pa.table({"time": [0.5, 1.5, 2.5], "action": [0, 1, 0],
    ...     "reward": [1.0, 0.0, 1.0], "pscore": [0.5] * 3, "pi_0": [1.0] * 3,
    ...     "pi_1": [0.0] * 3}), path)
    >>> src = ParquetSource(path, cols, "pi_", None, chunk_rows=2)
    >>> [c.rounds.n for c in src.chunks()], src.scan.n, src.scan.n_actions
    ([2, 1], 3, 2)
    """

    def __init__(self, path, columns: dict, policy, n_actions: int | None,
                 chunk_rows: int = CHUNK_ROWS) -> None:  # fmt: skip
        self.path = os.fsdecode(path)
        self.parts, _ = _read_parts(self.path)  # checked now: before any pass
        self.parts = [p for p in self.parts if p.rows]
        if not self.parts:
            raise ValueError(f"{self.path}: no rounds (every file is without rows)")
        self.spec = _Spec(columns, policy, n_actions)
        self.names = self.spec.names([*self.parts[0].schema.names, *self.parts[0].keys])
        self.chunk_rows = max(1, int(chunk_rows))
        self.dated = _is_time_dated(self.parts[0], columns["time"])

    def chunks(self) -> Iterator[Chunk]:
        for part in self.parts:
            for first, cols in part.batches(self.names, self.chunk_rows):
                yield self.spec.chunk(cols, part.path, first)


def _is_time_dated(part, name: str) -> bool:
    """Whether the time column holds dates (a timestamp, or a partition's text)."""
    if name in part.keys:
        return isinstance(part.keys[name], str)
    if name not in part.schema.names:
        return False
    kind = str(part.schema.field(name).type)
    return kind.startswith(("timestamp", "date", "string", "large_string"))


def is_dask_frame(obj) -> bool:
    """Whether ``obj`` is a Dask DataFrame, told by its type's module (imports nothing).

    Examples
    --------
    >>> is_dask_frame({"time": [1.0]})
    False
    """
    root = (getattr(type(obj), "__module__", None) or "").partition(".")[0]
    return root in ("dask", "dask_expr") and type(obj).__name__ == "DataFrame"


def _partition_chunk(frame, spec: _Spec, k: int) -> Chunk:
    return spec.chunk(frame, f"partition {k}")


def _apply(frame, spec: _Spec, k: int, fn: Callable, args: tuple):
    return fn(_partition_chunk(frame, spec, k), *args)


def _merge(a, b):
    return a.merge(b)


class DaskSource(RoundSource):
    """A Dask DataFrame, a pass mapped over its partitions and merged in a tree.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
    columns : dict
    policy : str, list of str, or callable
        A callable is sent to the workers: it must pickle (a module-level function).
    n_actions : int or None
    """

    def __init__(self, frame, columns: dict, policy, n_actions: int | None) -> None:
        self.frame, self.spec = frame, _Spec(columns, policy, n_actions)
        names = [str(c) for c in frame.columns]
        self.frame = frame[self.spec.names(names)]
        kind = str(frame.dtypes[columns["time"]]) if columns["time"] in names else ""
        self.dated = kind.startswith(("datetime", "object", "string"))

    def chunks(self) -> Iterator[Chunk]:
        for k, part in enumerate(self.frame.to_delayed()):
            yield _partition_chunk(part.compute(), self.spec, k)

    def map_reduce(self, fn: Callable, *args):
        import dask

        parts = [
            dask.delayed(_apply)(p, self.spec, k, fn, args)
            for k, p in enumerate(self.frame.to_delayed())
        ]
        while len(parts) > 1:  # a tree of merges: depth log2(partitions)
            pairs = [
                dask.delayed(_merge)(a, b) for a, b in zip(parts[::2], parts[1::2], strict=False)
            ]
            parts = pairs + ([parts[-1]] if len(parts) % 2 else [])
        return parts[0].compute()
