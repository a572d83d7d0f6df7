"""Monte Carlo of ``basis="auto"`` over drift shapes (issue 18): coverage and point error.

Off-policy logs of a 4-armed drifting bandit, one step per episode: arm k's mean at
episode t is ``μ_k(t) = a_k + s(t) b_k`` for a drift shape s, the reward noise is normal
with sd 0.5, the behaviour policy β is a fixed softmax and the evaluated policy π plays
arm 0 with probability 0.71 (the others 0.29/3 each). Per episode, ``Ĵ_i = (π/β)(a_i) r_i``
(NIS targets), ``λ_i = (π/β)(a_i)`` and ``G_i = r_i`` (NWIS). The truth is the mean of
``J(t) = Σ_k π_k μ_k(t)`` over the next δ episodes.

``python tests/selection_montecarlo.py [REPS [SEED]]`` prints the README's table (seed 2 by
default: the noise estimate was chosen on seed 1, so the table's seeds are fresh).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from pyprog import ForecastError, nis_forecast, nwis_forecast
from pyprog.forecast.selection import DEFAULT_CANDIDATES

PI = np.array([0.71, 0.29 / 3, 0.29 / 3, 0.29 / 3])
BETA = np.exp([0.3, 0.0, -0.2, 0.1]) / np.exp([0.3, 0.0, -0.2, 0.1]).sum()
A = np.array([0.5, 0.2, 0.0, 0.3])
B = np.array([1.0, -0.5, 0.7, 0.2])
SD = 0.5
N, DELTA = 300, 5


def _sin(period):
    return lambda t, u: np.sin(2 * np.pi * (t / period + u))


#: Drift shapes s(t, u): t = episode number 1..N+δ, u ~ U(0, 1) a random phase (or the
#: step's place), drawn per run so that no fixed forecaster is lucky at one phase.
SHAPES = {
    "short sinusoid (period 60)": _sin(60),
    "long sinusoid (period 600)": _sin(600),
    "sum of sinusoids": lambda t, u: (
        0.6 * np.sin(2 * np.pi * (t / 150 + u)) + 0.4 * np.sin(2 * np.pi * (t / 45 + 2 * u))
    ),
    "linear trend": lambda t, u: (-1.0 + 2.0 * t / N) * (1 if u < 0.5 else -1),
    "smooth step": lambda t, u: np.tanh((t - (0.3 + 0.6 * u) * N) / 15.0),
    "stationary": lambda t, u: np.zeros_like(t, dtype=np.float64),
}


def simulate(rng, shape, n=N, delta=DELTA, series=False):
    """``(J_hat, ratios, returns, truth)`` of one logged run, and with ``series=True`` also
    the true values ``J(t)`` of episodes 1..n+δ, shape (n+δ,) (the same draws either way)."""
    t = np.arange(1, n + delta + 1, dtype=np.float64)
    mu = A[None, :] + shape(t, rng.random())[:, None] * B[None, :]  # (n+δ, 4)
    truth = float((mu[n:] @ PI).mean())
    arms = rng.choice(4, size=n, p=BETA)
    r = mu[np.arange(n), arms] + rng.normal(0.0, SD, n)
    lam = PI[arms] / BETA[arms]
    if series:
        return lam * r, lam, r, truth, mu @ PI
    return lam * r, lam, r, truth


def run(shape, reps: int, seed: int = 0, alpha: float = 0.1, n_boot: int = 300):
    """Coverage of the auto intervals and RMSE of auto, of every fixed candidate and of
    today's default (fourier d=5), for NIS and NWIS; dict of results."""
    rng = np.random.default_rng(seed)
    out = {
        est: {"cover": 0, "count": 0, "err_auto": [], "err_default": [], "cover_default": 0}
        for est in ("nis", "nwis")
    }
    fixed = {est: {c: [] for c in DEFAULT_CANDIDATES} for est in ("nis", "nwis")}
    from pyprog.forecast.forecasters import parse_forecaster

    cands = [parse_forecaster(c) for c in DEFAULT_CANDIDATES]
    for r in range(reps):
        J, lam, G, truth = simulate(rng, shape)
        for est in ("nis", "nwis"):
            o = out[est]
            try:
                if est == "nis":
                    f = nis_forecast(J, DELTA, "auto", alpha=alpha, n_boot=n_boot, random_state=r)
                    g = nis_forecast(
                        J, DELTA, "fourier", 5, alpha=alpha, n_boot=n_boot, random_state=r
                    )
                else:
                    f = nwis_forecast(
                        G, lam, DELTA, "auto", alpha=alpha, n_boot=n_boot, random_state=r
                    )
                    g = nwis_forecast(
                        G, lam, DELTA, "fourier", 5, alpha=alpha, n_boot=n_boot, random_state=r
                    )
            except ForecastError:
                continue
            o["count"] += 1
            o["cover"] += f.low <= truth <= f.high
            o["cover_default"] += g.low <= truth <= g.high
            o["err_auto"].append(f.value - truth)
            o["err_default"].append(g.value - truth)
            for c in cands:
                v = (c.weights(N, DELTA) @ J) if est == "nis" else c.nwis(G, lam, DELTA)[0]
                fixed[est][str(c)].append(v - truth)
    result = {}
    for est, o in out.items():
        rmse = {c: float(np.sqrt(np.mean(np.square(e)))) for c, e in fixed[est].items()}
        best = min(rmse, key=rmse.get)
        result[est] = {
            "coverage": o["cover"] / max(o["count"], 1),
            "coverage_default": o["cover_default"] / max(o["count"], 1),
            "count": o["count"],
            "rmse_auto": float(np.sqrt(np.mean(np.square(o["err_auto"])))),
            "rmse_default": float(np.sqrt(np.mean(np.square(o["err_default"])))),
            "best_fixed": best,
            "rmse_best": rmse[best],
        }
    return result


def main(reps: int, seed: int = 2) -> None:
    print(
        "| shape | est. | coverage auto | coverage fourier(d=5) | RMSE auto | "
        "best fixed (RMSE) | RMSE fourier(d=5) | auto / best |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, shape in SHAPES.items():
        start = time.perf_counter()
        res = run(shape, reps, seed=seed)
        for est, r in res.items():
            print(
                f"| {name} | {est.upper()} | {r['coverage']:.3f} | {r['coverage_default']:.3f} "
                f"| {r['rmse_auto']:.3f} | {r['best_fixed']} ({r['rmse_best']:.3f}) "
                f"| {r['rmse_default']:.3f} | {r['rmse_auto'] / r['rmse_best']:.2f} |"
            )
        print(f"<!-- {name}: {time.perf_counter() - start:.0f} s -->", file=sys.stderr)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 400, int(sys.argv[2]) if len(sys.argv) > 2 else 2
    )
