"""A result store: finished runs in one SQLite file, safe to resume, share and read while written.

One row of the table ``runs`` per finished (env, algo, speed, setting, seed): the full
hyper-parameters, the run's metrics, its per-episode arrays, the pyprog version and when it
ran. The store is meant to be *written by one process* (the one coordinating a sweep), one
committed transaction per finished run, and *read by any number of others* at the same time
(the database is in WAL mode), e.g. a plotting script watching a sweep.

Guarantees
----------
* A run is either wholly in the table or absent: every insert is its own transaction, so a
  sweep killed at any moment (even by SIGKILL or a power cut) leaves a store that opens, and
  re-adding the same runs adds exactly the missing ones.
* The key is unique: adding a run whose (env, algo, speed, setting_hash, seed) is already
  stored changes nothing and returns False (the stored run is kept, whatever the new one holds).
* Opening never damages a file: a file that is not a pyprog store (a text file, an image, an
  SQLite database of another application) or a store of another schema version is refused
  with a :class:`StoreError` before anything is written to it.

Runs of environments whose drift pyprog does not set (any environment but the built-in
``reco``, ``reacher``, ``diabetes``) have no speed: ``RunResult.speed`` is None, and the
``speed`` column holds :data:`NO_SPEED` (−1, never a real speed) so that the key stays unique;
the store reads it back as None. Such runs are keyed by the environment's string (a Gymnasium
id or ``module:function``); a run on an environment *object* cannot be stored (nothing could
rebuild it).

Arrays are stored as little-endian float64 bytes (``BLOB``, ``8 * episodes`` bytes each), so
they round-trip bit for bit; times are ISO-8601 strings in UTC. The file is plain SQLite and
readable from any language, e.g. ``sqlite3 runs.db "SELECT env, algo, AVG(regret) FROM runs
GROUP BY 1, 2"``. WAL mode needs a local file system (not NFS/SMB).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import json
import math
import numbers
import os
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pyprog._version import __version__

if TYPE_CHECKING:
    from pyprog.runner.loop import RunResult

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
    "run_key",
    "setting_hash",
]

#: Value of ``format`` in the ``pyprog_meta`` table of every pyprog store.
FORMAT = "pyprog-store"
#: Version of the table layout below; a store of another version is refused when opened.
SCHEMA_VERSION = 1
#: ``speed`` column of a run whose environment pyprog does not drift (speed None).
NO_SPEED = -1.0
#: How arrays are encoded in the BLOB columns.
ARRAY_ENCODING = "float64-le"

#: ``(env, algo, speed, setting_hash, seed)``, the unique key of a stored run.
RunKey = tuple[str, str, "float | None", str, int]


def _speed_in(speed: float | None) -> float:
    """The ``speed`` column's value: :data:`NO_SPEED` for None."""
    return NO_SPEED if speed is None else float(speed)


def _speed_out(value: float) -> float | None:
    """A ``speed`` column's value as a run's speed: None for :data:`NO_SPEED`."""
    value = float(value)
    return None if value == NO_SPEED else value


_SQLITE_MAGIC = b"SQLite format 3\x00"
_ARRAY_DTYPE = np.dtype("<f8")

_SCHEMA = """
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

_COLUMNS = (
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
_INSERT = (
    f"INSERT INTO runs ({', '.join(_COLUMNS[1:])}) VALUES ({', '.join('?' * (len(_COLUMNS) - 1))}) "
    "ON CONFLICT (env, algo, speed, setting_hash, seed) DO NOTHING"
)
#: Columns of :meth:`ResultStore.export_csv` (every column but the arrays, in this order).
CSV_COLUMNS = tuple(c for c in _COLUMNS if c not in ("id", "returns", "optimal", "expected"))


class StoreError(ValueError):
    """A path that cannot be opened as a result store, or a write to a read-only store."""


# --------------------------------------------------------------------------- setting hash


def _canonical(value: Any, where: str) -> Any:
    """``value`` as plain JSON types: str keys, lists, bool, int, float, str, None."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"hyper-parameter names must be strings; got {k!r} in {where}")
            out[k] = _canonical(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise ValueError(
        f"{where} must hold only numbers, strings, booleans, None, lists and dicts; "
        f"got {type(value).__name__}"
    )


def canonical_json(hyper: Mapping[str, Any] | Any) -> str:
    """The canonical JSON text of a hyper-parameter setting (what :func:`setting_hash` hashes).

    Keys sorted, no whitespace (``","`` and ``":"`` separators), ASCII only; integers as
    integers, floats in Python's shortest round-trip ``repr`` form (``0.001``, ``1e-05``,
    ``10.0``; non-finite ones as ``NaN``/``Infinity``), tuples as lists, NumPy scalars as their
    Python values. ``1`` and ``1.0`` are different settings: pass a full, typed setting such as
    ``Hyper.to_dict()`` (which is what :attr:`RunResult.hyper` holds).

    Parameters
    ----------
    hyper : mapping of str to JSON-like values, or a :class:`~pyprog.learn.hyperparams.Hyper`

    Returns
    -------
    str

    Examples
    --------
    >>> canonical_json({"lr": 1e-3, "delta": 3, "basis": "fourier"})
    '{"basis":"fourier","delta":3,"lr":0.001}'
    """
    if hasattr(hyper, "to_dict") and not isinstance(hyper, Mapping):
        hyper = hyper.to_dict()
    if not isinstance(hyper, Mapping):
        raise ValueError(f"hyper must be a mapping or a Hyper; got {type(hyper).__name__}")
    return json.dumps(
        _canonical(hyper, "hyper"),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=True,
    )


def setting_hash(hyper: Mapping[str, Any] | Any, episodes: int | None = None) -> str:
    """A stable identifier of a setting: hyper-parameters and, when given, the run length.

    The SHA-256 (hex, 64 characters) of the UTF-8 bytes of :func:`canonical_json`: the same
    setting gives the same hash in every process, on every machine and Python version, whatever
    the order of its keys. It depends on the values *exactly* (``lr=0.001`` and ``lr=0.0010001``
    differ) and on their types (``1`` and ``1.0`` differ), so hash the full setting as
    ``Hyper.to_dict()`` gives it, as :func:`pyprog.run` stores it in :attr:`RunResult.hyper`.

    The store keys every run by ``setting_hash(hyper, episodes)``: a 200-episode trial of
    a setting and its 1000-episode run are different settings, and never collide.

    Parameters
    ----------
    hyper : mapping of str to JSON-like values, or a :class:`~pyprog.learn.hyperparams.Hyper`
    episodes : int, optional
        Episodes per run, hashed with the hyper-parameters.

    Returns
    -------
    str
        64 lowercase hexadecimal digits.

    Examples
    --------
    >>> h = setting_hash({"lr": 0.001, "delta": 3})
    >>> h == setting_hash({"delta": 3, "lr": 1e-3}), len(h)
    (True, 64)
    >>> setting_hash({"lr": 0.001}, episodes=200) != setting_hash({"lr": 0.001}, episodes=1000)
    True
    """
    text = canonical_json(hyper)
    if episodes is not None:
        text = f"{text}|episodes={int(episodes)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_key(
    env: str,
    algo: str,
    speed: float | None,
    hyper: Mapping[str, Any] | Any,
    seed: int,
    episodes: int,
) -> RunKey:
    """The store key of a run *before* it runs, as :meth:`ResultStore.keys` returns them.

    Examples
    --------
    >>> key = run_key("reco", "pro-wls", 2, {"lr": 0.001}, seed=7, episodes=1000)
    >>> key[:3], key[4]
    (('reco', 'pro-wls', 2.0), 7)
    """
    speed = None if speed is None else float(speed)
    return (str(env), str(algo), speed, setting_hash(hyper, episodes), int(seed))


# --------------------------------------------------------------------------- encoding


def _encode_array(name: str, value: Any, length: int | None) -> bytes:
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {arr.shape}")
    if length is not None and arr.size != length:
        raise ValueError(f"{name} must have one value per episode ({length}); got {arr.size}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=_ARRAY_DTYPE).tobytes()


def _decode_array(blob: bytes | None, episodes: int, what: str) -> np.ndarray | None:
    if blob is None:
        return None
    if len(blob) != 8 * episodes:
        raise StoreError(f"damaged store: {what} holds {len(blob)} bytes, expected {8 * episodes}")
    return np.frombuffer(blob, dtype=_ARRAY_DTYPE).astype(np.float64)  # native, writable copy


def _utc_text(when: datetime) -> str:
    """ISO-8601 in UTC; a naive datetime is taken as local time (Python's convention)."""
    if not isinstance(when, datetime):
        raise ValueError(f"times must be datetime objects; got {type(when).__name__}")
    return when.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _int(name: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    if value >= 2**63:
        raise ValueError(f"{name} must be below 2**63 (SQLite integers); got {value!r}")
    return int(value)


def _finite(name: str, value: Any, low: float = -math.inf) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < low:
        bound = "" if low == -math.inf else f" >= {low}"
        raise ValueError(f"{name} must be a finite number{bound}; got {value!r}")
    return float(value)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string; got {value!r}")
    return value


# --------------------------------------------------------------------------- rows


@dataclasses.dataclass
class StoredRun:
    """One row of the store, decoded.

    Attributes
    ----------
    id : int
        Row id (insertion order).
    env, algo : str
    speed : float
    setting_hash : str
        :func:`setting_hash` of ``hyper``.
    seed : int
    sweep : str or None
        Tag of the study that stored the run.
    hyper : dict
        The full hyper-parameter setting.
    episodes : int
    regret : float or None
        Exact regret where the environment knows it (NS-Reco), else None.
    mean_return : float
        Mean of ``returns`` (NaN if the returns hold NaN).
    updates, skipped_updates, skipped_steps : int
    seconds : float
        Wall time of the run.
    returns : ndarray, shape (episodes,)
    optimal, expected : ndarray, shape (episodes,), or None
        As in :class:`~pyprog.runner.loop.RunResult`.
    version : str
        pyprog version that stored the run.
    started, finished : datetime
        When the run started and finished (timezone-aware, UTC).
    """

    id: int
    env: str
    algo: str
    speed: float
    setting_hash: str
    seed: int
    sweep: str | None
    hyper: dict[str, Any]
    episodes: int
    regret: float | None
    mean_return: float
    updates: int
    skipped_updates: int
    skipped_steps: int
    seconds: float
    returns: np.ndarray
    optimal: np.ndarray | None
    expected: np.ndarray | None
    version: str
    started: datetime
    finished: datetime

    @property
    def key(self) -> RunKey:
        """``(env, algo, speed, setting_hash, seed)``."""
        return (self.env, self.algo, self.speed, self.setting_hash, self.seed)

    def to_result(self) -> RunResult:
        """The :class:`~pyprog.runner.loop.RunResult` this row was stored from.

        ``truncated`` (episodes pyprog cut at the horizon) is not a column: it reads as 0.
        """
        from pyprog.runner.loop import RunResult

        return RunResult(
            env=self.env,
            algo=self.algo,
            speed=self.speed,
            seed=self.seed,
            hyper=dict(self.hyper),
            returns=self.returns.copy(),
            regret=self.regret,
            optimal=None if self.optimal is None else self.optimal.copy(),
            expected=None if self.expected is None else self.expected.copy(),
            seconds=self.seconds,
            updates=self.updates,
            skipped_updates=self.skipped_updates,
            skipped_steps=self.skipped_steps,
        )

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> StoredRun:
        n = int(row["episodes"])
        what = f"run id {row['id']}"
        return cls(
            id=int(row["id"]),
            env=row["env"],
            algo=row["algo"],
            speed=_speed_out(row["speed"]),
            setting_hash=row["setting_hash"],
            seed=int(row["seed"]),
            sweep=row["sweep"],
            hyper=json.loads(row["hyper"]),
            episodes=n,
            regret=None if row["regret"] is None else float(row["regret"]),
            mean_return=math.nan if row["mean_return"] is None else float(row["mean_return"]),
            updates=int(row["updates"]),
            skipped_updates=int(row["skipped_updates"]),
            skipped_steps=int(row["skipped_steps"]),
            seconds=float(row["seconds"]),
            returns=_decode_array(row["returns"], n, f"returns of {what}"),
            optimal=_decode_array(row["optimal"], n, f"optimal of {what}"),
            expected=_decode_array(row["expected"], n, f"expected of {what}"),
            version=row["version"],
            started=datetime.fromisoformat(row["started"]),
            finished=datetime.fromisoformat(row["finished"]),
        )


# --------------------------------------------------------------------------- opening


def _uri(path: Path, params: str) -> str:
    return f"{path.as_uri()}?{params}"


def _inspect(path: Path) -> bool:
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
        conn = sqlite3.connect(_uri(path, params), uri=True, timeout=30.0)
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
        missing = sorted(set(_COLUMNS) - columns)
        if missing:
            raise StoreError(f"{path} is a damaged pyprog store: table runs lacks {missing}")
        if not _has_unique_key(conn):
            raise StoreError(
                f"{path} is not a pyprog result store: its table runs lacks the unique key "
                f"({', '.join(_KEY_COLUMNS)}); choose another path"
            )
        return False
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise StoreError(f"{path} could not be read as a pyprog result store: {exc}") from None
    finally:
        conn.close()


_KEY_COLUMNS = ("env", "algo", "speed", "setting_hash", "seed")


def _has_unique_key(conn: sqlite3.Connection) -> bool:
    """Whether table runs has a UNIQUE index on exactly the run key (ON CONFLICT needs it)."""
    for index in conn.execute("PRAGMA index_list(runs)").fetchall():
        if index[2]:  # unique
            cols = [r[2] for r in conn.execute(f"PRAGMA index_info({_quote(index[1])})")]
            if sorted(cols) == sorted(_KEY_COLUMNS):
                return True
    return False


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _damaged(path: Path, exc: BaseException) -> StoreError:
    """A read or write that SQLite refused on an opened store: one line, what to do."""
    return StoreError(
        f"the store {path} is damaged or not readable ({type(exc).__name__}: {exc}); "
        "restore it from a copy, or start a new store"
    )


def _set_wal(conn: sqlite3.Connection, timeout: float) -> Any:
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


def _initialise(conn: sqlite3.Connection) -> None:
    """Create the tables and the metadata, in one transaction (idempotent)."""
    now = _utc_text(datetime.now(timezone.utc))
    meta = [
        ("format", FORMAT),
        ("schema_version", str(SCHEMA_VERSION)),
        ("array_encoding", ARRAY_ENCODING),
        ("pyprog_version", __version__),
        ("created", now),
    ]
    with conn:  # one transaction: the schema is created wholly or not at all
        conn.execute("BEGIN IMMEDIATE")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany("INSERT OR IGNORE INTO pyprog_meta (key, value) VALUES (?, ?)", meta)


class ResultStore:
    """Finished runs in an SQLite file (WAL mode): resumable sweeps, concurrent readers.

    Parameters
    ----------
    path : str or path-like
        The store's file. A missing file is created (its directory must exist); an existing
        file must be a pyprog store of :data:`SCHEMA_VERSION` (or empty).
    readonly : bool, default False
        Open an existing store for reading only (e.g. from a plotting process while a sweep
        writes it, or on a read-only file system). :meth:`add` then raises :class:`StoreError`.
    timeout : float, default 30
        Seconds to wait for a lock held by another connection.

    Raises
    ------
    StoreError
        The path is not a pyprog store of this schema version (checked without writing
        anything to it), its directory does not exist, or it cannot be written (unless
        ``readonly``).

    Notes
    -----
    Only one process should write a store (the one that coordinates a sweep); readers may be
    many. The key of a run is ``(env, algo, speed, setting_hash, seed)`` — it does not include
    ``sweep`` nor the number of episodes: runs are shared between the studies of one store, and
    a run of 200 episodes keeps the place of a later one of 1000 with the same key (use
    another store, or another setting, for short trial runs). The connection may be used from
    several threads of the writing process (calls are serialised by a lock).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from pyprog.runner.loop import RunResult
    >>> result = RunResult("reco", "pro-wls", 2.0, 0, {"lr": 0.01}, np.ones(5), 1.5,
    ...                    None, None, 0.1, 5, 0, 0)
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.db")
    >>> with ResultStore(path) as store:
    ...     store.add(result, sweep="demo"), store.add(result), len(store)
    (True, False, 1)
    >>> with ResultStore(path, readonly=True) as store:
    ...     [(s["algo"], s["metric"], s["mean"], s["seeds"]) for s in store.summary()]
    [('pro-wls', 'regret', 1.5, 1)]
    """

    def __init__(
        self, path: str | os.PathLike[str], *, readonly: bool = False, timeout: float = 30.0
    ) -> None:
        self.path = Path(os.fspath(path)).absolute()
        self.readonly = bool(readonly)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        exists = os.path.lexists(self.path)
        if exists and not self.path.is_file():
            raise StoreError(f"{self.path} is not a regular file; a store is one SQLite file")
        if not exists:
            parent = self.path.parent
            if readonly:
                raise StoreError(f"{self.path} does not exist: nothing to open read-only")
            if not parent.is_dir():
                raise StoreError(
                    f"cannot create the store {self.path}: directory {parent} does not exist"
                )
        if not exists and not readonly:
            self._check_writable(False)
            self._create(timeout)
            exists = True
        blank = _inspect(self.path) if exists else True
        if readonly:
            if blank:
                raise StoreError(f"{self.path} is empty: not a pyprog result store yet")
            # No -wal file and a directory nobody can write (e.g. a read-only mount): no writer
            # can change the file, and SQLite could not create the -shm it wants; read it as is.
            frozen = not os.path.exists(f"{self.path}-wal") and not os.access(
                self.path.parent, os.W_OK | os.X_OK
            )
            self._conn = self._connect("mode=ro&immutable=1" if frozen else "mode=ro", timeout)
        else:
            self._check_writable(exists)
            self._conn = self._open_for_writing(blank, timeout)

    # ---------------------------------------------------------------- opening

    def _connect(self, params: str, timeout: float) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                _uri(self.path, params), uri=True, timeout=timeout, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store {self.path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        return conn

    def _check_writable(self, exists: bool) -> None:
        parent = self.path.parent
        hint = "; open it with readonly=True to read it"
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StoreError(
                f"cannot write the store {self.path}: its directory {parent} is not writable "
                f"(an SQLite store in WAL mode creates its -wal and -shm files there)"
                + (hint if exists else "")
            )
        if exists and not os.access(self.path, os.R_OK | os.W_OK):
            raise StoreError(f"cannot write the store {self.path}: permission denied" + hint)

    def _create(self, timeout: float) -> None:
        """Create the store atomically, so that concurrent creators never see half a store
        and never delete each other's: a private temporary file next to ``path`` is
        initialised (WAL mode, schema, metadata), then hard-linked into place. If another
        process linked its store first, that store is used; only the temporary file (this
        process's own) is ever removed."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            conn = sqlite3.connect(_uri(tmp, "mode=rwc"), uri=True, timeout=timeout)
            try:
                self._check_wal(_set_wal(conn, timeout))
                _initialise(conn)
            finally:
                conn.close()  # the last connection: checkpoints, removes tmp's -wal and -shm
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass  # another process created the store first: open that one
        except sqlite3.Error as exc:
            raise StoreError(f"cannot create the store {self.path}: {exc}") from None
        except OSError as exc:
            raise StoreError(
                f"cannot create the store {self.path}: {exc.strerror or exc} (a store needs a "
                "local file system with hard links and WAL support)"
            ) from None
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{tmp}{suffix}")

    def _check_wal(self, mode: Any) -> None:
        if str(mode).lower() != "wal":
            raise StoreError(
                f"cannot use {self.path} as a store: SQLite refused WAL mode (got {mode!r}); "
                "put the store on a local file system"
            )

    def _open_for_writing(self, blank: bool, timeout: float) -> sqlite3.Connection:
        conn = self._connect("mode=rw", timeout)
        try:
            self._check_wal(_set_wal(conn, timeout))
            conn.execute("PRAGMA synchronous=FULL")
            if blank:  # an empty file (or one whose creation was interrupted): initialise it
                _initialise(conn)
            else:  # probe: fail now, not at the first add, if the file cannot be written
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("UPDATE pyprog_meta SET value = value WHERE key = 'format'")
                finally:
                    conn.rollback()
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot write the store {self.path}: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    # ---------------------------------------------------------------- life cycle

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (for ad-hoc SQL reads); StoreError once closed."""
        if self._conn is None:
            raise StoreError(f"the store {self.path} is closed")
        return self._conn

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else ("read-only" if self.readonly else "open")
        return f"ResultStore({str(self.path)!r}, {state})"

    def __len__(self) -> int:
        with self._lock, self._guard():
            return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    @contextlib.contextmanager
    def _guard(self):
        """SQLite's errors on a damaged file (and undecodable text) as one StoreError."""
        try:
            yield
        except (sqlite3.Error, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _damaged(self.path, exc) from None

    # ---------------------------------------------------------------- writing

    def add(
        self,
        result: RunResult,
        sweep: str | None = None,
        started: datetime | None = None,
        finished: datetime | None = None,
    ) -> bool:
        """Store a finished run, in its own transaction.

        Parameters
        ----------
        result : RunResult
        sweep : str, optional
            Tag of the study the run belongs to (kept with the run; not part of its key).
        started, finished : datetime, optional
            When the run started and finished (naive datetimes are taken as local time).
            ``finished`` defaults to now, ``started`` to ``finished - result.seconds``.

        Returns
        -------
        bool
            True if the run was added; False if a run with the same key
            ``(env, algo, speed, setting_hash(hyper), seed)`` is already stored, in which case
            nothing changes (the stored run is kept, even if the new one holds other numbers).

        Raises
        ------
        ValueError
            The result is malformed (message names the field); nothing is written.
        StoreError
            The store is read-only or closed.

        Examples
        --------
        >>> # store.add(pyprog.run("reco", "onpg", 1, seed=3), sweep="fig3")
        """
        if self.readonly:
            raise StoreError(f"the store {self.path} is open read-only; cannot add runs")
        row = self._row(result, sweep, started, finished)
        with self._lock, self._guard():
            conn = self.conn
            with conn:
                cursor = conn.execute(_INSERT, row)
            return cursor.rowcount == 1

    @staticmethod
    def _row(
        result: RunResult, sweep: str | None, started: datetime | None, finished: datetime | None
    ) -> tuple[Any, ...]:
        env = _text("result.env", result.env)
        algo = _text("result.algo", result.algo)
        if env.startswith(("instance:", "callable:")):
            raise ValueError(
                f"result.env {env!r}: a run on an environment object cannot be stored (nothing "
                "could rebuild it); run it by its Gymnasium id or a 'module:function' factory"
            )
        speed = NO_SPEED if result.speed is None else _finite("result.speed", result.speed)
        seed = _int("result.seed", result.seed)
        hyper_json = canonical_json(result.hyper)
        returns = _encode_array("result.returns", result.returns, None)
        episodes = len(returns) // 8
        stored = np.frombuffer(returns, dtype=_ARRAY_DTYPE)
        if not np.isfinite(stored).all():
            k = int(np.flatnonzero(~np.isfinite(stored))[0])
            raise ValueError(
                f"result.returns must be finite (a NaN/inf return cannot be ranked); got "
                f"{stored[k]} at episode {k}"
            )
        digest = setting_hash(result.hyper, episodes)
        optimal = None
        if result.optimal is not None:
            optimal = _encode_array("result.optimal", result.optimal, episodes)
        expected = None
        if result.expected is not None:
            expected = _encode_array("result.expected", result.expected, episodes)
        regret = None if result.regret is None else _finite("result.regret", result.regret)
        seconds = _finite("result.seconds", result.seconds, 0.0)
        if sweep is not None and not isinstance(sweep, str):
            raise ValueError(f"sweep must be a string or None; got {sweep!r}")
        finished = datetime.now(timezone.utc) if finished is None else finished
        started = finished - timedelta(seconds=seconds) if started is None else started
        mean_return = float(np.mean(np.frombuffer(returns, dtype=_ARRAY_DTYPE)))
        return (
            env,
            algo,
            speed,
            digest,
            seed,
            sweep,
            hyper_json,
            episodes,
            regret,
            mean_return,
            _int("result.updates", result.updates),
            _int("result.skipped_updates", result.skipped_updates),
            _int("result.skipped_steps", result.skipped_steps),
            seconds,
            returns,
            optimal,
            expected,
            __version__,
            _utc_text(started),
            _utc_text(finished),
        )

    # ---------------------------------------------------------------- reading

    @staticmethod
    def _where(
        env: str | None,
        algo: str | None,
        speed: float | None,
        sweep: str | None,
        setting: str | None = None,
    ) -> tuple[str, list[Any]]:
        clauses, params = [], []
        for column, value in (
            ("env", env),
            ("algo", algo),
            ("speed", None if speed is None else _speed_in(speed)),
            ("sweep", sweep),
            ("setting_hash", setting),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def _select(self, columns: str, where: tuple[str, list[Any]], order: bool = True) -> list:
        sql = f"SELECT {columns} FROM runs{where[0]}"
        if order:
            sql += " ORDER BY env, algo, speed, setting_hash, seed"
        with self._lock, self._guard():
            return self.conn.execute(sql, where[1]).fetchall()

    def has(self, env: str, algo: str, speed: float, setting_hash: str, seed: int) -> bool:
        """Whether the run with this key is stored.

        Examples
        --------
        >>> # store.has(*run_key("reco", "onpg", 1, hyper, seed=3))
        """
        sql = (
            "SELECT 1 FROM runs WHERE env = ? AND algo = ? AND speed = ? AND setting_hash = ? "
            "AND seed = ?"
        )
        with self._lock, self._guard():
            cursor = self.conn.execute(sql, (env, algo, _speed_in(speed), setting_hash, int(seed)))
            return cursor.fetchone() is not None

    def keys(
        self,
        env: str | None = None,
        algo: str | None = None,
        speed: float | None = None,
        sweep: str | None = None,
    ) -> set[RunKey]:
        """The keys ``(env, algo, speed, setting_hash, seed)`` of the stored runs (filtered).

        Reads no arrays: the fast way for a sweep to skip what is already done.

        Examples
        --------
        >>> # todo = [job for job in jobs if run_key(*job) not in store.keys(env="reco")]
        """
        where = self._where(env, algo, speed, sweep)
        rows = self._select("env, algo, speed, setting_hash, seed", where, order=False)
        return {(r[0], r[1], _speed_out(r[2]), r[3], int(r[4])) for r in rows}

    def lengths(self, sweep: str | None = None) -> dict[tuple[str, float], Counter[int]]:
        """How many runs of each length (episodes) are stored, per (env, speed).

        Reads no arrays: lets a reader pick the groups to load one at a time.

        Examples
        --------
        >>> # store.lengths()  ->  {("reco", 2.0): Counter({1000: 120, 200: 30}), ...}
        """
        rows = self._select("env, speed, episodes", self._where(None, None, None, sweep), False)
        out: dict[tuple[str, float], Counter[int]] = defaultdict(Counter)
        for env, speed, episodes in rows:
            out[(env, _speed_out(speed))][int(episodes)] += 1
        return dict(out)

    def rows(
        self,
        env: str | None = None,
        algo: str | None = None,
        speed: float | None = None,
        sweep: str | None = None,
        setting_hash: str | None = None,
    ) -> list[StoredRun]:
        """The stored runs (filtered by any of the arguments), decoded, ordered by key.

        Examples
        --------
        >>> # curves = np.stack([r.returns for r in store.rows(env="reco", algo="onpg", speed=2)])
        """
        where = self._where(env, algo, speed, sweep, setting_hash)
        rows = self._select(", ".join(_COLUMNS), where)
        try:
            return [StoredRun._from_row(r) for r in rows]
        except (TypeError, ValueError, KeyError) as exc:
            raise _damaged(self.path, exc) from None

    def to_results(
        self,
        env: str | None = None,
        algo: str | None = None,
        speed: float | None = None,
        sweep: str | None = None,
        setting_hash: str | None = None,
    ) -> list[RunResult]:
        """The stored runs as :class:`~pyprog.runner.loop.RunResult` objects (same filters as
        :meth:`rows`).

        Examples
        --------
        >>> # results = store.to_results(env="reco", sweep="fig3")
        """
        return [r.to_result() for r in self.rows(env, algo, speed, sweep, setting_hash)]

    def summary(
        self,
        env: str | None = None,
        algo: str | None = None,
        speed: float | None = None,
        sweep: str | None = None,
    ) -> list[dict[str, Any]]:
        """Mean and standard error over seeds, per (env, algo, speed, setting_hash).

        The metric is the regret where every seed of the group has one (NS-Reco), else the mean
        return (surrogate regret compares algorithms with each other: compute it from
        :meth:`rows` with :func:`pyprog.stats.summary.surrogate_regret`).

        Returns
        -------
        list of dict
            One dict per group, ordered by key, with keys ``env, algo, speed, setting_hash,
            hyper, metric`` (``"regret"`` or ``"mean_return"``), ``mean``, ``stderr``
            (``std(ddof=1) / sqrt(seeds)``; NaN for a single seed) and ``seeds``.

        Examples
        --------
        >>> # groups = store.summary(env="reco", algo="pro-wls", speed=2)
        >>> # best = min(groups, key=lambda s: s["mean"])
        """
        where = self._where(env, algo, speed, sweep)
        rows = self._select("env, algo, speed, setting_hash, hyper, regret, mean_return", where)
        groups: dict[tuple, list] = {}
        with self._guard():
            for r in rows:
                json.loads(r["hyper"])  # a damaged row fails here, as one StoreError
        for r in rows:
            groups.setdefault((r[0], r[1], _speed_out(r[2]), r[3]), []).append(r)
        out = []
        for (g_env, g_algo, g_speed, g_hash), members in groups.items():
            use_regret = all(m["regret"] is not None for m in members)
            column = "regret" if use_regret else "mean_return"
            values = np.array(
                [math.nan if m[column] is None else m[column] for m in members], dtype=np.float64
            )
            n = len(values)
            stderr = float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
            out.append(
                {
                    "env": g_env,
                    "algo": g_algo,
                    "speed": g_speed,
                    "setting_hash": g_hash,
                    "hyper": json.loads(members[0]["hyper"]),
                    "metric": column,
                    "mean": float(np.mean(values)),
                    "stderr": stderr,
                    "seeds": n,
                }
            )
        return out

    def export_csv(
        self,
        path: str | os.PathLike[str],
        env: str | None = None,
        algo: str | None = None,
        speed: float | None = None,
        sweep: str | None = None,
    ) -> int:
        """Write one CSV row per stored run (every column but the arrays; see
        :data:`CSV_COLUMNS`), ordered by key. Floats are written exactly (``repr``), a missing
        regret or sweep as an empty field, ``hyper`` as its canonical JSON.

        Returns
        -------
        int
            The number of runs written.

        Examples
        --------
        >>> # store.export_csv("runs.csv", sweep="fig3")
        """
        where = self._where(env, algo, speed, sweep)
        rows = self._select(", ".join(CSV_COLUMNS), where)
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(CSV_COLUMNS)
            at = CSV_COLUMNS.index("speed")
            for r in rows:
                values = list(r)
                values[at] = _speed_out(values[at])
                writer.writerow(["" if v is None else v for v in values])
        return len(rows)
