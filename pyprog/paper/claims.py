"""The paper's claims assembled from the runs, each with a verdict from a stated test.

Tables of mean ± standard error of the (surrogate) regret per environment, learner and
speed (:func:`regret_tables`) and of the basis ablation (:func:`ablation_table`); the ζ
weights of paper Fig. 4 (:func:`zeta_weights`); and :func:`claims`, which turns them into
the cases of each claim of :data:`~pyprog.paper.protocols.CLAIMS` and a verdict per claim
(:mod:`pyprog.stats.verdicts`), with the speeds it covers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyprog.forecast.bases import BASES
from pyprog.forecast.estimators import ols_weights
from pyprog.learn.hyperparams import ALGOS
from pyprog.paper.protocols import BASELINES, CLAIM_SPEEDS, CLAIMS, PRO, Plan, stationary_margin
from pyprog.stats.summary import compare, mean_se
from pyprog.stats.verdicts import ALPHA, verdict_equivalent, verdict_lower

__all__ = [
    "ablation_table",
    "claims",
    "headline",
    "regret_tables",
    "table_cell",
    "zeta_weights",
]


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


def table_cell(table: list[dict], **match) -> dict | None:
    """The first row of ``table`` whose entries equal ``match``, or None."""
    for row in table:
        if all(row[k] == v for k, v in match.items()):
            return row
    return None


def _no_cases(reason: str | None) -> dict:
    """An untested claim (a verdict of its own, not ``inconclusive``: nothing was tested)."""
    if reason:
        return {"verdict": "untested", "test": f"not tested: {reason}", "cases": []}
    return {"verdict": "untested", "test": "no case of this claim was run", "cases": []}


def _lower_cases(table: list[dict], env: str, speeds, winners, others) -> list[tuple]:
    """(label, a, b) for "a has lower regret than b", at the speeds that ran."""
    cases = []
    for speed in speeds:
        for a in winners:
            for b in others:
                ca = table_cell(table, env=env, algo=a, speed=speed)
                cb = table_cell(table, env=env, algo=b, speed=speed)
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
        ``contradicted``, ``inconclusive`` or ``untested``: no case ran), ``headline``
        (the verdict with its speeds when it covers only some: :func:`headline`), ``test``
        (the test, in words), ``episodes`` (per run, None if not run), ``cases`` (per
        case: the groups' means, standard errors and seeds, the difference, p-values raw
        and Holm-adjusted, the verdict),
        ``speeds`` (the speeds tested) and ``scope`` (empty when every speed of
        :data:`CLAIM_SPEEDS` was tested; otherwise a sentence saying which were: the
        verdict covers only those).
    """
    untested = untested or {}

    reco_stationary = []
    for i, a in enumerate(ALGOS):
        for b in ALGOS[i + 1 :]:
            ca, cb = (table_cell(table, env="reco", algo=x, speed=0) for x in (a, b))
            if ca and cb:
                reco_stationary.append((f"speed 0: {a} ~ {b}", ca, cb))
    others = [a for a in ALGOS if a != "pro-wls"]
    ablation_cases = []
    for algo in PRO:
        for speed in CLAIM_SPEEDS["ablation"]:
            linear = table_cell(ablation, algo=algo, basis="linear", speed=speed)
            for basis in ("fourier", "poly"):
                cell = table_cell(ablation, algo=algo, basis=basis, speed=speed)
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
        claim = {"id": key, "claim": text, **result, "episodes": episodes, **_scope(key, tested)}
        out.append({**claim, "headline": headline(claim)})
    return out


def headline(claim: dict) -> str:
    """The verdict as a list of claims shows it: with its speeds when it covers only some.

    A claim tested at fewer speeds than it states must not read like the full claim.

    Examples
    --------
    >>> headline({"verdict": "held", "speeds": [4], "scope": "tested at speed 4 of ..."})
    'held at speed 4 only'
    >>> headline({"verdict": "untested", "speeds": [], "scope": ""})
    'untested'
    """
    if claim.get("scope") and claim.get("speeds"):
        return f"{claim['verdict']} at {_speeds(claim['speeds'])} only"
    return claim["verdict"]


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
