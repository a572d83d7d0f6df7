"""Verdicts from tests across seeds, on constructed tables (pyprog.stats.verdicts)."""

import math

import numpy as np
import pytest
from scipy import stats

from pyprog.stats.verdicts import holm, verdict_equivalent, verdict_lower, welch, welch_p


def group(mean, se, seeds=10):
    return {"mean": mean, "se": se, "seeds": seeds}


def test_welch_matches_scipy_on_raw_samples():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.0, 1.0, 12), rng.normal(0.7, 2.0, 9)
    gx = group(x.mean(), x.std(ddof=1) / math.sqrt(x.size), x.size)
    gy = group(y.mean(), y.std(ddof=1) / math.sqrt(y.size), y.size)
    for alternative in ("less", "greater"):
        expected = stats.ttest_ind(x, y, equal_var=False, alternative=alternative).pvalue
        assert welch_p(gx, gy, 0.0, alternative) == pytest.approx(expected, rel=1e-10)
    # a shifted null: mean_x - mean_y < c is the test of x - c against y
    expected = stats.ttest_ind(x - 0.5, y, equal_var=False, alternative="less").pvalue
    assert welch_p(gx, gy, 0.5, "less") == pytest.approx(expected, rel=1e-10)


def test_welch_without_enough_seeds_gives_no_evidence():
    assert math.isnan(welch(group(1, 0.1, 1), group(2, 0.1, 5))[1])
    assert welch_p(group(1, 0.1, 1), group(2, 0.1, 5)) == 1.0
    assert welch_p(group(1, 0.1, 1), group(2, 0.1, 5), alternative="greater") == 1.0
    # constant groups: the sign decides
    assert welch_p(group(1, 0, 5), group(2, 0, 5)) == 0.0
    assert welch_p(group(2, 0, 5), group(2, 0, 5)) == 1.0
    with pytest.raises(ValueError, match="alternative"):
        welch_p(group(1, 1), group(2, 1), alternative="two-sided")


def test_clear_difference_is_held_reversed_contradicted_noise_inconclusive():
    low, high = group(10.0, 1.0), group(50.0, 2.0)
    assert verdict_lower([("low < high", low, high)])["verdict"] == "held"
    assert verdict_lower([("high < low", high, low)])["verdict"] == "contradicted"
    noisy = verdict_lower([("equal", group(20.0, 15.0), group(20.0, 15.0))])
    assert noisy["verdict"] == "inconclusive"
    assert noisy["cases"][0]["p"] == pytest.approx(0.5)


def test_a_claim_is_held_only_if_every_case_is_and_contradicted_if_any_case_is():
    held, unclear, reversed_ = (
        ("a", group(10, 1), group(50, 1)),
        ("b", group(10, 9), group(11, 9)),
        ("c", group(50, 1), group(10, 1)),
    )
    assert verdict_lower([held, held])["verdict"] == "held"
    assert verdict_lower([held, unclear])["verdict"] == "inconclusive"
    out = verdict_lower([held, unclear, reversed_])
    assert out["verdict"] == "contradicted"
    assert [c["verdict"] for c in out["cases"]] == ["held", "inconclusive", "contradicted"]
    assert verdict_lower([])["verdict"] == "inconclusive"


def test_holm_adjusted_values():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm([0.5]), [0.5])
    np.testing.assert_allclose(holm([0.3, float("nan")]), [0.6, 1.0])
    assert holm([]).size == 0


def test_holm_turns_a_borderline_case_inconclusive():
    # a difference whose one-sided p-value is ~0.03: held alone, not among 3 such cases
    d = stats.t.ppf(0.97, 18) * math.sqrt(2)  # se of the difference: sqrt(1 + 1)
    a, b = group(0.0, 1.0), group(d, 1.0)
    alone = verdict_lower([("alone", a, b)])
    assert alone["cases"][0]["p"] == pytest.approx(0.03, rel=1e-6)
    assert alone["verdict"] == "held"
    three = verdict_lower([("1", a, b), ("2", a, b), ("3", a, b)])
    assert three["cases"][0]["p_holm"] == pytest.approx(0.09, rel=1e-6)
    assert three["verdict"] == "inconclusive"
    assert "Holm" in three["test"] and "3 cases" in three["test"]


def test_equivalence_needs_the_interval_inside_the_margin():
    a, b = group(10.0, 1.0, 30), group(11.0, 1.0, 30)
    assert verdict_equivalent([("x", a, b)], margin=5.0)["verdict"] == "held"
    # same means, but too noisy to place the difference within the margin
    wide = verdict_equivalent([("x", group(10, 8, 30), group(11, 8, 30))], margin=5.0)
    assert wide["verdict"] == "inconclusive"
    # a difference significantly beyond the margin contradicts the claim, on either side
    for lo, hi in ((a, group(30.0, 1.0, 30)), (group(30.0, 1.0, 30), a)):
        far = verdict_equivalent([("x", lo, hi)], margin=5.0)
        assert far["verdict"] == "contradicted"
        assert far["cases"][0]["margin"] == 5.0
    assert "±5" in far["test"] and "TOST" in far["test"]


def test_equivalence_p_value_is_the_larger_one_sided_test():
    a, b = group(0.0, 1.0, 20), group(1.0, 1.0, 20)
    d, se, df = welch(a, b)
    out = verdict_equivalent([("x", a, b)], margin=3.0)["cases"][0]
    lower = stats.t.sf((d + 3.0) / se, df)  # H1: d > -3
    upper = stats.t.cdf((d - 3.0) / se, df)  # H1: d < 3
    assert out["p"] == pytest.approx(max(lower, upper))


def test_equivalence_false_contradiction_rate_at_the_margin_is_at_most_alpha():
    # Monte Carlo: samples whose true difference is exactly the margin (the boundary of
    # "equivalent") are declared contradicted in at most ~alpha of the trials
    rng = np.random.default_rng(1)
    n, margin, trials, hits = 10, 1.0, 2000, 0
    for _ in range(trials):
        x, y = rng.normal(margin, 1.0, n), rng.normal(0.0, 1.0, n)
        gx = group(x.mean(), x.std(ddof=1) / math.sqrt(n), n)
        gy = group(y.mean(), y.std(ddof=1) / math.sqrt(n), n)
        hits += verdict_equivalent([("x", gx, gy)], margin)["verdict"] == "contradicted"
    # binomial(2000, 0.05) exceeds 0.05 + 3 s.d. = 0.0646 with probability ~0.1%
    assert hits / trials < 0.0646


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="alpha"):
        verdict_lower([], alpha=1.5)
    with pytest.raises(ValueError, match="margin"):
        verdict_equivalent([], margin=0)
    with pytest.raises(ValueError, match="missing se"):
        verdict_lower([("x", {"mean": 1, "seeds": 3}, group(1, 1))])
    with pytest.raises(ValueError, match=r"\(label, a, b\)"):
        verdict_lower([(group(1, 1), group(1, 1))])
