"""Regret of whole runs: float32 policies against float64, across seeds.

Run: ``python bench/dtype_equivalence.py --seeds 12 --out bench/results/dtype_equivalence.json``
(and ``--seeds 100 --case reco,pro-wls,2,1000`` for NS-Reco with the power its spread needs).

For each case (NS-Reco Pro-WLS and NS-Reacher Pro-OLS at speed 2 with the authors'
settings; NS-Reco also at speed 1) every seed runs twice, with ``Hyper(dtype="float32")``
and with the default float64, and the regrets are compared by the test of
``update_equivalence.py`` (fixed before the data): a paired TOST across seeds, margin ±5 %
of the float64 mean regret, alpha 0.05 per side. Unlike the compiled-vs-Python study, the
two runs of a seed are not the same run to rounding: a float32 θ differs from the float64
one in the 7th digit, so sooner or later an action drawn from π differs and the episodes
part; the pairing still shares the seed's environment drift and initial weights.
NS-Reacher has no exact regret: the statistic is the negated total return (the regret up
to a constant shared by both). NS-Reacher runs 300 episodes to keep the study modest.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from update_equivalence import ALPHA, MARGIN, paired_tost, regret_statistic, report

from pyprog.learn.hyperparams import paper_hyper
from pyprog.runner.loop import run

CASES = [("reco", "pro-wls", 2, 1000), ("reco", "pro-wls", 1, 1000), ("reacher", "pro-ols", 2, 300)]


def _regrets(env: str, algo: str, speed: int, episodes: int, seeds: int, dtype: str):
    hyper = paper_hyper(env, algo, speed).replace(dtype=dtype)
    out, start = [], time.perf_counter()
    for s in range(seeds):
        out.append(
            regret_statistic(run(env, algo, speed=speed, seed=s, episodes=episodes, hyper=hyper))
        )
    return np.array(out), time.perf_counter() - start


def study(seeds: int = 12, cases=CASES) -> dict:
    """Run every case in both precisions; the verdict and the per-case numbers."""
    rows = []
    for env, algo, speed, episodes in cases:
        f32, t32 = _regrets(env, algo, speed, episodes, seeds, "float32")
        f64, t64 = _regrets(env, algo, speed, episodes, seeds, "float64")
        margin = MARGIN * abs(float(f64.mean()))
        verdict, p = paired_tost(f32, f64, margin)
        rows.append(
            {
                "case": f"{env} {algo} speed {speed}, {episodes} episodes",
                "float32_mean_regret": float(f32.mean()),
                "float64_mean_regret": float(f64.mean()),
                "mean_difference": float((f32 - f64).mean()),
                "sd_difference": float((f32 - f64).std(ddof=1)),
                "margin": margin,
                "verdict": verdict,
                "p_value": p,
                "float32_seconds": t32,
                "float64_seconds": t64,
            }
        )
    test = (
        f"paired TOST across {seeds} seeds, margin ±{MARGIN:.0%} of the float64 mean regret, "
        f"alpha {ALPHA}"
    )
    return {"seeds": seeds, "test": test, "machine": platform.platform(), "cases": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--case", default=None, help="only this case, as 'env,algo,speed,episodes' (default: all)"
    )
    args = parser.parse_args()
    cases = CASES
    if args.case:
        env, algo, speed, episodes = args.case.split(",")
        cases = [(env, algo, int(speed), int(episodes))]
    report(study(args.seeds, cases), args.out)


if __name__ == "__main__":
    main()
