"""CSV files exported from a result store (the store is the source; a CSV is a view of it).

Every file is written whole or not at all: into a temporary file next to it (private to the
process), then renamed over the old one, so a reader never sees half a file and two processes
exporting the same file at once leave one of their complete versions.
"""

from __future__ import annotations

import contextlib
import csv
import os
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyprog.results.keys import RunKey
from pyprog.results.store import RECORD_COLUMNS, ResultStore

__all__ = ["CSV_COLUMNS", "export_csv", "write_csv"]

#: Columns of :func:`export_csv` (every column of the store but ``id`` and the arrays).
CSV_COLUMNS = tuple(c for c in RECORD_COLUMNS if c != "id")


def write_csv(
    path: str | os.PathLike[str], columns: Sequence[str], rows: Iterable[Mapping[str, Any]]
) -> Path:
    """Write ``rows`` (dicts; keys beyond ``columns`` are ignored) to ``path``, whole or not at
    all; a None value is an empty field, a float its exact ``repr``. Returns the path.

    Examples
    --------
    >>> import tempfile, os
    >>> path = write_csv(os.path.join(tempfile.mkdtemp(), "t.csv"), ["a", "b"], [{"a": 1.5}])
    >>> path.read_text().splitlines()
    ['a,b', '1.5,']
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        os.replace(tmp, path)  # whole file or none
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return path


def export_csv(
    store: ResultStore,
    path: str | os.PathLike[str],
    env: str | None = None,
    algo: str | None = None,
    speed: float | None = None,
    sweep: str | None = None,
    keys: Collection[RunKey] | None = None,
) -> int:
    """Write one CSV row per stored run (see :data:`CSV_COLUMNS`), ordered by key.

    Floats are written exactly (``repr``), a missing regret or sweep as an empty field, a
    speed of None (an environment's own drift) as an empty field, ``hyper`` as its canonical
    JSON.

    Parameters
    ----------
    store : ResultStore
    path : path
        The CSV file (replaced whole).
    env, algo, speed, sweep : optional
        Only the runs with these values.
    keys : collection of RunKey, optional
        Only the runs with these keys (e.g. the runs of one grid).

    Returns
    -------
    int
        The number of runs written.

    Examples
    --------
    >>> # export_csv(ResultStore("runs.sqlite", readonly=True), "runs.csv", sweep="fig3")
    """
    records = store.records(env, algo, speed, sweep)
    if keys is not None:
        wanted = set(keys)
        records = [
            r
            for r in records
            if (r["env"], r["algo"], r["speed"], r["setting_hash"], r["seed"]) in wanted
        ]
    write_csv(path, CSV_COLUMNS, records)
    return len(records)
