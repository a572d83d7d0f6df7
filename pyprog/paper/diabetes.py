"""NS-Diabetes runs replayed to show their policies: (CR, CF) over the episodes, and glucose.

One stored run per learner is replayed from its seed (:mod:`pyprog.runner.replay`, which
leaves the store as it is) to record the policy's mean (CR, CF) before every episode
(:func:`diabetes_policies`); the patient of an early and of the last episode is then
treated for one day with that episode's mean (CR, CF), and :func:`glucose_rows` and
:func:`action_rows` are the rows of the CSV tables written from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pyprog.experiments.sweep import SweepTask
from pyprog.runner.parallel import execute
from pyprog.runner.replay import replay

__all__ = ["action_rows", "diabetes_policies", "glucose_rows"]


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
