"""``pyprog reproduce``: the paper's empirical section from scratch (§9, appendix E).

For each environment: regret (surrogate regret for NS-Reacher and NS-Diabetes) against
speed for the four learners (paper Fig. 3), learning curves per speed (appendix E), the
ζ weights of paper Fig. 4, and the basis ablation of appendix E (Fourier / poly / linear
for Pro-OLS and Pro-WLS on NS-Reco). Settings are the best ones of a sweep store when
given, the paper's otherwise. Every run goes to a result store as it finishes, so an
interrupted reproduce resumes, and runs already there are reused.

Outputs in ``--out``: PNG figures, CSV tables, ``summary.md`` and ``claims.json``. Each
claim gets a verdict — ``held``, ``contradicted`` or ``inconclusive`` — from a test across
seeds named beside it (:mod:`pyprog.stats.verdicts`: one-sided Welch t-tests with Holm's
correction over the claim's cases; two one-sided tests against a margin fixed up front for
the stationary-equivalence claim). NS-Diabetes also gets the policies' (CR, CF) over the
episodes and a day of blood glucose under an early and the last policy: one run per learner
is replayed from its seed to record them (:mod:`pyprog.runner.replay`), which leaves the store as
it is.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pyprog.experiments.runs import run_tasks
from pyprog.experiments.sweep import SweepTask, best_settings
from pyprog.forecast.bases import BASES
from pyprog.forecast.estimators import ols_weights
from pyprog.learn.hyperparams import ALGOS, Hyper, paper_hyper
from pyprog.results.store import ResultStore, StoreError
from pyprog.runner.parallel import execute
from pyprog.runner.replay import replay
from pyprog.stats.summary import compare, mean_se
from pyprog.stats.verdicts import ALPHA, verdict_equivalent, verdict_lower

__all__ = [
    "CLAIMS",
    "CLAIM_SPEEDS",
    "EQUIVALENCE_FRACTION",
    "FULL",
    "QUICK",
    "Plan",
    "claims",
    "diabetes_policies",
    "reproduce",
    "stationary_margin",
]

PRO = ("pro-ols", "pro-wls")
BASELINES = ("onpg", "ftrl-pg")


#: The paper's claims that ``summary.md`` tests, by id.
CLAIMS = {
    "reco_fast": (
        "NS-Reco, speeds 3 and 4: Pro-OLS and Pro-WLS each have lower regret than ONPG "
        "and than FTRL-PG (Fig. 3)"
    ),
    "reco_stationary": (
        "NS-Reco, speed 0 (stationary): the four learners' mean regrets are equivalent, "
        "every pair within the margin"
    ),
    "reacher": (
        "NS-Reacher, speeds >= 2: Pro-OLS and Pro-WLS each have lower surrogate regret than "
        "ONPG and than FTRL-PG (Fig. 3)"
    ),
    "diabetes": (
        "NS-Diabetes, speeds >= 1: Pro-WLS has lower surrogate regret than each other "
        "learner (Fig. 3)"
    ),
    "diabetes_stationary": (
        "NS-Diabetes, speed 0: Pro-WLS has lower surrogate regret than each other learner (Fig. 3)"
    ),
    "zeta": (
        "Fig. 4: the OLS weights ζ sum to 1, and the identity and Fourier bases give "
        "some past episodes negative weight"
    ),
    "ablation": (
        "Basis ablation (appendix E): on NS-Reco at speeds >= 2, the Fourier and "
        "polynomial bases each give lower regret than the linear basis, for Pro-OLS and Pro-WLS"
    ),
}

#: The speeds each claim is about (``zeta`` involves none). A protocol that tests a claim at
#: fewer of them says so in the claim's ``scope``: its verdict covers the speeds tested.
CLAIM_SPEEDS = {
    "reco_fast": (3, 4),
    "reco_stationary": (0,),
    "reacher": (2, 3, 4),
    "diabetes": (1, 2, 3, 4),
    "diabetes_stationary": (0,),
    "zeta": (),
    "ablation": (2, 3, 4),
}

#: The equivalence margin of ``reco_stationary``, as a fraction of the regret of the
#: uniformly random policy over the same episodes (403 over 1000 episodes): learners whose
#: regrets differ by less than a tenth of what learning removes count as equally good.
EQUIVALENCE_FRACTION = 0.1


def stationary_margin(episodes: int) -> float:
    """Equivalence margin of the ``reco_stationary`` claim, in regret, for ``episodes``.

    ``EQUIVALENCE_FRACTION × Σ_k (max_a μ_a − mean_a μ_a)`` on stationary NS-Reco: a tenth
    of the regret of the policy that picks items uniformly at random.

    Examples
    --------
    >>> round(stationary_margin(1000), 2)
    40.3
    """
    from pyprog.envs.reco import NSReco

    mu = NSReco(speed=0).expected_rewards(np.arange(episodes))
    return EQUIVALENCE_FRACTION * float((mu.max(axis=1) - mu.mean(axis=1)).sum())


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a reproduction runs: per environment, the speeds, seeds and episodes.

    ``untested`` names the claims this protocol cannot test with power, each with the one
    sentence that says why (their verdict is ``inconclusive``); ``glucose_speed`` is the
    NS-Diabetes speed of the blood-glucose figures.
    """

    name: str
    speeds: dict[str, tuple[int, ...]]
    seeds: dict[str, int]
    episodes: dict[str, int]
    ablation_speeds: tuple[int, ...]
    ablation_seeds: int
    untested: dict[str, str] = dataclasses.field(default_factory=dict)
    glucose_speed: int = 4

    def __post_init__(self) -> None:
        unknown = sorted(set(self.untested) - set(CLAIMS))
        if unknown:
            raise ValueError(
                f"untested names unknown claim(s) {', '.join(unknown)}; valid: {', '.join(CLAIMS)}"
            )

    def runs(self) -> int:
        main = sum(len(ALGOS) * len(self.speeds[e]) * self.seeds[e] for e in self.speeds)
        return main + len(PRO) * (len(BASES) - 1) * len(self.ablation_speeds) * self.ablation_seeds


#: The paper's protocol: 1000 episodes, speeds 0–4, 30 seeds (10 for NS-Diabetes).
FULL = Plan(
    name="full",
    speeds={"reco": (0, 1, 2, 3, 4), "reacher": (0, 1, 2, 3, 4), "diabetes": (0, 1, 2, 3, 4)},
    seeds={"reco": 30, "reacher": 30, "diabetes": 10},
    episodes={"reco": 1000, "reacher": 1000, "diabetes": 1000},
    ablation_speeds=(0, 1, 2, 3, 4),
    ablation_seeds=30,
    glucose_speed=4,
)

#: A protocol of under 3 minutes on 2 cores, chosen by measured power (README,
#: "Reproduction"): full-length runs at the speeds where the claims have the most power,
#: fewer seeds; NS-Reacher only for its figures.
QUICK = Plan(
    name="quick",
    speeds={"reco": (0, 3, 4), "reacher": (0, 4), "diabetes": (4,)},
    seeds={"reco": 5, "reacher": 2, "diabetes": 8},
    episodes={"reco": 1000, "reacher": 300, "diabetes": 1000},
    ablation_speeds=(3,),
    ablation_seeds=5,
    untested={
        "reco_stationary": (
            "equivalence within the margin needs many seeds, as NS-Reco's regrets at speed 0 "
            "are heavy-tailed (a few seeds settle on a poor item), and even the full "
            "protocol's 30 seeds leave it inconclusive"
        ),
        "reacher": (
            "the quick protocol runs NS-Reacher (about 4 s per run) with 2 seeds of 300 "
            "episodes for its figures only, as Pro-OLS's lead over ONPG at speeds 3 and 4 is "
            "within noise even with the full protocol's 30 seeds of 1000 episodes"
        ),
        "diabetes_stationary": (
            "the quick protocol runs NS-Diabetes at speed 4 only, and at speed 0 even the "
            "full protocol's 10 seeds leave Pro-WLS's lead within noise"
        ),
    },
    glucose_speed=4,
)


def _settings(env: str, speed: int, store_best: dict | None) -> dict[str, Hyper]:
    out = {}
    for algo in ALGOS:
        best = (store_best or {}).get(env, {}).get(algo, {}).get(f"{speed:g}")
        out[algo] = Hyper.from_dict(best) if best else paper_hyper(env, algo, speed)
    return out


def plan_tasks(
    plan: Plan, envs: Sequence[str], store_best: dict | None
) -> dict[str, list[SweepTask]]:
    """The runs of a plan: ``{"main": [...], "ablation": [...]}``."""
    main, ablation = [], []
    for env in envs:
        for speed in plan.speeds[env]:
            settings = _settings(env, speed, store_best)
            for algo in ALGOS:
                for seed in range(plan.seeds[env]):
                    main.append(
                        SweepTask(
                            env, algo, float(speed), 0, settings[algo], seed, plan.episodes[env]
                        )
                    )
    if "reco" in envs:
        for speed in plan.ablation_speeds:
            settings = _settings("reco", speed, store_best)
            for algo in PRO:
                for basis in BASES:
                    if basis == settings[algo].basis:
                        continue  # the main runs already hold this basis
                    hyper = settings[algo].replace(basis=basis)
                    for seed in range(plan.ablation_seeds):
                        ablation.append(
                            SweepTask(
                                "reco", algo, float(speed), 0, hyper, seed, plan.episodes["reco"]
                            )
                        )
    return {"main": main, "ablation": ablation}


def _load(store: ResultStore, tasks: Sequence[SweepTask]) -> dict[tuple, Any]:
    """Stored runs of the tasks, by (env, algo, speed, basis, seed)."""
    wanted = {t.key: t for t in tasks}
    runs = {}
    for env in {t.env for t in tasks}:
        for row in store.rows(env=env):
            task = wanted.get(row.key)
            if task is not None:
                runs[(task.env, task.algo, task.speed, task.hyper.basis, task.seed)] = row
    return runs


def regret_tables(plan: Plan, envs: Sequence[str], runs: dict, basis_of: dict) -> list[dict]:
    """Mean ± standard error of the (surrogate) regret per (env, algo, speed)."""
    table = []
    for env in envs:
        for speed in plan.speeds[env]:
            rows = {
                algo: [
                    runs[(env, algo, float(speed), basis_of[(env, algo, speed)], s)]
                    for s in range(plan.seeds[env])
                ]
                for algo in ALGOS
            }
            metric, values = compare(rows)
            for algo in ALGOS:
                mean, se = mean_se(values[algo])
                table.append(
                    dict(
                        env=env,
                        algo=algo,
                        speed=speed,
                        metric=metric,
                        mean=mean,
                        se=se,
                        seeds=len(rows[algo]),
                        episodes=plan.episodes[env],
                    )
                )
    return table


def ablation_table(plan: Plan, runs: dict) -> list[dict]:
    """Regret of Pro-OLS and Pro-WLS on NS-Reco per basis and speed."""
    table = []
    for algo in PRO:
        for basis in BASES:
            for speed in plan.ablation_speeds:
                rs = [
                    runs.get(("reco", algo, float(speed), basis, s))
                    for s in range(plan.ablation_seeds)
                ]
                if any(r is None for r in rs):
                    continue
                mean, se = mean_se([r.regret for r in rs])
                table.append(
                    dict(
                        algo=algo,
                        basis=basis,
                        speed=speed,
                        mean=mean,
                        se=se,
                        seeds=len(rs),
                        episodes=plan.episodes["reco"],
                    )
                )
    return table


def _cell(table: list[dict], **match) -> dict | None:
    for row in table:
        if all(row[k] == v for k, v in match.items()):
            return row
    return None


def _fmt(row: dict | None) -> str:
    return "n/a" if row is None else f"{row['mean']:.4g} ± {row['se']:.2g}"


def _no_cases(reason: str | None) -> dict:
    if reason:
        return {"verdict": "inconclusive", "test": f"not tested: {reason}", "cases": []}
    return {"verdict": "inconclusive", "test": "no case of this claim was run", "cases": []}


def _lower_cases(table: list[dict], env: str, speeds, winners, others) -> list[tuple]:
    """(label, a, b) for "a has lower regret than b", at the speeds that ran."""
    cases = []
    for speed in speeds:
        for a in winners:
            for b in others:
                ca = _cell(table, env=env, algo=a, speed=speed)
                cb = _cell(table, env=env, algo=b, speed=speed)
                if ca and cb:
                    cases.append((f"speed {speed}: {a} < {b}", ca, cb))
    return cases


def _zeta_claim(zeta: dict[str, np.ndarray]) -> dict:
    sums = {k: float(v.sum()) for k, v in zeta.items()}
    negative = {k: int((v < 0).sum()) for k, v in zeta.items()}
    held = (
        all(abs(x - 1) < 1e-8 for x in sums.values())
        and negative["identity"] > 0
        and negative["Fourier"] > 0
    )
    n = len(next(iter(zeta.values())))
    return {
        "verdict": "held" if held else "contradicted",
        "test": (
            f"exact arithmetic on the {n} weights (no sampling): |Σζ − 1| < 1e-8 for every "
            "weighting, and at least one negative weight for the identity and Fourier bases"
        ),
        "cases": [{"case": k, "sum": sums[k], "negative_weights": negative[k]} for k in zeta],
    }


def claims(
    table: list[dict],
    ablation: list[dict],
    zeta: dict[str, np.ndarray],
    margin: float | None = None,
    untested: dict[str, str] | None = None,
    alpha: float = ALPHA,
) -> list[dict]:
    """The paper's claims, each with a verdict from a stated test across seeds.

    Parameters
    ----------
    table : list of dict
        Rows of :func:`regret_tables` (``env``, ``algo``, ``speed``, ``mean``, ``se``,
        ``seeds``, ``episodes``).
    ablation : list of dict
        Rows of :func:`ablation_table`.
    zeta : dict of str to ndarray
        :func:`zeta_weights`.
    margin : float, optional
        Equivalence margin of ``reco_stationary`` (default: :func:`stationary_margin` of the
        NS-Reco runs' episodes).
    untested : dict of str to str, optional
        Claims not to test, each with the reason (:attr:`Plan.untested`).
    alpha : float
        Level of every test (:data:`pyprog.stats.verdicts.ALPHA`).

    Returns
    -------
    list of dict
        One per :data:`CLAIMS` entry, in order: ``id``, ``claim``, ``verdict`` (``held``,
        ``contradicted`` or ``inconclusive``), ``test`` (the test, in words), ``episodes``
        (per run, None if not run), ``cases`` (per case: the groups' means, standard
        errors and seeds, the difference, p-values raw and Holm-adjusted, the verdict),
        ``speeds`` (the speeds tested) and ``scope`` (empty when every speed of
        :data:`CLAIM_SPEEDS` was tested; otherwise a sentence saying which were: the
        verdict covers only those).
    """
    untested = untested or {}

    reco_stationary = []
    for i, a in enumerate(ALGOS):
        for b in ALGOS[i + 1 :]:
            ca, cb = (_cell(table, env="reco", algo=x, speed=0) for x in (a, b))
            if ca and cb:
                reco_stationary.append((f"speed 0: {a} ~ {b}", ca, cb))
    others = [a for a in ALGOS if a != "pro-wls"]
    ablation_cases = []
    for algo in PRO:
        for speed in CLAIM_SPEEDS["ablation"]:
            linear = _cell(ablation, algo=algo, basis="linear", speed=speed)
            for basis in ("fourier", "poly"):
                cell = _cell(ablation, algo=algo, basis=basis, speed=speed)
                if cell and linear:
                    ablation_cases.append(
                        (f"{algo}, speed {speed}: {basis} < linear", cell, linear)
                    )
    cases = {
        "reco_fast": _lower_cases(table, "reco", CLAIM_SPEEDS["reco_fast"], PRO, BASELINES),
        "reacher": _lower_cases(table, "reacher", CLAIM_SPEEDS["reacher"], PRO, BASELINES),
        "diabetes": _lower_cases(table, "diabetes", CLAIM_SPEEDS["diabetes"], ["pro-wls"], others),
        "diabetes_stationary": _lower_cases(
            table, "diabetes", CLAIM_SPEEDS["diabetes_stationary"], ["pro-wls"], others
        ),
        "ablation": ablation_cases,
        "reco_stationary": reco_stationary,
    }
    out = []
    for key, text in CLAIMS.items():
        if key == "zeta":
            result, episodes = _zeta_claim(zeta), None
        elif key in untested:
            result, episodes = _no_cases(untested[key]), None
        elif key == "reco_stationary":
            episodes = reco_stationary[0][1].get("episodes") if reco_stationary else None
            m = margin if margin is not None else stationary_margin(episodes or 1000)
            result = (
                verdict_equivalent(reco_stationary, m, alpha)
                if reco_stationary
                else _no_cases(None)
            )
        else:
            episodes = cases[key][0][1].get("episodes") if cases[key] else None
            result = verdict_lower(cases[key], alpha) if cases[key] else _no_cases(None)
        ran = [] if key in untested else cases.get(key, [])  # zeta has no speeds
        tested = sorted({case[1]["speed"] for case in ran})
        out.append(
            {"id": key, "claim": text, **result, "episodes": episodes, **_scope(key, tested)}
        )
    return out


def _speeds(speeds) -> str:
    return ("speed " if len(speeds) == 1 else "speeds ") + ", ".join(map(str, speeds))


def _scope(key: str, tested: list) -> dict:
    """The speeds a claim's verdict covers, and a sentence if they are fewer than claimed."""
    claimed = list(CLAIM_SPEEDS[key])
    if not claimed or not tested or tested == claimed:
        return {"speeds": tested, "scope": ""}
    return {
        "speeds": tested,
        "scope": f"tested at {_speeds(tested)} of the claim's {_speeds(claimed)}",
    }


def zeta_weights(n: int = 99) -> dict[str, np.ndarray]:
    """Weights of past episodes in the forecast's gradient (paper Fig. 4), n past episodes."""
    i = np.arange(1, n + 1)
    ewma = 0.05 * 0.95 ** (n - i)
    return {
        "identity": ols_weights(n, 1, "linear"),
        "Fourier": ols_weights(n, 1, "fourier", 5),
        "constant": ols_weights(n, 1, "fourier", 1),
        "exponential": ewma / ewma.sum(),
    }


def _mean_action(policy) -> np.ndarray:
    """The Gaussian policy's mean action, (CR, CF) on NS-Diabetes (its observation is [1])."""
    return policy.mean(np.ones(1))


def _replay_task(task: SweepTask):
    return replay(
        task.env,
        task.algo,
        speed=task.speed,
        seed=task.seed,
        episodes=task.episodes,
        hyper=task.hyper,
        probe=_mean_action,
    )


def diabetes_policies(tasks: Sequence[SweepTask], jobs: int | None = None) -> dict[str, Any]:
    """What NS-Diabetes runs' policies chose, and the blood glucose of an early and a late day.

    Each task (one per learner, same speed and episodes) is replayed (:func:`pyprog.runner.replay.
    replay`, about one run's time) to record the policy's mean (CR, CF) before every
    episode. The days: the patient of episode ``k`` treated with the mean (CR, CF) of the
    policy that acts in episode ``k``, for ``k = episodes // 10`` (early) and the last one.

    Returns
    -------
    dict
        ``speed``, ``episodes``, ``seed``, ``days`` ``(early, late)``, ``meals`` [(minute,
        grams)], ``alpha`` (episodes,) the patient mix, ``returns`` {algo: (episodes,)},
        ``actions`` {algo: (episodes, 2)} and ``glucose`` {algo: {day: DayTrace}}.
    """
    from pyprog.envs.diabetes.env import NSDiabetes, simulate_day

    tasks = list(tasks)
    if not tasks:
        raise ValueError("diabetes_policies needs at least one task")
    speed, episodes = tasks[0].speed, tasks[0].episodes
    days = (max(1, episodes // 10), episodes)
    out: dict[str, Any] = dict(
        speed=speed, episodes=episodes, seed=tasks[0].seed, days=days, returns={}, actions={}
    )
    out["glucose"] = {}
    replays = dict(execute(_replay_task, tasks, jobs=jobs))
    for task in tasks:
        r = replays[task]
        env = NSDiabetes(speed=speed, seed=r.env_seed)
        out["meals"] = [(int(m), float(env.meals[m])) for m in np.flatnonzero(env.meals)]
        out["alpha"] = env.alpha(np.arange(1, episodes + 1))  # weight of the first patient
        out["returns"][task.algo] = r.returns
        out["actions"][task.algo] = r.probes
        out["glucose"][task.algo] = {
            k: simulate_day(env.patient_params(k), *map(float, r.probes[k - 1]), seed=r.env_seed)
            for k in days
        }
    return out


def _glucose_rows(policies: dict[str, Any]) -> list[dict]:
    """Per learner and day: the (CR, CF), time in the 70–180 mg/dL range, mean and min BG."""
    from pyprog.paper.figures import BG_TARGET_RANGE

    low, high = BG_TARGET_RANGE
    rows = []
    for algo, by_day in policies["glucose"].items():
        for k, trace in by_day.items():
            cr, cf = policies["actions"][algo][k - 1]
            rows.append(
                dict(
                    algo=algo,
                    episode=k,
                    cr=float(cr),
                    cf=float(cf),
                    time_in_range=float(np.mean((trace.bg >= low) & (trace.bg <= high))),
                    mean_bg=float(trace.bg.mean()),
                    min_bg=float(trace.bg.min()),
                    max_bg=float(trace.bg.max()),
                    score=float(trace.score),
                    run_return=float(policies["returns"][algo][k - 1]),
                )
            )
    return rows


def _finite_or_none(value: Any) -> Any:
    """``value`` with every NaN or infinite float, however nested, replaced by None."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    return value


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _figures(
    out: Path, plan: Plan, envs, runs, basis_of, table, ablation, zeta, policies
) -> list[str]:
    import matplotlib.pyplot as plt

    from pyprog.paper import figures as plots

    made = []

    def draw(plot, name, *args, **kwargs):
        plt.close(plot(*args, path=out / name, **kwargs))  # one figure open at a time
        made.append(name)

    titles = {"reco": "NS-Reco", "reacher": "NS-Reacher", "diabetes": "NS-Diabetes"}
    for env in envs:
        rows = [r for r in table if r["env"] == env]
        draw(plots.plot_regret_vs_speed, f"fig3_{env}_regret_vs_speed.png", rows, title=titles[env])
        for speed in plan.speeds[env]:
            returns = {
                algo: np.stack(
                    [
                        runs[(env, algo, float(speed), basis_of[(env, algo, speed)], s)].returns
                        for s in range(plan.seeds[env])
                    ]
                )
                for algo in ALGOS
            }
            optimal = None
            if env == "reco":
                optimal = runs[
                    (env, ALGOS[0], float(speed), basis_of[(env, ALGOS[0], speed)], 0)
                ].optimal
            draw(
                plots.plot_learning_curves,
                f"curves_{env}_speed{speed}.png",
                returns,
                title=f"{titles[env]}, speed {speed}",
                window=max(5, plan.episodes[env] // 20),
                optimal=optimal,
            )
    draw(plots.plot_zeta, "fig4_zeta.png", zeta)
    if ablation:
        draw(plots.plot_basis_ablation, "ablation_basis.png", ablation)
    if "reco" in envs:
        from pyprog.envs.reco import NSReco

        k = np.arange(plan.episodes["reco"])
        curves = {s: NSReco(speed=s).expected_rewards(k) for s in plan.speeds["reco"]}
        draw(plots.plot_item_rewards, "reco_items.png", curves)
    if policies is not None:
        speed, seed = f"{policies['speed']:g}", policies["seed"]
        days = {
            algo: {
                f"day {k}: CR {policies['actions'][algo][k - 1][0]:.1f}, "
                f"CF {policies['actions'][algo][k - 1][1]:.1f}": trace.bg
                for k, trace in by_day.items()
            }
            for algo, by_day in policies["glucose"].items()
        }
        draw(
            plots.plot_glucose_days,
            f"diabetes_glucose_speed{speed}.png",
            days,
            meals=[(m, g) for m, g in policies["meals"]],
            title=f"NS-Diabetes, speed {speed}, seed {seed}: blood glucose over one day, "
            "early and late policy",
        )
        draw(
            plots.plot_policy_actions,
            f"diabetes_cr_cf_speed{speed}.png",
            policies["actions"],
            bounds=[(3.0, 30.0), (5.0, 50.0)],
            title=f"NS-Diabetes, speed {speed}, seed {seed}: the policies' mean (CR, CF)",
            context=("patient mix α_k", policies["alpha"]),
        )
    return made


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _group(mean: float, se: float, seeds: int) -> str:
    return f"{mean:.4g} ± {se:.2g} (n={seeds})"


def _claim_lines(claim: dict) -> list[str]:
    """A claim's verdict, its test and a table of its cases."""
    lines = [f"### {claim['id']}: **{claim['verdict']}**", "", claim["claim"] + ".", ""]
    runs = f" Runs of {claim['episodes']} episodes." if claim.get("episodes") else ""
    lines += [f"Test: {claim['test']}.{runs}", ""]
    if claim.get("scope"):
        lines += [f"Scope: {claim['scope']}; the verdict covers only those.", ""]
    cases = claim["cases"]
    if not cases:
        return lines
    if claim["id"] == "zeta":
        lines += ["| weighting | Σζ | negative weights |", "|---|---|---|"]
        lines += [f"| {c['case']} | {c['sum']:.12f} | {c['negative_weights']} |" for c in cases]
        return [*lines, ""]
    lines += [
        "| case | a: mean ± s.e. (seeds) | b: mean ± s.e. (seeds) | a − b ± s.e. "
        "| p | p, Holm | p against, Holm | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        lines.append(
            f"| {c['case']} | {_group(c['mean_a'], c['se_a'], c['seeds_a'])} "
            f"| {_group(c['mean_b'], c['se_b'], c['seeds_b'])} "
            f"| {c['difference']:.4g} ± {c['se']:.2g} | {_p(c['p'])} | {_p(c['p_holm'])} "
            f"| {_p(c['p_against_holm'])} | {c['verdict']} |"
        )
    return [*lines, ""]


def _summary(
    path: Path,
    plan: Plan,
    envs,
    table,
    ablation,
    claim_list,
    figures,
    settings_from,
    seconds,
    report,
    glucose_rows=(),
    replays_store: bool | None = None,
) -> None:
    lines = [
        f"# pyprog reproduce ({plan.name})",
        "",
        "Chandak et al., ICML 2020, §9 and appendix E, re-run by pyprog. "
        f"Settings: {settings_from}. "
        f"This invocation: {seconds / 60:.1f} min wall time, {report['ran']} runs computed, "
        f"{report['already_stored']} reused from the store; all {report['total']} runs "
        f"together took {report['run_hours']:.1f} hours of one core.",
        "",
        "| environment | speeds | seeds | episodes per run |",
        "|---|---|---|---|",
    ]
    for env in envs:
        speeds = ", ".join(map(str, plan.speeds[env]))
        lines.append(f"| {env} | {speeds} | {plan.seeds[env]} | {plan.episodes[env]} |")
    if ablation:
        speeds = ", ".join(map(str, plan.ablation_speeds))
        lines.append(
            f"| reco, basis ablation | {speeds} | {plan.ablation_seeds} | {plan.episodes['reco']} |"
        )
    lines += [
        "",
        "## The paper's claims",
        "",
        "Each claim is `held` (significant in the claimed direction in every case), "
        "`contradicted` (significant in the opposite direction in some case) or "
        "`inconclusive` (neither). Tests are across seeds, unpaired (Welch): surrogate "
        "regret is taken against the best mean curve of the compared learners, so the "
        "seeds of different learners are not paired. `p` is the one-sided p-value in the "
        "claimed direction, `p against` the one in the opposite direction; Holm's correction "
        "is over the cases of one claim.",
        "",
        "| claim | verdict |",
        "|---|---|",
    ]
    lines += [
        f"| {c['id']}: {c['claim']} | **{c['verdict']}**"
        + (f" ({c['scope']})" if c.get("scope") else "")
        + " |"
        for c in claim_list
    ]
    lines.append("")
    for c in claim_list:
        lines += _claim_lines(c)
    for env in envs:
        rows = [r for r in table if r["env"] == env]
        lines += [
            "",
            f"## {env}: {rows[0]['metric']} (mean ± standard error over {plan.seeds[env]} "
            f"seeds, {plan.episodes[env]} episodes per run)",
            "",
        ]
        speeds = plan.speeds[env]
        lines.append("| algo | " + " | ".join(f"speed {s}" for s in speeds) + " |")
        lines.append("|---|" + "---|" * len(speeds))
        for algo in ALGOS:
            lines.append(
                f"| {algo} | "
                + " | ".join(_fmt(_cell(rows, algo=algo, speed=s)) for s in speeds)
                + " |"
            )
    if ablation:
        lines += [
            "",
            f"## Basis ablation, NS-Reco regret (mean ± standard error over "
            f"{plan.ablation_seeds} seeds, {plan.episodes['reco']} episodes per run)",
            "",
        ]
        speeds = sorted({r["speed"] for r in ablation})
        lines.append("| algo, basis | " + " | ".join(f"speed {s}" for s in speeds) + " |")
        lines.append("|---|" + "---|" * len(speeds))
        for algo in PRO:
            for basis in BASES:
                lines.append(
                    f"| {algo}, {basis} | "
                    + " | ".join(
                        _fmt(_cell(ablation, algo=algo, basis=basis, speed=s)) for s in speeds
                    )
                    + " |"
                )
    if glucose_rows:
        lines += [
            "",
            f"## NS-Diabetes: the learned bolus calculator, speed {plan.glucose_speed:g}, "
            f"seed 0 ({plan.episodes['diabetes']} episodes)",
            "",
            "The run was replayed from its seed to record its policy; the replay's returns "
            + (
                "equal the stored run's."
                if replays_store
                else "**differ** from the stored run's (computed by another pyprog version?)."
            ),
            "",
            "The policy's mean (CR, CF) on an early and the last day, and that day's blood "
            "glucose (every 3 min) under it; time in range = fraction of the day in "
            "70–180 mg/dL. The run itself played a Gaussian sample around the mean (clipped "
            "to the box): its return that day is in the last column.",
            "",
            "| algo | day | CR (g/U) | CF (mg/dL/U) | time in range | mean BG | min BG "
            "| max BG | reward, mean action | run's return |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['algo']} | {r['episode']} | {r['cr']:.1f} | {r['cf']:.1f} "
            f"| {100 * r['time_in_range']:.0f}% | {r['mean_bg']:.0f} | {r['min_bg']:.0f} "
            f"| {r['max_bg']:.0f} | {r['score']:.2f} | {r['run_return']:.2f} |"
            for r in glucose_rows
        ]
    lines += ["", "## Figures", ""] + [f"- [{f}]({f})" for f in figures]
    path.write_text("\n".join(lines) + "\n")


def reproduce(
    out: str | os.PathLike,
    quick: bool = False,
    store: str | os.PathLike | None = None,
    envs: Sequence[str] = ("reco", "reacher", "diabetes"),
    jobs: int | None = None,
    progress: Callable[[int, int], Any] | None = None,
    plan: Plan | None = None,
) -> dict[str, Any]:
    """Run (or reuse) the paper's experiments and write figures, tables and ``summary.md``.

    Parameters
    ----------
    out : path
        Output folder.
    quick : bool
        :data:`QUICK` (a few minutes) instead of :data:`FULL` (the paper's protocol).
    store : path, optional
        A sweep's result store, only read: its best settings (:func:`best_settings`)
        replace the paper's where it has them, and its runs that the reproduction needs
        are reused. Whatever else runs goes to ``out/runs.sqlite``, never to ``store``, so
        reproducing does not change what ``pyprog best --store`` answers.
    envs : sequence of str
    jobs : int, optional
        Worker processes (default: every core).
    progress : callable, optional
        ``progress(done, total)`` per finished run.
    plan : Plan, optional
        A custom protocol instead of QUICK / FULL.

    Returns
    -------
    dict
        ``claims`` (as written to ``claims.json``), ``table``, ``ablation``, ``figures``,
        ``seconds`` and ``policies`` (:func:`diabetes_policies`, None without NS-Diabetes).
    """
    start = time.perf_counter()
    plan = plan or (QUICK if quick else FULL)
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot write to --out {str(out)!r}: {exc.strerror}") from None
    store_best, settings_from = None, "the paper's (pyprog/data/hyperparams.json)"
    source = Path(store) if store is not None else None
    if source is not None:
        # the sweep's store is only read: reproducing must not change what `best` answers
        try:
            store_best, _ = best_settings(str(source))
            settings_from = (
                f"the best of the sweep store {source} where it has them, else the paper's"
            )
        except StoreError:
            raise
        except ValueError:  # a store without runs
            settings_from += f" (the store {source} has no runs)"
    own = out / "runs.sqlite"
    tasks = plan_tasks(plan, envs, store_best)
    all_tasks = tasks["main"] + tasks["ablation"]
    in_source = set()
    if source is not None:
        with ResultStore(source, readonly=True) as db:
            in_source = db.keys()
    todo = [t for t in all_tasks if t.key not in in_source]
    report = {"total": len(all_tasks), "already_stored": len(all_tasks), "ran": 0}
    if todo:  # this reproduction's own runs go to its own store, never to the sweep's
        report = run_tasks(
            todo, str(own), name=f"reproduce-{plan.name}", jobs=jobs, progress=progress
        )
        report["already_stored"] = len(all_tasks) - report["ran"]
        report["total"] = len(all_tasks)
    runs = {}
    for path in [source, own] if source is not None else [own]:
        if path.exists():
            with ResultStore(path, readonly=True) as db:
                runs.update(_load(db, all_tasks))
    report["run_hours"] = sum(r.seconds for r in runs.values()) / 3600
    basis_of = {(t.env, t.algo, int(t.speed)): t.hyper.basis for t in tasks["main"]}
    table = regret_tables(plan, envs, runs, basis_of)
    ablation = ablation_table(plan, runs) if "reco" in envs else []
    zeta = zeta_weights()
    claim_list = claims(table, ablation, zeta, untested=plan.untested)
    policies, glucose_rows = None, []
    if "diabetes" in envs:
        speeds = plan.speeds["diabetes"]
        speed = plan.glucose_speed if plan.glucose_speed in speeds else speeds[-1]
        chosen = [
            t for t in tasks["main"] if t.env == "diabetes" and t.speed == speed and t.seed == 0
        ]
        policies = diabetes_policies(chosen, jobs=jobs)
        policies["replays_store"] = all(
            np.array_equal(
                policies["returns"][t.algo],
                runs[("diabetes", t.algo, t.speed, t.hyper.basis, 0)].returns,
            )
            for t in chosen
        )
        glucose_rows = _glucose_rows(policies)
    figures = _figures(out, plan, envs, runs, basis_of, table, ablation, zeta, policies)
    _write_csv(out / "regret.csv", table)
    _write_csv(out / "ablation.csv", ablation)
    _write_csv(out / "diabetes_glucose.csv", glucose_rows)
    if policies is not None:
        _write_csv(
            out / "diabetes_cr_cf.csv",
            [
                dict(algo=algo, episode=k + 1, cr=float(cr), cf=float(cf))
                for algo, actions in policies["actions"].items()
                for k, (cr, cf) in enumerate(actions)
            ],
        )
    written = _finite_or_none(claim_list)  # strict JSON: no NaN (a group of one seed)
    (out / "claims.json").write_text(json.dumps(written, indent=1, allow_nan=False) + "\n")
    seconds = time.perf_counter() - start
    _summary(
        out / "summary.md",
        plan,
        envs,
        table,
        ablation,
        claim_list,
        figures,
        settings_from,
        seconds,
        report,
        glucose_rows,
        None if policies is None else policies["replays_store"],
    )
    return {
        "claims": written,
        "table": table,
        "ablation": ablation,
        "figures": figures,
        "seconds": seconds,
        "policies": policies,
    }
