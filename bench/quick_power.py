"""Power of candidate ``pyprog reproduce --quick`` protocols, measured by resampling seeds.

How the quick protocol (``pyprog.paper.protocols.QUICK``) was chosen: run each candidate setting's
per-seed runs once, for a modest pool of seeds (12 on NS-Reco, 8 on NS-Diabetes, all of 1000
episodes, the paper's settings), then estimate the power of each (speeds, seeds) choice as
the fraction of bootstrap resamples of ``n`` seeds per learner (with replacement, from the
pool) in which the claim's verdict (:mod:`pyprog.stats.verdicts`) is ``held``; resamples that
would be ``contradicted`` are counted too. Surrogate regret (NS-Diabetes) is recomputed on
every resample, against the best mean curve of that resample.

    python bench/quick_power.py run power.sqlite      # the runs (~30 min of one core)
    python bench/quick_power.py power power.sqlite    # the table (seconds)
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np

from pyprog.experiments.sweep import run_sweep
from pyprog.learn.hyperparams import ALGOS
from pyprog.paper.protocols import BASELINES, PRO, Plan, plan_tasks
from pyprog.results.store import ResultStore
from pyprog.stats.summary import compare, mean_se
from pyprog.stats.verdicts import verdict_lower

POOL = Plan(
    name="power",
    speeds={"reco": (0, 2, 3, 4), "diabetes": (2, 4)},
    seeds={"reco": 12, "diabetes": 8},
    episodes={"reco": 1000, "diabetes": 1000},
    ablation_speeds=(2, 3, 4),
    ablation_seeds=12,
)
RESAMPLES = 400
SEEDS = (3, 4, 5, 6, 8, 10)


def run(store: str) -> None:
    tasks = plan_tasks(POOL, ("reco", "diabetes"), None)
    print(run_sweep(tasks["main"] + tasks["ablation"], store, name="power", jobs=2))


def _group(values: np.ndarray) -> dict:
    mean, se = mean_se(values)
    return {"mean": mean, "se": se, "seeds": len(values)}


def power(store: str) -> None:
    rows = defaultdict(list)  # (env, algo, speed, basis) -> stored runs
    with ResultStore(store, readonly=True) as db:
        for env in ("reco", "diabetes"):
            for r in db.rows(env=env):
                rows[(env, r.algo, int(r.speed), r.hyper["basis"])].append(r)
    rng = np.random.default_rng(0)

    def draw(key, n):
        pool = rows[key]
        return [pool[i] for i in rng.integers(0, len(pool), n)]

    def reco_fast(speeds, n):
        cases = []
        for s in speeds:
            regret = {
                a: np.array([r.regret for r in draw(("reco", a, s, "fourier"), n)]) for a in ALGOS
            }
            cases += [
                (f"{s}", _group(regret[a]), _group(regret[b])) for a in PRO for b in BASELINES
            ]
        return cases

    def ablation(speeds, n):
        cases = []
        for a in PRO:
            for s in speeds:
                regret = {
                    b: np.array([r.regret for r in draw(("reco", a, s, b), n)])
                    for b in ("fourier", "poly", "linear")
                }
                cases += [
                    (f"{s}", _group(regret[b]), _group(regret["linear"]))
                    for b in ("fourier", "poly")
                ]
        return cases

    def diabetes(speeds, n):
        cases = []
        for s in speeds:
            _, values = compare({a: draw(("diabetes", a, s, "fourier"), n) for a in ALGOS})
            cases += [
                (f"{s}", _group(values["pro-wls"]), _group(values[o]))
                for o in ALGOS
                if o != "pro-wls"
            ]
        return cases

    print("| claim | speeds | " + " | ".join(f"n = {n}" for n in SEEDS) + " |")
    print("|---|---|" + "---|" * len(SEEDS))
    for name, cases_of, options in (
        ("reco_fast", reco_fast, [(3, 4), (3,), (4,)]),
        ("ablation", ablation, [(2, 3, 4), (3, 4), (2,), (3,), (4,)]),
        ("diabetes", diabetes, [(2, 4), (2,), (4,)]),
    ):
        for speeds in options:
            cells = []
            for n in SEEDS:
                verdicts = [verdict_lower(cases_of(speeds, n))["verdict"] for _ in range(RESAMPLES)]
                held = verdicts.count("held") / RESAMPLES
                against = verdicts.count("contradicted") / RESAMPLES
                cells.append(f"{held:.2f}" + (f" ({against:.3f} contradicted)" if against else ""))
            label = ", ".join(map(str, speeds))
            print(f"| {name} | {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("run", "power"):
        sys.exit(__doc__)
    (run if sys.argv[1] == "run" else power)(sys.argv[2])
