"""Regret of whole runs: the compiled update against the Python loop, across seeds.

Run: ``python bench/update_equivalence.py --seeds 8 --out bench/results/update_equivalence.json``.

For each case (NS-Reco Pro-WLS, NS-Reacher Pro-OLS, NS-Diabetes Pro-WLS; speed 2) every
seed is run twice, once with each path, and the regrets are compared by an equivalence test
fixed before the data: a paired TOST (two one-sided t-tests on the per-seed differences,
n − 1 degrees of freedom, alpha 0.05 each) with the margin ±5 % of the Python path's mean
regret; equivalence holds when both one-sided p-values are below alpha. Differences that are
exactly 0 on every seed (the same returns bit for bit) make the test degenerate: they are
reported as "identical", which is equivalence with any margin. NS-Reacher and NS-Diabetes
have no exact regret; there the statistic is the negated total return, which is the regret
against any reference shared by both paths up to that reference's constant (so the
differences, and the test, are the regret's). The largest per-seed difference is reported too.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
from scipy import stats

from pyprog.learn import learners
from pyprog.runner.loop import run

CASES = [("reco", "pro-wls", 1000), ("reacher", "pro-ols", 200), ("diabetes", "pro-wls", 200)]
MARGIN = 0.05  # of the Python path's mean regret


def _regrets(env: str, algo: str, episodes: int, seeds: int, compiled: bool) -> np.ndarray:
    original = learners.Learner._compiled_available
    if not compiled:
        learners.Learner._compiled_available = lambda self: False
    try:
        out = []
        for s in range(seeds):
            out.append(regret_statistic(run(env, algo, speed=2, seed=s, episodes=episodes)))
        return np.array(out)
    finally:
        learners.Learner._compiled_available = original


ALPHA = 0.05


def regret_statistic(result) -> float:
    """A run's regret, or its negated total return where the environment has no exact regret
    (the regret up to a constant that both runs of a seed share)."""
    return float(-result.returns.sum() if result.regret is None else result.regret)


def report(out: dict, path: str | None) -> None:
    """Print the study's JSON and write it to ``path`` when given."""
    text = json.dumps(out, indent=2)
    print(text)
    if path:
        with open(path, "w") as fh:
            fh.write(text + "\n")


def paired_tost(a: np.ndarray, b: np.ndarray, margin: float) -> tuple[str, float]:
    """Paired TOST of ``|mean(a − b)| < margin``: the verdict and its p-value (the larger
    one-sided p; 0 when the differences are all exactly 0)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not np.any(d):
        return "identical", 0.0
    n = len(d)
    se = d.std(ddof=1) / np.sqrt(n)
    if se == 0.0:  # a constant non-zero difference
        return ("equivalent" if abs(d[0]) < margin else "not equivalent"), 0.0
    lower = stats.t.sf((d.mean() + margin) / se, n - 1)  # H0: mean d <= −margin
    upper = stats.t.cdf((d.mean() - margin) / se, n - 1)  # H0: mean d >= margin
    p = float(max(lower, upper))
    return ("equivalent" if p < ALPHA else "inconclusive"), p


def study(seeds: int = 8, cases=CASES) -> dict:
    """Run every case with both paths; the verdict and the per-case numbers."""
    rows = []
    for env, algo, episodes in cases:
        start = time.perf_counter()
        fast = _regrets(env, algo, episodes, seeds, True)
        slow = _regrets(env, algo, episodes, seeds, False)
        margin = MARGIN * abs(float(slow.mean()))
        verdict, p = paired_tost(fast, slow, margin)
        rows.append(
            {
                "case": f"{env} {algo} speed 2, {episodes} episodes",
                "compiled_mean_regret": float(fast.mean()),
                "python_mean_regret": float(slow.mean()),
                "max_abs_seed_difference": float(np.abs(fast - slow).max()),
                "margin": margin,
                "verdict": verdict,
                "p_value": p,
                "seconds": time.perf_counter() - start,
            }
        )
    test = (
        f"paired TOST across {seeds} seeds, margin ±{MARGIN:.0%} of the Python path's mean "
        f"regret, alpha {ALPHA}"
    )
    return {"seeds": seeds, "test": test, "machine": platform.platform(), "cases": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    report(study(args.seeds), args.out)


if __name__ == "__main__":
    main()
