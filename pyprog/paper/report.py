"""``summary.md``: a reproduction's protocol, claims, verdicts, tables and figures in Markdown.

:func:`write_summary` writes it; every argument but the path is keyword-only. Each claim
gets its verdict, the test in words and a table of its cases (:func:`claim_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyprog.forecast.bases import BASES
from pyprog.learn.hyperparams import ALGOS
from pyprog.paper.claims import table_cell
from pyprog.paper.diabetes import clinical_sentence, final_outcomes
from pyprog.paper.protocols import PRO, Plan

__all__ = ["claim_lines", "outcome_lines", "write_summary"]


def _fmt(row: dict | None) -> str:
    return "n/a" if row is None else f"{row['mean']:.4g} ± {row['se']:.2g}"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _group(mean: float, se: float, seeds: int) -> str:
    return f"{mean:.4g} ± {se:.2g} (n={seeds})"


def claim_lines(claim: dict) -> list[str]:
    """A claim's verdict, its test and a table of its cases."""
    verdict = claim.get("headline", claim["verdict"])
    lines = [f"### {claim['id']}: **{verdict}**", "", claim["claim"] + ".", ""]
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


def outcome_lines(
    table: Sequence[dict], glucose_rows: Sequence[dict], *, speed: float, seed: int = 0
) -> list[str]:
    """NS-Diabetes: beside the surrogate regret, the clinical outcome of each final policy.

    Parameters
    ----------
    table : sequence of dict
        NS-Diabetes rows of :func:`~pyprog.paper.claims.regret_tables`.
    glucose_rows : sequence of dict
        :func:`~pyprog.paper.diabetes.glucose_rows` of the replayed runs (one seed).
    speed : float
        The speed of the replayed runs.
    seed : int, default 0
        Their seed.

    Returns
    -------
    list of str
        Markdown: a sentence on what was measured, a table (learner, surrogate regret at
        ``speed``, minimum glucose, time in range, poor or not) and, when every final policy
        is poor, :func:`~pyprog.paper.diabetes.clinical_sentence`.
    """
    outcomes = final_outcomes(glucose_rows)
    if not outcomes:
        return []
    day = outcomes[0]["episode"]
    lines = [
        "",
        f"Surrogate regret compares the learners; it does not say whether a policy treats the "
        f"patient well. The absolute outcome of each learner's final policy (seed {seed}, speed "
        f"{speed:g}: the mean (CR, CF) before day {day}, replayed from the seed, applied to that "
        "day's patient and meals; one seed, one day; blood glucose every 3 min):",
        "",
        f"| algo | surrogate regret, speed {speed:g} (all seeds) | min BG (mg/dL) "
        "| time in range 70–180 mg/dL | clinically poor |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {o['algo']} | {_fmt(table_cell(table, algo=o['algo'], speed=speed))} "
        f"| {o['min_bg']:.0f} | {100 * o['time_in_range']:.0f} % | "
        + ("yes" if o["poor"] else "no")
        + " |"
        for o in outcomes
    ]
    sentence = clinical_sentence(outcomes)
    if sentence:
        lines += ["", sentence]
    return lines


def write_summary(
    path: Path,
    *,
    plan: Plan,
    envs: Sequence[str],
    table: list[dict],
    ablation: list[dict],
    claim_list: list[dict],
    figures: list[str],
    settings_from: str,
    seconds: float,
    report: dict[str, Any],
    glucose_rows: Sequence[dict] = (),
    replays_store: bool | None = None,
) -> None:
    """Write ``summary.md``: the protocol, each claim's verdict and cases, tables, figures.

    Parameters
    ----------
    path : Path
        The file to write.
    plan : Plan
        The protocol that ran.
    envs : sequence of str
        The environments that ran.
    table, ablation : list of dict
        Rows of :func:`~pyprog.paper.claims.regret_tables` and
        :func:`~pyprog.paper.claims.ablation_table`.
    claim_list : list of dict
        :func:`~pyprog.paper.claims.claims`.
    figures : list of str
        The figures' file names, relative to ``path``'s folder.
    settings_from : str
        Where the settings came from, in words.
    seconds : float
        Wall time of this invocation.
    report : dict
        ``ran``, ``already_stored``, ``total`` (runs) and ``run_hours`` (of one core).
    glucose_rows : sequence of dict
        :func:`~pyprog.paper.diabetes.glucose_rows` (none without NS-Diabetes).
    replays_store : bool, optional
        Whether the replayed NS-Diabetes runs returned what the store holds.
    """
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
        "`contradicted` (significant in the opposite direction in some case), "
        "`inconclusive` (tested, neither) or `untested` (no case of it ran here; the reason "
        "is given). A verdict that covers only some of the claim's speeds names them "
        "(`held at speed 4 only`). Tests are across seeds, unpaired (Welch): surrogate "
        "regret is taken against the best mean curve of the compared learners, so the "
        "seeds of different learners are not paired. `p` is the one-sided p-value in the "
        "claimed direction, `p against` the one in the opposite direction; Holm's correction "
        "is over the cases of one claim.",
        "",
        "| claim | verdict |",
        "|---|---|",
    ]
    lines += [
        f"| {c['id']}: {c['claim']} | **{c.get('headline', c['verdict'])}**"
        + (f" ({c['scope']})" if c.get("scope") else "")
        + " |"
        for c in claim_list
    ]
    lines.append("")
    for c in claim_list:
        lines += claim_lines(c)
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
                + " | ".join(_fmt(table_cell(rows, algo=algo, speed=s)) for s in speeds)
                + " |"
            )
        if env == "diabetes" and glucose_rows:
            lines += outcome_lines(rows, glucose_rows, speed=plan.replayed_diabetes_speed())
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
                        _fmt(table_cell(ablation, algo=algo, basis=basis, speed=s)) for s in speeds
                    )
                    + " |"
                )
    if glucose_rows:
        lines += [
            "",
            "## NS-Diabetes: the learned bolus calculator, "
            f"speed {plan.replayed_diabetes_speed():g}, seed 0 "
            f"({plan.episodes['diabetes']} episodes)",
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
