"""Coverage of ``pyprog.forecast_value``'s intervals at fixed truths and fixed targets.

The Monte Carlo of :mod:`value_montecarlo` fixes each truth but draws every log's targets
at random 1-360 days ahead, so its coverage is an average over where a target falls on
the truth's course. Here every cell fixes both:

* **the truth's phase against the log**: a yearly sinusoid logged from its zero, its
  peak, its next zero and its trough (the log starting at 0, ¼, ½ and ¾ of the year); a
  step at 0.3, 0.5, 0.6 and 0.8 of the log; 8 blocks of the year (± the day of the week)
  logged from the middle of a block; the day of the week, a trend, no drift;
* **the targets**: 1, 30, 90, 180, 270 and 360 days after the log's last round.

Per cell: coverage of the 90 % intervals over ``L`` logs × 6 targets with its s.e. over
logs, and per (cell, horizon) coverage with its binomial s.e.; refusals counted.
OPFV and DR are not run (coverage only).

Run ``python tests/value_fixed_truth.py L n seed [out.json]`` (L = 40, n = 10,000:
about 6 minutes on 2 jobs).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import YEAR, YearOfRounds
from value_montecarlo import coverage_summary, main, one_log

CELLS = (
    ("sinusoid", {"start": 0.0}, "from its zero"),
    ("sinusoid", {"start": YEAR / 4}, "from its peak"),
    ("sinusoid", {"start": YEAR / 2}, "from its next zero"),
    ("sinusoid", {"start": 3 * YEAR / 4}, "from its trough"),
    ("step", {"step_at": 0.3}, "at 0.3"),
    ("step", {"step_at": 0.5}, "at 0.5"),
    ("step", {"step_at": 0.6}, "at 0.6"),
    ("step", {"step_at": 0.8}, "at 0.8"),
    ("blocks", {"start": YEAR / 16}, "from mid-block"),
    ("blocks_weekday", {"start": YEAR / 16}, "from mid-block"),
    ("weekday", {}, ""),
    ("trend", {}, ""),
    ("stationary", {}, ""),
)
HORIZONS = (1.0, 30.0, 90.0, 180.0, 270.0, 360.0)


def cell_name(shape: str, label: str) -> str:
    return f"{shape} {label}".strip()


def one_cell(shape: str, kw: dict, label: str, L: int, n: int, seed: int) -> dict:
    """Coverage of one fixed truth at the fixed horizons over L logs."""
    gen = YearOfRounds(shape, **kw)
    start = time.time()
    logs = [
        one_log(gen, shape, n, 100_000 * seed + 1_000 * i + 11, HORIZONS, baselines=False)
        for i in range(L)
    ]
    kept = [g for g in logs if "refused" not in g]
    out = {"cell": cell_name(shape, label), "logs": L, "refused": L - len(kept)}
    if kept:
        covered, summary = coverage_summary(kept)  # covered: (logs, horizons)
        out.update(summary)
        by_h = covered.mean(axis=0)
        out["by_horizon"] = {f"{h:g}": float(c) for h, c in zip(HORIZONS, by_h, strict=True)}
        out["by_horizon_se"] = float(np.sqrt(0.09 / len(kept)))  # binomial at the nominal 0.9
    out["seconds"] = round(time.time() - start, 1)
    return out


def run(L: int, n: int, seed: int = 0, cells=CELLS, n_jobs: int = 2) -> list[dict]:
    from joblib import Parallel, delayed
    from threadpoolctl import threadpool_limits

    def job(cell):
        with threadpool_limits(1):
            return one_cell(*cell, L, n, seed)

    return Parallel(n_jobs=n_jobs)(delayed(job)(c) for c in cells)


def table(rows: list[dict]) -> str:
    """One row per cell: coverage ± s.e., the lowest and highest horizon, median width."""
    out = ["| truth | coverage (90 %) | lowest horizon | highest horizon | median width |",
           "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if "coverage" not in r:
            out.append(f"| {r['cell']} | refused in all {r['logs']} logs | - | - | - |")
            continue
        h = r["by_horizon"]
        lo, hi = min(h, key=h.get), max(h, key=h.get)
        out.append(
            f"| {r['cell']} | {r['coverage']:.3f} ± {r['coverage_se']:.3f} | "
            f"{h[lo]:.2f} ({lo} d) | {h[hi]:.2f} ({hi} d) | {r['median_width']:.3f} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main(run, table, sys.argv)
