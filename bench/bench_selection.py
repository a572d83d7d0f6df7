"""``basis="auto"`` with its post-selection interval (issue 18), before and after the fast
paths of :mod:`pyprog.forecast.backtests` and the compiled one-SE choice, side by side in
one run.

Run: ``taskset -c 0 pytest bench/bench_selection.py --benchmark-columns=median,iqr,rounds``.
Target: N = 1000, δ = 5, 2000 bootstrap draws (each repeating the selection among the
13 default candidates over the backtest origins) in under 100 ms on one core, NIS and NWIS.

"before" is the same code with the pieces the fast paths replaced put back: each
replicate's losses as (B, C, m) NumPy arrays from a dense (B × N)·(N × origins) product of
targets, and the one-SE rule on them (``selection.choose``), instead of
``kernels.one_se_choice``; NWIS's backtest systems solved one origin at a time. Both rows
give the same numbers (asserted).
"""

import math

import numpy as np
import pytest

import pyprog
from pyprog.forecast import selected_intervals, selection
from pyprog.forecast.forecasters import parse_forecaster
from pyprog.timeseries.errors import ForecastError

N, DELTA, B = 1000, 5, 2000
RESULTS: dict = {}


def drifting(n=N, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.sin(2 * np.pi * t / 400) + rng.normal(0, 0.5, n)


def numpy_choice(y32, back32, origins, delta, ws, W, usable, step):
    """Before: the losses as NumPy arrays, the targets as a dense product."""
    targets = selection.target_rows(origins, delta, len(ws), ws)
    losses = selection.origin_losses(y32, back32, targets, len(usable))
    losses[:, ~usable, :] = np.inf
    return selection.choose(losses, step)


def per_origin_rows(c, origins, delta, n, ratios):
    """Before: NWIS's backtest rows, one k×k solve and one ``cond`` per origin."""
    rows = np.zeros((len(origins), n))
    for r, o in enumerate(origins):
        o = int(o)
        phi, phi_star, kappa = c.design(o, delta)
        w = kappa * ratios[:o]
        if phi.shape[1] == 1:
            if not w.sum() > 0:
                raise ForecastError("no weight")
            rows[r, :o] = w / w.sum()
            continue
        A = phi.T @ (w[:, None] * phi)
        diag = np.diag(A)
        if not (diag > 0).all():
            raise ForecastError("a feature without weight")
        scale = 1.0 / np.sqrt(diag)
        As = A * np.outer(scale, scale)
        try:
            u = scale * np.linalg.solve(As, scale * phi_star)
            cond = np.linalg.cond(As)
        except np.linalg.LinAlgError:
            raise ForecastError("singular") from None
        dfdy = w * (phi @ u)
        if not (math.sqrt(cond) * np.finfo(float).eps * np.abs(dfdy).sum() <= 1e-4):
            raise ForecastError("ill-conditioned")
        rows[r, :o] = dfdy
    return rows


@pytest.fixture(params=["before", "after"])
def version(request, monkeypatch):
    if request.param == "before":
        monkeypatch.setattr(selected_intervals, "_bootstrap_choice", numpy_choice)
        monkeypatch.setattr(selection, "nwis_backtest_rows", per_origin_rows)
    return request.param


def bench_auto_interval_nis(benchmark, version):
    benchmark.group = f"NIS basis='auto' + 90% interval, N = {N}, delta = {DELTA}, n_boot = {B}"
    benchmark.extra_info.update(impl=f"{version} ({pyprog.backend()})", target_seconds=0.1)
    y = drifting()
    f = benchmark(pyprog.nis_forecast, y, DELTA, "auto", alpha=0.1, n_boot=B, random_state=0)
    assert f.low <= f.value <= f.high
    assert f.value == pytest.approx(parse_forecaster(f.model).weights(N, DELTA) @ y)
    # main's result (tests/test_selection_speed.py), the same before and after
    assert f.model == "fourier(d=9)"
    assert [f.low, f.high] == pytest.approx([-0.5920911213926723, 0.36662706246717736])


def bench_auto_interval_nwis(benchmark, version):
    benchmark.group = f"NWIS basis='auto' + 90% interval, N = {N}, delta = {DELTA}, n_boot = {B}"
    benchmark.extra_info.update(impl=f"{version} ({pyprog.backend()})", target_seconds=0.1)
    G, lam = drifting(), np.random.default_rng(0).exponential(1.0, N)
    f = benchmark(pyprog.nwis_forecast, G, lam, DELTA, "auto", alpha=0.1, n_boot=B, random_state=0)
    assert f.low <= f.value <= f.high
    RESULTS.setdefault("nwis", (f.model, f.low, f.high))
    assert (f.model, f.low, f.high) == RESULTS["nwis"]  # the same before and after


def bench_auto_select_nwis(benchmark, version):
    """What Pro-WLS would pay per update: select on (G, λ) of 1000 episodes (no interval)."""
    benchmark.group = f"select_forecaster, NWIS, N = {N}, delta = {DELTA}"
    benchmark.extra_info.update(impl=f"{version} ({pyprog.backend()})")
    rng = np.random.default_rng(0)
    G, lam = drifting(), rng.exponential(1.0, N)
    sel = benchmark(pyprog.select_forecaster, G, DELTA, lam)
    RESULTS.setdefault("select", sel.scores)
    assert sel.scores == RESULTS["select"]
