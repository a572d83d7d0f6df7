"""Logs of rounds in columnar formats: pyarrow and Polars tables, and Parquet files.

* :func:`is_table`, :func:`table_columns` — a pyarrow ``Table`` or ``RecordBatch``, or a
  Polars ``DataFrame`` (or ``LazyFrame``, collected), as NumPy columns;
* :func:`is_parquet_path`, :func:`parquet_columns` — a Parquet file, or a folder of them
  (hive-partitioned ones too: ``date=2024-01-01/part-0.parquet``), as NumPy columns;
* :func:`read_rounds_table` — the same, every column read at once (for the command line).

Every column becomes a NumPy array of shape (n,): numbers and booleans as they are,
timestamps as ``datetime64`` in UTC (one with a time zone converted to UTC, as
:func:`pyprog.logs.times.utc_dates` converts dates), dates as ``datetime64[D]``, text as an
object array of ``str``, dictionary-encoded (categorical) columns decoded to their values,
decimals as float64. A null (a missing value) is a ValueError naming the column and its first
row: pyprog does not guess what a missing reward was. A column is converted when it is first
read, so a null in a column the forecast does not use is no error.

Neither pyarrow nor Polars is needed to import this module: a table is recognised by the
module of its type, and pyarrow is imported only to read Parquet (``pip install
"pyprog[parquet]"``). May import :mod:`pyprog.utils` only (and the other modules of
:mod:`pyprog.logs`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprog.utils.validation import listing

__all__ = [
    "IGNORED_PREFIXES",
    "PARQUET_SUFFIXES",
    "Columns",
    "is_parquet_path",
    "is_table",
    "parquet_columns",
    "read_rounds_table",
    "table_columns",
]

#: The names of a Parquet file (a folder is read as a dataset whatever its name).
PARQUET_SUFFIXES = (".parquet", ".pq")

#: Files and folders of a dataset that are not data, as for pyarrow: names starting with
#: these (Spark's ``_SUCCESS``, ``.crc`` checksums, ``_metadata``).
IGNORED_PREFIXES = (".", "_")

_INSTALL = 'pip install "pyprog[parquet]"'

#: The table types read, by the top-level module of their type and their type's name.
_TABLE_TYPES = {"pyarrow": ("Table", "RecordBatch"), "polars": ("DataFrame", "LazyFrame")}


# -- columns read on first use -----------------------------------------------------------------


class Columns(Mapping):
    """Named columns, each converted to a NumPy array the first time it is read, then kept.

    Parameters
    ----------
    names : sequence of str
        The column names, in the table's order.
    convert : callable
        ``convert(name) -> numpy.ndarray`` of shape (n,): the column, checked.

    Examples
    --------
    >>> cols = Columns(["a", "b"], lambda name: np.arange(3.0) if name == "a" else 1 / 0)
    >>> list(cols), "b" in cols, cols["a"]
    (['a', 'b'], True, array([0., 1., 2.]))
    """

    def __init__(self, names: Sequence[str], convert: Callable[[str], np.ndarray]) -> None:
        self._names = dict.fromkeys(str(n) for n in names)
        self._convert = convert
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._done:
            if name not in self._names:
                raise KeyError(name)
            self._done[name] = self._convert(name)
        return self._done[name]

    def __contains__(self, name: object) -> bool:  # by name: reads no column
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _writable(values: np.ndarray) -> np.ndarray:
    """A zero-copy view of a table's memory is read-only: a copy then."""
    return values if values.flags.writeable else values.copy()


def _null_error(source: str, name: str, row: int) -> ValueError:
    return ValueError(
        f"{source}: column {name!r} holds a null (a missing value) at row {row} (the first): "
        f"fill or drop the missing values before forecasting"
    )


# -- pyarrow and Polars tables -----------------------------------------------------------------


def _table_kind(obj) -> str | None:
    """ "pyarrow", "polars" or None, from the module of ``obj``'s type (imports nothing)."""
    cls = type(obj)
    root = (getattr(cls, "__module__", None) or "").partition(".")[0]
    return root if cls.__name__ in _TABLE_TYPES.get(root, ()) else None


def is_table(obj) -> bool:
    """Whether ``obj`` is a pyarrow ``Table`` or ``RecordBatch``, or a Polars ``DataFrame``
    or ``LazyFrame``, told by its type's module: neither library is imported.

    Examples
    --------
    >>> is_table({"time": [1.0]}), is_table("log.parquet")
    (False, False)
    """
    return _table_kind(obj) is not None


def table_columns(table, source: str = "log") -> Columns:
    """The columns of a pyarrow or Polars table as NumPy arrays (module docstring).

    Parameters
    ----------
    table : pyarrow.Table, pyarrow.RecordBatch, polars.DataFrame or polars.LazyFrame
        A ``LazyFrame`` is collected first.
    source : str
        The table's name in error messages.

    Returns
    -------
    Columns
        A mapping of column name to numpy.ndarray of shape (n,), each column converted
        when first read.

    Raises
    ------
    ValueError
        Two columns of one name; on reading a column, a null in it (naming the column and
        its first row).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"day": pa.array(["a", "b", "a"]).dictionary_encode(), "r": [1, 0, 1]})
    >>> cols = table_columns(t)
    >>> cols["day"], cols["r"]
    (array(['a', 'b', 'a'], dtype=object), array([1, 0, 1]))
    """
    kind = _table_kind(table)
    if kind == "pyarrow":
        names = [str(n) for n in table.schema.names]
        _check_unique(names, source)
        return Columns(names, lambda name: _arrow_values(table.column(name), name, source))
    if kind == "polars":
        if type(table).__name__ == "LazyFrame":
            table = table.collect()
        return Columns(table.columns, lambda name: _polars_values(table.get_column(name), source))
    raise ValueError(
        f"{source}: expected a pyarrow Table or RecordBatch or a Polars DataFrame; got "
        f"{type(table).__name__}"
    )


def _check_unique(names: list[str], source: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(
                f"{source}: two columns are named {name!r}: rename one (a column is read "
                f"by its name)"
            )
        seen.add(name)


def _plain_arrow(values):
    """A pyarrow column without what NumPy lacks: dictionaries decoded, time zones as UTC,
    decimals as float64, string views as strings."""
    import pyarrow as pa  # only reached with a pyarrow column: already imported

    kind = values.type
    if pa.types.is_dictionary(kind):
        values = values.cast(kind.value_type)
        kind = values.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        values = values.cast(pa.timestamp(kind.unit))  # the same instants, in UTC
    elif pa.types.is_decimal(kind):
        values = values.cast(pa.float64())
    elif getattr(pa.types, "is_string_view", lambda _: False)(kind):
        values = values.cast(pa.string())
    return values


def _arrow_values(values, name: str, source: str) -> np.ndarray:
    """One pyarrow column (``Array`` or ``ChunkedArray``) as a NumPy array of shape (n,).

    Raises
    ------
    ValueError
        A null in the column, naming ``source``, the column and the first null's row.
    """
    values = _plain_arrow(values)
    if hasattr(values, "combine_chunks"):
        values = values.combine_chunks()
    if values.null_count:
        row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise _null_error(source, name, row)
    return _writable(values.to_numpy(zero_copy_only=False))


def _polars_values(series, source: str) -> np.ndarray:
    """One Polars ``Series`` as a NumPy array of shape (n,).

    Raises
    ------
    ValueError
        A null in the column, naming ``source``, the column and the first null's row.
    """
    import polars as pl  # only reached with a Polars column: already imported

    if series.null_count():
        raise _null_error(source, series.name, int(series.is_null().arg_max()))
    kind = series.dtype
    if isinstance(kind, (pl.Categorical, getattr(pl, "Enum", pl.Categorical))):
        series = series.cast(pl.String)
    elif isinstance(kind, pl.Datetime) and kind.time_zone is not None:
        series = series.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
    elif isinstance(kind, pl.Decimal):
        series = series.cast(pl.Float64)
    out = series.to_numpy()
    if out.dtype.kind == "U":
        out = out.astype(object)
    return _writable(out)


# -- Parquet files -----------------------------------------------------------------------------


def is_parquet_path(path) -> bool:
    """Whether ``path`` names Parquet: a file ending in ``.parquet`` or ``.pq`` (existing or
    not, so that a missing one is named as such), or an existing folder.

    Examples
    --------
    >>> is_parquet_path("rounds.parquet"), is_parquet_path("rounds.csv")
    (True, False)
    """
    if not isinstance(path, (str, os.PathLike)):
        return False
    name = os.fsdecode(path)
    return os.path.isdir(name) or name.lower().endswith(PARQUET_SUFFIXES)


def _pyarrow():
    """``pyarrow.parquet`` and ``pyarrow.dataset``, or an ImportError saying how to install."""
    try:
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            f"reading Parquet needs pyarrow, which is not installed: {_INSTALL}"
        ) from exc
    return pq, ds


@dataclass
class _Part:
    """One file of a dataset: its schema, its number of rows (from the footer) and the
    partition keys of its folders; its columns are read when asked for."""

    path: str
    schema: Any
    rows: int
    keys: dict[str, Any] = field(default_factory=dict)

    def column(self, name: str) -> np.ndarray:
        """Column ``name`` of this file (a partition key repeated), as NumPy."""
        if name in self.keys:
            value = self.keys[name]
            return np.full(self.rows, value, dtype=object if isinstance(value, str) else None)
        pq, _ = _pyarrow()
        with _reading(self.path):
            table = pq.read_table(self.path, columns=[name])
        return _arrow_values(table.column(name), name, self.path)

    def batches(self, names: Sequence[str], rows: int) -> Iterator[tuple[int, dict]]:
        """``(first row, {name: array})`` for each batch of at most ``rows`` rows, reading
        only the columns ``names`` (partition keys repeated)."""
        pq, _ = _pyarrow()
        stored = [n for n in names if n not in self.keys]
        start = 0
        with _reading(self.path), pq.ParquetFile(self.path) as parquet:
            for batch in parquet.iter_batches(batch_size=rows, columns=stored):
                cols = {n: _arrow_values(batch.column(n), n, self.path) for n in stored}
                for n in names:
                    if n in self.keys:
                        value = self.keys[n]
                        kind = object if isinstance(value, str) else None
                        cols[n] = np.full(batch.num_rows, value, dtype=kind)
                yield start, cols
                start += batch.num_rows


class _reading:
    """Errors of pyarrow reading a file, as a ValueError naming it (a context manager)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:
        # pyarrow's own errors (ArrowInvalid, ...) and the OS's; not pyprog's ValueErrors
        if isinstance(exc, OSError) or type(exc).__module__.startswith("pyarrow"):
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(
                f"{self.path}: not a Parquet file, or a corrupted one (pyarrow: {why}); write "
                "it again or move it out of the folder"
            ) from None
        return False


def _data_files(root: str) -> list[str]:
    """The files under ``root`` that are data (not :data:`IGNORED_PREFIXES`), sorted."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(IGNORED_PREFIXES))
        found += [os.path.join(folder, f) for f in sorted(files)
                  if not f.startswith(IGNORED_PREFIXES)]  # fmt: skip
    if not found:
        raise ValueError(
            f"{root}: a folder with no Parquet files (names starting with "
            f"{' or '.join(map(repr, IGNORED_PREFIXES))} are not data, as for pyarrow)"
        )
    return found


def _open_file(path: str, pq) -> tuple[Any, int]:
    """One Parquet file's schema and number of rows, from its footer; an empty or
    unreadable file named."""
    if os.path.getsize(path) == 0:
        raise ValueError(
            f"{path}: an empty file (0 bytes) is not a Parquet file: remove it or write it "
            "again (a Parquet file without rows still has a footer)"
        )
    with _reading(path), pq.ParquetFile(path) as parquet:
        return parquet.schema_arrow, int(parquet.metadata.num_rows)


def _partition_keys(root: str, files: list[str], ds) -> tuple[list[dict], list[str]]:
    """Each file's hive partition keys (``key=value`` folders under ``root``), as pyarrow's
    dataset discovery reads them (values typed alike across the files), and the keys in
    their folders' order."""
    dataset = ds.dataset(files, format="parquet", partitioning="hive", partition_base_dir=root)
    keys = {
        os.path.normpath(f.path): ds.get_partition_keys(f.partition_expression)
        for f in dataset.get_fragments()
    }
    found = [keys.get(os.path.normpath(f), {}) for f in files]
    # the dataset's schema: the first file's columns, then the keys in their folders' order
    order = [k for k in dataset.schema.names if any(k in part for part in found)]
    return found, order


def _read_parts(name: str) -> tuple[list[_Part], list[str]]:
    """The dataset's files, checked and in order, and its partition keys."""
    pq, ds = _pyarrow()
    if os.path.isdir(name):
        files = _data_files(name)
        parts = [_Part(f, *_open_file(f, pq)) for f in files]
        keys, order = _partition_keys(name, files, ds)
        for part, found in zip(parts, keys, strict=True):
            part.keys = found
    elif os.path.isfile(name):
        parts, order = [_Part(name, *_open_file(name, pq))], []
    else:
        raise ValueError(f"{name}: no such file or folder")
    _check_keys(parts, order)
    _check_schemas(parts)
    # in the order of the partition values (month=2 before month=10), then of the paths
    parts.sort(key=lambda p: (tuple(p.keys[k] for k in order), p.path))
    return parts, order


def _check_keys(parts: list[_Part], order: list[str]) -> None:
    """Every file under the same partition keys, none null, none also a column of its file."""
    first = parts[0]
    for part in parts:
        for key in order:
            if key in part.keys and part.keys[key] is None:
                raise ValueError(
                    f"{part.path}: partition column {key!r} is null ({key}="
                    f"__HIVE_DEFAULT_PARTITION__, a missing value): give those rows a {key}"
                )
            if key in part.schema.names:
                raise ValueError(
                    f"{part.path}: column {key!r} is both in the file and a partition folder "
                    f"({key}=...): drop it from one of them"
                )
        missing = [k for k in order if (k in first.keys) != (k in part.keys)]
        if missing:
            key = missing[0]
            has, lacks = (first, part) if key in first.keys else (part, first)
            raise ValueError(
                f"{lacks.path}: not under a '{key}=...' folder, as {has.path} is: every file "
                f"of a partitioned folder must be under the same keys (partition column {key!r})"
            )


#: The kinds of value a column's type holds: files may differ in type within a kind
#: (int32 / int64 / double, timestamp units and zones, dictionary-encoded text), not across.
_KINDS = (
    ("number", ("is_integer", "is_floating", "is_decimal")),
    ("bool", ("is_boolean",)),
    ("time", ("is_timestamp", "is_date")),
    ("text", ("is_string", "is_large_string", "is_string_view")),
    ("bytes", ("is_binary", "is_large_binary", "is_fixed_size_binary")),
)


def _kind(arrow_type) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    for kind, tests in _KINDS:
        if any(getattr(pa.types, t, lambda _: False)(arrow_type) for t in tests):
            return kind
    return str(arrow_type)


def _check_schemas(parts: list[_Part]) -> None:
    """The same column names in every file, and of one kind (:data:`_KINDS`) in those with
    rows (a file without rows often has its columns typed loosely, as null)."""
    ref = next((p for p in parts if p.rows), parts[0])
    names = ref.schema.names
    _check_unique(names, ref.path)
    for part in parts:
        other = part.schema.names
        lacking = [c for c in names if c not in other]
        if lacking:
            raise ValueError(
                f"{part.path}: no column {lacking[0]!r}, which {ref.path} has: every file of "
                "the folder must have the same columns"
            )
        extra = [c for c in other if c not in names]
        if extra:
            raise ValueError(
                f"{part.path}: column {extra[0]!r} is not in {ref.path}: every file of the "
                "folder must have the same columns"
            )
        if part.rows:
            _check_types(part, ref)


def _check_types(part: _Part, ref: _Part) -> None:
    for name in ref.schema.names:
        want, got = ref.schema.field(name).type, part.schema.field(name).type
        if "null" not in (str(want), str(got)) and _kind(want) != _kind(got):
            raise ValueError(
                f"{part.path}: column {name!r} holds {got} ({_kind(got)}) where {ref.path} "
                f"holds {want} ({_kind(want)}): a column holds one kind of value in every file"
            )


def _part_column(parts: list[_Part], name: str) -> np.ndarray:
    """Column ``name`` of every file with rows, in order (a partition key repeated)."""
    pieces = [part.column(name) for part in [p for p in parts if p.rows] or parts[:1]]
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def parquet_columns(path: str | os.PathLike) -> Columns:
    """A Parquet file, or a folder of them, as NumPy columns (module docstring).

    A folder is one dataset: every file under it that is data (not hidden:
    :data:`IGNORED_PREFIXES`), with hive partitioning (``date=2024-01-01/part-0.parquet``:
    each ``key=value`` folder adds a column ``key`` holding ``value``, a number if every
    folder's value is an integer, else text, so ``date=2024-01-01`` can be the time column).
    The files come in the order of their partition values (``month=2`` before
    ``month=10``), then of their paths; each file's rows in its own order.

    A file without rows adds no rows: it must be a Parquet file with the same column names,
    but the types of its columns are not compared (writers type an empty column loosely). A
    folder whose every file is without rows gives columns without rows, as a CSV file with
    only its header does. An empty file (0 bytes) is not a Parquet file, and an error.

    Parameters
    ----------
    path : str or os.PathLike
        A file (any name; ``.parquet`` or ``.pq`` by custom) or a folder.

    Returns
    -------
    Columns
        A mapping of column name (the files' columns, then the partition keys) to
        numpy.ndarray of shape (n,), each converted when first read.

    Raises
    ------
    ImportError
        pyarrow is not installed (``pip install "pyprog[parquet]"``).
    ValueError
        Naming the file (both files when two disagree) and the column: a missing path or
        a folder without data files, an empty or corrupted file, files with different
        columns or a column of another kind (text where the others hold numbers), a file
        not under the partition folders the others are under (or under other ones), a null
        partition, a partition key that is also a column of its file, two columns of one
        name; on reading a column, a null in it (the file and the row in that file).

    Examples
    --------
    >>> import pathlib, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for day, r in [("2024-01-02", [0.0, 1.0]), ("2024-01-01", [1.0])]:
    ...     (folder / f"date={day}").mkdir()
    ...     pq.write_table(pa.table({"reward": r}), folder / f"date={day}" / "part-0.parquet")
    >>> cols = parquet_columns(folder)
    >>> list(cols), cols["date"].tolist(), cols["reward"].tolist()
    (['reward', 'date'], ['2024-01-01', '2024-01-02', '2024-01-02'], [1.0, 0.0, 1.0])
    """
    name = os.fsdecode(path)
    parts, order = _read_parts(name)
    names = [*parts[0].schema.names, *order]
    return Columns(names, lambda column: _part_column(parts, column))


def read_rounds_table(
    path: str | os.PathLike, columns: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """A Parquet file or folder of rounds, its columns read at once (for the command line).

    :func:`parquet_columns`, every column (or those named) converted now, so that a bad one
    is an error before anything is computed. The columns are as the files hold them (times
    as ``datetime64``, or a partition's text), not yet days: :func:`pyprog.forecast_value`
    takes them as they are.

    Parameters
    ----------
    path : str or os.PathLike
        A Parquet file (``.parquet``, ``.pq``) or a folder of them (:func:`is_parquet_path`).
    columns : sequence of str, optional
        The columns to read; default all.

    Returns
    -------
    dict of str to numpy.ndarray, shape (n,) each

    Raises
    ------
    ImportError, ValueError
        As :func:`parquet_columns`; also a path that is not Parquet (a CSV file:
        :func:`pyprog.logs.rounds_csv.read_rounds_csv`), or a column named that is not in
        the files.

    Examples
    --------
    >>> import pathlib, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rounds.parquet"
    >>> pq.write_table(pa.table({"time": [1.5, 2.0], "action": [0, 1]}), path)
    >>> read_rounds_table(path)
    {'time': array([1.5, 2. ]), 'action': array([0, 1])}
    """
    name = os.fsdecode(path)
    if not is_parquet_path(name):
        raise ValueError(
            f"{name}: not a Parquet file ({', '.join(PARQUET_SUFFIXES)}) nor a folder "
            "of them; read a CSV file with read_rounds_csv"
        )
    log = parquet_columns(name)
    names = list(log) if columns is None else [str(c) for c in columns]
    missing = [c for c in names if c not in log]
    if missing:
        raise ValueError(f"{name}: no column {missing[0]!r} (columns: {listing(list(log))})")
    return {c: log[c] for c in names}
