"""NS-Diabetes runs replayed to show their policies: (CR, CF) over the episodes, and glucose.

One stored run per learner is replayed from its seed (:mod:`pyprog.runner.replay`, which
leaves the store as it is) to record the policy's mean (CR, CF) before every episode
(:func:`diabetes_policies`); the patient of an early and of the last episode is then
treated for one day with that episode's mean (CR, CF), and :func:`glucose_rows` and
:func:`action_rows` are the rows of the CSV tables written from them.
:func:`final_outcomes` reads the last day's rows as the clinical outcome of each learner's
final policy, and :func:`clinical_sentence` says in words when all of them are poor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pyprog.experiments.sweep import SweepTask
from pyprog.runner.parallel import execute
from pyprog.runner.replay import replay

__all__ = [
    "CONSENSUS",
    "LEVEL2_HYPO",
    "POOR_TIME_IN_RANGE",
    "action_rows",
    "clinical_sentence",
    "diabetes_policies",
    "final_outcomes",
    "glucose_rows",
]

#: Where the clinical thresholds below come from.
CONSENSUS = (
    "Battelino et al. 2019, Clinical Targets for Continuous Glucose Monitoring Data "
    "Interpretation: Recommendations From the International Consensus on Time in Range, "
    "Diabetes Care 42(8):1593-1603"
)
#: Blood glucose (mg/dL) below which hypoglycaemia is level 2, "clinically significant" (CONSENSUS).
LEVEL2_HYPO = 54.0
#: Time in range 70-180 mg/dL (fraction of the day) below which a policy is called poor here;
#: CONSENSUS's target for most adults with type-1 diabetes is above 0.70.
POOR_TIME_IN_RANGE = 0.50


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


def glucose_rows(policies: dict[str, Any]) -> list[dict]:
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


def action_rows(policies: dict[str, Any]) -> list[dict]:
    """Per learner and episode: the policy's mean (CR, CF) (:func:`diabetes_policies`)."""
    return [
        dict(algo=algo, episode=k + 1, cr=float(cr), cf=float(cf))
        for algo, actions in policies["actions"].items()
        for k, (cr, cf) in enumerate(actions)
    ]


def final_outcomes(rows: Sequence[dict]) -> list[dict]:
    """The clinical outcome of each learner's final policy: its row of the last day.

    Parameters
    ----------
    rows : sequence of dict
        :func:`glucose_rows` (``algo``, ``episode``, ``min_bg`` in mg/dL and
        ``time_in_range`` as a fraction, at least).

    Returns
    -------
    list of dict
        Per learner, in the order of ``rows``: ``algo``, ``episode`` (the last day),
        ``min_bg``, ``time_in_range`` and ``poor``: whether ``min_bg <`` :data:`LEVEL2_HYPO`
        or ``time_in_range <`` :data:`POOR_TIME_IN_RANGE`.

    Examples
    --------
    >>> rows = [dict(algo="a", episode=10, min_bg=80.0, time_in_range=0.9),
    ...         dict(algo="a", episode=100, min_bg=40.0, time_in_range=0.8)]
    >>> [(r["episode"], r["poor"]) for r in final_outcomes(rows)]
    [(100, True)]
    """
    last: dict[str, dict] = {}
    for r in rows:
        if r["algo"] not in last or r["episode"] > last[r["algo"]]["episode"]:
            last[r["algo"]] = r
    return [
        dict(
            algo=algo,
            episode=int(r["episode"]),
            min_bg=float(r["min_bg"]),
            time_in_range=float(r["time_in_range"]),
            poor=bool(r["min_bg"] < LEVEL2_HYPO or r["time_in_range"] < POOR_TIME_IN_RANGE),
        )
        for algo, r in last.items()
    ]


def clinical_sentence(outcomes: Sequence[dict]) -> str | None:
    """One plain sentence when every learner's final policy is clinically poor, else None.

    Parameters
    ----------
    outcomes : sequence of dict
        :func:`final_outcomes`.

    Returns
    -------
    str or None
        The sentence, with the ranges seen, the thresholds and their source (:data:`CONSENSUS`);
        None when there are no outcomes or some learner's policy is not poor.
    """
    if not outcomes or not all(o["poor"] for o in outcomes):
        return None
    low = [o["min_bg"] for o in outcomes]
    tir = [100 * o["time_in_range"] for o in outcomes]
    return (
        "Every learner's final policy is clinically poor: minimum blood glucose "
        f"{min(low):.0f}–{max(low):.0f} mg/dL and {min(tir):.0f}–{max(tir):.0f} % of the day "
        f"in 70–180 mg/dL, each either below {LEVEL2_HYPO:.0f} mg/dL at some point (level 2, "
        "clinically significant hypoglycaemia) or in range less than "
        f"{100 * POOR_TIME_IN_RANGE:.0f} % of the day (the target is above 70 %), thresholds "
        f"from {CONSENSUS}; a lower surrogate regret only ranks the learners against each other."
    )
