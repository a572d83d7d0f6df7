"""``pyprog reproduce``: the paper's empirical section from scratch (§9, appendix E).

For each environment: regret (surrogate regret for NS-Reacher and NS-Diabetes) against
speed for the four learners (paper Fig. 3), learning curves per speed (appendix E), the
ζ weights of paper Fig. 4, and the basis ablation of appendix E (Fourier / poly / linear
for Pro-OLS and Pro-WLS on NS-Reco). Settings are the best ones of a sweep store when
given, the paper's otherwise. Every run goes to a result store as it finishes, so an
interrupted reproduce resumes, and runs already there are reused.

Outputs in ``--out``: PNG figures, CSV tables and ``summary.md``, which states whether
each of the paper's claims held, with the numbers.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pyprog.bases import BASES
from pyprog.estimators import ols_weights
from pyprog.experiment import compare, mean_se
from pyprog.hyperparams import ALGOS, Hyper, paper_hyper
from pyprog.store import ResultStore, StoreError
from pyprog.sweep import SweepTask, best_settings, run_sweep

__all__ = ["CLAIMS", "FULL", "QUICK", "Plan", "claims", "reproduce"]

PRO = ("pro-ols", "pro-wls")
BASELINES = ("onpg", "ftrl-pg")


#: The paper's claims that ``summary.md`` checks, by key.
CLAIMS = {
    "reco_fast": (
        "NS-Reco, speeds 3 and 4: Pro-OLS and Pro-WLS have lower mean regret than ONPG "
        "and FTRL-PG (Fig. 3)"
    ),
    "reco_stationary": (
        "NS-Reco, speed 0 (stationary): all four learners are within 3 standard errors of the best"
    ),
    "reacher": (
        "NS-Reacher, speeds >= 2: Pro-OLS and Pro-WLS have lower surrogate regret than "
        "ONPG and FTRL-PG (Fig. 3)"
    ),
    "diabetes": "NS-Diabetes: Pro-WLS has the lowest surrogate regret at every speed (Fig. 3)",
    "zeta": (
        "Fig. 4: the OLS weights ζ sum to 1, and the identity and Fourier bases give "
        "some past episodes negative weight"
    ),
    "ablation": (
        "Basis ablation (appendix E): on NS-Reco at speeds >= 2, the Fourier and "
        "polynomial bases give lower regret than the linear basis, for Pro-OLS and Pro-WLS"
    ),
}


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a reproduction runs: per environment, the speeds, seeds and episodes."""

    name: str
    speeds: dict[str, tuple[int, ...]]
    seeds: dict[str, int]
    episodes: dict[str, int]
    ablation_speeds: tuple[int, ...]
    ablation_seeds: int

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
)

#: A smaller protocol that finishes in a few minutes on 2 cores (fewer seeds, speeds and
#: episodes for the slow environments); its conclusions are correspondingly noisier.
QUICK = Plan(
    name="quick",
    speeds={"reco": (0, 1, 2, 3, 4), "reacher": (0, 2, 4), "diabetes": (0, 2, 4)},
    seeds={"reco": 5, "reacher": 3, "diabetes": 2},
    episodes={"reco": 1000, "reacher": 300, "diabetes": 150},
    ablation_speeds=(0, 2, 4),
    ablation_seeds=3,
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
                    dict(algo=algo, basis=basis, speed=speed, mean=mean, se=se, seeds=len(rs))
                )
    return table


def _cell(table: list[dict], **match) -> dict | None:
    for row in table:
        if all(row[k] == v for k, v in match.items()):
            return row
    return None


def _fmt(row: dict | None) -> str:
    return "n/a" if row is None else f"{row['mean']:.4g} ± {row['se']:.2g}"


def _check(cases, label, cells_of, ok_of) -> dict:
    """``held`` and ``evidence`` of a claim checked case by case (None if no case ran)."""
    lines, checked, failed = [], 0, 0
    for case in cases:
        cells = cells_of(case)
        if not all(cells.values()):
            continue
        checked += 1
        ok = ok_of(cells)
        failed += not ok
        numbers = ", ".join(f"{name} {_fmt(cell)}" for name, cell in cells.items())
        lines.append(f"{label(case)}: {numbers} {'✓' if ok else '✗'}")
    return {"held": None if not checked else failed == 0, "evidence": lines}


def claims(table: list[dict], ablation: list[dict], zeta: dict[str, np.ndarray]) -> list[dict]:
    """The paper's claims, each with ``held`` (True / False / None = not run) and evidence."""

    def algos_at(env):
        return lambda speed: {a: _cell(table, env=env, algo=a, speed=speed) for a in ALGOS}

    def pro_beats_baselines(cells) -> bool:
        return max(cells[a]["mean"] for a in PRO) < min(cells[a]["mean"] for a in BASELINES)

    def speed_label(speed) -> str:
        return f"speed {speed}"

    out = [
        {
            "claim": CLAIMS["reco_fast"],
            **_check((3, 4), speed_label, algos_at("reco"), pro_beats_baselines),
        }
    ]

    # speed 0: how many standard errors of the difference each learner is above the best
    lines, held = [], None
    cells = algos_at("reco")(0)
    if all(cells.values()):
        best = min(cells.values(), key=lambda r: r["mean"])
        gaps = {
            a: (r["mean"] - best["mean"])
            / math.sqrt(np.nan_to_num(r["se"]) ** 2 + np.nan_to_num(best["se"]) ** 2 or 1.0)
            for a, r in cells.items()
        }
        held = all(g <= 3.0 for g in gaps.values())
        lines = [
            f"{a}: {_fmt(cells[a])} ({gaps[a]:.1f} standard errors above the best)" for a in ALGOS
        ]
    out.append({"claim": CLAIMS["reco_stationary"], "held": held, "evidence": lines})

    out.append(
        {
            "claim": CLAIMS["reacher"],
            **_check((2, 3, 4), speed_label, algos_at("reacher"), pro_beats_baselines),
        }
    )
    out.append(
        {
            "claim": CLAIMS["diabetes"],
            **_check(
                range(5),
                speed_label,
                algos_at("diabetes"),
                lambda cells: min(cells, key=lambda a: cells[a]["mean"]) == "pro-wls",
            ),
        }
    )

    sums = {k: float(v.sum()) for k, v in zeta.items()}
    negative = {k: int((v < 0).sum()) for k, v in zeta.items()}
    held = (
        all(abs(s - 1) < 1e-8 for s in sums.values())
        and negative["identity"] > 0
        and negative["Fourier"] > 0
    )
    evidence = [f"{k}: Σζ = {sums[k]:.12f}, {negative[k]} negative weights" for k in zeta]
    out.append({"claim": CLAIMS["zeta"], "held": held, "evidence": evidence})

    cases = [(a, s) for a in PRO for s in sorted({r["speed"] for r in ablation if r["speed"] >= 2})]
    out.append(
        {
            "claim": CLAIMS["ablation"],
            **_check(
                cases,
                lambda case: f"{case[0]}, speed {case[1]}",
                lambda case: {
                    b: _cell(ablation, algo=case[0], basis=b, speed=case[1]) for b in BASES
                },
                lambda cells: (
                    max(cells["fourier"]["mean"], cells["poly"]["mean"]) < cells["linear"]["mean"]
                ),
            ),
        }
    )
    return out


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


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _figures(out: Path, plan: Plan, envs, runs, basis_of, table, ablation, zeta) -> list[str]:
    import matplotlib.pyplot as plt

    from pyprog import plots

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
    return made


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
) -> None:
    verdict = {True: "**held**", False: "**did not hold**", None: "not run"}
    lines = [
        f"# pyprog reproduce ({plan.name})",
        "",
        "Chandak et al., ICML 2020, §9 and appendix E, re-run by pyprog. "
        f"Settings: {settings_from}. "
        f"This invocation: {seconds / 60:.1f} min wall time, {report['ran']} runs computed, "
        f"{report['already_stored']} reused from the store; all {report['total']} runs "
        f"together took {report['run_hours']:.1f} hours of one core.",
        "",
        "| environment | speeds | seeds | episodes |",
        "|---|---|---|---|",
    ]
    for env in envs:
        speeds = ", ".join(map(str, plan.speeds[env]))
        lines.append(f"| {env} | {speeds} | {plan.seeds[env]} | {plan.episodes[env]} |")
    lines += ["", "## The paper's claims", ""]
    for c in claim_list:
        lines.append(f"- {c['claim']}: {verdict[c['held']]}")
        lines += [f"  - {e}" for e in c["evidence"]]
    for env in envs:
        rows = [r for r in table if r["env"] == env]
        lines += ["", f"## {env}: {rows[0]['metric']} (mean ± standard error over seeds)", ""]
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
        lines += ["", "## Basis ablation, NS-Reco regret", ""]
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
        ``claims``, ``table``, ``ablation``, ``figures``, ``seconds``.
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
        report = run_sweep(
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
    claim_list = claims(table, ablation, zeta)
    figures = _figures(out, plan, envs, runs, basis_of, table, ablation, zeta)
    _write_csv(out / "regret.csv", table)
    _write_csv(out / "ablation.csv", ablation)
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
    )
    return {
        "claims": claim_list,
        "table": table,
        "ablation": ablation,
        "figures": figures,
        "seconds": seconds,
    }
