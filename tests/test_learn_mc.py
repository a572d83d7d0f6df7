"""Monte Carlo claims of ``pyprog.learn_for_future`` (issue 50), slow.

``tests/learn_montecarlo.py`` at the guide's setting for 8,000 rounds: 4 logs per truth and
target (1, 30 and 182 days ahead: 12 logs a truth), and 60 logs of the null truth (about
6 minutes on 2 cores). The claims and their tests (one-sided paired Wilcoxon
signed-rank tests of the true values at the target, p < 0.05):

* **beats every baseline** (greedy regression, IPS-PG, DR-PG, OPFV-PG with φ known and from
  the data) on every drifting truth and on the twins (the same log as the step's or the
  blocks', another future): measured not to hold on the step at half the year against
  regression, IPS-PG and DR-PG, and on the blocks' persisting twin against regression
  (strict xfails; the guide says why: the step's log is its twin's, and the forecast
  leans to the twin's reading);
* **coverage** of the learned policy's true value by its 90 % interval in [0.85, 0.95],
  ± 2 s.e. over the 96 logs of the truths (not the twins, whose future the log does not
  show);
* **the safety test's size**: on the truth where no policy beats the logging one, at most
  α = 0.05 of logs deploy, + 2 s.e.
"""

import numpy as np
import pytest
import scipy.stats
from learn_montecarlo import NULL, TRUTHS, TWINS, relative, run

pytestmark = pytest.mark.slow

L, N_NULL, N = 4, 60, 8000
DRIFTING = tuple(t for t in TRUTHS if t != "stationary") + sum(TWINS.values(), ())
#: (baseline, truth) pairs measured not to hold at this setting (the guide's table).
MISSES = {("regression", "step"), ("ips-pg", "step"), ("dr-pg", "step"),
          ("regression", "blocks_persist")}  # fmt: skip


@pytest.fixture(scope="module")
def rows():
    return run(L, N_NULL, sizes=(N,))


@pytest.mark.parametrize("baseline", ["ips-pg", "dr-pg", "opfv-pg", "opfv-pg-select", "regression"])
@pytest.mark.parametrize("truth", DRIFTING)
def test_prognosticator_beats_each_baseline(rows, truth, baseline, request):
    if (baseline, truth) in MISSES:
        request.applymarker(pytest.mark.xfail(strict=True, reason="measured not to hold"))
    cell = [r for r in rows if r["truth"] == truth]
    mine = np.array([relative(r, "prognosticator") for r in cell])
    other = np.array([relative(r, baseline) for r in cell])
    p = scipy.stats.wilcoxon(mine, other, alternative="greater").pvalue
    print(f"{truth} vs {baseline}: {mine.mean():.3f} vs {other.mean():.3f}, p = {p:.3g}")
    assert p < 0.05


def test_interval_covers_the_learned_policys_true_value(rows):
    covered = np.array([r["covered"] for r in rows if r["truth"] in TRUTHS], dtype=float)
    se = np.sqrt(0.9 * 0.1 / covered.size)
    print(f"coverage {covered.mean():.3f} over {covered.size} logs")
    assert 0.85 - 2 * se <= covered.mean() <= 0.95 + 2 * se


def test_safety_test_deploys_in_at_most_alpha_of_null_logs(rows):
    deploys = np.array([r["deploy"] for r in rows if r["truth"] == NULL], dtype=float)
    se = np.sqrt(0.05 * 0.95 / deploys.size)
    print(f"deployed in {int(deploys.sum())} of {deploys.size} null logs")
    assert deploys.mean() <= 0.05 + 2 * se
