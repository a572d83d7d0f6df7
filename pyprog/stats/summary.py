"""Summaries across seeds: mean ± standard error, exact or surrogate regret.

These are the numbers every table and figure of pyprog reports; they live here once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["compare", "mean_se", "surrogate_regret"]


def surrogate_regret(returns: Mapping[str, Any]) -> dict[str, Any]:
    """Surrogate regret of several algorithms' runs against each other (paper §9).

    With ``J̃*_k`` the best return any of the compared algorithms got in episode k,
    the surrogate regret of algorithm A is ``Σ_k (J̃*_k − J_k(A)) / |Σ_k J̃*_k|`` (the
    paper's definition; the absolute value keeps the order when the returns are negative).

    Parameters
    ----------
    returns : mapping of str to array_like, shape (episodes,) or (seeds, episodes)
        Per-episode returns of every algorithm. With a seeds axis, ``J̃*_k`` is the
        best of the algorithms' mean returns over seeds, and every seed gets its own
        surrogate regret against it (their mean is that of the mean curve).

    Returns
    -------
    dict of str to float, or to ndarray of shape (seeds,)

    Examples
    --------
    >>> surrogate_regret({"a": [1.0, 2.0], "b": [2.0, 1.0]})
    {'a': 0.25, 'b': 0.25}
    """
    if not returns:
        raise ValueError("returns must map at least one algorithm to its returns")
    curves = {}
    for name, value in returns.items():
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim not in (1, 2) or arr.shape[-1] == 0 or not np.isfinite(arr).all():
            raise ValueError(
                f"returns[{name!r}] must be finite, of shape (episodes,) or (seeds, episodes); "
                f"got shape {arr.shape}"
            )
        curves[name] = arr
    lengths = {c.shape[-1] for c in curves.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"every algorithm needs the same number of episodes; got {sorted(lengths)}"
        )
    best = np.max(np.stack([c if c.ndim == 1 else c.mean(axis=0) for c in curves.values()]), axis=0)
    # |Σ J̃*|: where returns are mostly negative (NS-Reacher early on), dividing by a
    # negative sum would make the worst algorithm look best
    total = abs(best.sum())
    if total == 0:
        raise ValueError("the best returns sum to 0: surrogate regret is undefined")
    out: dict[str, Any] = {}
    for name, c in curves.items():
        value = (best - c).sum(axis=-1) / total
        out[name] = float(value) if c.ndim == 1 else value
    return out


def mean_se(values, axis: int | None = None) -> tuple[Any, Any]:
    """Mean and standard error (``std(ddof=1) / √n``; NaN for one value) of ``values``.

    Parameters
    ----------
    values : array_like
    axis : int, optional
        Summarise along this axis (e.g. the seeds axis of ``(seeds, episodes)`` learning
        curves) and return arrays; by default, over all values, as floats.

    Returns
    -------
    mean, se : float, or ndarray without ``axis``

    Examples
    --------
    >>> mean_se([1.0, 2.0, 3.0])
    (2.0, 0.5773502691896258)
    >>> mean, se = mean_se([[1.0, 2.0], [3.0, 6.0]], axis=0)
    >>> mean.tolist(), se.tolist()
    ([2.0, 4.0], [1.0, 2.0])
    """
    arr = np.asarray(values, dtype=np.float64)
    if axis is None:
        se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else float("nan")
        return float(arr.mean()), se
    n = arr.shape[axis]
    mean = arr.mean(axis=axis)
    se = arr.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    return mean, se


def compare(runs: Mapping[str, Sequence[Any]]) -> tuple[str, dict[str, np.ndarray]]:
    """Per-seed regret of several algorithms' runs of one (env, speed).

    Exact regret where every run has one (NS-Reco), else the surrogate regret of each
    seed against the best of the algorithms' mean curves (:func:`surrogate_regret`).

    Parameters
    ----------
    runs : mapping of algo to sequence of runs
        Objects with ``regret`` (float or None) and ``returns`` (episodes,) attributes
        (:class:`RunResult`, stored runs), one per seed.

    Returns
    -------
    metric : {"regret", "surrogate regret"}
    values : dict of algo to ndarray, shape (seeds,)
    """
    if all(r.regret is not None for rs in runs.values() for r in rs):
        return "regret", {a: np.array([r.regret for r in rs]) for a, rs in runs.items()}
    curves = {a: np.stack([np.asarray(r.returns) for r in rs]) for a, rs in runs.items()}
    return "surrogate regret", {a: np.atleast_1d(v) for a, v in surrogate_regret(curves).items()}
