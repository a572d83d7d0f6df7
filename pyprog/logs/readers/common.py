"""What the readers share: checks that name the key, the slate rule, density shifts."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from pyprog.logs.episodes import LOG_PROB_FLOOR, LogFormatError
from pyprog.logs.rounds import MAX_ABS_REWARD, PROB_TOL

__all__ = [
    "MAX_ABS_REWARD",
    "as_array",
    "as_index",
    "call",
    "check_rewards",
    "check_sums_to_one",
    "choose_positions",
    "count",
    "fail",
    "log_probabilities",
    "need_key",
    "numbers",
    "shift_densities",
    "show",
]


def fail(source: str, key: str, what: str) -> LogFormatError:
    return LogFormatError(f"{source}: {key!r}: {what}")


def show(value) -> str:
    """A value for a message: a plain number (no ``np.int64(...)``), huge ones in ``.4g``."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**20 else f"{value:.4g}"
    text = repr(value)
    return text if len(text) <= 12 else f"{value:.6g}"


def numbers(values, key: str, source: str) -> np.ndarray:
    """``values`` as a float64 array of any shape; ragged or non-numeric input named."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        if "inhomogeneous" in str(exc):
            raise fail(source, key, "ragged: its rows have different lengths") from None
        raise fail(source, key, f"must be numbers ({exc})") from None


def count(data: Mapping, key: str, source: str, low: int = 0) -> int:
    """An integer key of the dict (``n_rounds``, ``n_actions``, ...), at least ``low``."""
    value = need_key(data, key, source)
    if isinstance(value, np.generic):
        value = value.item()
    ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not ok or not low <= value < 2**63:
        raise fail(source, key, f"{show(value)}; must be an integer >= {low} (and < 2**63)")
    return int(value)


def need_key(data: Mapping, key: str, source: str):
    if not isinstance(data, Mapping):
        raise LogFormatError(f"{source}: expected a dict; got {type(data).__name__}")
    if key not in data or data[key] is None:
        raise fail(source, key, f"missing key (the dict has {', '.join(map(str, data))})")
    return data[key]


def as_array(values, key: str, source: str, shape: tuple) -> np.ndarray:
    """``values`` as a float64 array of ``shape`` (None: any length on that axis)."""
    arr = numbers(values, key, source)
    want = (
        "("
        + ", ".join("*" if s is None else str(s) for s in shape)
        + ("," * (len(shape) == 1))
        + ")"
    )
    if arr.ndim != len(shape) or any(
        s is not None and s != a for s, a in zip(shape, arr.shape, strict=True)
    ):
        raise fail(source, key, f"shape {arr.shape}, expected {want}")
    return arr


def log_probabilities(p: np.ndarray, key: str, source: str, zero: bool = False) -> np.ndarray:
    """Check p in (0, 1] (or [0, 1] with ``zero``); return log p (−inf floored)."""
    low_ok = (p >= 0) if zero else (p > 0)
    bad = ~(low_ok & (p <= 1))
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), p.shape)
        where = ", ".join(map(str, i))
        rng = "[0, 1]" if zero else "(0, 1]"
        raise fail(source, key, f"{p[i]} at [{where}] is not a probability in {rng}")
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(p), LOG_PROB_FLOOR)


def check_sums_to_one(dist: np.ndarray, key: str, source: str, axes: tuple[str, ...]) -> None:
    """Each distribution over the actions (axis 1) sums to 1 (to :data:`PROB_TOL`); ``axes``
    names the other axes, for the message."""
    sums = dist.sum(axis=1)
    bad = np.abs(sums - 1.0) > PROB_TOL
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), sums.shape)
        at = ", ".join(f"{axis} {int(k)}" for axis, k in zip(axes, i, strict=True))
        raise fail(source, key, f"sums to {sums[i]:.6g} over the actions at {at}; must be 1")


def as_index(values, key: str, source: str, n: int, noun: str, what: str = "") -> np.ndarray:
    """1-D integers in 0 .. n−1 (actions, positions) as int64; the first bad one named as
    given (not as its cast: 1.5 is not truncated, 2**63 not wrapped around)."""
    try:
        arr = np.asarray(values)
    except ValueError:
        raise fail(source, key, "ragged: its rows have different lengths") from None
    if arr.dtype.kind == "O":
        for i, v in enumerate(arr.ravel()):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise fail(source, key, f"{v!r} at {noun} {i} is not an integer")
        arr = np.asarray(arr.tolist(), dtype=np.float64)
    if arr.dtype.kind not in "biuf":
        raise fail(source, key, f"must be integers; got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise fail(source, key, f"shape {arr.shape}, expected one per {noun}")
    bad = (arr < 0) | (arr >= n)
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr) | (arr != np.round(arr))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise fail(source, key, f"{show(arr[i])} at {noun} {i} is not {what}in 0 .. {n - 1}")
    return arr.astype(np.int64)


def check_rewards(reward: np.ndarray, key: str, source: str, noun: str) -> None:
    """Finite rewards of magnitude at most :data:`MAX_ABS_REWARD` (its comment says why)."""
    bad = ~(np.abs(reward) <= MAX_ABS_REWARD)
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), reward.shape)
        at = ", ".join(str(int(k)) for k in i)
        what = "not finite" if not np.isfinite(reward[i]) else f"beyond ±{MAX_ABS_REWARD:g}"
        raise fail(
            source,
            key,
            f"{show(reward[i])} at {noun} {at} is {what}: rewards must be finite and at most "
            f"{MAX_ABS_REWARD:g} in magnitude (the forecasts square importance-weighted "
            "returns, which overflows float64 past about 1e154); rescale them, every forecast "
            "scales with them",
        )


def call(f: Callable, key: str, source: str, *args):
    """``f(*args)``; whatever it raises becomes one error naming ``key``."""
    if not callable(f):
        raise fail(source, key, f"must be a callable; got {type(f).__name__}")
    try:
        return f(*args)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise fail(
            source, key, f"the policy callable raised {type(exc).__name__}: {first}"
        ) from exc


def choose_positions(position_col: np.ndarray, position, key: str, source: str) -> np.ndarray:
    """Rows to keep under the slate rule (module docstring); boolean (n,)."""
    seen = np.unique(position_col)
    if position is None:
        if len(seen) > 1:
            raise fail(
                source,
                key,
                f"the rows hold {len(seen)} positions ({', '.join(map(str, seen.tolist()))}); "
                "pass position=k for the rows at position k, or position='all' for every row "
                "(the mean reward per slot, positions taken as separate rounds)",
            )
        return np.ones(len(position_col), dtype=bool)
    if isinstance(position, str):
        if position != "all":
            raise fail(source, "position", f"{position!r}: expected an int or 'all'")
        return np.ones(len(position_col), dtype=bool)
    keep = position_col == position
    if not keep.any():
        raise fail(
            source, "position", f"no row at position {position} (positions: {seen.tolist()})"
        )
    return keep


def shift_densities(log_pi: np.ndarray, log_beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Subtract max(0, log π, log β) from both (the ratios stay; continuous actions)."""
    c = np.maximum(0.0, np.maximum(log_pi, log_beta))
    return log_pi - c, log_beta - c
