"""Checks at the public boundary: ``ValueError`` messages that name the argument and the fix.

Kernels trust their inputs; everything a user can pass goes through these first. How a
value or a list of names is shown in a message: :func:`shorten`, :func:`listing`.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np

__all__ = [
    "as_float_array",
    "check_action",
    "check_alpha",
    "check_clip",
    "check_finite",
    "check_gamma",
    "check_int",
    "check_mask",
    "check_nonnegative",
    "check_positive",
    "check_representable",
    "check_same_shape",
    "check_speed",
    "listing",
    "reset_option",
    "shorten",
]


def _where(index: tuple[int, ...]) -> str:
    if len(index) == 1:
        return f"episode {index[0]}"
    return f"episode {index[0]}, step {index[1]}"


#: dtype kinds that are never numbers here: complex, strings, bytes, datetimes, objects, void.
_NOT_REAL = {"c": "complex", "U": "string", "S": "bytes", "M": "datetime", "m": "timedelta",
             "O": "object", "V": "void (structured)"}  # fmt: skip


def as_float_array(name: str, value, ndim: int, shape_doc: str) -> np.ndarray:
    """``value`` as a C-contiguous float64 array with ``ndim`` dimensions.

    Real numbers only: bool, integer and float arrays (and nested lists of them) are
    converted; complex, string, bytes, datetime and object arrays are refused (NumPy
    would drop an imaginary part or parse strings silently).
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be an array of numbers of shape {shape_doc}; {exc}"
        ) from None
    kind = _NOT_REAL.get(arr.dtype.kind)
    if kind is not None:
        raise ValueError(
            f"{name} must be an array of real numbers of shape {shape_doc}; got {kind} "
            f"values (dtype {arr.dtype})"
        )
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(
            f"{name} must be a {ndim}-D array of shape {shape_doc}; got shape {arr.shape}"
        )
    return arr


def _as_float(value: numbers.Real) -> float:
    """float(value), with integers beyond float64's range as ±inf instead of OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_finite(name: str, arr: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Raise if ``arr`` holds NaN or ±inf (only where ``mask`` is non-zero, if given)."""
    bad = ~np.isfinite(arr)
    if mask is not None:
        bad &= mask != 0
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be finite; got {arr[index]} at {_where(index)}")


def check_representable(what: str, error: type[Exception] = ValueError, **values) -> None:
    """Raise ``error`` if a computed value overflowed float64 (the inputs were finite)."""
    for name, value in values.items():
        if not np.all(np.isfinite(value)):
            raise error(
                f"{what}: {name} is beyond float64's range (the true value overflows, e.g. "
                f"ratios near 1e-308 give gradients near 1e308); rescale the inputs"
            )


def check_mask(mask: np.ndarray) -> None:
    """A mask holds only 0.0 (padding) and 1.0 (valid step)."""
    bad = (mask != 0.0) & (mask != 1.0)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"mask must contain only 0 (padding) and 1 (valid step); got {mask[index]} "
            f"at {_where(index)}"
        )


def check_same_shape(**arrays: np.ndarray) -> None:
    """All arrays have the shape of the first one."""
    (first, ref), *rest = arrays.items()
    for name, arr in rest:
        if arr.shape != ref.shape:
            raise ValueError(f"{name} must have the shape of {first} {ref.shape}; got {arr.shape}")


def check_nonnegative(name: str, arr: np.ndarray) -> None:
    """Raise if any entry of ``arr`` is negative."""
    bad = arr < 0
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be >= 0; got {arr[index]} at {_where(index)}")


def check_clip(clip: float) -> float:
    """An importance-ratio clip is a number > 0; ``inf`` means no clipping.

    A clip beyond float64's range (e.g. the integer ``10**400``) is above every
    representable ratio, so it is taken as ``inf`` (no clipping).
    """
    real = isinstance(clip, numbers.Real) and not isinstance(clip, bool)
    if not real or math.isnan(_as_float(clip)) or clip <= 0:
        raise ValueError(f"clip must be a number > 0 (inf for no clipping); got {clip!r}")
    return _as_float(clip)


def check_gamma(gamma: float) -> float:
    """A discount factor lies in [0, 1]."""
    if not isinstance(gamma, numbers.Real) or not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be a number in [0, 1]; got {gamma!r}")
    return float(gamma)


def check_alpha(alpha, *, allow_none: bool = False, name: str = "alpha") -> float | None:
    """A significance level: a real number strictly between 0 and 1 (or None if allowed).

    ``name`` is the argument's name in the message.

    Examples
    --------
    >>> check_alpha(0.1), check_alpha(None, allow_none=True)
    (0.1, None)
    """
    if alpha is None and allow_none:
        return None
    real = isinstance(alpha, numbers.Real) and not isinstance(alpha, (bool, np.bool_))
    if not real or not 0.0 < alpha < 1.0:
        also = ", or None" if allow_none else ""
        raise ValueError(
            f"{name} must be a number in (0, 1), e.g. 0.05{also}; got {shorten(alpha)}"
        )
    return float(alpha)


def check_positive(name: str, value: float) -> float:
    """A finite number > 0 (learning rates, standard deviations, ...)."""
    if not isinstance(value, numbers.Real) or not math.isfinite(_as_float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def check_int(name: str, value: int, minimum: int) -> int:
    """An integer >= ``minimum`` (bools are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_speed(speed: float) -> float:
    """A speed of non-stationarity is a finite number >= 0 (0 means stationary)."""
    real = isinstance(speed, numbers.Real) and not isinstance(speed, bool)
    if not real or not math.isfinite(_as_float(speed)) or speed < 0:
        raise ValueError(f"speed must be a finite number >= 0 (0 = stationary); got {speed!r}")
    return float(speed)


def check_action(action: Any, n: int) -> int:
    """``action`` as a Python int in ``[0, n)``, accepting ints, NumPy integers and 0-d arrays."""
    try:
        index = operator.index(action)  # rejects floats and arrays with ndim > 0
    except TypeError:
        index = -1
    if not 0 <= index < n:
        raise ValueError(
            f"action must be an integer in [0, {n - 1}] (Discrete({n})); got {action!r}"
        )
    return index


def reset_option(options: dict[str, Any] | None, key: str, env_name: str) -> int | None:
    """The integer ``options[key]`` (>= 0) of a Gymnasium ``reset``, None when not given.

    Any other option is an error that says which one is accepted.
    """
    if not options:
        return None
    unknown = set(options) - {key}
    if unknown:
        raise ValueError(f"{env_name}.reset accepts only options={{'{key}': k}}; got {options!r}")
    return check_int(f"options['{key}']", options[key], 0)


#: At most this many characters of a field are quoted in a message.
SHOWN_CHARS = 40


def shorten(value, limit: int = SHOWN_CHARS) -> str:
    """``value`` for a message: plain numbers (``0``, not ``np.int64(0)``; ``1e+300``, not
    300 digits), text quoted and cut to ``limit`` characters.

    Examples
    --------
    >>> shorten(np.int64(0)), shorten(10**300), shorten("a" * 50, 8)
    ('0', '1e+300', "'aaaaaaaa...' (50 characters)")
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**15 else f"{value:.4g}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) >= 1e15 else repr(value)
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    cut = repr(text[:limit])[:-1] + "...'" if isinstance(value, str) else text[:limit] + "..."
    return f"{cut} ({len(text)} characters)"


def listing(names, limit: int = 12) -> str:
    """Column names for a message: each shortened, at most ``limit`` of them.

    Examples
    --------
    >>> listing(["time", "x0"]), listing([f"c{i}" for i in range(20)], 2)
    ("'time', 'x0'", "'c0', 'c1' and 18 more")
    """
    names = list(names)
    shown = ", ".join(shorten(str(n)) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
