"""Monte Carlo of :func:`pyprog.learn_for_future`: the learned policy's true value at the target.

Logs of a year of timestamped rounds (10 actions, 10 context features) from
:class:`contextual_year.YearOfRounds`, whose mean reward q(x, t, a) = xᵀθ_a + s(t) γ_a moves
every action differently with the drift s (blocks of the year, the day of the week, both,
a trend, a step, none), plus ``no_better``: every action has the same mean reward (θ = 0,
γ_a = 1, blocks of the year), so no policy beats the logging one. For each log and target
(1, 30 and 182 days after the log), every learner's policy is scored by its true value at
the target, E_x Σ_a π(a|x) q(x, t', a) over 20,000 fresh contexts (the same for every
policy: paired), relative to the logging policy's (0) and the best policy's (1) there.

Two **twins** have another truth's log but another future, so that no learner can tell
them from it: ``step_returns`` (the step's log, whose step comes back every year: two
blocks of the year) and ``blocks_persist`` (the blocks' log, whose last level then holds).
The same learned policies are scored under both futures (:data:`TWINS`): a learner that
commits to one reading of the future wins on one twin of each pair and loses on the other.

Reported per truth and size: the mean relative value of each learner, the one-sided paired
Wilcoxon signed-rank test of "Prognosticator's value is higher" against each baseline, the
90 % interval's coverage of the learned policy's true value, and, on ``no_better``, how often
the safety test deploys (at most α = 0.05 of logs if it holds its size).

Run: ``python tests/learn_montecarlo.py L N0 [n ...]`` (L logs per truth, size and target, N0
logs of the null truth per size, the sizes n, default 1,000 and 8,000; the guide's table is
``L = 4``, ``N0 = 60``, two processes, and its power check at 1,000 rounds ``12 0 1000``).
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.stats
from contextual_year import BLOCK_LEVELS, YEAR, YearOfRounds

from pyprog import learn_for_future
from pyprog.value.learning import DEFAULT_BASELINES

TRUTHS = (
    "blocks",
    "weekday",
    "blocks_weekday",
    "trend",
    "step",
    "sinusoid",
    "item_seasons",
    "stationary",
)
#: The safety test's truth: every action pays the same, so no policy beats the logging one.
NULL = "no_better"
#: Each truth's twins: the same log, another future (scored on the same policies).
TWINS = {"step": ("step_returns",), "blocks": ("blocks_persist",)}
SIZES = (1000, 8000)
AHEAD = (1.0, 30.0, 182.0)
OUT = Path(__file__).parent / "data" / "learn_mc.json"


class ItemSeasons(YearOfRounds):
    """Each action's own yearly season: q = xᵀθ_a + 0.8 sin(2πt/year + φ_a), φ_a ~ U(0, 2π)
    (a sum of seasons of different phases: no one time feature aligns them all)."""

    def __post_init__(self) -> None:
        self.phase = np.random.default_rng(self.seed + 1).uniform(0, 2 * np.pi, self.n_actions)
        super().__post_init__()

    def q(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        return x @ self.theta + 0.8 * np.sin(2 * np.pi * t[:, None] / YEAR + self.phase[None, :])


class StepReturns(YearOfRounds):
    """The step's log (−0.5, then +0.5 from half the year), and the step comes back every
    year: two blocks of the year, −0.5 in the first half."""

    def _shape(self, t: np.ndarray) -> np.ndarray:
        return np.where(np.mod(t - self.start, YEAR) < self.step_at * YEAR, -0.5, 0.5)


class BlocksPersist(YearOfRounds):
    """The blocks' log (8 levels over the year), and after it the last level holds."""

    def _shape(self, t: np.ndarray) -> np.ndarray:
        return np.where(t < self.start + YEAR, super()._shape(t), BLOCK_LEVELS[-1])


def generator(truth: str) -> YearOfRounds:
    if truth == "item_seasons":
        return ItemSeasons("stationary")
    if truth == "step_returns":
        return StepReturns("step")
    if truth == "blocks_persist":
        return BlocksPersist("blocks")
    if truth != NULL:
        return YearOfRounds(truth)
    gen = YearOfRounds("blocks")
    gen.theta = np.zeros_like(gen.theta)  # every action pays the same: none is better
    gen.gamma = np.ones_like(gen.gamma)
    return gen


def as_log(d: dict) -> dict:
    log = {"time": d["times"], "action": d["action"], "reward": d["reward"], "pscore": d["pscore"]}
    log.update({f"x{j}": d["context"][:, j] for j in range(d["context"].shape[1])})
    return log


def one(job: tuple) -> list[dict]:
    """One log of ``truth`` and size ``n``, learned for ``ahead`` days after its end: a row
    for the truth and one for each of its twins."""
    truth, n, ahead, seed = job
    gen = generator(truth)
    data = gen.sample(n, np.random.default_rng(seed))
    log = as_log(data)
    target = YEAR + ahead
    start = time.perf_counter()
    res = learn_for_future(log, at=target, random_state=seed,
                           baselines=() if truth == NULL else DEFAULT_BASELINES)  # fmt: skip
    seconds = time.perf_counter() - start
    rows = []
    for name in (truth, *TWINS.get(truth, ())):
        future = generator(name)
        assert np.array_equal(future.drift(data["times"]), gen.drift(data["times"]))
        row = scored(res, future, target)
        rows.append({"truth": name, "n": n, "ahead": ahead, "seed": seed, "seconds": seconds}
                    | row)  # fmt: skip
    return rows


def scored(res, gen: YearOfRounds, target: float) -> dict:
    """Every learned policy's true value at the target under ``gen``'s future."""
    contexts = np.random.default_rng(2**31 - 1).standard_normal((20_000, gen.dim))
    q = gen.q(contexts, np.full(contexts.shape[0], target))
    logging = float((gen.logging(contexts) * q).sum(axis=1).mean())
    best = float(q.max(axis=1).mean())
    values = {res.learner: res.policy} | {k: p for k, (p, _) in res.baselines.items()}
    true = {k: float((p.probabilities(contexts) * q).sum(axis=1).mean()) for k, p in values.items()}
    f = res.forecast
    return {
        "logging": logging, "best": best, "true": true, "deploy": res.deploy,
        "covered": bool(f.low <= true[res.learner] <= f.high),
        "advantage_low": res.advantage.low,
    }  # fmt: skip


def run(L: int, n_null: int, jobs: int = 2, sizes=SIZES) -> list[dict]:
    """L logs per truth, size and target; ``n_null`` logs per size of the null truth."""
    work = [
        (truth, n, ahead, 1000 * seed + int(ahead))
        for truth in TRUTHS
        for n in sizes
        for ahead in AHEAD
        for seed in range(L)
    ]
    work += [(NULL, n, AHEAD[k % len(AHEAD)], k) for n in sizes for k in range(n_null)]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        rows = []
        for done, scored_rows in enumerate(pool.imap_unordered(one, work), 1):
            rows.extend(scored_rows)
            if done % 20 == 0:
                print(f"{done} of {len(work)} logs", flush=True)
    return rows


def relative(row: dict, name: str) -> float:
    span = row["best"] - row["logging"]
    return (row["true"][name] - row["logging"]) / span if span > 1e-9 else float("nan")


def table(rows: list[dict]) -> str:
    """Per truth and size: mean relative value of each learner, coverage, paired tests."""
    names = list(next(r for r in rows if r["truth"] != NULL)["true"])
    lines = ["| truth | n | " + " | ".join(names) + " | coverage | one-sided p, Pro > each |",
             "|---|---|" + "---|" * (len(names) + 2)]  # fmt: skip
    sizes = sorted({r["n"] for r in rows})
    for truth in [t for base in TRUTHS for t in (base, *TWINS.get(base, ()))]:
        for n in sizes:
            cell = [r for r in rows if r["truth"] == truth and r["n"] == n]
            rel = {k: np.array([relative(r, k) for r in cell]) for k in names}
            pro = names[0]
            ps = [scipy.stats.wilcoxon(rel[pro], rel[k], alternative="greater").pvalue
                  for k in names[1:]]  # fmt: skip
            cover = np.mean([r["covered"] for r in cell])
            lines.append(
                f"| {truth} | {n} | " + " | ".join(f"{rel[k].mean():.2f}" for k in names)
                + f" | {cover:.2f} | " + ", ".join(f"{k} {p:.2g}" for k, p in
                                                   zip(names[1:], ps, strict=True)) + " |"
            )  # fmt: skip
    return "\n".join(lines) + "\n\n" + null_table(rows)


def null_table(rows: list[dict]) -> str:
    """The safety test on the null truth: how often it deploys, with a 95 % upper bound."""
    lines = []
    for n in sorted({r["n"] for r in rows if r["truth"] == NULL}):
        cell = [r for r in rows if r["truth"] == NULL and r["n"] == n]
        k = sum(r["deploy"] for r in cell)
        upper = scipy.stats.beta.ppf(0.95, k + 1, len(cell) - k) if k < len(cell) else 1.0
        lines.append(f"{NULL}, n={n}: deployed in {k} of {len(cell)} logs "
                     f"(one-sided 95 % Clopper-Pearson upper bound {upper:.3f})")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # the support warnings of near-greedy policies
    L = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    n_null = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    sizes = tuple(int(float(a)) for a in sys.argv[3:]) or SIZES
    rows = run(L, n_null, sizes=sizes)
    out = OUT if sizes == SIZES else OUT.with_name(f"learn_mc_{'_'.join(map(str, sizes))}.json")
    out.write_text(json.dumps(rows))
    print(table(rows))
    big = [r["seconds"] for r in rows if r["n"] == max(sizes) and r["truth"] != NULL]
    print(f"median seconds per call at n={max(sizes)}: {np.median(big):.1f}")
