"""``basis="auto"`` with its interval on 10^6 one-step episodes (issue 35, item 9).

Run: ``OMP_NUM_THREADS=1 taskset -c 1 pytest bench/bench_long_logs.py
--benchmark-columns=median,min,rounds``.
Target: under 30 s on one core and under 1 GB of NumPy allocations (tracemalloc), NIS and
NWIS, δ = 5, 2000 bootstrap draws. Before the block-moment path
(:mod:`pyprog.forecast.blocks`) 10^5 episodes took 20-30 s and 4.4 GB, and 10^6 ran out of
memory at 18 GB after 88 s (n_boot = 1000: 2000 draws were refused).

Each benchmark runs 3 rounds (a round takes seconds), each with cold caches; the peak
traced memory of one more call is in ``extra_info``. The log: ``G_i ~ N(0, 1)`` plus one
period of a sine wave, and ratios ``λ_i ~ Exp(1)`` (seed 0).
"""

import tracemalloc

import numpy as np
import pytest

import pyprog
from pyprog.forecast import bases, forecasters

N, DELTA, B = 10**6, 5, 2000


def cold_caches():
    """Every round as a first call: no cached design or forecast weights."""
    for cached in (bases._design, forecasters._nis_weights, forecasters._ones):
        cached.cache_clear()


def long_log(n=N, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return rng.normal(0.0, 1.0, n) + np.sin(2 * np.pi * t / n), rng.exponential(1.0, n)


def peak_mib(f, *args, **kwargs) -> float:
    tracemalloc.start()
    try:
        f(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("estimator", ["nis", "nwis"])
def bench_auto_interval_one_million(benchmark, estimator):
    G, lam = long_log()
    if estimator == "nis":
        f, args = pyprog.nis_forecast, (G,)
    else:
        f, args = pyprog.nwis_forecast, (G, lam)
    kwargs = dict(alpha=0.1, n_boot=B, random_state=0)
    benchmark.group = f"basis='auto' + 90% interval, N = {N}, delta = {DELTA}, n_boot = {B}"
    peak = peak_mib(f, *args, DELTA, "auto", **kwargs)
    benchmark.extra_info.update(
        impl=f"{estimator} ({pyprog.backend()})", target_seconds=30, peak_traced_mib=peak
    )
    out = benchmark.pedantic(
        f, args=(*args, DELTA, "auto"), kwargs=kwargs, setup=cold_caches, rounds=3
    )
    assert out.low <= out.value <= out.high
    assert peak < 1024, f"{peak:.0f} MiB"
