"""Coverage of ``basis="auto"`` at every fixed truth of a grid (issue 32; slow, run in CI).

:mod:`fixed_truth_montecarlo`'s grid: 31 fixed drifts (sinusoids of periods 60, 150 and
600 at 8 fixed phases of the log's end, steps at 4 fixed places, a linear trend, a smooth
step, no drift) × δ ∈ {1, 10} × NIS and NWIS, ``REPS`` logs per cell, nominal 90 %.

What is asserted, each cell on its own (coverage is a property of each fixed truth):

* coverage >= 0.85 (binomial s.e. at 0.9 with 200 logs: 0.021), except the cells measured
  below it, which are ``xfail(strict=True)`` with their numbers: the seeds are fixed, so a
  cell that starts to pass fails the test until its mark goes;
* no cell below :data:`FLOOR` (a regression of the method shows up here, measured misses
  included);
* on stationary logs, the median width at most 1.3× that of the interval before issue 32
  (:data:`WIDTH_BEFORE`, measured on the same logs at commit 30870ea).
"""

from __future__ import annotations

import os

import pytest
from fixed_truth_montecarlo import DELTAS, ESTIMATORS, TRUTHS, grid

REPS = 200
SEED = 0
#: Median widths of the stationary cells at 30870ea (the ``basis="auto"`` interval before
#: issue 32), same logs: ``grid(200, 0, names=["stationary"])`` on that commit.
WIDTH_BEFORE = {
    (1, "nis"): 0.4225,
    (1, "nwis"): 0.4175,
    (10, "nis"): 0.3358,
    (10, "nwis"): 0.2794,
}
#: No cell may cover less than this.
FLOOR = 0.70
#: Cells measured below 0.85 (name, δ, estimator): coverage at REPS = 200, seed 0
#: (``python tests/fixed_truth_montecarlo.py 200 0``; README). None since the trend misfit
#: (issue 32's third round): the lowest cell is the period-600 sinusoid falling through
#: its mean as the log ends, δ = 10, NIS, at 0.855.
MISSES: dict[tuple[str, int, str], float] = {}


@pytest.fixture(scope="module")
def table():
    return grid(REPS, SEED, jobs=min(2, os.cpu_count() or 1))


def _cells():
    for delta in DELTAS:
        for name in TRUTHS:
            for est in ESTIMATORS:
                key = (name, delta, est)
                marks = []
                if key in MISSES:
                    reason = f"measured {MISSES[key]:.3f} < 0.85 (README, issue 32)"
                    marks = [pytest.mark.xfail(reason=reason, strict=True)]
                yield pytest.param(*key, marks=marks, id=f"{name}-d{delta}-{est}")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "delta", "est"), list(_cells()))
def test_coverage_at_fixed_truth(table, name, delta, est):
    r = table[name, delta, est]
    assert r["count"] >= 0.95 * REPS, r
    assert r["coverage"] >= 0.85, (r["coverage"], r["se"])


@pytest.mark.slow
def test_no_cell_below_the_floor(table):
    low = {k: v["coverage"] for k, v in table.items() if v["coverage"] < FLOOR}
    assert not low, low


@pytest.mark.slow
@pytest.mark.parametrize(("delta", "est"), list(WIDTH_BEFORE))
def test_stationary_width_at_most_1_3_times_before(table, delta, est):
    width = table["stationary", delta, est]["median_width"]
    assert width <= 1.3 * WIDTH_BEFORE[delta, est], (width, WIDTH_BEFORE[delta, est])
