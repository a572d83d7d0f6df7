"""The file format of a result store: its SQLite schema, and opening a file safely.

A store is one SQLite database in WAL mode with two tables: ``pyprog_meta`` (format, schema
version, array encoding, the pyprog version that created it) and ``runs`` (one row per
finished run, unique on :data:`KEY_COLUMNS`). :func:`inspect_store` checks, without writing
anything, that a file is a store of :data:`SCHEMA_VERSION`; :func:`initialise` creates the
tables in one transaction.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyprog._version import __version__

__all__ = [
    "ARRAY_COLUMNS",
    "ARRAY_ENCODING",
    "COLUMNS",
    "FORMAT",
    "INSERT",
    "KEY_COLUMNS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "StoreError",
    "damaged",
    "initialise",
    "inspect_store",
    "set_wal",
    "uri",
    "utc_text",
]

#: Value of ``format`` in the ``pyprog_meta`` table of every pyprog store.
FORMAT = "pyprog-store"
#: Version of the table layout below; a store of another version is refused when opened.
SCHEMA_VERSION = 1
#: How arrays are encoded in the BLOB columns.
ARRAY_ENCODING = "float64-le"

_SQLITE_MAGIC = b"SQLite format 3\x00"

#: The tables of a store (``CREATE ... IF NOT EXISTS``: idempotent).
SCHEMA = """
CREATE TABLE IF NOT EXISTS pyprog_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id              INTEGER PRIMARY KEY,
    env             TEXT    NOT NULL,
    algo            TEXT    NOT NULL,
    speed           REAL    NOT NULL,
    setting_hash    TEXT    NOT NULL,
    seed            INTEGER NOT NULL,
    sweep           TEXT,
    hyper           TEXT    NOT NULL,
    episodes        INTEGER NOT NULL CHECK (episodes >= 1),
    regret          REAL,
    mean_return     REAL,
    updates         INTEGER NOT NULL,
    skipped_updates INTEGER NOT NULL,
    skipped_steps   INTEGER NOT NULL,
    seconds         REAL    NOT NULL,
    returns         BLOB    NOT NULL CHECK (length(returns) = 8 * episodes),
    optimal         BLOB    CHECK (optimal IS NULL OR length(optimal) = 8 * episodes),
    expected        BLOB    CHECK (expected IS NULL OR length(expected) = 8 * episodes),
    version         TEXT    NOT NULL,
    started         TEXT    NOT NULL,
    finished        TEXT    NOT NULL,
    UNIQUE (env, algo, speed, setting_hash, seed)
);
CREATE INDEX IF NOT EXISTS runs_sweep ON runs (sweep);
"""

#: Columns of table ``runs``, in order.
COLUMNS = (
    "id",
    "env",
    "algo",
    "speed",
    "setting_hash",
    "seed",
    "sweep",
    "hyper",
    "episodes",
    "regret",
    "mean_return",
    "updates",
    "skipped_updates",
    "skipped_steps",
    "seconds",
    "returns",
    "optimal",
    "expected",
    "version",
    "started",
    "finished",
)
#: Insert one run; a run whose key is stored already changes nothing.
INSERT = (
    f"INSERT INTO runs ({', '.join(COLUMNS[1:])}) VALUES ({', '.join('?' * (len(COLUMNS) - 1))}) "
    "ON CONFLICT (env, algo, speed, setting_hash, seed) DO NOTHING"
)
#: The columns that hold per-episode arrays (float64 little-endian BLOBs).
ARRAY_COLUMNS = ("returns", "optimal", "expected")
#: The unique key of a run (table ``runs``).
KEY_COLUMNS = ("env", "algo", "speed", "setting_hash", "seed")


class StoreError(ValueError):
    """A path that cannot be opened as a result store, or a write to a read-only store."""


def utc_text(when: datetime) -> str:
    """ISO-8601 in UTC; a naive datetime is taken as local time (Python's convention).

    Examples
    --------
    >>> utc_text(datetime(2020, 7, 12, 9, 30, tzinfo=timezone.utc))
    '2020-07-12T09:30:00.000000+00:00'
    """
    if not isinstance(when, datetime):
        raise ValueError(f"times must be datetime objects; got {type(when).__name__}")
    return when.astimezone(timezone.utc).isoformat(timespec="microseconds")


def uri(path: Path, params: str) -> str:
    """The SQLite URI of ``path`` with query ``params`` (e.g. ``"mode=ro"``)."""
    return f"{path.as_uri()}?{params}"


def inspect_store(path: Path) -> bool:
    """Check, without writing anything, that ``path`` is a pyprog store of this schema.

    Returns True for a blank file (0 bytes, or an SQLite database without any table: a store
    whose creation was interrupted), which may be initialised; raises :class:`StoreError` for
    anything else that is not a store of :data:`SCHEMA_VERSION`.
    """
    try:
        size = path.stat().st_size
        if size == 0:
            return True
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise StoreError(
            f"{path} is not a pyprog result store: it is not an SQLite database "
            f"(it starts with {header[:16]!r}); choose another path"
        )
    # A WAL database without a -wal file is fully checkpointed: read it as immutable, so that
    # inspecting a stranger's database does not even create -wal/-shm files next to it.
    wal_mode = header[18] == 2
    has_wal = Path(f"{path}-wal").exists()
    params = "mode=ro&immutable=1" if wal_mode and not has_wal else "mode=ro"
    try:
        conn = sqlite3.connect(uri(path, params), uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path} read-only to check it: {exc}") from exc
    try:
        objects = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
        if not objects:
            return True
        tables = sorted(name for kind, name in objects if kind == "table")
        if "pyprog_meta" not in tables:
            listed = ", ".join(tables[:8]) + (", ..." if len(tables) > 8 else "")
            raise StoreError(
                f"{path} is an SQLite database but not a pyprog result store "
                f"(no pyprog_meta table; its tables: {listed or 'none'}); choose another path"
            )
        meta = dict(conn.execute("SELECT key, value FROM pyprog_meta").fetchall())
        if meta.get("format") != FORMAT:
            raise StoreError(
                f"{path} is not a pyprog result store: its pyprog_meta format is "
                f"{meta.get('format')!r}, expected {FORMAT!r}"
            )
        version = meta.get("schema_version")
        if version != str(SCHEMA_VERSION):
            raise StoreError(
                f"{path} is a pyprog result store of schema version {version}, but pyprog "
                f"{__version__} reads schema version {SCHEMA_VERSION} only (written by pyprog "
                f"{meta.get('pyprog_version', '?')}); open it with that version of pyprog"
            )
        columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()}
        missing = sorted(set(COLUMNS) - columns)
        if missing:
            raise StoreError(f"{path} is a damaged pyprog store: table runs lacks {missing}")
        if not has_unique_key(conn):
            raise StoreError(
                f"{path} is not a pyprog result store: its table runs lacks the unique key "
                f"({', '.join(KEY_COLUMNS)}); choose another path"
            )
        return False
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise StoreError(f"{path} could not be read as a pyprog result store: {exc}") from None
    finally:
        conn.close()


def has_unique_key(conn: sqlite3.Connection) -> bool:
    """Whether table runs has a UNIQUE index on exactly the run key (ON CONFLICT needs it)."""
    for index in conn.execute("PRAGMA index_list(runs)").fetchall():
        if index[2]:  # unique
            cols = [r[2] for r in conn.execute(f"PRAGMA index_info({_quote(index[1])})")]
            if sorted(cols) == sorted(KEY_COLUMNS):
                return True
    return False


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's SQLITE_FULL or the system's ENOSPC/EDQUOT."""
    import errno

    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF == sqlite3.SQLITE_FULL:
        return True
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "database or disk is full" in str(exc)


def damaged(path: Path, exc: BaseException) -> StoreError:
    """A read or write that SQLite refused on an opened store: one line, what to do.

    A full disk is not damage (issue 35, item 12): SQLite rolls the failed transaction
    back, so every run committed before is intact and the same command resumes.
    """
    if disk_full(exc):
        return StoreError(
            f"the disk holding the store {path} is full ({type(exc).__name__}: {exc}); the "
            "store is intact (the failed write was rolled back, the runs stored before are "
            "kept): free some space and run the same command again to resume"
        )
    return StoreError(
        f"the store {path} is damaged or not readable ({type(exc).__name__}: {exc}); "
        "restore it from a copy, or start a new store"
    )


def set_wal(conn: sqlite3.Connection, timeout: float) -> Any:
    """PRAGMA journal_mode=WAL, retried while another connection holds the lock (SQLite's
    busy handler does not cover this pragma) for up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def initialise(conn: sqlite3.Connection) -> None:
    """Create the tables and the metadata, in one transaction (idempotent)."""
    now = utc_text(datetime.now(timezone.utc))
    meta = [
        ("format", FORMAT),
        ("schema_version", str(SCHEMA_VERSION)),
        ("array_encoding", ARRAY_ENCODING),
        ("pyprog_version", __version__),
        ("created", now),
    ]
    with conn:  # one transaction: the schema is created wholly or not at all
        conn.execute("BEGIN IMMEDIATE")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany("INSERT OR IGNORE INTO pyprog_meta (key, value) VALUES (?, ?)", meta)
