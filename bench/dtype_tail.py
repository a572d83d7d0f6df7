"""Where float32's extra regret on NS-Reco Pro-WLS at speed 1 comes from (issue 20, item 2).

The 100-seed TOST (``bench/dtype_equivalence.py``) found float32's mean regret 3.55 higher.
This script re-runs the same pairs (paper settings, 1000 episodes, seeds 0..N−1) and asks
whether the typical run moved or a few runs did:

* a paired t-test (the mean), a Wilcoxon signed-rank test and a sign test (the typical run);
* how many runs of each precision pass a regret threshold (the tail);
* per run, the first episode where the two precisions' returns differ;
* for the float32 runs in the tail, the regret per 100 episodes.

Run: ``python bench/dtype_tail.py [--seeds 100] [--out FILE.json]`` (about 6 min on one core).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import scipy.stats

import pyprog
from pyprog.utils.machine import cpu_model

THRESHOLD = 50.0


def pair(seed: int) -> dict:
    r64 = pyprog.run("reco", "pro-wls", speed=1, seed=seed, episodes=1000)
    single = {**r64.hyper, "dtype": "float32"}
    r32 = pyprog.run("reco", "pro-wls", speed=1, seed=seed, episodes=1000, hyper=single)
    differ = np.nonzero(np.asarray(r64.returns) != np.asarray(r32.returns))[0]
    blocks = (np.asarray(r32.optimal) - np.asarray(r32.expected)).reshape(10, 100).sum(axis=1)
    return {
        "seed": seed,
        "regret_float64": r64.regret,
        "regret_float32": r32.regret,
        "first_differing_episode": int(differ[0]) if len(differ) else None,
        "float32_regret_per_100": [round(float(b), 3) for b in blocks],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    runs = [pair(s) for s in range(args.seeds)]
    a = np.array([r["regret_float64"] for r in runs])
    b = np.array([r["regret_float32"] for r in runs])
    d = b - a
    first = [r["first_differing_episode"] for r in runs if r["first_differing_episode"] is not None]
    tail = [[int((b > THRESHOLD).sum()), len(b) - int((b > THRESHOLD).sum())],
            [int((a > THRESHOLD).sum()), len(a) - int((a > THRESHOLD).sum())]]  # fmt: skip
    summary = {
        "case": "reco pro-wls speed 1, 1000 episodes, paper settings",
        "seeds": args.seeds,
        "machine": cpu_model(),
        "mean_float64": float(a.mean()),
        "mean_float32": float(b.mean()),
        "mean_difference": float(d.mean()),
        "sd_difference": float(d.std(ddof=1)),
        "paired_t_p": float(scipy.stats.ttest_rel(b, a).pvalue),
        "median_difference": float(np.median(d)),
        "wilcoxon_p": float(scipy.stats.wilcoxon(b, a).pvalue),
        "float32_worse": int((d > 0).sum()),
        "sign_test_p": float(scipy.stats.binomtest(int((d > 0).sum()), int((d != 0).sum())).pvalue),
        "threshold": THRESHOLD,
        "float32_above": tail[0][0],
        "float64_above": tail[1][0],
        "fisher_p": float(scipy.stats.fisher_exact(tail).pvalue),
        "first_differing_episode_median": float(np.median(first)) if first else None,
        "float32_tail_runs": [r for r in runs if r["regret_float32"] > THRESHOLD],
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "float32_tail_runs"}, indent=1))
    for r in summary["float32_tail_runs"]:
        print(r["seed"], round(r["regret_float32"], 1), r["float32_regret_per_100"][-4:])
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({**summary, "runs": runs}, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
