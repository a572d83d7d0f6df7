"""Where float32's extra regret on NS-Reco Pro-WLS at speed 1 comes from (issue 20, item 2).

The 100-seed TOST (``bench/dtype_equivalence.py``) found float32's mean regret 3.55 higher.
This script re-runs the same pairs (paper settings, 1000 episodes, seeds 0..N−1) and asks
whether the typical run moved or a few runs did:

* a paired t-test (the mean), a Wilcoxon signed-rank test and a sign test (the typical run);
* how many runs of each precision pass a regret threshold (the tail);
* per run, the first episode where the two precisions' returns differ;
* for the float32 runs in the tail, the regret per 100 episodes.

* per run and precision, the largest gap between the policy's top two logits over the run
  and the number of updates it spent above 15 (where π's top probability is within
  3·10⁻⁷ of 1: the policy has saturated on one item).

Run: ``python bench/dtype_tail.py [--seeds 100] [--out FILE.json]`` (about 4 min on one core).
"""

from __future__ import annotations

import argparse
import contextlib
import json

import numpy as np
import scipy.stats

import pyprog
from pyprog.runner import loop
from pyprog.utils.machine import cpu_model

THRESHOLD = 50.0


SATURATED = 15.0


@contextlib.contextmanager
def logit_gaps():
    """Record, after every update of the run inside, the gap between the policy's top two
    logits ``z = W s + b`` (NS-Reco's observation is the constant s = 1)."""
    gaps: list[float] = []
    make = loop.make_learner

    def watched(*args, **kwargs):
        learner = make(*args, **kwargs)
        update = learner.update

        def update_and_record():
            out = update()
            policy = learner.policy
            top = np.sort(policy.W @ np.ones(policy.obs_dim) + policy.b)[-2:]
            gaps.append(float(top[1] - top[0]))
            return out

        learner.update = update_and_record
        return learner

    loop.make_learner = watched
    try:
        yield gaps
    finally:
        loop.make_learner = make


def saturation(gaps: list[float]) -> dict:
    g = np.asarray(gaps)
    return {
        "max_logit_gap": round(float(g.max()), 3),
        "updates_saturated": int((g > SATURATED).sum()),
    }


def pair(seed: int) -> dict:
    with logit_gaps() as gaps64:
        r64 = pyprog.run("reco", "pro-wls", speed=1, seed=seed, episodes=1000)
    single = {**r64.hyper, "dtype": "float32"}
    with logit_gaps() as gaps32:
        r32 = pyprog.run("reco", "pro-wls", speed=1, seed=seed, episodes=1000, hyper=single)
    differ = np.nonzero(np.asarray(r64.returns) != np.asarray(r32.returns))[0]
    blocks = (np.asarray(r32.optimal) - np.asarray(r32.expected)).reshape(10, 100).sum(axis=1)
    return {
        "seed": seed,
        "regret_float64": r64.regret,
        "regret_float32": r32.regret,
        "first_differing_episode": int(differ[0]) if len(differ) else None,
        "float32_regret_per_100": [round(float(b), 3) for b in blocks],
        "float64": saturation(gaps64),
        "float32": saturation(gaps32),
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
    for dtype in ("float64", "float32"):
        sat = [r for r in runs if r[dtype]["max_logit_gap"] > SATURATED]
        summary[f"{dtype}_saturated_runs"] = len(sat)
        summary[f"{dtype}_saturated_regret_above_threshold"] = sum(
            r[f"regret_{dtype}"] > THRESHOLD for r in sat
        )
        summary[f"{dtype}_saturated_updates_max"] = max(
            (r[dtype]["updates_saturated"] for r in sat), default=0
        )
    print(json.dumps({k: v for k, v in summary.items() if k != "float32_tail_runs"}, indent=1))
    for r in summary["float32_tail_runs"]:
        print(r["seed"], round(r["regret_float32"], 1), r["float32_regret_per_100"][-4:])
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({**summary, "runs": runs}, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
