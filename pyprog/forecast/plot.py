"""A forecast drawn: per-episode estimates, the fitted curve, forecasts and their intervals."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from pyprog.forecast.bases import time_basis
from pyprog.utils.figures import save_figure

__all__ = ["plot_forecast"]


def plot_forecast(
    estimates: np.ndarray,
    forecasts: Mapping[str, Any],
    *,
    delta: int,
    basis: str,
    d: int,
    alpha: float,
    path: str | os.PathLike | None = None,
):
    """Per-episode estimates, the fitted time curve and the forecasts with their intervals.

    Parameters
    ----------
    estimates : ndarray, shape (N,)
        Per-episode PDIS estimates ``Ĵ_i(π)``, oldest first (the NIS regression targets).
    forecasts : mapping of name to Forecast
        E.g. ``{"NIS": nis, "NWIS": nwis}``, each with ``value``, ``low`` and ``high``.
    delta, basis, d
        The forecast's horizon and basis (the NIS curve is refitted from them).
    alpha : float
        The intervals' level, for the legend.
    """
    n = len(estimates)
    scale = n + delta + int(0.05 * n)
    episodes = np.arange(1, n + 1)
    phi = time_basis(episodes / scale, basis, d)
    w, *_ = np.linalg.lstsq(phi, estimates, rcond=None)
    grid = np.linspace(1, n + delta, 400)
    curve = time_basis(grid / scale, basis, d) @ w
    where = n + (delta + 1) / 2
    import matplotlib.pyplot as plt  # on first use: pyprog imports without matplotlib loaded

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    recent = max(1, n - max(3 * delta, n // 8))  # the right panel zooms on the recent past
    for ax, first in zip(axes, (1, recent), strict=True):
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
        shown = grid >= first
        ax.plot(
            grid[shown], curve[shown], color="tab:blue", lw=2, label=f"NIS fit ({basis}, d={d})"
        )
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
    fig.tight_layout()
    return save_figure(fig, path)
