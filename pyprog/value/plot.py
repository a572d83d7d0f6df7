"""A value forecast drawn: the daily estimates, the model in time, the forecast and its band.

:func:`plot_value_forecasts` draws what :func:`pyprog.forecast_value` computed, from the
model average each :class:`~pyprog.ValueForecast` keeps: each bin's mean estimate with its
noise (± the interval's quantile times the bin's noise sd), the models' mean in time across
the log, from the log's end to the furthest target the band of the value day by day, and
each target's forecast with its interval (for a window, its average's, at the window's
middle). The left panel shows the whole
log, the right one its last stretch and the targets.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import scipy.stats

from pyprog.utils.figures import save_figure

__all__ = ["plot_value_forecasts"]

#: Points of the curves drawn (the models' mean over the log, the band to the targets).
GRID = 240
#: How many days before the log's end the right panel starts: this many times the furthest
#: horizon, and at least ``MIN_RECENT`` days.
RECENT_HORIZONS, MIN_RECENT = 3.0, 28.0


def plot_value_forecasts(forecasts: Sequence, path: str | os.PathLike | None = None):
    """Draw value forecasts of one fit (one log, one policy) on one figure.

    Parameters
    ----------
    forecasts : sequence of ValueForecast
        From one call of :func:`pyprog.forecast_value` (``at`` a sequence gives several);
        each must keep its ``average``.
    path : str or os.PathLike, optional
        Where to save the figure as PNG.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from pyprog import forecast_value
    >>> rng = np.random.default_rng(0)
    >>> t = np.sort(rng.uniform(0, 200, 2000))
    >>> a = rng.integers(0, 2, 2000)
    >>> log = {"time": t, "action": a, "reward": a * (1 + t / 200) + rng.normal(0, 0.3, 2000),
    ...        "pscore": np.full(2000, 0.5)}
    >>> f = forecast_value(log, np.tile([0.0, 1.0], (2000, 1)), at=[210.0, 230.0])
    >>> fig = plot_value_forecasts(f)
    >>> [ax.get_title() for ax in fig.axes]
    ['the log and the forecasts', 'the last stretch and the targets']
    """
    forecasts = _checked(forecasts)
    first = forecasts[0]
    avg = first.average
    t_last = float(first.target[-1] - first.horizon)
    furthest = max(f.target[-1] for f in forecasts)
    recent = t_last - max(MIN_RECENT, RECENT_HORIZONS * (furthest - t_last))
    import matplotlib.pyplot as plt  # on first use: pyprog imports without matplotlib loaded

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    for ax, start in zip(axes, (-np.inf, recent), strict=True):
        _draw_bins(ax, avg, first, start)
        _draw_model(ax, avg, (max(start, avg.t0), t_last), first.dated)
        _draw_band(ax, avg, first, (t_last, furthest))
        for k, f in enumerate(forecasts):
            _draw_target(ax, f, label=k == 0)
        ax.grid(alpha=0.3)
        _time_axis(ax, first.dated)
    axes[0].set_ylabel(f"value of π_e ({first.estimator})")
    axes[0].set_title("the log and the forecasts")
    axes[1].set_title("the last stretch and the targets")
    axes[0].legend(fontsize="x-small", loc="best", framealpha=0.85)
    fig.tight_layout()
    return save_figure(fig, path)


def _checked(forecasts) -> list:
    """The forecasts as a list, each keeping the one model average they share."""
    if hasattr(forecasts, "average"):
        forecasts = [forecasts]
    forecasts = list(forecasts)
    if not forecasts:
        raise ValueError("forecasts must hold at least one ValueForecast; got none")
    for f in forecasts:
        if getattr(f, "average", None) is None:
            raise ValueError(
                "forecasts: each must be a ValueForecast from pyprog.forecast_value that keeps "
                f"its model average; got {type(f).__name__}"
            )
    if any(f.average is not forecasts[0].average for f in forecasts[1:]):
        raise ValueError(
            "forecasts must come from one fit (one forecast_value call with several targets)"
        )
    return forecasts


def _quantile(alpha: float | None) -> float:
    return float(scipy.stats.norm.ppf(1 - (0.1 if alpha is None else alpha) / 2))


def _draw_bins(ax, avg, f, start: float) -> None:
    """Each bin's mean estimate, with ± the interval's normal quantile times its noise sd."""
    b = avg.binned
    keep = b.times >= start
    x = _x(b.times[keep], f.dated)
    err = _quantile(f.alpha) * np.sqrt(avg.noise[keep])
    ax.errorbar(
        x, b.y[keep], yerr=err, fmt=".", ms=3, lw=0.6, color="grey", alpha=0.45,
        label=f"bin means ({b.width:g} d) ± noise",
    )  # fmt: skip


def _draw_model(ax, avg, span: tuple, dated: bool) -> None:
    """The models' mean in time across the log (the average's mean, no band)."""
    grid = np.linspace(*span, GRID)
    mean = avg.forecast([("at", float(t)) for t in grid], None, kind="mean")[0]
    ax.plot(_x(grid, dated), mean, color="tab:blue", lw=2, label=f"model in time ({avg.top})")


def _draw_band(ax, avg, f, span: tuple) -> None:
    """From the log's end to the furthest target: the forecast of the value on each day and
    its band (of ``f``'s level and kind: the targets share them)."""
    grid = np.linspace(*span, max(2, GRID // 2))
    mean, low, high, _ = avg.forecast([("at", float(t)) for t in grid], f.alpha, kind=f.interval)
    x = _x(grid, f.dated)
    ax.plot(x, mean, color="tab:red", lw=1.2, ls="--")
    if low is not None:
        label = f"{1 - f.alpha:.0%} {f.interval} band, day by day"
        ax.fill_between(x, low, high, color="tab:red", alpha=0.22, lw=0, label=label)


def _draw_target(ax, f, label: bool) -> None:
    """The target's forecast and its interval (a window shaded, its average at the middle)."""
    end = float(f.target[-1])
    middle = f.target[1] if f.target[0] == "at" else 0.5 * (f.target[1] + end)
    if f.target[0] == "over":
        ax.axvspan(*_x(np.array(f.target[1:]), f.dated), color="tab:red", alpha=0.08)
    yerr = None if f.low is None else [[f.value - f.low], [f.high - f.value]]
    ax.errorbar(
        _x(np.array([middle]), f.dated), [f.value], yerr=yerr, fmt="o", color="tab:red",
        capsize=4, lw=2, label="forecast and its interval" if label else None,
    )  # fmt: skip


def _x(days: np.ndarray, dated: bool):
    """Days as the axis shows them: dates (days since 1970-01-01 UTC) or numbers."""
    if not dated:
        return days
    return np.datetime64("1970-01-01", "s") + np.round(days * 86400.0).astype("timedelta64[s]")


def _time_axis(ax, dated: bool) -> None:
    ax.set_xlabel("date (UTC)" if dated else "time (days)")
    if dated:
        ax.figure.autofmt_xdate()
