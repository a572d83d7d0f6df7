"""Does ``basis="auto"`` remove the need to tune d?  Pro-OLS / Pro-WLS regret, across seeds.

Two settings of the same learner, run on the same seeds (so the same drift and noise):

* NS-Reco, speeds 0-4: the authors' tuned setting (``hyper="paper"``: their basis and ``d``
  per algorithm and speed, found by a 2000-setting search) against the same setting with
  ``basis="auto"`` (every other hyper-parameter unchanged, ``select_every=10``);
* a drifting 4-armed bandit nobody tuned (arm means ``sin(2πk/150 + a)``, reward noise 0.5,
  one step per episode): fixed Fourier bases with d = 3, 5, 9, 13 against ``basis="auto"``.

The test, fixed before the runs: non-inferiority of auto with a margin of 20 % of the
reference's mean regret, a one-sided Welch t-test of ``mean_auto − mean_ref < 0.2·mean_ref``
per cell across seeds, Holm's correction over the cells of a table, alpha = 0.05
(:func:`pyprog.stats.verdicts.welch_p`, :func:`~pyprog.stats.verdicts.holm`); beside it
the two-sided Welch p-value of a difference.

    python bench/auto_basis.py run bench/results/auto_basis/runs.json --seeds 10 --jobs 2
    python bench/auto_basis.py table bench/results/auto_basis/runs.json > table.md
    python bench/auto_basis.py paired BEFORE.json AFTER.json   # two versions of auto, same seeds
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import pyprog
from pyprog.learn.hyperparams import Hyper, paper_hyper
from pyprog.stats.summary import mean_se
from pyprog.stats.verdicts import holm, welch_p

MARGIN = 0.2
RECO_SPEEDS = (0, 1, 2, 3, 4)
BANDIT_D = (3, 5, 9, 13)
PRO = ("pro-ols", "pro-wls")
#: the bandit's setting (not tuned: reco's middle values)
BANDIT_HYPER = Hyper(lr=0.01, delta=1, inner_steps=30, entropy_lambda=0.01, clip=10.0)


class SineBandit(gym.Env):
    """Four arms with means ``sin(2πk/period + a)``, a = 0..3, at episode k; noise N(0, 0.5²)."""

    horizon = 1

    def __init__(self, period: float = 150.0, noise: float = 0.5) -> None:
        self.action_space = spaces.Discrete(4)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float64)
        self.period, self.noise, self.k = float(period), float(noise), 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0 if seed is not None else self.k + 1
        return np.ones(1), {}

    def step(self, action):
        mu = np.sin(2 * np.pi * self.k / self.period + np.arange(4))
        reward = float(mu[action] + self.noise * self.np_random.standard_normal())
        info = {"expected_reward": float(mu[action]), "best_expected_reward": float(mu.max())}
        return np.ones(1), reward, True, False, info


def tasks(seeds: int) -> list[dict]:
    out = []
    for algo in PRO:
        for speed in RECO_SPEEDS:
            tuned = paper_hyper("reco", algo, speed)
            for name, h in (("tuned", tuned), ("auto", tuned.replace(basis="auto"))):
                for seed in range(seeds):
                    out.append(
                        dict(
                            env="reco",
                            algo=algo,
                            speed=speed,
                            setting=name,
                            hyper=h.to_dict(),
                            seed=seed,
                        )
                    )
        for name, h in [(f"fourier(d={d})", BANDIT_HYPER.replace(d=d)) for d in BANDIT_D] + [
            ("auto", BANDIT_HYPER.replace(basis="auto"))
        ]:
            for seed in range(seeds):
                out.append(
                    dict(
                        env="bandit",
                        algo=algo,
                        speed=None,
                        setting=name,
                        hyper=h.to_dict(),
                        seed=seed,
                    )
                )
    return out


def one(task: dict) -> dict:
    env = SineBandit() if task["env"] == "bandit" else "reco"
    start = time.perf_counter()
    r = pyprog.run(
        env,
        task["algo"],
        speed=task["speed"],
        seed=task["seed"],
        hyper=task["hyper"],
        episodes=1000,
    )
    return {
        **task,
        "regret": float(r.regret),
        "seconds": time.perf_counter() - start,
        "updates": r.updates,
        "skipped_updates": r.skipped_updates,
    }


def run(path: str, seeds: int, jobs: int) -> None:
    from joblib import Parallel, delayed

    todo = tasks(seeds)
    print(f"{len(todo)} runs on {jobs} processes", file=sys.stderr)
    rows = Parallel(n_jobs=jobs, verbose=5)(delayed(one)(t) for t in todo)
    with open(path, "w") as f:
        json.dump({"seeds": seeds, "episodes": 1000, "runs": rows}, f, indent=1)


def table(path: str) -> str:
    rows = json.load(open(path))["runs"]
    group: dict = {}
    for r in rows:
        group.setdefault((r["env"], r["algo"], r["speed"], r["setting"]), []).append(r)
    lines = []
    for env, refs in (("reco", ["tuned"]), ("bandit", [f"fourier(d={d})" for d in BANDIT_D])):
        cells, head = [], ["algo", "speed" if env == "reco" else "fixed basis"]
        for algo in PRO:
            speeds = RECO_SPEEDS if env == "reco" else [None]
            for speed in speeds:
                auto = group[(env, algo, speed, "auto")]
                a_m, a_se = mean_se([r["regret"] for r in auto])
                a_t = np.mean([r["seconds"] for r in auto])
                for ref in refs:
                    b = group[(env, algo, speed, ref)]
                    b_m, b_se = mean_se([r["regret"] for r in b])
                    ga = {"mean": a_m, "se": a_se, "seeds": len(auto)}
                    gb = {"mean": b_m, "se": b_se, "seeds": len(b)}
                    p_ni = welch_p(ga, gb, MARGIN * abs(b_m), "less")
                    p_two = min(1.0, 2 * min(welch_p(ga, gb), welch_p(ga, gb, 0, "greater")))
                    b_t = np.mean([r["seconds"] for r in b])
                    cells.append(
                        [
                            algo,
                            speed if env == "reco" else ref,
                            f"{b_m:.1f} ± {b_se:.1f}",
                            f"{a_m:.1f} ± {a_se:.1f}",
                            p_ni,
                            f"{p_two:.2g}",
                            f"{a_t / b_t:.1f}x",
                        ]
                    )
        adj = holm([c[4] for c in cells])
        title = (
            "NS-Reco: the authors' tuned basis and d"
            if env == "reco"
            else ("drifting 4-armed bandit: fixed Fourier d")
        )
        lines.append(
            f'**{title} vs `basis="auto"`** (regret, mean ± s.e. over '
            f"{len(auto)} seeds, 1000 episodes)\n"
        )
        lines.append(
            f"| {' | '.join(head)} | reference | auto | non-inferior (Holm p) "
            "| difference (p, two-sided) | time auto / ref |"
        )
        lines.append("|" + "---|" * 7)
        for c, p in zip(cells, adj, strict=True):
            verdict = "yes" if p < 0.05 else "not shown"
            lines.append(
                f"| {c[0]} | {c[1]} | {c[2]} | {c[3]} | {verdict} ({p:.2g}) | {c[5]} | {c[6]} |"
            )
        lines.append("")
    lines.append(
        f"Non-inferiority: one-sided Welch t-test of mean_auto − mean_ref < "
        f"{MARGIN:g}·mean_ref per row, Holm's correction over each table's rows, "
        "alpha = 0.05."
    )
    return "\n".join(lines)


def paired(before: str, after: str) -> str:
    """Two versions of ``basis="auto"`` on the same seeds: per cell, the mean regrets and the
    paired t-test; over all auto runs, the Wilcoxon signed-rank test of the relative changes
    ``(after − before) / mean(before of the cell)``."""
    import scipy.stats

    def autos(path):
        rows = json.load(open(path))["runs"]
        return {
            (r["env"], r["algo"], r["speed"], r["seed"]): r["regret"]
            for r in rows
            if r["setting"] == "auto"
        }

    a, b = autos(before), autos(after)
    if a.keys() != b.keys():
        raise SystemExit("the two files do not hold the same auto runs (cells and seeds)")
    lines = ["| env | algo | speed | before | after | paired t p |", "|---|---|---|---|---|---|"]
    changes = []
    for cell in sorted({k[:3] for k in a}, key=str):
        keys = sorted(k for k in a if k[:3] == cell)
        x, y = np.array([a[k] for k in keys]), np.array([b[k] for k in keys])
        p = scipy.stats.ttest_rel(y, x).pvalue if np.any(x != y) else 1.0
        speed = "" if cell[2] is None else cell[2]
        (mx, sx), (my, sy) = mean_se(x), mean_se(y)
        lines.append(
            f"| {cell[0]} | {cell[1]} | {speed} | {mx:.1f} ± {sx:.1f} | {my:.1f} ± {sy:.1f} "
            f"| {p:.2g} |"
        )
        changes += list((y - x) / x.mean())
    w = scipy.stats.wilcoxon(changes).pvalue
    lines.append("")
    lines.append(
        f"All {len(changes)} auto runs: mean relative change {np.mean(changes):+.1%}, "
        f"Wilcoxon signed-rank p = {w:.2g}."
    )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("path")
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--jobs", type=int, default=1)
    t = sub.add_parser("table")
    t.add_argument("path")
    c = sub.add_parser("paired")
    c.add_argument("before")
    c.add_argument("after")
    a = p.parse_args()
    if a.cmd == "run":
        run(a.path, a.seeds, a.jobs)
    elif a.cmd == "paired":
        print(paired(a.before, a.after))
    else:
        print(table(a.path))


if __name__ == "__main__":
    main()
