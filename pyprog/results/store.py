"""A result store: finished runs in one SQLite file, safe to resume, share and read while written.

One row of the table ``runs`` per finished (env, algo, speed, setting, seed): the full
hyper-parameters, the run's metrics, its per-episode arrays, the pyprog version and when it
ran. It is written by the process that coordinates a grid or a sweep, one committed
transaction per finished run, and *read by any number of others* at the same time (the
database is in WAL mode), e.g. a plotting script watching a sweep. Two processes writing the
same store at once (two ``pyprog run --out DIR`` of the same folder) take turns for each
insert (each waits up to ``timeout`` for the other's), and the unique key stores each run once.

The module layout: :mod:`pyprog.results.keys` (what identifies a run), :mod:`.schema` (the
file format, opening safely), :mod:`.rows` (a run encoded and decoded), this module (the store),
:mod:`.export` (CSV). Statistics over stored runs are in :mod:`pyprog.stats.tables`.

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
``speed`` column holds :data:`~pyprog.results.keys.NO_SPEED` (−1, never a real speed) so that
the key stays unique; the store reads it back as None. Such runs are keyed by the
environment's string (a Gymnasium id or ``module:function``); a run on an environment *object*
cannot be stored (nothing could rebuild it).

Arrays are stored as little-endian float64 bytes (``BLOB``, ``8 * episodes`` bytes each), so
they round-trip bit for bit; times are ISO-8601 strings in UTC. The file is plain SQLite and
readable from any language, e.g. ``sqlite3 runs.db "SELECT env, algo, AVG(regret) FROM runs
GROUP BY 1, 2"``. WAL mode needs a local file system (not NFS/SMB).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyprog.results.keys import RunKey, speed_from_column, speed_to_column
from pyprog.results.rows import StoredRun, encode_run
from pyprog.results.schema import (
    ARRAY_COLUMNS,
    COLUMNS,
    INSERT,
    StoreError,
    damaged,
    initialise,
    inspect_store,
    set_wal,
    uri,
)

if TYPE_CHECKING:
    from pyprog.runner.loop import RunResult

__all__ = ["ResultStore"]

#: The columns :meth:`ResultStore.records` reads: every one but the arrays.
RECORD_COLUMNS = tuple(c for c in COLUMNS if c not in ARRAY_COLUMNS)


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
    One process writes a store at a time (the one that coordinates a grid, a sweep or a
    reproduction); a second writer waits for each insert of the first (up to ``timeout``), and
    the unique key stores every run once. Readers may be many. The key of a run is
    ``(env, algo, speed, setting_hash, seed)``, where the setting hash covers the
    hyper-parameters and the number of episodes (:func:`~pyprog.results.keys.setting_hash`):
    a 200-episode trial and a 1000-episode run of one setting are different runs. ``sweep`` is
    a tag, not part of the key: runs are shared between the studies of one store. The
    connection may be used from several threads of the writing process (calls are serialised
    by a lock).

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
    ...     [(r["algo"], r["regret"], r["episodes"]) for r in store.records()]
    [('pro-wls', 1.5, 5)]
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
        blank = inspect_store(self.path) if exists else True
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
                uri(self.path, params), uri=True, timeout=timeout, check_same_thread=False
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
            conn = sqlite3.connect(uri(tmp, "mode=rwc"), uri=True, timeout=timeout)
            try:
                self._check_wal(set_wal(conn, timeout))
                initialise(conn)
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
            self._check_wal(set_wal(conn, timeout))
            conn.execute("PRAGMA synchronous=FULL")
            if blank:  # an empty file (or one whose creation was interrupted): initialise it
                initialise(conn)
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
            raise damaged(self.path, exc) from None

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
        row = encode_run(result, sweep, started, finished)
        with self._lock, self._guard():
            conn = self.conn
            with conn:
                cursor = conn.execute(INSERT, row)
            return cursor.rowcount == 1

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
            ("speed", None if speed is None else speed_to_column(speed)),
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
            cursor = self.conn.execute(
                sql, (env, algo, speed_to_column(speed), setting_hash, int(seed))
            )
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
        return {(r[0], r[1], speed_from_column(r[2]), r[3], int(r[4])) for r in rows}

    def sweeps(self) -> Counter[str | None]:
        """How many runs each sweep tag holds (None: runs stored without a tag).

        Examples
        --------
        >>> # store.sweeps()  ->  Counter({"A": 18, None: 3})
        """
        rows = self._select("sweep", self._where(None, None, None, None), False)
        return Counter(r[0] for r in rows)

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
            out[(env, speed_from_column(speed))][int(episodes)] += 1
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
        rows = self._select(", ".join(COLUMNS), where)
        try:
            return [StoredRun.from_row(r) for r in rows]
        except (TypeError, ValueError, KeyError) as exc:
            raise damaged(self.path, exc) from None

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

    def records(
        self,
        env: str | None = None,
        algo: str | None = None,
        speed: float | None = None,
        sweep: str | None = None,
        setting_hash: str | None = None,
    ) -> list[dict[str, Any]]:
        """The stored runs without their arrays, as dicts ordered by key (same filters as
        :meth:`rows`): the fast way to tabulate metrics.

        Each dict has the keys :data:`RECORD_COLUMNS` (every column but the arrays); ``speed``
        is None for a run whose environment drifts by itself, ``hyper`` the setting's
        canonical JSON text, ``regret`` None where the environment does not know it.

        Examples
        --------
        >>> # regrets = [r["regret"] for r in store.records(env="reco", algo="onpg", speed=2)]
        """
        where = self._where(env, algo, speed, sweep, setting_hash)
        rows = self._select(", ".join(RECORD_COLUMNS), where)
        out = []
        with self._guard():
            for r in rows:
                record = dict(zip(RECORD_COLUMNS, r, strict=True))
                record["speed"] = speed_from_column(record["speed"])
                json.loads(record["hyper"])  # a damaged row fails here, as one StoreError
                out.append(record)
        return out
