"""The one result store: finished runs in SQLite (write, resume, query) and CSV exported from it.

:class:`ResultStore` (:mod:`.store`) keeps the runs; :mod:`.keys` says what identifies one,
:mod:`.schema` what the file holds, :mod:`.rows` how a run is encoded, :mod:`.export` writes
CSV views of a store.

May import :mod:`pyprog.runner` and every layer below it.
"""

from pyprog.results.export import CSV_COLUMNS, export_csv, write_csv
from pyprog.results.keys import (
    NO_SPEED,
    RunKey,
    canonical_json,
    check_storable_env,
    run_key,
    setting_hash,
)
from pyprog.results.rows import StoredRun
from pyprog.results.schema import FORMAT, SCHEMA_VERSION, StoreError
from pyprog.results.store import ResultStore

__all__ = [
    "CSV_COLUMNS",
    "FORMAT",
    "NO_SPEED",
    "SCHEMA_VERSION",
    "ResultStore",
    "RunKey",
    "StoreError",
    "StoredRun",
    "canonical_json",
    "check_storable_env",
    "export_csv",
    "run_key",
    "setting_hash",
    "write_csv",
]
