"""What the readers share: checks that name the key, the slate rule, density shifts."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pyprog.forecast.arrays import LOG_PROB_FLOOR
from pyprog.forecast.logs import LogFormatError

__all__ = [
    "as_array",
    "check_action_dist",
    "choose_positions",
    "fail",
    "log_probabilities",
    "need_key",
    "shift_densities",
]


def fail(source: str, key: str, what: str) -> LogFormatError:
    return LogFormatError(f"{source}: {key!r}: {what}")


def need_key(data: Mapping, key: str, source: str):
    if not isinstance(data, Mapping):
        raise LogFormatError(f"{source}: expected a dict; got {type(data).__name__}")
    if key not in data or data[key] is None:
        raise fail(source, key, f"missing key (the dict has {', '.join(map(str, data))})")
    return data[key]


def as_array(values, key: str, source: str, shape: tuple, dtype=np.float64) -> np.ndarray:
    """``values`` as an array of ``shape`` (None: any length on that axis)."""
    try:
        arr = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise fail(source, key, f"must be numbers ({exc})") from None
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


def check_action_dist(dist: np.ndarray, key: str, source: str) -> None:
    sums = dist.sum(axis=1)
    bad = np.abs(sums - 1.0) > 1e-6
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), sums.shape)
        raise fail(source, key, f"sums to {sums[i]:.6g} over the actions at {i}; must be 1")


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
