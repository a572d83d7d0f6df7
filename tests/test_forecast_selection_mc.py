"""Monte Carlo of ``basis="auto"`` over drift shapes (issue 18; slow, run in CI).

For each drift shape of :mod:`selection_montecarlo` (a 4-armed drifting bandit logged
off-policy, N = 300 episodes, δ = 5), ``REPS`` simulated logs with a random phase each: the
coverage of the nominal 90 % interval of NIS and NWIS with ``basis="auto"`` must lie in
[0.85, 0.99] (binomial s.e. at 0.9 with 200 logs: 0.021), and the point forecast's RMSE must
be within 1.25× of the best fixed candidate's in hindsight. The two bars are separate tests.

Why the band reaches 0.99: since issue 32 the interval must cover at least 0.85 at every
fixed phase (``test_fixed_truth_mc.py``), including the phase where the chosen model's bias
is largest; averaged over random phases it then covers more than the nominal 0.90. The
upper end only guards against intervals that cover by being useless; their width is
bounded where it matters, on stationary logs (``test_fixed_truth_mc.py``).

Cases where pyprog does not meet a bar yet are marked ``xfail`` with the numbers measured
(README, "Choosing the forecaster"): strict, so a case that starts to pass (the seeds are
fixed, the numbers deterministic) fails the test until its mark is removed.
"""

from __future__ import annotations

import math

import pytest
from selection_montecarlo import SHAPES, run

REPS = 200
#: Seed of the simulated logs (the README table's; the method was chosen on seed 1).
SEED = 2
#: (shape, estimator) pairs whose coverage was measured outside [0.85, 0.99] (forecast
#: guide, "Averaged over random phases"), all above it: the smooth step's, NIS 1.000 and
#: NWIS 0.995 (a step in the later half inflates the backtests' misfit estimate, which then
#: widens the interval after the log has settled); the period-60 sinusoid's, 1.000 both
#: (the mean is chosen, and the periodic misfit makes the interval reach the sinusoid's
#: whole swing, which it must to cover at every phase: ``test_fixed_truth_mc.py``).
COVERAGE_MISSES: set[tuple[str, str]] = {
    ("smooth step", "nis"),
    ("smooth step", "nwis"),
    ("short sinusoid (period 60)", "nis"),
    ("short sinusoid (period 60)", "nwis"),
}
#: (shape, estimator) pairs whose RMSE was measured above 1.25× the best fixed candidate's.
RMSE_MISSES: set[tuple[str, str]] = {
    ("long sinusoid (period 600)", "nis"),
    ("long sinusoid (period 600)", "nwis"),
    ("sum of sinusoids", "nwis"),
    ("smooth step", "nis"),
    ("smooth step", "nwis"),
}


@pytest.fixture(scope="module")
def results():
    return {name: run(shape, REPS, seed=SEED) for name, shape in SHAPES.items()}


def _cases(misses):
    def mark(name, est):
        if (name, est) in misses:
            reason = "measured outside the issue's bar; see README"
            return pytest.mark.xfail(reason=reason, strict=True)
        return []

    return [
        pytest.param(name, est, marks=mark(name, est), id=f"{name}-{est}")
        for name in SHAPES
        for est in ("nis", "nwis")
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "est"), _cases(COVERAGE_MISSES))
def test_coverage(results, name, est):
    r = results[name][est]
    assert r["count"] >= 0.95 * REPS
    se = math.sqrt(0.9 * 0.1 / r["count"])
    assert 0.85 <= r["coverage"] <= 0.99, (r["coverage"], se)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "est"), _cases(RMSE_MISSES))
def test_rmse_against_the_best_fixed_candidate(results, name, est):
    r = results[name][est]
    assert r["rmse_auto"] <= 1.25 * r["rmse_best"], r
