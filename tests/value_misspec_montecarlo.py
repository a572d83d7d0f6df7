"""Monte Carlo of ``pyprog.forecast_value`` where its candidate models are wrong, and where
the truth's terms are candidates only together (:class:`contextual_year.MisspecifiedYear`).

The protocol and summary are :mod:`value_montecarlo`'s: each truth gives ``L`` logs of
``n`` rounds over one year, each with 8 targets drawn uniformly 1-360 days after the log's
last round; pyprog's ``forecast_value`` (defaults, 90 % intervals), OPFV with φ from the
data, OPFV with the true φ where a block φ is the truth (the 8 × 7 cells of blocks × day
of the week for ``interactions``, ``greedy_today`` and ``weekly_contexts_blocks``, the day
of the week for ``weekly_contexts``), and stationary DR. Besides:

* ``greedy_today``: π_e changes with the time it acts at, so ``forecast_value`` gets the
  callable ``policy(x, t)`` (and ``n_actions``) and forecasts V_{t'}(π_e at t');
* ``holidays``: the last 2 of each log's 8 targets are moved onto holidays (midday of a
  holiday drawn uniformly among those 1-360 days ahead); coverage is also given
  separately for the targets on a holiday and the others;
* ``weekly_season_trend``, ``blocks_trend``: "ols_true", least squares of the per-round DR
  estimates (:func:`pyprog.offpolicy.round_estimates`, ``estimator="dr"``) on the true
  design (const + the truth's own columns), predicted at the targets, and pyprog's MSE
  over it (paired, as against OPFV).

Run ``python tests/value_misspec_montecarlo.py L n seed [out.json]``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import (
    MISSPEC_TRUTHS,
    YEAR,
    MisspecifiedYear,
    block_of_year,
    holiday_days,
    holiday_shock,
    weekday,
)
from value_montecarlo import (
    baselines_of,
    coverage_summary,
    log_of,
    main,
    paired,
    per_log_mse,
    summarise,
)

from pyprog.offpolicy import round_estimates
from pyprog.timeseries.errors import ForecastError
from pyprog.value.forecast import forecast_value

TRUTHS = tuple((truth, {}) for truth in MISSPEC_TRUTHS)
#: The key of :data:`value_montecarlo.TRUE_PHI` whose φ is each truth's (none: no OPFV
#: with the true φ).
TRUE_PHI_KEY = {
    "interactions": "blocks_weekday",
    "greedy_today": "blocks_weekday",
    "weekly_contexts": "weekday",
    "weekly_contexts_blocks": "blocks_weekday",
}
N_HOLIDAY_TARGETS = 2


def design_weekly_season_trend(t: np.ndarray, start: float) -> np.ndarray:
    """const, trend, sin and cos of the year, 6 day-of-week indicators (Monday = 0 left out)."""
    w = weekday(t)
    angle = 2 * np.pi * t / YEAR
    cols = [np.ones_like(t), (t - start) / YEAR, np.sin(angle), np.cos(angle)]
    cols += [(w == k).astype(float) for k in range(1, 7)]
    return np.column_stack(cols)


def design_blocks_trend(t: np.ndarray, start: float) -> np.ndarray:
    """const, trend, 7 block-of-the-year indicators (block 0 left out)."""
    b = block_of_year(t)
    cols = [np.ones_like(t), (t - start) / YEAR] + [(b == k).astype(float) for k in range(1, 8)]
    return np.column_stack(cols)


TRUE_DESIGN = {
    "weekly_season_trend": design_weekly_season_trend,
    "blocks_trend": design_blocks_trend,
}


def holiday_targets(t_last: float, seed: int, k: int = N_HOLIDAY_TARGETS) -> np.ndarray:
    """k holidays' middays drawn (without replacement) among those 1-360 days after t_last."""
    days = holiday_days(t_last + 1.0, t_last + 360.0)
    days = days[days + 0.5 > t_last + 1.0]
    rng = np.random.default_rng([seed, 2])
    return np.sort(rng.choice(days, size=k, replace=False)) + 0.5


def one_log(
    gen: MisspecifiedYear, n: int, seed: int, horizons=None, baselines: bool = True
) -> dict:
    """One log of ``gen``'s truth: pyprog's forecasts and the baselines at its 8 targets
    (or at ``horizons`` days after its last round, none moved onto holidays);
    ``baselines=False`` skips OPFV, DR and ols_true."""
    truth = gen.truth
    d, frame, targets = log_of(gen, n, seed, horizons)
    if truth == "holidays" and horizons is None:
        targets = targets.copy()
        targets[-N_HOLIDAY_TARGETS:] = holiday_targets(d["times"].max(), seed)
    out = {"truth": gen.value(targets).tolist(), "targets": targets.tolist()}
    if truth == "holidays":
        out["on_holiday"] = (holiday_shock(targets) != 0).tolist()
    policy = gen.evaluation if truth == "greedy_today" else d["action_dist"]
    try:
        res = forecast_value(
            frame, policy, at=list(targets), n_actions=gen.n_actions, random_state=seed
        )
        out["value"] = [r.value for r in res]
        out["low"] = [r.low for r in res]
        out["high"] = [r.high for r in res]
        out["model"] = [r.model for r in res]
        out["estimator"] = res[0].estimator
    except ForecastError as exc:
        out["refused"] = str(exc)
    if not baselines:
        return out
    out.update(baselines_of(gen, TRUE_PHI_KEY.get(truth, truth), d, targets, seed))
    if truth in TRUE_DESIGN:
        out["ols_true"] = ols_true(gen, d, targets, seed).tolist()
    return out


def ols_true(gen: MisspecifiedYear, d: dict, targets: np.ndarray, seed: int) -> np.ndarray:
    """Least squares of the per-round DR estimates on the truth's own design, at the targets."""
    args = [d[k] for k in ("context", "times", "action", "reward", "pscore")]
    dr = round_estimates(*args, d["action_dist"], estimator="dr", random_state=seed)
    design = TRUE_DESIGN[gen.truth]
    coef, *_ = np.linalg.lstsq(design(d["times"], gen.start), dr.values, rcond=None)
    return design(np.asarray(targets, dtype=float), gen.start) @ coef


def summarise_misspec(logs: list[dict]) -> dict:
    """:func:`value_montecarlo.summarise`, refusals as a share of targets, and the
    ols_true comparison and the holidays' coverage where the truth has them."""
    out = summarise(logs)
    out["refused_share"] = out["refused"] / max(len(logs), 1)  # a refusal is all 8 targets
    kept = [g for g in logs if "refused" not in g]
    if len(kept) > 1 and "ols_true" in kept[0]:
        mine, ols = per_log_mse(kept, "value"), per_log_mse(kept, "ols_true")
        out["mse"]["ols_true"] = float(ols.mean())
        out["mse_se"]["ols_true"] = float(ols.std(ddof=1) / np.sqrt(len(kept)))
        out["vs_ols_true"] = paired(mine, ols)
    if kept and "on_holiday" in kept[0]:
        covered, _ = coverage_summary(kept)
        on = np.array([g["on_holiday"] for g in kept])
        for name, mask in (("holiday", on), ("not_holiday", ~on)):
            per_log = [c[m].mean() for c, m in zip(covered, mask, strict=True) if m.any()]
            out[f"coverage_{name}"] = float(np.mean(per_log))
            out[f"coverage_{name}_se"] = float(np.std(per_log, ddof=1) / np.sqrt(len(per_log)))
            out[f"targets_{name}"] = int(mask.sum())
    return out


def run(L: int, n: int, seed: int = 0, truths=TRUTHS, progress: bool = True) -> dict:
    from threadpoolctl import threadpool_limits

    result = {"L": L, "n": n, "seed": seed, "shapes": {}, "logs": {}}
    with threadpool_limits(1):
        for truth, kw in truths:
            gen = MisspecifiedYear(truth=truth, **kw)
            start = time.time()
            logs = [one_log(gen, n, 100_000 * seed + 1_000 * i + 7) for i in range(L)]
            summary = summarise_misspec(logs)
            summary["seconds"] = round(time.time() - start, 1)
            summary["value_mc_se"] = gen.value_se
            result["shapes"][truth] = summary
            result["logs"][truth] = logs
            if progress:
                print(truth, json.dumps(summary), flush=True)
    return result


def table(result: dict) -> str:
    """One row per truth: MSEs, z vs OPFV, coverage ± s.e., median width, refusals, and
    pyprog's MSE over least squares on the true design where there is one."""
    rows = ["| truth | pyprog MSE | OPFV (φ from data) | OPFV (true φ) | stationary DR | "
            "ols_true | pyprog − OPFV, z | coverage (90 %) | median width | refused | "
            "pyprog / ols_true |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for key, s in result["shapes"].items():
        m = s["mse"]
        cell = {k: f"{m[k]:.4f}" if k in m else "-" for k in ("opfv_true", "ols_true")}
        z = f"{s['vs_opfv']['z']:+.1f}" if "vs_opfv" in s else "-"
        ratio = (f"{s['vs_ols_true']['ratio']:.2f} (z {s['vs_ols_true']['z']:+.1f})"
                 if "vs_ols_true" in s else "-")  # fmt: skip
        cov = f"{s['coverage']:.3f} ± {s['coverage_se']:.3f}" if "coverage" in s else "-"
        width = f"{s['median_width']:.3f}" if "median_width" in s else "-"
        rows.append(
            f"| {key} | {m.get('value', float('nan')):.4f} | {m['opfv']:.4f} | "
            f"{cell['opfv_true']} | {m['dr']:.4f} | {cell['ols_true']} | {z} | {cov} | "
            f"{width} | {s['refused']}/{s['logs']} | {ratio} |"
        )
        if "coverage_holiday" in s:
            rows.append(
                f"| {key}: on a holiday ({s['targets_holiday']} targets) | | | | | | | "
                f"{s['coverage_holiday']:.3f} ± {s['coverage_holiday_se']:.3f} | | | |"
            )
            rows.append(
                f"| {key}: other days ({s['targets_not_holiday']} targets) | | | | | | | "
                f"{s['coverage_not_holiday']:.3f} ± {s['coverage_not_holiday_se']:.3f} | | | |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    main(run, table, sys.argv)
