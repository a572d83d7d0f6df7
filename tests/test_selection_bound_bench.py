"""bench/selection_bound.py: its quadrature is the risk a simulation measures, and its rules
are ordered as they must be (a bound below what is reached, choice no better than the ideal)."""

from __future__ import annotations

import numpy as np
import pytest
from bench_scripts import BENCH, load

PAIR = (("linear trend", "long sinusoid (period 600)"), ("linear", "fourier(d=3)"))


@pytest.fixture(scope="module")
def bench():
    return load("selection_bound")


@pytest.fixture(scope="module")
def shapes(bench):
    return {s: bench.shape_logs(s, reps=30, seed=5) for s in PAIR[0]}


def test_fixed_candidates_have_their_closed_form_risk(bench, shapes):
    # g ≡ 0 is always a, g ≡ 1 always b: the quadrature of D must give bias² + s²‖ζ‖²
    (first, second), (a, b) = PAIR
    r = bench.bound(shapes[first], shapes[second], a, b)
    for k, name in enumerate((first, second)):
        risk = shapes[name].fixed_risk
        for cand in (a, b):
            exact = np.sqrt(risk[bench.NAMES.index(cand)] / risk.min())
            assert r["a" if cand == a else "b"][k] == pytest.approx(exact, rel=1e-6)


def test_quadrature_matches_a_simulation(bench, shapes):
    # the rule "b when D > 0" by quadrature and by drawing Gaussian noise on every log
    shape, (a, b) = shapes["long sinusoid (period 600)"], PAIR[1]
    ia, ib = bench.NAMES.index(a), bench.NAMES.index(b)
    mean, sd = bench._mean_sd(shape, a, b)
    D = np.arange(mean.min() - 8 * sd, mean.max() + 8 * sd, 0.005 * sd)
    ratio = bench.Pair(shape, a, b, D).ratio((D > 0).astype(float))
    rng = np.random.default_rng(0)
    za, zb = bench.ZETA[ia], bench.ZETA[ib]
    sq = []
    for bias in shape.bias:
        noise = rng.normal(0.0, np.sqrt(shape.s2), (4000, len(za)))
        ea, eb = bias[ia] + noise @ za, bias[ib] + noise @ zb
        sq.append(np.where(eb - ea > 0, eb, ea) ** 2)
    sq = np.concatenate(sq)
    mse, se = sq.mean(), sq.std() / np.sqrt(len(sq))
    assert abs(ratio**2 * shape.best - mse) < 4 * se, (ratio**2 * shape.best, mse, se)


def test_excess_is_what_choosing_b_adds(bench, shapes):
    # ratio(A)² = ratio(∅)² + Σ_{D∈A} excess(D) for any set A: the weighted risk is linear in
    # the set, so the pointwise Bayes set minimises it and the lower bound is one
    (first, _), (a, b) = PAIR
    mean, sd = bench._mean_sd(shapes[first], a, b)
    D = np.arange(mean.min() - 8 * sd, mean.max() + 8 * sd, 0.01 * sd)
    pair = bench.Pair(shapes[first], a, b, D)
    base = pair.ratio(np.zeros_like(D)) ** 2
    for seed in range(3):
        A = np.random.default_rng(seed).random(len(D)) < 0.5
        assert pair.ratio(A.astype(float)) ** 2 == pytest.approx(base + pair.excess()[A].sum())


def test_ideal_risk_is_the_monte_carlos_error_on_a_stationary_log(bench):
    # on the stationary shape every episode's estimate has the same noise, so each fixed
    # candidate's MSE in the real Monte Carlo, Gaussian or not, is bias² + s²‖ζ‖² exactly:
    # the ideal problem's risks (its bias and s²) must match it within the sampling error
    shape = bench.shape_logs("stationary", reps=200, seed=6)
    rng = np.random.default_rng(7)
    sq = np.zeros(len(bench.NAMES))
    reps = 20000
    for _ in range(reps):
        J_hat, _, _, truth = bench.simulate(rng, bench.SHAPES["stationary"])
        sq += (bench.ZETA @ J_hat - truth) ** 2
    assert np.allclose(shape.fixed_risk, sq / reps, rtol=0.04, atol=0), (shape.fixed_risk, sq)


def test_no_choice_beats_the_lower_bound(bench, shapes):
    # any set A of D values where b is chosen, random or a threshold, is at least the bound
    (first, second), (a, b) = PAIR
    lower = bench.bound(shapes[first], shapes[second], a, b)["any choice"][0]
    m1, sd1 = bench._mean_sd(shapes[first], a, b)
    m2, sd2 = bench._mean_sd(shapes[second], a, b)
    sd = min(sd1, sd2)
    D = np.arange(min(m1.min(), m2.min()) - 8 * sd, max(m1.max(), m2.max()) + 8 * sd, 0.01 * sd)
    p, q = bench.Pair(shapes[first], a, b, D), bench.Pair(shapes[second], a, b, D)
    rng = np.random.default_rng(1)
    sets = [rng.random(len(D)) < u for u in (0.2, 0.5, 0.8)]
    sets += [np.abs(D) > t * sd for t in (0.5, 1.5, 2.5)] + [D > 0, D < 0]
    for A in sets:
        g = A.astype(float)
        assert max(p.ratio(g), q.ratio(g)) >= lower - 1e-9


def test_rules_are_ordered(bench, shapes):
    (first, second), (a, b) = PAIR
    r = bench.bound(shapes[first], shapes[second], a, b)
    lower, reached = r["any choice"]
    fixed = min(max(r["a"]), max(r["b"]))  # always a, or always b
    assert lower <= reached + 1e-9  # the Bayes bound is below the best choice found
    assert reached <= r["threshold"] + 1e-9  # a threshold is one choice rule
    assert r["threshold"] <= fixed + 1e-9  # t = 0 and t = ∞ are thresholds
    assert r["shrinkage"] <= max(r["b"]) + 1e-9  # t = 0 is always b
    assert 1.0 < lower  # no rule is as good as the best fixed candidate on both shapes


def test_committed_row_is_what_the_script_prints(bench):
    # the binding pair's row of bench/results/selection_rules/bound.md (seed 1), recomputed
    table = (BENCH / "results/selection_rules/bound.md").read_text()
    seed1 = table.split("## seed 1")[1].split("## seed 2")[0]
    rows = [line for line in seed1.splitlines() if line.startswith("| linear trend, long")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1] == "linear / fourier(d=3)" and len(cells) == 7
    (first, second), (a, b) = PAIR
    r = bench.bound(bench.shape_logs(first), bench.shape_logs(second), a, b)
    lower, reached = r["any choice"]
    assert cells[4:] == [f"{r['threshold']:.3f}", f"{lower:.3f} – {reached:.3f}",
                         f"{r['shrinkage']:.3f}"]  # fmt: skip
    assert r["shrinkage"] < lower < 1.25  # shrinkage beats any choice; the bar is above it
