"""What identifies a stored run: the canonical text of a setting, its hash, the run key.

These are pure functions (no SQLite): a sweep computes the key of a run *before* it runs,
and the store keys every finished run the same way. The ``speed`` column of a run whose
environment drifts by itself (speed None) holds :data:`NO_SPEED`.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from pyprog.runner.adapter import UNKEYED

__all__ = [
    "NO_SPEED",
    "RunKey",
    "canonical_json",
    "check_storable_env",
    "run_key",
    "setting_hash",
    "speed_from_column",
    "speed_to_column",
]

#: ``speed`` column of a run whose environment pyprog does not drift (speed None).
NO_SPEED = -1.0

#: ``(env, algo, speed, setting_hash, seed)``, the unique key of a stored run.
RunKey = tuple[str, str, "float | None", str, int]


def speed_to_column(speed: float | None) -> float:
    """The ``speed`` column's value: :data:`NO_SPEED` for None.

    Examples
    --------
    >>> speed_to_column(2), speed_to_column(None)
    (2.0, -1.0)
    """
    return NO_SPEED if speed is None else float(speed)


def speed_from_column(value: float) -> float | None:
    """A ``speed`` column's value as a run's speed: None for :data:`NO_SPEED`.

    Examples
    --------
    >>> speed_from_column(2.0), speed_from_column(-1.0)
    (2.0, None)
    """
    value = float(value)
    return None if value == NO_SPEED else value


def check_storable_env(env: str) -> str:
    """``env`` if a stored run of it can be rebuilt from its name, else a ValueError.

    An environment passed as an object (``"instance:..."``) or a factory that cannot be
    imported again (``"callable:..."``, :data:`pyprog.runner.adapter.UNKEYED`) has no name
    that could rebuild it: such a run can be kept in Python but not stored.

    Examples
    --------
    >>> check_storable_env("CartPole-v1")
    'CartPole-v1'
    """
    if env.startswith(UNKEYED):
        raise ValueError(
            f"result.env {env!r}: a run on an environment object cannot be stored (nothing "
            "could rebuild it); run it by its Gymnasium id or a 'module:function' factory"
        )
    return env


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


def setting_hash(
    hyper: Mapping[str, Any] | Any, episodes: int | None = None, horizon: int | None = None
) -> str:
    """A stable identifier of a setting: hyper-parameters and, when given, the run length
    and the episode horizon.

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
    horizon : int, optional
        Most steps per episode, hashed only when given (a run made with an explicit
        ``horizon=`` differs from one that used the environment's own length), so every
        hash made without it is unchanged.

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
    >>> setting_hash({"lr": 0.001}, 200, horizon=50) != setting_hash({"lr": 0.001}, 200)
    True
    """
    text = canonical_json(hyper)
    if episodes is not None:
        text = f"{text}|episodes={int(episodes)}"
    if horizon is not None:
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"horizon: must be an int >= 1 or None, got {horizon!r}")
        text = f"{text}|horizon={horizon}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_key(
    env: str,
    algo: str,
    speed: float | None,
    hyper: Mapping[str, Any] | Any,
    seed: int,
    episodes: int,
    horizon: int | None = None,
) -> RunKey:
    """The store key of a run *before* it runs, as
    :meth:`pyprog.results.store.ResultStore.keys` returns them.

    Examples
    --------
    >>> key = run_key("reco", "pro-wls", 2, {"lr": 0.001}, seed=7, episodes=1000)
    >>> key[:3], key[4]
    (('reco', 'pro-wls', 2.0), 7)
    """
    speed = None if speed is None else float(speed)
    return (str(env), str(algo), speed, setting_hash(hyper, episodes, horizon), int(seed))
