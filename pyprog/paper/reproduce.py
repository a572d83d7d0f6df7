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

from pyprog.envs.registry import ENVS
from pyprog.experiments.runs import run_tasks
from pyprog.experiments.sweep import SweepTask, best_settings
from pyprog.paper.claims import ablation_table, claims, regret_tables, zeta_weights
from pyprog.paper.diabetes import action_rows, diabetes_policies, glucose_rows
from pyprog.paper.drawing import draw_figures
from pyprog.paper.protocols import FULL, QUICK, Plan, plan_tasks
from pyprog.paper.report import write_summary
from pyprog.results.store import ResultStore, StoreError

__all__ = ["reproduce"]


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


def reproduce(
    out: str | os.PathLike,
    quick: bool = False,
    store: str | os.PathLike | None = None,
    envs: Sequence[str] = ENVS,
    jobs: int | None = None,
    progress: Callable[[int, int], Any] | None = None,
    plan: Plan | None = None,
    dtype: str | None = None,
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
    dtype : {"float64", "float32"}, optional
        Precision of the policies' passes (``Hyper.dtype``) for every run of a softmax
        policy (NS-Diabetes's Gaussian policy stays float64); None keeps the settings' own,
        float64: the paper's protocol.

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
    if dtype is not None:
        tasks = {
            part: [
                t
                if t.hyper.gauss_std is not None  # a Gaussian policy: float64 only
                else dataclasses.replace(t, hyper=t.hyper.replace(dtype=dtype))
                for t in ts
            ]
            for part, ts in tasks.items()
        }
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
    policies, glucose = None, []
    if "diabetes" in envs:
        speed = plan.replayed_diabetes_speed()
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
        glucose = glucose_rows(policies)
    figures = draw_figures(out, plan, envs, runs, basis_of, table, ablation, zeta, policies)
    _write_csv(out / "regret.csv", table)
    _write_csv(out / "ablation.csv", ablation)
    _write_csv(out / "diabetes_glucose.csv", glucose)
    if policies is not None:
        _write_csv(out / "diabetes_cr_cf.csv", action_rows(policies))
    written = _finite_or_none(claim_list)  # strict JSON: no NaN (a group of one seed)
    (out / "claims.json").write_text(json.dumps(written, indent=1, allow_nan=False) + "\n")
    seconds = time.perf_counter() - start
    write_summary(
        out / "summary.md",
        plan=plan,
        envs=envs,
        table=table,
        ablation=ablation,
        claim_list=claim_list,
        figures=figures,
        settings_from=settings_from,
        seconds=seconds,
        report=report,
        glucose_rows=glucose,
        replays_store=None if policies is None else policies["replays_store"],
    )
    return {
        "claims": written,
        "table": table,
        "ablation": ablation,
        "figures": figures,
        "seconds": seconds,
        "policies": policies,
    }
