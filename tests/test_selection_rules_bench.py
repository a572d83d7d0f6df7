"""bench/selection_rules.py: its rules choose among the candidates, and its plot reads its table."""

from __future__ import annotations

import numpy as np
import pytest
from bench_scripts import BENCH, load


@pytest.fixture(scope="module")
def rules():
    return load("selection_rules")


@pytest.mark.parametrize("rule", ["se=1", "median=1", "median=2", "lof=0.01", "gp=1"])
def test_choice_rules_return_a_candidates_forecast(rules, rule):
    from pyprog.forecast import selection
    from pyprog.forecast.forecasters import parse_forecaster

    rng = np.random.default_rng(3)
    J, lam, G, _, truths = rules.simulate(rng, rules.SHAPES["smooth step"], series=True)
    cands = [parse_forecaster(c) for c in selection.DEFAULT_CANDIDATES]
    for est in ("nis", "nwis"):
        f = rules.rule_forecast(rule, est, J, lam, G, truths)
        assert np.isclose(rules._forecasts(cands, J, lam, G, est), f, rtol=0, atol=1e-12).any()


def test_shrinkage_runs_from_the_one_se_choice_to_the_best_backtest(rules):
    rng = np.random.default_rng(4)
    shape = rules.SHAPES["long sinusoid (period 600)"]
    J, lam, G, _, truths = rules.simulate(rng, shape, series=True)
    for est in ("nis", "nwis"):

        def forecast(rule, est=est):
            return rules.rule_forecast(rule, est, J, lam, G, truths)

        simple, best = forecast("se=1"), forecast("se=0")
        assert forecast("shrink=0") == pytest.approx(best)  # t = 0: all the way to r
        assert forecast("shrink=1e9") == pytest.approx(simple)  # t → ∞: stays at s
        assert min(simple, best) - 1e-12 <= forecast("shrink=1") <= max(simple, best) + 1e-12


def test_plot_reads_the_committed_table(rules, tmp_path):
    names, x, y = rules.plot(BENCH / "results/selection_rules/seed1.md", tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    at = dict(zip(names, zip(x, y, strict=True), strict=True))
    assert at["se=1"] == (1.17, 1.96)  # worst of linear trend/stationary; of the drifting four
    assert at["oracle=0"] == (1.16, 1.24) and len(names) == len(set(names)) >= 22
    assert at["shrink=2"] == (1.49, 1.61)
