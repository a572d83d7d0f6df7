"""A forecast drawn: per-episode estimates, the fitted curve, forecasts and their intervals."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from pyprog.forecast.bases import resolve_d
from pyprog.forecast.forecasters import BasisForecaster, parse_forecaster
from pyprog.utils.figures import save_figure

__all__ = ["plot_forecast"]


def plot_forecast(
    estimates: np.ndarray,
    forecasts: Mapping[str, Any],
    *,
    delta: int,
    basis: str,
    d: int | None,
    alpha: float,
    path: str | os.PathLike | None = None,
    model: str | None = None,
):
    """Per-episode estimates, the fitted curve, the forecasts and the backtest scores.

    Parameters
    ----------
    estimates : ndarray, shape (N,)
        Per-episode PDIS estimates ``Ĵ_i(π)``, oldest first (the NIS regression targets).
    forecasts : mapping of name to Forecast
        E.g. ``{"NIS": nis, "NWIS": nwis}``, each with ``value``, ``low`` and ``high``.
    delta, basis, d
        The forecast's horizon and basis (the NIS curve is refitted from them; with
        ``basis="auto"`` and no ``model``, e.g. when NIS had no forecast, no curve).
    alpha : float
        The intervals' level, for the legend.
    model : str, optional
        The NIS forecaster's name (e.g. ``"window(k=25)"``, as ``Forecast.model``); its
        curve is drawn instead of ``basis``/``d``'s. A forecast with backtest ``scores``
        adds a third panel with every candidate's score.
    """
    n = len(estimates)
    episodes = np.arange(1, n + 1)
    fc = parse_forecaster(model) if model else None
    if fc is None and basis != "auto":
        fc = BasisForecaster(basis, resolve_d(basis, d, "plot_forecast"))
    if fc is not None:
        grid, curve = _curve(fc, np.asarray(estimates, dtype=np.float64), delta)
    where = n + (delta + 1) / 2
    scored = {k: f.scores for k, f in forecasts.items() if getattr(f, "scores", None)}
    import matplotlib.pyplot as plt  # on first use: pyprog imports without matplotlib loaded

    ratios = [2, 1, 1.3] if scored else [2, 1]
    fig, axes = plt.subplots(
        1, len(ratios), figsize=(4.5 * sum(ratios) / 1.5, 3.8), gridspec_kw={"width_ratios": ratios}
    )
    recent = max(1, n - max(3 * delta, n // 8))  # the right panel zooms on the recent past
    for ax, first in zip(axes[:2], (1, recent), strict=True):
        keep = episodes >= first
        ax.plot(
            episodes[keep],
            estimates[keep],
            ".",
            ms=3,
            alpha=0.4,
            color="grey",
            label=r"PDIS $\hat J_i(\pi)$",
        )
        if fc is not None:
            shown = grid >= first
            ax.plot(grid[shown], curve[shown], color="tab:blue", lw=2, label=f"NIS fit ({fc})")
        ax.axvspan(n + 0.5, n + delta + 0.5, color="tab:blue", alpha=0.08)
        for k, (name, f) in enumerate(forecasts.items()):
            x = where + 0.15 * delta * k
            yerr = None if f.low is None else [[f.value - f.low], [f.high - f.value]]
            ax.errorbar(
                [x],
                [f.value],
                yerr=yerr,
                fmt="o",
                capsize=4,
                lw=2,
                color=("tab:red", "tab:orange", "tab:green")[k % 3],
                label=f"{name} forecast, {1 - alpha:.0%} interval",
            )
        ax.set_xlabel("episode")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("performance of π")
    axes[0].set_title(f"forecast of the mean over the next {delta} episode(s)")
    axes[1].set_title("recent episodes and the forecast")
    axes[0].legend(frameon=False, fontsize="small")
    if scored:
        _scores_panel(axes[2], scored)
    fig.tight_layout()
    return save_figure(fig, path)


def _curve(fc, estimates: np.ndarray, delta: int) -> tuple[np.ndarray, np.ndarray]:
    """The forecaster's fit: a basis's fitted curve over the past and the next δ episodes;
    a local forecaster's one-step forecasts from each prefix (on at most 400 prefixes)."""
    n = len(estimates)
    if isinstance(fc, BasisForecaster):
        phi, _, _ = fc.design(n, delta)
        w, *_ = np.linalg.lstsq(phi, estimates, rcond=None)
        scale = n + delta + int(0.05 * n)
        grid = np.linspace(1, n + delta, 400)
        return grid, BasisForecaster(fc.basis, fc.d).design_at(grid / scale) @ w
    ends = np.unique(np.linspace(1, n, min(n, 400)).astype(int))
    values = np.array([fc.weights(int(m), 1) @ estimates[:m] for m in ends])
    return ends + 1.0, values


def _scores_panel(ax, scored: Mapping[str, Mapping[str, float]]) -> None:
    """Horizontal bars of each candidate's backtest score (relative to the best)."""
    names = list(next(iter(scored.values())))
    y = np.arange(len(names))
    height = 0.8 / len(scored)
    for k, (label, scores) in enumerate(scored.items()):
        vals = np.array([scores.get(c, np.inf) for c in names], dtype=np.float64)
        best = np.min(vals[np.isfinite(vals)]) if np.isfinite(vals).any() else 1.0
        rel = np.where(np.isfinite(vals), vals / best, np.nan)
        ax.barh(y + k * height, rel, height=height, label=label)
    ax.set_yticks(y + height * (len(scored) - 1) / 2, names, fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("backtest score / best")
    ax.set_title("backtest scores (lower is better)")
    ax.legend(frameon=False, fontsize="small")
