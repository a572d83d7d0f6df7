"""Forecast a candidate policy from a file of logged episodes: what ``pyprog forecast`` runs.

One call reads the log (:func:`pyprog.logs.episodes_csv.read_logs`), forecasts the candidate's
mean performance over the next ``delta`` episodes by NIS and NWIS with wild-bootstrap
intervals, and runs the safety test against the behaviour policy. The command line only
parses its arguments, calls :func:`forecast_logs` and prints the result.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprog.forecast.bases import n_features, resolve_d
from pyprog.forecast.estimators import Forecast, nis_forecast, nwis_forecast
from pyprog.forecast.forecasters import Forecaster, WindowForecaster
from pyprog.forecast.intervals import MIN_RESIDUAL_DOF, power_of_two
from pyprog.forecast.safety import SafetyTest, difference_safety_test
from pyprog.forecast.selection import min_episodes_auto, parse_candidates
from pyprog.logs.episodes import LogFormatError, Logs
from pyprog.logs.episodes_csv import read_logs
from pyprog.offpolicy.episodes import discounted_returns, episode_ratios, pdis
from pyprog.timeseries.errors import ForecastError
from pyprog.timeseries.interval_results import INTERVAL_ALPHA, TEST_ALPHA
from pyprog.utils.moved import renamed_arguments
from pyprog.utils.validation import check_alpha

__all__ = ["BLOCK_CELLS", "LogForecast", "forecast_logs"]

#: Padded cells per block of episodes in :func:`forecast_logs` (2^20: 8 MiB per array).
BLOCK_CELLS = 1 << 20


def _per_episode(logs: Logs, gamma: float, clip: float):
    """PDIS estimates J, episode ratios λ and returns G, each (N,), block by block.

    Episodes are sorted by length and padded in blocks of at most ``BLOCK_CELLS`` cells
    (or one episode): memory in proportion to the steps, however unequal the lengths.
    """
    n = logs.episodes
    J, lam, G = np.empty(n), np.empty(n), np.empty(n)
    order = np.argsort(logs.lengths, kind="stable")
    sorted_lengths = logs.lengths[order]
    lo = 0
    while lo < n:
        # the longest block [lo, hi) whose padding (hi - lo) * lengths[hi - 1] fits
        m = min(n - lo, BLOCK_CELLS // int(sorted_lengths[lo]) + 1)
        fits = np.arange(1, m + 1) * sorted_lengths[lo : lo + m] <= BLOCK_CELLS
        hi = lo + (m if fits.all() else max(1, int(np.argmin(fits))))
        block = order[lo:hi]
        log_pi, log_beta, rewards, mask = logs.padded(block)
        try:
            J[block] = pdis(log_pi, log_beta, rewards, mask, gamma, clip).J
            lam[block], _ = episode_ratios(log_pi, log_beta, mask, clip)
        except ValueError as exc:
            found = re.search(r"at episode (\d+), step (\d+)", str(exc))
            if found is None:
                raise
            i, t = block[int(found[1])], int(found[2])
            where = logs.where(int(logs.starts[i]) + t)
            what = str(exc).replace(found[0], f"at episode {logs.episode_ids[i]}, step {t}")
            raise LogFormatError(f"{where}: {what}") from None
        G[block] = discounted_returns(rewards, mask, gamma)
        lo = hi
    return J, lam, G


@dataclass(frozen=True)
class LogForecast:
    """What :func:`forecast_logs` found: both forecasts, the safety test and their inputs."""

    #: The file read, or what the logs were built from (e.g. ``"arrays"``).
    path: str
    #: Number of logged episodes N.
    episodes: int
    #: Number of logged steps (the file's data rows).
    steps: int
    #: The options the forecast was made with (delta, basis, d, candidates, gamma, clip, alpha,
    #: n_boot, random_state; ``candidates`` as names, or None for the default set).
    options: dict[str, Any]
    #: NIS forecast (OLS on the per-episode PDIS estimates) with its interval.
    nis: Forecast | ForecastError
    #: NWIS forecast (WLS on the returns, weighted by the episode ratios), or why there is none.
    nwis: Forecast | ForecastError
    #: The safety test of π against β, or why there is none.
    safety: SafetyTest | ForecastError
    #: Per-episode PDIS estimates ``Ĵ_i(π)``, shape (N,), oldest first.
    estimates: np.ndarray = field(repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The numbers, JSON-ready (what ``pyprog forecast --json`` writes)."""

        def interval(f: Forecast | ForecastError) -> dict[str, Any]:
            if isinstance(f, Exception):
                return {"value": None, "low": None, "high": None, "error": str(f)}
            return f.as_dict()

        options = dict(self.options)
        if not math.isfinite(options["clip"]):
            options["clip"] = None  # JSON has no infinity
        return {
            "file": self.path,
            "episodes": self.episodes,
            "steps": self.steps,
            **options,
            "nis": interval(self.nis),
            "nwis": interval(self.nwis),
            "safety": (
                {"error": str(self.safety)}
                if isinstance(self.safety, Exception)
                else self.safety.as_dict()
            ),
            "past_mean_pdis": _mean(self.estimates),
        }

    def plot(self, path: str | os.PathLike | None = None):
        """The estimates, the NIS fit and both forecasts with their intervals (a Figure)."""
        from pyprog.forecast.plot import plot_forecast

        forecasts = {
            name: f
            for name, f in (("NIS", self.nis), ("NWIS", self.nwis))
            if not isinstance(f, Exception)
        }
        o = self.options
        nis_model = None if isinstance(self.nis, Exception) else self.nis.model
        return plot_forecast(
            self.estimates,
            forecasts,
            delta=o["delta"],
            basis=o["basis"],
            d=o["d"],
            alpha=o["alpha"],
            path=path,
            model=nis_model,
        )


def _mean(x: np.ndarray) -> float:
    """The mean, rescaled by a power of 2 first: no overflow for values near ±1.8e308."""
    scale = power_of_two(np.max(np.abs(x))) if len(x) else 1.0
    return float(np.mean(x / scale)) * scale


@renamed_arguments(seed="random_state")
def forecast_logs(
    logs: str | os.PathLike | Logs,
    *,
    delta: int = 1,
    basis: str = "auto",
    d: int | None = None,
    gamma: float = 1.0,
    clip: float = np.inf,
    alpha: float = INTERVAL_ALPHA,
    safety_alpha: float = TEST_ALPHA,
    n_boot: int = 2000,
    random_state: int | None = 0,
    candidates: Sequence[str | Forecaster] | None = None,
) -> LogForecast:
    """Forecast a candidate policy π's performance from logged episodes, and test it.

    Parameters
    ----------
    logs : path, pandas.DataFrame, dict of arrays, or Logs
        A CSV file of logged steps (see :mod:`pyprog.logs.episodes_csv` for its columns); a
        DataFrame or a dict of 1-D arrays with the same columns (``reward``, ``log_pi``,
        ``log_beta``, optionally ``episode`` and ``step``; without ``episode`` each row is
        an episode of one step; see :meth:`Logs.from_frame
        <pyprog.logs.episodes.Logs.from_frame>`); or a
        :class:`~pyprog.logs.episodes.Logs` from :func:`~pyprog.logs.episodes_csv.read_logs`,
        :meth:`Logs.from_arrays <pyprog.logs.episodes.Logs.from_arrays>` or a reader of
        :mod:`pyprog.logs.readers`.
    delta : int >= 1
        Forecast the mean over the next ``delta`` episodes.
    basis : {"auto", "fourier", "poly", "linear"}
        ``"auto"`` (default): each forecast chooses its forecaster by rolling-origin
        backtests (:func:`pyprog.select_forecaster`); else a fixed time basis.
    d : int, optional
        Number of features of a fixed basis (default 5); not with ``basis="auto"``.
    gamma : float in [0, 1]
        Discount factor of the returns.
    clip : float
        Upper clip of the importance ratios (default: none).
    alpha : float in (0, 1)
        The intervals have level ``1 − alpha`` (default
        :data:`~pyprog.timeseries.INTERVAL_ALPHA`, 0.1: 90 %, as :func:`~pyprog.forecast_value`'s).
    safety_alpha : float in (0, 1)
        The safety test's size: the accepted risk of deploying a worse policy (default
        :data:`~pyprog.timeseries.TEST_ALPHA`, 0.05, as :func:`~pyprog.safety_test`'s).
    n_boot : int
        Wild-bootstrap draws.
    random_state : int or None
        Seed of the bootstrap draws.
    candidates : sequence of str or Forecaster, optional
        With ``basis="auto"``: the forecasters to choose among, by name (e.g.
        ``["fourier(d=3)", "poly(d=3)", "window(k=50)"]``) instead of
        :data:`~pyprog.forecast.selection.DEFAULT_CANDIDATES`. Use it to bring knowledge the
        backtests cannot have (a drift known to be slow and smooth, or to come in steps).

    Returns
    -------
    LogForecast
        ``nis`` and ``nwis`` are :class:`~pyprog.Forecast` objects with an interval and
        their ``model``, or the :class:`~pyprog.ForecastError` that says why there is none
        (e.g. too few episodes with non-zero weight); ``safety`` is a
        :class:`~pyprog.SafetyTest` or its ForecastError.

    Raises
    ------
    LogFormatError
        The file cannot be read, or has no more episodes than the basis has features.
    ValueError
        ``candidates`` names no forecaster or one that does not parse, or is given with a
        fixed basis.

    Examples
    --------
    >>> import os, tempfile
    >>> rows = ["episode,step,reward,log_pi,log_beta"]
    >>> rows += [f"{i},0,{i % 3},-0.5,-0.7" for i in range(40)]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "logs.csv")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("\\n".join(rows) + "\\n")
    ...     result = forecast_logs(path, basis="linear", d=2, n_boot=200)
    >>> result.episodes, result.nis.low < result.nis.value < result.nis.high
    (40, True)
    """
    if candidates is not None:  # with a fixed basis: choose_forecaster's ValueError
        candidates = parse_candidates(candidates)
    d = resolve_d(basis, d, "forecast_logs")  # before any work
    if isinstance(logs, Mapping) or hasattr(logs, "columns"):  # a dict of arrays, a DataFrame
        logs = Logs.from_frame(logs, source="logs")
    elif not isinstance(logs, Logs):
        logs = read_logs(logs)
    if basis == "auto":
        need = min_episodes_auto(delta)
        if logs.episodes < need:
            raise LogFormatError(
                f"{logs.where(-1)}, column 'episode': only "
                f"{logs.episodes} episode(s); basis='auto' needs at least {need} for "
                f"delta={delta} (its backtests)"
            )
        for c in candidates or ():
            if isinstance(c, WindowForecaster) and c.k > logs.episodes:
                warnings.warn(
                    f"candidates: {c} is longer than the log ({logs.episodes} episodes): it "
                    f"is the mean of all of them, the same as window(k={logs.episodes})",
                    UserWarning,
                    stacklevel=2,
                )
    else:
        k = n_features(basis, d)
        if logs.episodes < k + MIN_RESIDUAL_DOF:
            raise LogFormatError(
                f"{logs.where(-1)}, column 'episode': only "
                f"{logs.episodes} episode(s), and the {basis} basis with d={d} has {k} "
                f"features; an interval needs at least {k + MIN_RESIDUAL_DOF} episodes "
                "(use a smaller d)"
            )
    check_alpha(safety_alpha, name="safety_alpha")  # before any work
    opts = dict(n_boot=n_boot, random_state=random_state, candidates=candidates)
    shape = dict(delta=delta, basis=basis, d=d)
    J, lam, G = _per_episode(logs, gamma, clip)
    # one estimator without a forecast does not cost the others theirs
    try:
        nis: Forecast | ForecastError = nis_forecast(J, **shape, alpha=alpha, **opts)
    except ForecastError as exc:
        nis = exc
    try:
        nwis: Forecast | ForecastError = nwis_forecast(G, lam, **shape, alpha=alpha, **opts)
    except ForecastError as exc:
        nwis = exc
    try:
        safety: SafetyTest | ForecastError = difference_safety_test(
            J - G, **shape, alpha=safety_alpha, **opts
        )
    except ForecastError as exc:
        safety = exc
    names = None if candidates is None else [str(c) for c in candidates]
    return LogForecast(
        path=str(logs.path),
        episodes=logs.episodes,
        steps=logs.rows,
        options={
            **shape,
            "candidates": names,
            "gamma": gamma,
            "clip": clip,
            "alpha": alpha,
            "safety_alpha": safety_alpha,
            "n_boot": n_boot,
            "random_state": random_state,
        },
        nis=nis,
        nwis=nwis,
        safety=safety,
        estimates=J,
    )
