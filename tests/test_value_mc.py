"""Monte Carlo claims of ``pyprog.forecast_value`` against OPFV (issue 33), slow.

``tests/value_montecarlo.py`` at its README setting: 40 logs of 10,000 rounds over a year
per truth, 8 targets 1-360 days ahead per log, seed 0 (about 8 minutes on 2 cores). The
claims and their tests:

* **beats OPFV with φ from the data** on every drifting truth: the paired per-log
  difference of mean squared errors (pyprog − OPFV) has z < −2 (one-sided, 40 logs);
* **stationary**: pyprog's MSE at most 1.1× stationary DR's (the mean of the same DR
  estimates), plus 2 s.e. of the paired difference;
* **block-shaped truths**: MSE within 1.1× OPFV's with the true φ, plus 1 s.e. of the
  paired difference;
* **coverage** of the 90 % intervals in [0.85, 0.95] per truth, ± 2 s.e. over logs;
* **against the cascade it replaced** (issue 47): MSE within 1.1× the cascade's on the same
  setting (``CASCADE_MSE``, the README's table before issue 47), plus 2 s.e. of the mean;
* **refusals**: at most 10 % of the targets.

Claims that do not hold are strict xfails with their numbers in the README's table, so a
change that fixes one shows as XPASS.
"""

import json

import pytest
from value_montecarlo import check_claim

pytestmark = pytest.mark.slow

L, N, SEED = 40, 10_000, 0
DRIFTING = ("blocks", "weekday", "blocks_weekday", "sinusoid", "trend", "step@0.6", "step@0.5")
BLOCK_SHAPED = ("blocks", "weekday", "blocks_weekday")

#: The cascade's MSE at this setting (40 logs of 10,000 rounds, seed 0; README, 29 Nov 2026).
CASCADE_MSE = {
    "blocks": 0.0023, "weekday": 0.0026, "blocks_weekday": 0.0043, "sinusoid": 0.0014,
    "trend": 0.0044, "step@0.6": 0.0012, "step@0.5": 0.056, "stationary": 0.00032,
}  # fmt: skip

# (claim, truth) pairs measured not to hold at the setting above (README table): with the
# day's own deviation τ² mixed over its confidence distribution, the step at 0.6 and the
# stationary logs, which have none, are covered 0.99 and 1.00 (a year of bins cannot tell
# τ² = 0 from a few times the forecast's own variance; docs/guides/value-model.md, "The
# day's own deviation")
MISSES: set = {("coverage", "step@0.6"), ("coverage", "stationary")}


@pytest.fixture(scope="module")
def result():
    from joblib import Parallel, delayed
    from value_montecarlo import SHAPES, run

    parts = Parallel(n_jobs=2)(
        delayed(run)(L, N, SEED, shapes=[shape], progress=False) for shape in SHAPES
    )
    out = {"L": L, "n": N, "seed": SEED, "shapes": {}}
    for part in parts:
        out["shapes"].update(part["shapes"])
    print(json.dumps(out["shapes"], indent=1))
    return out["shapes"]


def check(claim: str, truth: str, ok: bool, message: str) -> None:
    check_claim(MISSES, claim, truth, ok, message)


@pytest.mark.parametrize("truth", DRIFTING)
def test_beats_opfv_with_data_driven_phi(result, truth):
    s = result[truth]["vs_opfv"]
    m = result[truth]["mse"]
    msg = f"MSE {m['value']:.4f} vs OPFV {m['opfv']:.4f}: diff {s['diff']:.4f} ± {s['se']:.4f}"
    check("beats_opfv", truth, s["z"] < -2, f"{msg}, z = {s['z']:.1f}")


def test_stationary_is_within_ten_percent_of_dr(result):
    s = result["stationary"]
    m, d = s["mse"], s["vs_dr"]
    bound = 0.1 * m["dr"] + 2 * d["se"]
    msg = f"MSE {m['value']:.5f} vs DR {m['dr']:.5f} (diff {d['diff']:.5f} ± {d['se']:.5f})"
    check("stationary", "stationary", d["diff"] <= bound, msg)


@pytest.mark.parametrize("truth", BLOCK_SHAPED)
def test_block_truths_within_ten_percent_of_opfv_with_the_true_phi(result, truth):
    m, d = result[truth]["mse"], result[truth]["vs_opfv_true"]
    # within 10 % up to one s.e. of the paired difference (40 logs cannot resolve 10 %
    # finer than that; one s.e., not two, so that a ratio of 1.6 does not pass on noise)
    bound = 0.1 * m["opfv_true"] + d["se"]
    msg = f"MSE {m['value']:.4f} vs OPFV(true φ) {m['opfv_true']:.4f}, ratio {d['ratio']:.2f}"
    check("within_true", truth, d["diff"] <= bound, msg)


@pytest.mark.parametrize("truth", (*DRIFTING, "stationary"))
def test_coverage_is_between_85_and_95_percent(result, truth):
    s = result[truth]
    cov, se = s["coverage"], s["coverage_se"]
    msg = f"coverage {cov:.3f} ± {se:.3f}, median width {s['median_width']:.3f}"
    check("coverage", truth, 0.85 - 2 * se <= cov <= 0.95 + 2 * se, msg)


@pytest.mark.parametrize("truth", (*DRIFTING, "stationary"))
def test_within_ten_percent_of_the_cascade_it_replaced(result, truth):
    m, se = result[truth]["mse"]["value"], result[truth]["mse_se"]["value"]
    bound = 1.1 * CASCADE_MSE[truth] + 2 * se
    msg = f"MSE {m:.5f} ± {se:.5f} vs the cascade's {CASCADE_MSE[truth]:.5f}"
    check("cascade", truth, m <= bound, msg)


@pytest.mark.parametrize("truth", (*DRIFTING, "stationary"))
def test_refusals_at_most_ten_percent(result, truth):
    s = result[truth]
    assert s["refused"] <= 0.1 * s["logs"], f"{s['refused']} of {s['logs']} logs refused"
