"""Monte Carlo claims of ``pyprog.forecast_value`` where its candidates are wrong (issue 47), slow.

``tests/value_misspec_montecarlo.py`` at the guide's setting: 20 logs of 10,000 rounds over
a year per truth of ``contextual_year.MisspecifiedYear``, 8 targets 1-360 days ahead per
log (2 of them on holidays for ``holidays``), seed 0, on both cores (about 4 minutes).
The claims:

* **beats OPFV with φ from the data** on every truth: paired per-log z < −2 (one-sided);
* **coverage** of the 90 % intervals in [0.85, 0.95] per truth, ± 2 s.e. over logs, and
  on the days that are not holidays;
* **terms together**: MSE within 2× least squares on the true design (``ols_true``), plus
  2 s.e. of the paired difference;
* **refusals**: none.

Claims measured not to hold are strict xfails (the guide's table has their numbers), so a
change that fixes one shows as XPASS.
"""

import json

import pytest
from value_montecarlo import check_claim

pytestmark = pytest.mark.slow

L, N, SEED = 20, 10_000, 0
TOGETHER = ("weekly_season_trend", "blocks_trend")

# (claim, truth) measured not to hold (docs/guides/value-at-a-date.md, "Where the
# candidates are wrong"): a holiday's shock is in no term; a trend with blocks of the year
# is no candidate on a one-year log (default_time_models), so 8 blocks + a trend is not met
MISSES = {
    ("coverage", "holidays"),
    ("beats_opfv", "blocks_trend"),
    ("coverage", "blocks_trend"),
    ("together", "blocks_trend"),
}


@pytest.fixture(scope="module")
def result():
    from joblib import Parallel, delayed
    from value_misspec_montecarlo import TRUTHS, run

    parts = Parallel(n_jobs=2)(
        delayed(run)(L, N, SEED, truths=[truth], progress=False) for truth in TRUTHS
    )
    shapes = {}
    for part in parts:
        shapes.update(part["shapes"])
    print(json.dumps(shapes, indent=1))
    return shapes


def check(claim: str, truth: str, ok: bool, message: str) -> None:
    check_claim(MISSES, claim, truth, ok, message)


def truths():
    from value_misspec_montecarlo import TRUTHS

    return [truth for truth, _ in TRUTHS]


@pytest.mark.parametrize("truth", truths())
def test_beats_opfv_with_data_driven_phi(result, truth):
    s, m = result[truth]["vs_opfv"], result[truth]["mse"]
    msg = f"MSE {m['value']:.4f} vs OPFV {m['opfv']:.4f}: z = {s['z']:.1f}"
    check("beats_opfv", truth, s["z"] < -2, msg)


@pytest.mark.parametrize("truth", truths())
def test_coverage_is_between_85_and_95_percent(result, truth):
    s = result[truth]
    cov, se = s["coverage"], s["coverage_se"]
    msg = f"coverage {cov:.3f} ± {se:.3f}, median width {s['median_width']:.3f}"
    check("coverage", truth, 0.85 - 2 * se <= cov <= 0.95 + 2 * se, msg)


def test_days_that_are_not_holidays_are_covered(result):
    s = result["holidays"]
    cov, se = s["coverage_not_holiday"], s["coverage_not_holiday_se"]
    assert 0.85 - 2 * se <= cov <= 0.95 + 2 * se, f"coverage {cov:.3f} ± {se:.3f}"


@pytest.mark.parametrize("truth", TOGETHER)
def test_terms_together_within_twice_least_squares_on_the_true_form(result, truth):
    m, d = result[truth]["mse"], result[truth]["vs_ols_true"]
    bound = m["ols_true"] + 2 * d["se"]  # pyprog − ols <= ols (2×), up to 2 s.e.
    msg = f"MSE {m['value']:.4f} vs least squares {m['ols_true']:.4f}, ratio {d['ratio']:.2f}"
    check("together", truth, d["diff"] <= bound, msg)


@pytest.mark.parametrize("truth", truths())
def test_nothing_is_refused(result, truth):
    assert result[truth]["refused"] == 0, result[truth]["refused"]
