"""One stored run: a :class:`~pyprog.runner.loop.RunResult` checked and encoded as a row of
table ``runs`` (:func:`encode_run`), and a row decoded (:class:`StoredRun`).

Arrays are stored as little-endian float64 bytes, so they round-trip bit for bit; times are
ISO-8601 strings in UTC. Every value is checked before anything is written, with a message
that names the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import sqlite3
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from pyprog._version import __version__
from pyprog.results.keys import (
    NO_SPEED,
    RunKey,
    canonical_json,
    check_storable_env,
    setting_hash,
    speed_from_column,
)
from pyprog.results.schema import StoreError, utc_text

if TYPE_CHECKING:
    from pyprog.runner.loop import RunResult

__all__ = ["StoredRun", "encode_run"]

_ARRAY_DTYPE = np.dtype("<f8")


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
    def from_row(cls, row: sqlite3.Row) -> StoredRun:
        """The run in a row of table ``runs`` read with ``sqlite3.Row`` (every column)."""
        n = int(row["episodes"])
        what = f"run id {row['id']}"
        return cls(
            id=int(row["id"]),
            env=row["env"],
            algo=row["algo"],
            speed=speed_from_column(row["speed"]),
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


def encode_run(
    result: RunResult,
    sweep: str | None = None,
    started: datetime | None = None,
    finished: datetime | None = None,
) -> tuple[Any, ...]:
    """The values of a row of table ``runs`` (every column but ``id``, in order) for a result.

    Checks every field first: a malformed result (or a run on an environment object, which
    nothing could rebuild) is a ValueError naming the field, and nothing is written.
    ``finished`` defaults to now, ``started`` to ``finished - result.seconds``.
    """
    env = _text("result.env", result.env)
    algo = _text("result.algo", result.algo)
    check_storable_env(env)
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
    digest = setting_hash(result.hyper, episodes, getattr(result, "horizon", None))
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
        utc_text(started),
        utc_text(finished),
    )
