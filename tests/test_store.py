"""The result store: exact round trips, unique keys, safe opening, concurrent readers, crashes."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from unprivileged import run_unprivileged

from pyprog._version import __version__
from pyprog.learn.hyperparams import Hyper
from pyprog.results import (
    FORMAT,
    SCHEMA_VERSION,
    ResultStore,
    StoredRun,
    StoreError,
    canonical_json,
    export_csv,
    run_key,
    setting_hash,
)
from pyprog.runner.loop import RunResult
from pyprog.stats.tables import store_summary

TESTS_DIR = Path(__file__).resolve().parent


def make_result(
    seed: int,
    env: str = "reco",
    algo: str = "pro-wls",
    speed: float = 2.0,
    episodes: int = 20,
    hyper: dict | None = None,
    known_optimum: bool | None = None,
) -> RunResult:
    """A small RunResult with random arrays, fully determined by its arguments."""
    rng = np.random.default_rng([seed, episodes, int(speed * 10)])
    known = env == "reco" if known_optimum is None else known_optimum
    optimal = rng.uniform(0.5, 1.0, episodes) if known else None
    expected = optimal - rng.uniform(0.0, 0.5, episodes) if known else None
    return RunResult(
        env=env,
        algo=algo,
        speed=float(speed),
        seed=seed,
        hyper=Hyper(lr=1e-3, delta=3, d=5).to_dict() if hyper is None else hyper,
        returns=rng.normal(size=episodes),
        regret=float(np.sum(optimal - expected)) if known else None,
        optimal=optimal,
        expected=expected,
        seconds=float(rng.uniform(0.1, 2.0)),
        updates=int(rng.integers(0, 100)),
        skipped_updates=int(rng.integers(0, 5)),
        skipped_steps=int(rng.integers(0, 5)),
    )


def assert_same_run(got: RunResult, want: RunResult) -> None:
    """Every field equal; arrays equal bit for bit."""
    for field in ("env", "algo", "speed", "seed", "hyper", "regret", "seconds", "updates"):
        assert getattr(got, field) == getattr(want, field), field
    assert (got.skipped_updates, got.skipped_steps) == (want.skipped_updates, want.skipped_steps)
    for field in ("returns", "optimal", "expected"):
        a, b = getattr(got, field), getattr(want, field)
        if b is None:
            assert a is None, field
        else:
            assert a.dtype == np.float64 and a.shape == b.shape, field
            assert a.tobytes() == b.tobytes(), field


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def store(store_path: Path):
    with ResultStore(store_path) as s:
        yield s


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file of a directory and its bytes."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


# --------------------------------------------------------------------------- setting hash


class TestSettingHash:
    def test_canonical_json_form(self):
        text = canonical_json({"lr": 1e-3, "delta": 3, "basis": "fourier"})
        assert text == '{"basis":"fourier","delta":3,"lr":0.001}'
        assert canonical_json({"a": 1e-5, "b": 10.0, "c": None, "d": (1, 2)}) == (
            '{"a":1e-05,"b":10.0,"c":null,"d":[1,2]}'
        )

    def test_pinned_value(self):
        # The hash is part of the stored data: it must never change between versions.
        digest = setting_hash({"lr": 0.001, "delta": 3, "basis": "fourier"})
        assert digest == "1f3f71a6000137c5da096b5e93bb4a3f3bd61f64cc8c4ba73e6fc13f537ecbdf"
        assert digest == hashlib.sha256(b'{"basis":"fourier","delta":3,"lr":0.001}').hexdigest()

    def test_horizon_hashed_only_when_given(self):
        # Without a horizon every existing key is unchanged; with one, each horizon differs.
        hyper = {"lr": 0.001, "delta": 3, "basis": "fourier"}
        assert setting_hash(hyper, 200, horizon=None) == setting_hash(hyper, 200)
        assert setting_hash(hyper, 200, horizon=50) != setting_hash(hyper, 200)
        assert setting_hash(hyper, 200, horizon=50) != setting_hash(hyper, 200, horizon=51)
        assert (
            setting_hash(hyper, 200, horizon=50)
            == hashlib.sha256(
                b'{"basis":"fourier","delta":3,"lr":0.001}|episodes=200|horizon=50'
            ).hexdigest()
        )

    @pytest.mark.parametrize("bad", [0, -3, 2.5, True, "50"])
    def test_bad_horizon_refused(self, bad):
        with pytest.raises(ValueError, match="horizon"):
            setting_hash({"lr": 0.001}, 200, horizon=bad)

    def test_independent_of_key_order_and_scalar_kind(self):
        a = {"lr": 0.001, "d": 5, "hidden": None, "gamma": 0.99}
        b = {"gamma": np.float64(0.99), "hidden": None, "d": np.int64(5), "lr": 1e-3}
        assert setting_hash(a) == setting_hash(dict(reversed(list(a.items())))) == setting_hash(b)

    def test_hyper_object_same_as_its_dict(self):
        h = Hyper(lr=3e-4, delta=5, inner_steps=50, clip=15.0, d=3)
        assert setting_hash(h) == setting_hash(h.to_dict())
        assert setting_hash(h) != setting_hash(h.replace(lr=3.0001e-4))

    def test_types_matter(self):
        assert setting_hash({"clip": 10}) != setting_hash({"clip": 10.0})
        assert setting_hash({"flag": True}) != setting_hash({"flag": 1})

    def test_same_in_another_process(self):
        hyper = Hyper(lr=0.0123456789, delta=3, gauss_std=1.7).to_dict()
        code = (
            "import json, sys; from pyprog.results.keys import setting_hash; "
            "print(setting_hash(json.loads(sys.argv[1])))"
        )
        env = dict(os.environ, PYTHONHASHSEED="12345")
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(hyper)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=60,
        )
        assert out.stdout.strip() == setting_hash(hyper)

    @pytest.mark.parametrize(
        "bad", [{"x": object()}, {"x": np.zeros(2)}, {1: 2.0}, [("lr", 0.1)], "lr=0.1"]
    )
    def test_rejects_what_json_cannot_hold(self, bad):
        with pytest.raises(ValueError, match="hyper"):
            setting_hash(bad)

    def test_run_key_matches_stored_key(self, store):
        result = make_result(4)
        store.add(result)
        key = run_key("reco", "pro-wls", 2, result.hyper, np.int64(4), episodes=20)
        assert store.keys() == {key}
        assert store.has(*key)


# --------------------------------------------------------------------------- round trips


class TestAddAndRead:
    def test_round_trip_is_exact(self, store):
        results = [make_result(s) for s in range(3)]
        results.append(make_result(9, env="reacher", algo="onpg", speed=0.0, episodes=7))
        results[0].returns[3] = 5e-324  # extreme values survive bit for bit
        results[0].returns[4] = -1.7976931348623157e308
        for r in results:
            assert store.add(r, sweep="fig3") is True
        assert len(store) == 4
        got = sorted(store.to_results(), key=lambda r: (r.env, r.seed))
        want = sorted(results, key=lambda r: (r.env, r.seed))
        for g, w in zip(got, want, strict=True):
            assert_same_run(g, w)
        reacher = store.rows(env="reacher")[0]
        assert reacher.regret is None and reacher.optimal is None and reacher.expected is None

    def test_stored_columns(self, store):
        r = make_result(1)
        finished = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
        started = datetime(2024, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=3)))
        store.add(r, sweep="tag", started=started, finished=finished)
        (row,) = store.rows()
        assert isinstance(row, StoredRun)
        assert row.key == (r.env, r.algo, r.speed, setting_hash(r.hyper, r.returns.size), r.seed)
        assert (row.episodes, row.sweep, row.version) == (20, "tag", __version__)
        assert row.mean_return == pytest.approx(np.mean(r.returns), rel=1e-15)
        assert row.hyper == r.hyper
        assert row.started == datetime(2024, 5, 1, 11, 0, 0, tzinfo=timezone.utc)
        assert row.finished == finished and row.finished.tzinfo == timezone.utc
        raw = store.conn.execute("SELECT started, finished FROM runs").fetchone()
        assert tuple(raw) == (
            "2024-05-01T11:00:00.000000+00:00",
            "2024-05-01T12:00:00.000000+00:00",
        )
        assert row.returns.flags.writeable  # decoded arrays are the caller's to modify

    def test_default_times(self, store):
        before = datetime.now(timezone.utc)
        r = make_result(2)
        store.add(r)
        (row,) = store.rows()
        assert before <= row.finished <= datetime.now(timezone.utc)
        assert row.finished - row.started == timedelta(seconds=round(r.seconds, 6))

    def test_arrays_are_compact_blobs(self, store):
        store.add(make_result(0, episodes=1000))
        sizes = store.conn.execute(
            "SELECT length(returns), length(optimal), length(expected), typeof(returns) FROM runs"
        ).fetchone()
        assert tuple(sizes) == (8000, 8000, 8000, "blob")

    def test_integer_arrays_are_stored_as_float64(self, store):
        r = make_result(0)
        r.returns = np.arange(20)
        store.add(r)
        got = store.to_results()[0].returns
        assert got.dtype == np.float64 and np.array_equal(got, np.arange(20))


class TestUniqueKey:
    def test_same_key_is_not_added_twice(self, store):
        r = make_result(5)
        assert store.add(r, sweep="a") is True
        other = make_result(5)
        other.returns = other.returns + 1.0  # other numbers, same key: the first one stays
        other.hyper = dict(reversed(list(r.hyper.items())))  # same setting, keys reordered
        assert store.add(other, sweep="b") is False
        assert len(store) == 1
        (row,) = store.rows()
        assert row.sweep == "a" and row.returns.tobytes() == r.returns.tobytes()

    def test_every_key_part_distinguishes(self, store):
        base = make_result(0)
        variants = [
            make_result(1),
            make_result(0, env="reacher"),
            make_result(0, algo="onpg"),
            make_result(0, speed=3.0),
            make_result(0, hyper=Hyper(lr=2e-3, delta=3, d=5).to_dict()),
        ]
        assert store.add(base)
        assert [store.add(v) for v in variants] == [True] * 5
        assert len(store) == len(store.keys()) == 6

    def test_speed_int_and_float_are_one_key(self, store):
        r = make_result(0)
        r.speed = 2
        assert store.add(r)
        r2 = make_result(0)
        assert r2.speed == 2.0 and store.add(r2) is False
        assert store.has("reco", "pro-wls", 2, setting_hash(r.hyper, r.returns.size), 0)

    def test_database_enforces_uniqueness(self, store):
        store.add(make_result(0))
        with pytest.raises(sqlite3.IntegrityError):
            with store.conn:
                store.conn.execute("INSERT INTO runs SELECT * FROM runs")


class TestQueries:
    @pytest.fixture
    def filled(self, store):
        for algo in ("pro-wls", "onpg"):
            for speed in (0.0, 2.0):
                for seed in range(4):
                    store.add(make_result(seed, algo=algo, speed=speed), sweep="s1")
        for seed in range(3):
            store.add(make_result(seed, env="reacher", algo="onpg", speed=1.0), sweep="s2")
        return store

    def test_len_has_keys(self, filled):
        assert len(filled) == 19
        assert len(filled.keys()) == 19
        assert len(filled.keys(env="reco", algo="onpg")) == 8
        assert len(filled.keys(speed=2)) == 8
        assert len(filled.keys(sweep="s2")) == 3
        assert filled.keys(env="diabetes") == set()
        h = setting_hash(make_result(0).hyper, 20)
        assert filled.has("reco", "onpg", 2.0, h, 3)
        assert not filled.has("reco", "onpg", 2.0, h, 4)
        assert not filled.has("reco", "onpg", 1.0, h, 3)

    def test_rows_filtered_and_ordered(self, filled):
        rows = filled.rows(env="reco", algo="pro-wls", speed=2)
        assert [r.seed for r in rows] == [0, 1, 2, 3]
        assert {(r.algo, r.speed) for r in rows} == {("pro-wls", 2.0)}
        assert len(filled.to_results(sweep="s2")) == 3
        assert len(filled.rows(setting_hash="0" * 64)) == 0

    def test_lengths_count_runs_per_env_and_speed(self, filled):
        filled.add(make_result(0, speed=2.0, episodes=7), sweep="s1")
        assert filled.lengths() == {
            ("reco", 0.0): Counter({20: 8}),
            ("reco", 2.0): Counter({20: 8, 7: 1}),
            ("reacher", 1.0): Counter({20: 3}),
        }
        assert filled.lengths(sweep="s2") == {("reacher", 1.0): Counter({20: 3})}
        assert filled.lengths(sweep="none") == {}

    def test_summary(self, filled):
        summary = store_summary(filled)
        assert len(summary) == 5
        by_group = {(s["env"], s["algo"], s["speed"]): s for s in summary}
        reco = by_group[("reco", "onpg", 2.0)]
        regrets = [make_result(seed, algo="onpg", speed=2.0).regret for seed in range(4)]
        assert reco["metric"] == "regret" and reco["seeds"] == 4
        assert reco["mean"] == pytest.approx(np.mean(regrets), rel=1e-12)
        assert reco["stderr"] == pytest.approx(np.std(regrets, ddof=1) / 2, rel=1e-12)
        assert reco["hyper"] == make_result(0).hyper
        assert reco["setting_hash"] == setting_hash(reco["hyper"], 20)
        reacher = by_group[("reacher", "onpg", 1.0)]
        means = [
            make_result(s, env="reacher", algo="onpg", speed=1.0).mean_return for s in range(3)
        ]
        assert reacher["metric"] == "mean_return" and reacher["seeds"] == 3
        assert reacher["mean"] == pytest.approx(np.mean(means), rel=1e-12)
        assert store_summary(filled, env="reacher") == [reacher]

    def test_summary_single_seed_has_nan_stderr(self, store):
        store.add(make_result(0))
        (s,) = store_summary(store)
        assert s["seeds"] == 1 and np.isnan(s["stderr"])

    def test_export_csv(self, filled, tmp_path):
        out = tmp_path / "runs.csv"
        assert export_csv(filled, out, env="reacher") == 3
        with open(out, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 3
        assert "returns" not in rows[0] and "optimal" not in rows[0]
        stored = filled.rows(env="reacher")
        for row, run in zip(rows, stored, strict=True):
            assert row["regret"] == ""
            assert float(row["mean_return"]) == run.mean_return  # exact: repr round-trips
            assert float(row["seconds"]) == run.seconds
            assert json.loads(row["hyper"]) == run.hyper
            assert (row["env"], row["seed"], row["sweep"]) == ("reacher", str(run.seed), "s2")
        assert export_csv(filled, out) == 19


class TestValidation:
    @pytest.mark.parametrize(
        "change, match",
        [
            ({"returns": np.zeros((2, 3))}, "returns"),
            ({"returns": np.zeros(0)}, "returns"),
            ({"returns": np.array(["a", "b"])}, "returns"),
            ({"optimal": np.zeros(19)}, "optimal"),
            ({"expected": np.zeros(21)}, "expected"),
            ({"seed": -1}, "seed"),
            ({"seed": 1.5}, "seed"),
            ({"regret": float("nan")}, "regret"),
            ({"seconds": -1.0}, "seconds"),
            ({"env": ""}, "env"),
            ({"speed": float("inf")}, "speed"),
            ({"updates": None}, "updates"),
            ({"hyper": {"lr": object()}}, "hyper"),
        ],
    )
    def test_bad_results_are_refused_before_writing(self, store, change, match):
        r = make_result(0)
        for k, v in change.items():
            setattr(r, k, v)
        with pytest.raises(ValueError, match=match):
            store.add(r)
        assert len(store) == 0

    def test_bad_sweep(self, store):
        with pytest.raises(ValueError, match="sweep"):
            store.add(make_result(0), sweep=3)

    def test_closed_store(self, store_path):
        s = ResultStore(store_path)
        s.close()
        s.close()
        with pytest.raises(StoreError, match="closed"):
            len(s)
        with pytest.raises(StoreError, match="closed"):
            s.add(make_result(0))


# --------------------------------------------------------------------------- opening


class TestOpening:
    def test_new_store_schema(self, store_path):
        with ResultStore(store_path) as s:
            assert s.add(make_result(0))
        conn = sqlite3.connect(store_path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            meta = dict(conn.execute("SELECT key, value FROM pyprog_meta"))
            assert meta["format"] == FORMAT == "pyprog-store"
            assert meta["schema_version"] == str(SCHEMA_VERSION)
            assert meta["pyprog_version"] == __version__
            indexes = conn.execute("PRAGMA index_list(runs)").fetchall()
            unique = [i[1] for i in indexes if i[2] == 1]
            (cols,) = [[c[2] for c in conn.execute(f"PRAGMA index_info('{u}')")] for u in unique]
            assert cols == ["env", "algo", "speed", "setting_hash", "seed"]
        finally:
            conn.close()

    def test_reopen_keeps_runs(self, store_path):
        with ResultStore(store_path) as s:
            s.add(make_result(0))
            s.add(make_result(1))
        with ResultStore(store_path) as s:
            assert len(s) == 2
            assert s.add(make_result(1)) is False
            assert s.add(make_result(2)) is True
        with ResultStore(str(store_path), readonly=True) as s:
            assert len(s) == 3

    def test_empty_file_becomes_a_store(self, tmp_path):
        path = tmp_path / "empty.db"
        path.touch()
        with ResultStore(path) as s:
            assert s.add(make_result(0))
        with ResultStore(path) as s:
            assert len(s) == 1

    def test_sqlite_file_without_tables_becomes_a_store(self, tmp_path):
        # What an interrupted creation leaves behind: WAL header, no tables.
        path = tmp_path / "blank.db"
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
        assert path.stat().st_size > 0
        with ResultStore(path) as s:
            assert len(s) == 0 and s.add(make_result(0))

    @staticmethod
    def _foreign_files(directory: Path) -> list[tuple[Path, str]]:
        text = directory / "notes.txt"
        text.write_text("these are my notes\n" * 20)
        jpeg = directory / "photo.jpg"
        jpeg.write_bytes(
            b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + np.random.default_rng(0).bytes(3000)
        )
        garbage = directory / "broken.db"
        garbage.write_bytes(
            b"SQLite format 3\x00" + bytes(2) + np.random.default_rng(1).bytes(5000)
        )
        other = directory / "other_app.db"
        conn = sqlite3.connect(other)
        conn.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('ada', '123')")
        conn.commit()
        conn.close()
        other_wal = directory / "other_wal.db"
        conn = sqlite3.connect(other_wal)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE runs (x)")  # even a table called runs is not a store
        conn.commit()
        conn.close()
        fake = directory / "fake_meta.db"
        conn = sqlite3.connect(fake)
        conn.execute("CREATE TABLE pyprog_meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO pyprog_meta VALUES ('format', 'something-else')")
        conn.commit()
        conn.close()
        return [
            (text, "not an SQLite database"),
            (jpeg, "not an SQLite database"),
            (garbage, "could not be read"),
            (other, "no pyprog_meta table; its tables: contacts"),
            (other_wal, "no pyprog_meta table; its tables: runs"),
            (fake, "format is 'something-else'"),
        ]

    @pytest.mark.parametrize("readonly", [False, True])
    def test_foreign_files_are_refused_untouched(self, tmp_path, readonly):
        files = self._foreign_files(tmp_path)
        before = snapshot(tmp_path)
        for path, reason in files:
            with pytest.raises(StoreError) as info:
                ResultStore(path, readonly=readonly)
            message = str(info.value)
            assert str(path) in message and reason in message, message
            assert isinstance(info.value, ValueError)
        assert snapshot(tmp_path) == before  # same files, same bytes, no -wal/-shm created

    def test_other_schema_version_is_refused_untouched(self, store_path):
        with ResultStore(store_path) as s:
            s.add(make_result(0))
        conn = sqlite3.connect(store_path)
        with conn:
            conn.execute("UPDATE pyprog_meta SET value = '2' WHERE key = 'schema_version'")
        conn.close()
        before = snapshot(store_path.parent)
        for readonly in (False, True):
            with pytest.raises(StoreError, match="schema version 2") as info:
                ResultStore(store_path, readonly=readonly)
            assert str(store_path) in str(info.value)
        assert snapshot(store_path.parent) == before

    def test_missing_directory(self, tmp_path):
        path = tmp_path / "no" / "such" / "dir" / "runs.db"
        with pytest.raises(StoreError, match="does not exist") as info:
            ResultStore(path)
        assert str(path.parent) in str(info.value)
        assert not (tmp_path / "no").exists()

    def test_readonly_needs_an_existing_store(self, tmp_path):
        with pytest.raises(StoreError, match="does not exist"):
            ResultStore(tmp_path / "missing.db", readonly=True)
        (tmp_path / "empty.db").touch()
        with pytest.raises(StoreError, match="empty"):
            ResultStore(tmp_path / "empty.db", readonly=True)
        assert (tmp_path / "empty.db").read_bytes() == b""
        assert not (tmp_path / "missing.db").exists()

    def test_directory_is_not_a_store(self, tmp_path):
        with pytest.raises(StoreError, match="not a regular file"):
            ResultStore(tmp_path)

    def test_readonly_store_cannot_add(self, store_path):
        with ResultStore(store_path) as s:
            s.add(make_result(0))
        with ResultStore(store_path, readonly=True) as s:
            with pytest.raises(StoreError, match="read-only"):
                s.add(make_result(1))
            assert len(s) == 1


# --------------------------------------------------------------------------- read-only paths


def _run_without_root(fn) -> dict:
    """Run ``fn()`` where file permissions bind: in a forked child as user nobody when root.

    Returns ``{"ok": repr(value)}`` or ``{"error": class name, "message": str(exception)}``.
    """

    def call() -> dict:
        try:
            return {"ok": repr(fn())}
        except Exception as exc:
            return {"error": type(exc).__name__, "message": str(exc)}

    return run_unprivileged(
        call, lambda exc: {"error": type(exc).__name__, "message": f"in child: {exc}"}
    )


@pytest.fixture
def shared_dir():
    """A directory the unprivileged user can enter (pytest's tmp_path is private to root)."""
    if not hasattr(os, "geteuid") or (os.geteuid() == 0 and not hasattr(os, "fork")):
        pytest.skip("needs POSIX permissions (and fork to drop root)")
    path = Path(tempfile.mkdtemp(prefix="pyprog-store-"))
    path.chmod(0o755)
    yield path
    for p in [path, *path.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(path)


class TestReadOnlyPaths:
    """File permissions are checked at open time; nothing is written. (As root, where chmod does
    not stop writes, each check runs in a forked child that has dropped to user nobody.)"""

    def test_directory_not_writable(self, shared_dir):
        target = shared_dir / "locked"
        target.mkdir()
        target.chmod(0o555)
        answer = _run_without_root(lambda: ResultStore(target / "runs.db"))
        assert answer.get("error") == "StoreError", answer
        assert "not writable" in answer["message"] and str(target) in answer["message"]
        assert list(target.iterdir()) == []

    def test_file_not_writable(self, shared_dir):
        shared_dir.chmod(0o777)
        path = shared_dir / "runs.db"
        with ResultStore(path) as s:
            s.add(make_result(0))
        path.chmod(0o444)
        before = path.read_bytes()
        answer = _run_without_root(lambda: ResultStore(path))
        assert answer.get("error") == "StoreError", answer
        assert "permission denied" in answer["message"] and "readonly=True" in answer["message"]
        answer = _run_without_root(lambda: len(ResultStore(path, readonly=True)))
        assert answer == {"ok": "1"}
        assert path.read_bytes() == before

    def test_readonly_store_in_readonly_directory(self, shared_dir):
        # e.g. archived results on a read-only mount: readable without creating -wal/-shm
        target = shared_dir / "archive"
        target.mkdir()
        with ResultStore(target / "runs.db") as s:
            s.add(make_result(0))
            s.add(make_result(1))
        target.chmod(0o555)
        before = snapshot(target)
        answer = _run_without_root(lambda: len(ResultStore(target / "runs.db", readonly=True)))
        assert answer == {"ok": "2"}
        assert snapshot(target) == before


# --------------------------------------------------------------------------- concurrency


class TestConcurrentReaders:
    def test_reader_sees_committed_runs_while_writer_is_in_a_transaction(self, store_path):
        with ResultStore(store_path) as writer:
            writer.add(make_result(0))
            with ResultStore(store_path, readonly=True, timeout=0.5) as reader:
                raw = sqlite3.connect(f"{store_path.as_uri()}?mode=ro", uri=True, timeout=0.5)
                try:
                    # the writer holds the write lock with an uncommitted change
                    writer.conn.execute("BEGIN IMMEDIATE")
                    writer.conn.execute("UPDATE runs SET sweep = 'uncommitted' WHERE seed = 0")
                    t0 = time.perf_counter()
                    assert len(reader) == 1 and reader.rows()[0].sweep is None
                    assert raw.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
                    assert time.perf_counter() - t0 < 0.4  # no waiting on the writer's lock
                    writer.conn.rollback()
                    writer.add(make_result(1))
                    assert len(reader) == 2
                    assert raw.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
                finally:
                    raw.close()

    def test_reader_process_while_writing(self, store_path):
        n = 30
        with ResultStore(store_path) as writer:
            writer.add(make_result(0))
            reader = subprocess.Popen(
                [sys.executable, "-c", _READER_SCRIPT, str(store_path), str(n)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert reader.stdout.readline().strip() == "ready"
            for seed in range(1, n):
                writer.add(make_result(seed))
            out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        counts = [int(x) for x in out.split()]
        assert counts[-1] == n
        assert counts == sorted(counts)  # a reader never sees a run disappear


_READER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pyprog.results.store import ResultStore
    path, n = sys.argv[1], int(sys.argv[2])
    with ResultStore(path, readonly=True, timeout=5) as store:
        print("ready", flush=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rows = store.rows()
            assert all(r.returns.shape == (r.episodes,) for r in rows)
            print(len(rows), flush=True)
            if len(rows) == n:
                break
            time.sleep(0.002)
    """
)


# --------------------------------------------------------------------------- crash safety


_WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests_dir!r})
    from test_store import make_result
    from pyprog.results.store import ResultStore

    path, n, pause_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = ResultStore(path)
    statement = [""]
    store.conn.set_trace_callback(lambda sql: statement.__setitem__(0, sql))

    def stop_inside_insert():
        if statement[0].startswith("INSERT INTO runs"):
            print("inside", flush=True)
            time.sleep(120)  # killed here, inside the open transaction
        return 0

    for seed in range(n):
        if seed == pause_at:
            store.conn.set_progress_handler(stop_inside_insert, 1)
        store.add(make_result(seed, episodes=500), sweep="crash")
        print("added", seed, flush=True)
    print("done", flush=True)
    """
)


def _start_writer(path: Path, n: int, pause_at: int) -> subprocess.Popen:
    script = _WRITER_SCRIPT.format(tests_dir=str(TESTS_DIR))
    return subprocess.Popen(
        [sys.executable, "-c", script, str(path), str(n), str(pause_at)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check_after_crash(path: Path, n: int) -> int:
    """The store opens, is intact, holds a prefix of the runs exactly; re-adding fills the rest."""
    with ResultStore(path) as store:
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = store.rows()
        stored = len(rows)
        assert len(store.keys()) == stored  # no duplicates
        assert sorted(r.seed for r in rows) == list(range(stored))  # only whole runs, in order
        for row in rows:
            assert row.sweep == "crash"
            assert_same_run(row.to_result(), make_result(row.seed, episodes=500))
        added = [store.add(make_result(seed, episodes=500), sweep="crash") for seed in range(n)]
        assert added == [False] * stored + [True] * (n - stored)
        assert len(store) == n
    return stored


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
class TestCrashSafety:
    def test_sigkill_inside_an_insert(self, store_path):
        n, pause_at = 8, 5
        writer = _start_writer(store_path, n, pause_at)
        try:
            lines = []
            while True:
                line = writer.stdout.readline()
                assert line, f"writer ended early: {lines} {writer.stderr.read()}"
                lines.append(line.strip())
                if line.strip() == "inside":
                    break
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(timeout=30)
        assert writer.returncode == -signal.SIGKILL
        assert lines == [f"added {i}" for i in range(pause_at)] + ["inside"]
        assert _check_after_crash(store_path, n) == pause_at

    def test_sigkill_at_an_arbitrary_moment(self, store_path):
        n = 300
        writer = _start_writer(store_path, n, pause_at=-1)
        try:
            seen = 0
            deadline = time.monotonic() + 30
            while seen < 10 and writer.poll() is None and time.monotonic() < deadline:
                try:
                    with ResultStore(store_path, readonly=True) as reader:
                        seen = len(reader)
                except StoreError:  # not created yet
                    pass
                time.sleep(0.005)
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(timeout=30)
        assert seen >= 10, writer.stderr.read()
        stored = _check_after_crash(store_path, n)
        assert seen <= stored < n
