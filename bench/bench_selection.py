"""``basis="auto"`` with its post-selection interval, side by side with a per-replicate loop
(issue 18).

Run: ``pytest bench/bench_selection.py --benchmark-columns=median,iqr,rounds``.
Target: NIS, N = 1000, δ = 5, 2000 bootstrap draws (each repeating the selection among the
13 default candidates over the backtest origins) in under 100 ms on one core. The backtests
share work: NIS forecast weights are data-independent (one cached ζ per candidate and
origin), and every replicate's backtests are one matrix product with the stacked weights.
"""

import numpy as np
import pytest

import pyprog
from pyprog.forecast.forecasters import parse_forecaster
from pyprog.forecast.selection import target_rows

N, DELTA, B = 1000, 5, 2000


def drifting(n=N, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.sin(2 * np.pi * t / 400) + rng.normal(0, 0.5, n)


def per_replicate_loop(y, delta, n_boot, seed):
    """The same selection and bootstrap, one replicate at a time (no shared product)."""
    sel = pyprog.select_forecaster(y, delta)
    n, m = len(y), len(sel.origins)
    targets = target_rows(sel.origins, delta, n, np.ones(n))
    Z = np.array([c.weights(n, delta) for c in sel.eligible])
    fitted = np.full(n, y.mean())
    resid = y - fitted
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        ystar = fitted + rng.choice([-1.0, 1.0], n) * resid
        F = (sel.backtest @ ystar).reshape(len(sel.eligible), m)
        loss = ((targets @ ystar)[None, :] - F * targets.sum(axis=1)) ** 2
        out[b] = Z[np.argmin(loss.sum(axis=1))] @ ystar
    return np.quantile(out, [0.05, 0.95])


def bench_auto_interval_loop(benchmark):
    benchmark.group = f"NIS basis='auto' + 90% interval, N = {N}, delta = {DELTA}, n_boot = {B}"
    benchmark.extra_info.update(impl="per-replicate loop (NumPy)", role="baseline")
    y = drifting()
    pyprog.select_forecaster(y, DELTA)  # the cached ζ are shared by both
    low, high = benchmark.pedantic(per_replicate_loop, (y, DELTA, B, 0), rounds=3, iterations=1)
    assert low < high


def bench_auto_interval(benchmark):
    benchmark.group = f"NIS basis='auto' + 90% interval, N = {N}, delta = {DELTA}, n_boot = {B}"
    benchmark.extra_info.update(impl=f"pyprog ({pyprog.backend()})", role="candidate")
    benchmark.extra_info["target_seconds"] = 0.1
    y = drifting()
    f = benchmark(pyprog.nis_forecast, y, DELTA, "auto", alpha=0.1, n_boot=B, seed=0)
    assert f.low <= f.value <= f.high
    zeta = parse_forecaster(f.model).weights(N, DELTA)
    assert f.value == pytest.approx(zeta @ y)


def bench_auto_select_nwis(benchmark):
    """What Pro-WLS would pay per update: select on (G, λ) of 1000 episodes (no interval)."""
    benchmark.group = f"select_forecaster, NWIS, N = {N}, delta = {DELTA}"
    benchmark.extra_info.update(impl=f"pyprog ({pyprog.backend()})", role="candidate")
    rng = np.random.default_rng(0)
    G, lam = drifting(), rng.exponential(1.0, N)
    sel = benchmark(pyprog.select_forecaster, G, DELTA, lam)
    assert sel.model in sel.scores
