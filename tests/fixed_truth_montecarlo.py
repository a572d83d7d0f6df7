"""Coverage of ``basis="auto"`` at fixed truths (issue 32): one drift, one phase, per cell.

Coverage is a property of each fixed truth: a user has one log with one phase, so an
interval that covers 90 % on average over random phases may cover far less at the phase
the user has. This grid fixes the drift completely in each cell:

* sinusoids of periods 60, 150 and 600 episodes whose phase at the log's end (episode N)
  is 0, 1/8, ..., 7/8 of a period (phase 0: rising through its mean, where the drift is
  steepest);
* steps from −1 to +1 at 1/3, 1/2, 2/3 and 5/6 of the log;
* a linear trend from −1 to +1 over the log; a smooth step ``tanh((t − 0.9N)/15)``, still
  rising at the log's end; no drift at all.

The logs are :mod:`selection_montecarlo`'s 4-armed bandit (reward noise sd 0.5, a fixed
softmax behaviour policy, π plays arm 0 w.p. 0.71), N = 300 episodes, arm k's mean
``a_k + s(t) b_k`` for the drift s. Each cell: ``reps`` logs at δ = 1 or 10, NIS and NWIS,
nominal 90 % intervals.

``python tests/fixed_truth_montecarlo.py [REPS [SEED [JOBS]]]`` prints the README's table
(worst cell and mean per estimator and δ, and every cell below 0.85).
"""

from __future__ import annotations

import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from selection_montecarlo import BETA, PI, SD, A, B

from pyprog import ForecastError, nis_forecast, nwis_forecast

N = 300
DELTAS = (1, 10)
ESTIMATORS = ("nis", "nwis")
#: The 8 phases of a sinusoid at the log's end, in periods.
PHASES = tuple(k / 8 for k in range(8))
PERIODS = (60, 150, 600)
STEP_AT = ((1, 3), (1, 2), (2, 3), (5, 6))


def _sinusoid(period: int, phase: float):
    return lambda t: np.sin(2 * np.pi * ((t - N) / period + phase))


def _step(num: int, den: int):
    return lambda t: np.where(t > N * num / den, 1.0, -1.0)


#: Drifts s(t) of episode t = 1..N+δ, each fixed (no random phase or place).
TRUTHS = {
    **{
        f"sin P={p} end phase {k}/8": _sinusoid(p, k / 8)
        for p in PERIODS
        for k in range(len(PHASES))
    },
    **{f"step at {a}/{b}": _step(a, b) for a, b in STEP_AT},
    "linear trend": lambda t: -1.0 + 2.0 * t / N,
    "smooth step at 0.9N": lambda t: np.tanh((t - 0.9 * N) / 15.0),
    "stationary": lambda t: np.zeros_like(t, dtype=np.float64),
}


def simulate(rng, drift, delta: int, n: int = N):
    """``(J_hat, ratios, returns, truth)`` of one log of the drifting bandit (module doc)."""
    t = np.arange(1, n + delta + 1, dtype=np.float64)
    mu = A[None, :] + drift(t)[:, None] * B[None, :]
    truth = float((mu[n:] @ PI).mean())
    arms = rng.choice(4, size=n, p=BETA)
    r = mu[np.arange(n), arms] + rng.normal(0.0, SD, n)
    lam = PI[arms] / BETA[arms]
    return lam * r, lam, r, truth


def cell(name: str, delta: int, reps: int, seed: int = 0, alpha: float = 0.1, n_boot: int = 300):
    """One truth at one δ: per estimator, coverage, count, widths (list) and errors (list)."""
    drift = TRUTHS[name]
    # one stream per cell, so cells can run in any order or process
    rng = np.random.default_rng([seed, delta, list(TRUTHS).index(name)])
    out = {e: {"cover": 0, "count": 0, "width": [], "error": []} for e in ESTIMATORS}
    for r in range(reps):
        J, lam, G, truth = simulate(rng, drift, delta)
        for est in ESTIMATORS:
            try:
                if est == "nis":
                    f = nis_forecast(J, delta, "auto", alpha=alpha, n_boot=n_boot, random_state=r)
                else:
                    f = nwis_forecast(
                        G, lam, delta, "auto", alpha=alpha, n_boot=n_boot, random_state=r
                    )
            except ForecastError:
                continue
            o = out[est]
            o["count"] += 1
            o["cover"] += bool(f.low <= truth <= f.high)
            o["width"].append(f.high - f.low)
            o["error"].append(f.value - truth)
    return name, delta, out


def misses(name: str, delta: int, reps: int, seed: int = 0, alpha: float = 0.1) -> dict:
    """What the NIS logs of one cell that the interval misses look like (``cell``'s logs).

    Per log: covered or not, whether :func:`~pyprog.forecast.misspecification.trend_misfit` fires on
    the overall mean's residuals, and ``z``, the log's projection on the true drift's shape
    (less its mean, unit norm) in noise standard errors: how far a test that knew the shape
    would see the drift. Returns the arrays and the counts the auto-evidence guide quotes.
    """
    from pyprog.forecast.misspecification import noise_variance, trend_misfit

    rng = np.random.default_rng([seed, delta, list(TRUTHS).index(name)])
    shape = TRUTHS[name](np.arange(1, N + 1, dtype=np.float64))
    shape = shape - shape.mean()
    norm = float(np.linalg.norm(shape))
    covered, fired, z = [], [], []
    for r in range(reps):
        J, _, _, truth = simulate(rng, TRUTHS[name], delta)
        f = nis_forecast(J, delta, "auto", alpha=alpha, n_boot=300, random_state=r)
        covered.append(f.low <= truth <= f.high)
        fired.append(trend_misfit(J - J.mean()) > 0)
        z.append(float(shape @ J) / norm / math.sqrt(noise_variance(J)) if norm > 0 else 0.0)
    covered, fired, z = np.array(covered), np.array(fired), np.array(z)
    return {
        "covered": covered,
        "fired": fired,
        "z": z,
        "misses": int((~covered).sum()),
        "misses_fired": int((~covered & fired).sum()),
        "misses_seen_by_oracle": int((~covered & (z > 1.645)).sum()),
    }


def grid(reps: int, seed: int = 0, jobs: int = 1, names=None, deltas=DELTAS):
    """Every cell of the grid: ``{(name, delta, estimator): summary}``."""
    names = list(TRUTHS) if names is None else list(names)
    tasks = [(name, delta, reps, seed) for delta in deltas for name in names]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(cell, *zip(*tasks, strict=True)))
    else:
        results = [cell(*task) for task in tasks]
    table = {}
    for name, delta, out in results:
        for est, o in out.items():
            count = max(o["count"], 1)
            table[name, delta, est] = {
                "coverage": o["cover"] / count,
                "count": o["count"],
                "se": math.sqrt(0.09 / count),
                "median_width": float(np.median(o["width"])) if o["width"] else math.nan,
                "rmse": float(np.sqrt(np.mean(np.square(o["error"])))) if o["error"] else math.nan,
            }
    return table


def summary(table) -> list[str]:
    """Markdown: worst cell and mean coverage per estimator and δ, then the cells below 0.85."""
    lines = [
        "| est. | δ | cells | worst cell (coverage) | mean coverage | stationary median width |",
        "|---|---|---|---|---|---|",
    ]
    for est in ESTIMATORS:
        for delta in sorted({k[1] for k in table}):
            rows = {k[0]: v for k, v in table.items() if k[1] == delta and k[2] == est}
            if not rows:
                continue
            worst = min(rows, key=lambda k: rows[k]["coverage"])
            mean = float(np.mean([v["coverage"] for v in rows.values()]))
            width = rows.get("stationary", {}).get("median_width", math.nan)
            lines.append(
                f"| {est.upper()} | {delta} | {len(rows)} | {worst} "
                f"({rows[worst]['coverage']:.3f} ± {rows[worst]['se']:.3f}) | {mean:.3f} "
                f"| {width:.3f} |"
            )
    low = sorted(
        ((k, v) for k, v in table.items() if v["coverage"] < 0.85), key=lambda kv: kv[1]["coverage"]
    )
    if low:
        lines.append("")
        lines.append(
            "Cells below 0.85: "
            + "; ".join(f"{k[0]} δ={k[1]} {k[2].upper()} {v['coverage']:.3f}" for k, v in low)
        )
    return lines


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    start = time.perf_counter()
    table = grid(reps, seed, jobs)
    print("\n".join(summary(table)))
    print(f"<!-- {reps} logs per cell, seed {seed}: {time.perf_counter() - start:.0f} s -->")
