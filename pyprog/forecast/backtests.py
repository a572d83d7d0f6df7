"""Fast building blocks of ``basis="auto"``'s backtests.

:func:`pyprog.forecast.selection.select_forecaster` and
:func:`~pyprog.forecast.selection.selected_interval` spend their time in two places
(profiled at N = 1000, δ = 5, 2000 bootstrap draws):

* the backtest targets ``Σ_{j=o+1..o+δ} w_j y_j`` of every replicate and origin, which a
  dense product with an (origins × N) matrix of mostly zeros computed in ``O(B·N·m)``;
  :func:`target_sums` gathers the δ entries per origin instead, ``O(B·m·δ)``;
* NWIS's backtest forecast weights: one k×k solve and one condition number per candidate
  and origin, each a separate LAPACK call; :func:`nwis_backtest_rows` stacks the systems of
  all origins of a candidate and solves them (and takes their singular values) in one
  batched call each. The arithmetic per system is the same LAPACK routine, so the rows are
  the same to the last bit.
"""

from __future__ import annotations

import math

import numpy as np

from pyprog.forecast.forecasters import Forecaster
from pyprog.timeseries.errors import ForecastError

__all__ = ["nwis_backtest_rows", "target_sums"]


def target_sums(y, origins, delta: int, weights) -> np.ndarray:
    """Backtest target sums ``S[b, r] = Σ_{j=o_r}^{o_r+δ−1} w_j y[b, j]`` (0-based episodes).

    Equal to ``y @ target_rows(origins, delta, n, weights).T`` without the dense product.

    Parameters
    ----------
    y : array_like, shape (B, N) or (N,)
        Replicates of the per-episode estimates (or returns).
    origins : array_like of int, shape (m,)
        Backtest origins, ``0 <= o <= N − δ``.
    delta : int
        Forecast horizon.
    weights : array_like, shape (N,)
        Target weights ``w`` (ones for NIS, the ratios for NWIS).

    Returns
    -------
    numpy.ndarray, shape (B, m), float64

    Examples
    --------
    >>> target_sums(np.arange(6.0), np.array([1, 3]), 2, np.ones(6))
    array([[3., 7.]])
    """
    y = np.asarray(y)
    if y.ndim == 1:
        y = y[None, :]
    if y.ndim != 2:
        raise ValueError(f"y must have shape (B, N) or (N,); got shape {y.shape}")
    w = np.asarray(weights, dtype=np.float64)
    n = y.shape[1]
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},) like y's rows; got {w.shape}")
    origins = np.asarray(origins, dtype=np.intp)
    if len(origins) and (origins.min() < 0 or origins.max() + delta > n):
        raise ValueError(f"origins must lie in [0, N − delta] = [0, {n - delta}]")
    idx = origins[:, None] + np.arange(delta)[None, :]
    out = y[:, idx[:, 0]].astype(np.float64) * w[idx[:, 0]]
    for j in range(1, delta):
        out += y[:, idx[:, j]] * w[idx[:, j]]
    return out


def nwis_backtest_rows(c: Forecaster, origins, delta: int, n: int, ratios) -> np.ndarray:
    """NWIS backtest forecast weights of candidate ``c``: row r is ``∂f/∂y`` of the
    λ-weighted fit on the first ``origins[r]`` episodes (zero after it), shape (m, n).

    The same rows, checks and refusals as the per-origin loop it replaced (kept as the
    "before" side of ``bench/bench_selection.py``): systems scaled to unit diagonal, refused
    when ``cond(√ΛΦ)·eps·Σ|∂f/∂y| > 1e-4``, a weighted mean in closed form for a constant
    basis; the k×k systems of all origins are solved in one batched call.

    Raises
    ------
    ForecastError
        An origin without weight, a singular or an ill-conditioned system.

    Examples
    --------
    >>> from pyprog.forecast.forecasters import parse_forecaster
    >>> rows = nwis_backtest_rows(parse_forecaster("linear"), [4, 5], 1, 6, np.ones(6))
    >>> rows.shape, bool(np.allclose(rows.sum(axis=1), 1.0))
    ((2, 6), True)
    """
    origins = [int(o) for o in origins]
    ratios = np.asarray(ratios, dtype=np.float64)
    rows = np.zeros((len(origins), n))
    designs = [c.design(o, delta) for o in origins]
    if designs[0][0].shape[1] == 1:
        for r, (o, (_, _, kappa)) in enumerate(zip(origins, designs, strict=True)):
            w = kappa * ratios[:o]
            total = float(w.sum())
            if not total > 0:
                raise ForecastError(f"{c}: no episode of non-zero weight before origin {o}")
            rows[r, :o] = w / total
        return rows
    k = designs[0][0].shape[1]
    A = np.empty((len(origins), k, k))
    rhs = np.empty((len(origins), k, 1))
    scales = np.empty((len(origins), k))
    ws = []
    for r, (o, (phi, phi_star, kappa)) in enumerate(zip(origins, designs, strict=True)):
        w = kappa * ratios[:o]
        a = phi.T @ (w[:, None] * phi)
        diag = np.diag(a)
        if not (diag > 0).all():
            raise ForecastError(f"{c}: a feature without weight before origin {o}")
        scale = 1.0 / np.sqrt(diag)
        A[r] = a * np.outer(scale, scale)
        rhs[r, :, 0] = scale * phi_star
        scales[r] = scale
        ws.append(w)
    try:
        u = scales * np.linalg.solve(A, rhs)[:, :, 0]
        sv = np.linalg.svd(A, compute_uv=False)
    except np.linalg.LinAlgError:
        raise ForecastError(f"{c}: singular system at a backtest origin") from None
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = sv[:, 0] / sv[:, -1]
    eps = np.finfo(np.float64).eps
    for r, (o, (phi, _, _)) in enumerate(zip(origins, designs, strict=True)):
        dfdy = ws[r] * (phi @ u[r])
        if not (np.isfinite(dfdy).all() and math.sqrt(cond[r]) * eps * np.abs(dfdy).sum() <= 1e-4):
            raise ForecastError(f"{c}: ill-conditioned at origin {o}")
        rows[r, :o] = dfdy
    return rows
