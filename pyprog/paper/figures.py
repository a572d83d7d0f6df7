"""Figures of the paper's empirical section, drawn with matplotlib (Agg: no display needed).

Every function takes plain data, draws one figure, saves it as PNG when ``path`` is
given and returns the ``Figure``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from pyprog.stats.summary import mean_se
from pyprog.utils.figures import save_figure

__all__ = [
    "ALGO_STYLE",
    "BG_TARGET_RANGE",
    "error_note",
    "plot_basis_ablation",
    "plot_glucose_days",
    "plot_item_rewards",
    "plot_learning_curves",
    "plot_policy_actions",
    "plot_regret_vs_speed",
    "plot_zeta",
    "running_mean",
]

#: Colours and labels shared by every figure.
ALGO_STYLE = {
    "pro-ols": ("tab:blue", "Pro-OLS"),
    "pro-wls": ("tab:orange", "Pro-WLS"),
    "onpg": ("tab:green", "ONPG"),
    "ftrl-pg": ("tab:red", "FTRL-PG"),
}


def _style(name: str) -> tuple[str | None, str]:
    return ALGO_STYLE.get(name, (None, name))


def error_note(seeds: Sequence[int] | None) -> str:
    """What the error bars and bands are: ``"± 1 standard error over N seeds"``.

    Examples
    --------
    >>> error_note([5, 5]), error_note([3, 5])
    ('± 1 standard error over 5 seeds', '± 1 standard error over 3–5 seeds')
    """
    counts = sorted({int(n) for n in seeds or ()})
    if not counts:
        return "± 1 standard error over seeds"
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"± 1 standard error over {n} seeds"


def _speed_axis(ax, speeds) -> None:
    """Speeds on the x axis: integer ticks when every speed is an integer."""
    ax.set_xlabel("speed of non-stationarity")
    distinct = sorted({float(s) for s in speeds})
    if len(distinct) == 1:  # one speed: matplotlib would span ±0.16 around it (2.84-3.16)
        (only,) = distinct
        ax.set_xlim(only - 1, only + 1)
        ax.set_xticks([only], [f"{only:g}"])
    elif all(s.is_integer() for s in distinct):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def running_mean(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` episodes along the last axis (shorter at the start).

    Examples
    --------
    >>> running_mean(np.array([1.0, 3.0, 5.0, 7.0]), 2)
    array([1., 2., 4., 6.])
    """
    x = np.asarray(x, dtype=np.float64)
    c = np.cumsum(x, axis=-1)
    out = np.empty_like(c)
    n = np.minimum(np.arange(1, x.shape[-1] + 1), window)
    out[..., :window] = c[..., :window]
    out[..., window:] = c[..., window:] - c[..., :-window]
    return out / n


def plot_regret_vs_speed(
    table: Sequence[Mapping[str, Any]],
    title: str = "",
    ylabel: str | None = None,
    path: str | os.PathLike | None = None,
    series_key: str = "algo",
):
    """Regret (mean ± standard error over seeds) against speed, one line per algorithm.

    Parameters
    ----------
    table : sequence of mapping
        Rows with ``speed``, ``mean``, ``se`` and ``series_key`` (default ``algo``), and
        ``seeds`` (the legend says what the error bars are).
    """
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for name in dict.fromkeys(r[series_key] for r in table):
        rows = sorted((r for r in table if r[series_key] == name), key=lambda r: r["speed"])
        color, label = _style(name)
        se = np.nan_to_num([r["se"] for r in rows])
        ax.errorbar(
            [r["speed"] for r in rows],
            [r["mean"] for r in rows],
            yerr=se,
            color=color,
            label=label,
            marker="o",
            capsize=3,
        )
    _speed_axis(ax, [r["speed"] for r in table])
    ax.set_ylabel(ylabel or (table[0].get("metric", "regret") if table else "regret"))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    seeds = [r["seeds"] for r in table if "seeds" in r]
    ax.legend(frameon=False, title=f"bars: {error_note(seeds)}", title_fontsize="x-small")
    return save_figure(fig, path)


def plot_learning_curves(
    returns: Mapping[str, np.ndarray],
    title: str = "",
    window: int = 50,
    optimal: np.ndarray | None = None,
    path: str | os.PathLike | None = None,
):
    """Running mean of the return per episode, with a band of ± 1 standard error over seeds.

    Parameters
    ----------
    returns : mapping of algo to ndarray, shape (seeds, episodes)
    optimal : ndarray, shape (episodes,), optional
        The best expected reward of every episode (NS-Reco), drawn in black.
    """
    # wider than the other figures: the legend sits to the right of the axes, never on a curve
    fig, ax = plt.subplots(figsize=(6.6, 3.6), layout="constrained")
    for algo, arr in returns.items():
        arr = np.atleast_2d(arr)
        curves = running_mean(arr, window)
        mean, se = mean_se(curves, axis=0)
        if len(arr) == 1:
            se = np.zeros_like(mean)  # one seed: no band
        color, label = _style(algo)
        x = np.arange(1, mean.size + 1)
        ax.plot(x, mean, color=color, label=label)
        ax.fill_between(x, mean - se, mean + se, color=color, alpha=0.2, linewidth=0)
    if optimal is not None:
        opt = running_mean(np.asarray(optimal), window)
        ax.plot(np.arange(1, opt.size + 1), opt, color="black", linestyle="--", label="best item")
    ax.set_xlabel("episode")
    ax.set_ylabel(f"return (running mean over {window})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    seeds = [len(np.atleast_2d(arr)) for arr in returns.values()]
    ax.legend(
        frameon=False,
        fontsize="small",
        title=f"bands: {error_note(seeds)}",
        title_fontsize="x-small",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )
    return save_figure(fig, path)


def plot_zeta(weights: Mapping[str, np.ndarray], path: str | os.PathLike | None = None):
    """Weights ``ζ_i`` of past episodes' gradients in the forecast's gradient (paper Fig. 4)."""
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for name, z in weights.items():
        ax.plot(np.arange(1, len(z) + 1), z, label=name, linewidth=2)
    ax.axhline(0.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("episode i")
    ax.set_ylabel(r"$\zeta_i = \partial \hat J_{k+1} / \partial \hat J_i$")
    ax.set_title("weights of past episodes in the forecast's gradient")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False)
    return save_figure(fig, path)


def plot_item_rewards(curves: Mapping[float, np.ndarray], path: str | os.PathLike | None = None):
    """NS-Reco: each item's expected reward over episodes, one panel per speed (appendix E).

    Parameters
    ----------
    curves : mapping of speed to ndarray, shape (episodes, n_items)
    """
    speeds = list(curves)
    fig, axes = plt.subplots(
        1, len(speeds), figsize=(3.2 * len(speeds), 2.8), sharey=True, squeeze=False
    )
    for ax, speed in zip(axes[0], speeds, strict=True):
        expected = curves[speed]
        for a in range(expected.shape[1]):
            ax.plot(expected[:, a], label=f"item {a + 1}", alpha=0.85)
        ax.set_title(f"speed {speed:g}")
        ax.set_xlabel("episode")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("expected reward")
    axes[0][-1].legend(frameon=False, fontsize="x-small")
    fig.suptitle("NS-Reco: the items' expected rewards")
    fig.tight_layout()
    return save_figure(fig, path)


def plot_basis_ablation(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike | None = None):
    """Regret against speed per time basis, one panel per algorithm (appendix E ablation).

    Parameters
    ----------
    rows : sequence of mapping
        ``algo``, ``basis``, ``speed``, ``mean``, ``se``, ``seeds``.
    """
    algos = list(dict.fromkeys(r["algo"] for r in rows))
    fig, axes = plt.subplots(
        1, len(algos), figsize=(4.6 * len(algos), 3.4), sharey=True, squeeze=False
    )
    for ax, algo in zip(axes[0], algos, strict=True):
        for basis in dict.fromkeys(r["basis"] for r in rows if r["algo"] == algo):
            sel = sorted(
                (r for r in rows if r["algo"] == algo and r["basis"] == basis),
                key=lambda r: r["speed"],
            )
            ax.errorbar(
                [r["speed"] for r in sel],
                [r["mean"] for r in sel],
                yerr=np.nan_to_num([r["se"] for r in sel]),
                marker="o",
                capsize=3,
                label=basis,
            )
        ax.set_title(_style(algo)[1])
        _speed_axis(ax, [r["speed"] for r in rows])
        ax.grid(alpha=0.3)
        seeds = [r["seeds"] for r in rows if "seeds" in r]
        ax.legend(frameon=False, title=f"bars: {error_note(seeds)}", title_fontsize="x-small")
    axes[0][0].set_ylabel("regret (NS-Reco)")
    fig.tight_layout()
    return save_figure(fig, path)


#: The target range of blood glucose (mg/dL) drawn in the NS-Diabetes figures.
BG_TARGET_RANGE = (70.0, 180.0)


def plot_glucose_days(
    days: Mapping[str, Mapping[str, np.ndarray]],
    meals: Sequence[tuple[float, float]] = (),
    sample_time: float = 3.0,
    title: str = "",
    path: str | os.PathLike | None = None,
):
    """NS-Diabetes: blood glucose over one day, one panel per learner, one line per policy.

    Parameters
    ----------
    days : mapping of algo to mapping of label to ndarray, shape (n_samples,)
        Blood glucose (mg/dL) every ``sample_time`` minutes from midnight, e.g.
        ``{"pro-wls": {"episode 100 (CR 12, CF 30)": bg_early, "episode 1000 ...": bg_late}}``.
    meals : sequence of (minute, grams)
        The day's meals, marked at their time with their carbohydrate.
    sample_time : float
        Minutes between samples.
    """
    algos = list(days)
    cols = min(2, len(algos))
    rows = -(-len(algos) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.8 * cols, 3.2 * rows), sharex=True, sharey=True, squeeze=False
    )

    top = max(
        [BG_TARGET_RANGE[1] + 40]
        + [float(np.max(bg)) for policies in days.values() for bg in policies.values()]
    )
    for ax, algo in zip(axes.flat, algos, strict=False):
        low, high = BG_TARGET_RANGE
        ax.axhspan(low, high, color="tab:green", alpha=0.12, linewidth=0, label=f"{low:g}–{high:g}")
        color, label = _style(algo)
        policies = days[algo]
        for k, (name, bg) in enumerate(policies.items()):
            hours = np.arange(len(bg)) * sample_time / 60
            # the earlier policy light and dashed, the last one in full
            late = k == len(policies) - 1
            ax.plot(
                hours,
                bg,
                color=color,
                alpha=1.0 if late else 0.55,
                linestyle="-" if late else "--",
                label=name,
            )
        # the meals in a band of their own below 0 mg/dL, where no curve goes; labels
        # upright (narrow), so that meals an hour apart do not run into each other
        for minute, grams in meals:
            ax.vlines(minute / 60, 0.0, 1.15 * top, color="grey", linewidth=0.8, linestyle=":")
            ax.annotate(
                f"{grams:.0f} g",
                (minute / 60, -0.02 * top),
                ha="center",
                va="top",
                rotation=90,
                fontsize="x-small",
                color="dimgrey",
                annotation_clip=False,
            )
        if meals:
            ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.set_title(label)
        ax.set_xlim(0, 24)
        ax.set_xticks(range(0, 25, 6), [f"{h:02d}:00" for h in range(0, 25, 6)])
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize="x-small", loc="upper left")
    for ax in axes.flat[len(algos) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("time of day")
    for ax in axes[:, 0]:
        ax.set_ylabel("blood glucose (mg/dL)")
    band = 0.2 * top if meals else 0.0  # the meals' band, below 0
    axes[0][0].set_ylim(-band, top * 1.15)  # and room for the legend at the top
    ticks = [t for t in axes[0][0].get_yticks() if 0 <= t <= top * 1.15]
    axes[0][0].set_yticks(ticks)  # no negative glucose on the axis
    axes[0][0].set_ylim(-band, top * 1.15)
    fig.suptitle(title or "NS-Diabetes: one day under the learned bolus calculator")
    fig.tight_layout()
    return save_figure(fig, path)


def plot_policy_actions(
    actions: Mapping[str, np.ndarray],
    names: Sequence[str] = ("CR (g/U)", "CF (mg/dL per U)"),
    bounds: Sequence[tuple[float, float]] | None = None,
    title: str = "",
    context: tuple[str, np.ndarray] | None = None,
    path: str | os.PathLike | None = None,
):
    """The action each learner's policy chose over the episodes, one panel per action dimension.

    Parameters
    ----------
    actions : mapping of algo to ndarray, shape (episodes, n_dims)
        E.g. the Gaussian policy's mean (CR, CF) before every NS-Diabetes episode.
    names : sequence of str, length n_dims
    bounds : sequence of (low, high), optional
        The action box, drawn as dotted lines.
    context : (str, ndarray of shape (episodes,)), optional
        What drives the best action (e.g. NS-Diabetes' patient mix ``alpha_k``), drawn in
        black in a last panel with its name as the label.
    """
    n_dims = len(names)
    panels = n_dims + (context is not None)
    fig, axes = plt.subplots(panels, 1, figsize=(5.5, 2.3 * panels), sharex=True, squeeze=False)
    for algo, values in actions.items():
        values = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
        color, label = _style(algo)
        x = np.arange(1, len(values) + 1)
        for j, ax in enumerate(axes[:n_dims, 0]):
            ax.plot(x, values[:, j], color=color, label=label)
    if context is not None:
        name, values = context
        ax = axes[-1][0]
        ax.plot(np.arange(1, len(values) + 1), values, color="black")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    for j, ax in enumerate(axes[:n_dims, 0]):
        if bounds is not None:
            for b in bounds[j]:
                ax.axhline(b, color="black", linestyle=":", linewidth=0.8)
        ax.set_ylabel(names[j])
        ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel("episode (day)")
    axes[0][0].legend(frameon=False, fontsize="small", ncol=2)
    axes[0][0].set_title(title)
    fig.tight_layout()
    return save_figure(fig, path)
