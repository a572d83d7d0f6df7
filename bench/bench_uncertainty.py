"""Forecast intervals and log reading, side by side with plain implementations (issue 10).

Run: ``pytest bench/bench_uncertainty.py --benchmark-columns=median,iqr,rounds``.
Targets: a NIS forecast with its 95 % wild-bootstrap interval at N = 1000, d = 5,
n_boot = 2000 well under 50 ms; reading a 10^6-row log in under 2 s.
"""

import csv

import numpy as np
import pytest

import pyprog
from pyprog._ext import fallback
from pyprog.forecast.bases import forecast_design
from pyprog.logs.episodes_csv import read_logs

compiled = pytest.importorskip("pyprog._ext._kernels", reason="compiled kernels not built")

N, D, B = 1000, 5, 2000


def trend(n=N, seed=0):
    rng = np.random.default_rng(seed)
    x = np.arange(1, n + 1) / n
    return 1.0 + np.cos(np.pi * x) + rng.normal(0, 0.3 + x, n)


def plain_numpy_interval(y, delta, basis, d, alpha, n_boot, seed):
    """The wild-bootstrap-t interval as one would write it in NumPy: refit B pseudo-samples."""
    phi, phi_star = forecast_design(len(y), delta, basis, d)
    phi = np.ascontiguousarray(phi)
    pinv = np.linalg.pinv(phi)  # (k, N): w = pinv @ y
    zeta = phi_star @ pinv
    h = np.einsum("ij,ji->i", phi, pinv)
    fitted = phi @ (pinv @ y)
    f = phi_star @ (pinv @ y)
    e = (y - fitted) / np.sqrt(1 - h)
    se = np.sqrt(np.sum(zeta**2 * e**2))
    sigma = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_boot, len(y)))
    y_star = fitted + sigma * e  # (B, N)
    w_star = y_star @ pinv.T  # (B, k)
    resid = (y_star - w_star @ phi.T) / np.sqrt(1 - h)
    t = (w_star @ phi_star - f) / np.sqrt((resid**2) @ zeta**2)
    upper, lower = np.quantile(t, [1 - alpha / 2, alpha / 2])
    return f, f - se * upper, f - se * lower


def bench_interval_plain_numpy(benchmark):
    benchmark.group = f"NIS forecast + 95% interval, N = {N}, d = {D}, n_boot = {B}"
    benchmark.extra_info.update(impl="plain NumPy", role="baseline")
    f, low, high = benchmark(plain_numpy_interval, trend(), 5, "fourier", D, 0.05, B, 0)
    assert low < f < high


def bench_interval_pyprog(benchmark):
    benchmark.group = f"NIS forecast + 95% interval, N = {N}, d = {D}, n_boot = {B}"
    benchmark.extra_info.update(impl=f"pyprog ({pyprog.backend()})", role="candidate")
    benchmark.extra_info["target_seconds"] = 0.05
    y = trend()
    forecast = benchmark(
        pyprog.nis_forecast, y, 5, "fourier", D, alpha=0.05, n_boot=B, random_state=0
    )
    assert forecast.low < forecast.value < forecast.high
    # same interval as the plain implementation's up to the bootstrap's own noise
    _, low, high = plain_numpy_interval(y, 5, "fourier", D, 0.05, B, 0)
    assert abs(forecast.low - low) < 0.1 * (high - low)


def bootstrap_args(n=N, k=D, b=B, seed=0):
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
    P, K = rng.normal(size=(n, k)), rng.normal(size=(n, k))
    return signs, rng.normal(size=n), rng.normal(size=n), P, K, rng.random(n)


@pytest.mark.parametrize(
    "impl, K, role", [("NumPy + BLAS", fallback, "baseline"), ("Cython", compiled, "candidate")]
)
def bench_wild_bootstrap_t(benchmark, impl, K, role):
    benchmark.group = f"wild_bootstrap_t kernel, N = {N}, k = {D}, B = {B}"
    benchmark.extra_info.update(impl=impl, role=role)
    t = benchmark(K.wild_bootstrap_t, *bootstrap_args())
    assert t.shape == (B,)


@pytest.fixture(scope="module")
def million_rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("logs") / "logs.csv"
    rng = np.random.default_rng(0)
    n = 10**6
    table = np.column_stack(
        [
            np.repeat(np.arange(n // 10), 10),
            np.tile(np.arange(10), n // 10),
            rng.normal(size=n),
            np.log(rng.uniform(0.1, 1, n)),
            np.log(rng.uniform(0.1, 1, n)),
        ]
    )
    with open(path, "w") as fh:
        fh.write("episode,step,reward,log_pi,log_beta\n")
        np.savetxt(fh, table, fmt=["%d", "%d", "%.6g", "%.6g", "%.6g"], delimiter=",")
    return path


def csv_module_columns(path):
    """Read the five columns with the csv module and float(), row by row."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        index = [header.index(c) for c in ("episode", "step", "reward", "log_pi", "log_beta")]
        return np.array([[float(row[i]) for i in index] for row in reader])


def bench_read_logs_csv_module(benchmark, million_rows):
    benchmark.group = "read a 10^6-row log (100,000 episodes of 10 steps)"
    benchmark.extra_info.update(impl="csv module", role="baseline")
    data = benchmark.pedantic(csv_module_columns, (million_rows,), rounds=2, iterations=1)
    assert data.shape == (10**6, 5)


def bench_read_logs(benchmark, million_rows):
    benchmark.group = "read a 10^6-row log (100,000 episodes of 10 steps)"
    benchmark.extra_info.update(impl="read_logs", role="candidate", target_seconds=2.0)
    logs = benchmark.pedantic(read_logs, (million_rows,), rounds=3, iterations=1)
    assert logs.episodes == 100_000 and logs.mask.shape == (100_000, 10)
