"""The twins hedge (:mod:`pyprog.offpolicy.time_twins`): a chosen step whose one-period
twin is plausible gives way to the average of the two forecasts."""

import numpy as np
import pytest

from pyprog.offpolicy import PeriodBlocks, TimeModel, blocks, season, step, trend
from pyprog.offpolicy.time_candidates import YEAR, bin_estimates
from pyprog.offpolicy.time_selection import choose_time_model
from pyprog.offpolicy.time_twins import (
    hedge_twins,
    hedged_forecasts,
    one_change_periodic,
    twin_masks,
)

HALVES = blocks(PeriodBlocks(YEAR, 2))


@pytest.mark.parametrize(
    "terms, span, expected",
    [
        ((season(YEAR, 1),), 365.0, True),
        ((HALVES,), 365.0, True),
        ((HALVES, blocks(PeriodBlocks(7.0, 7, origin=-3.0))), 365.0, True),
        ((season(YEAR, 1),), 2.0 * YEAR, False),  # the log saw the change recur
        ((season(YEAR, 2),), 365.0, False),  # two changes a period: not a step's twin
        ((blocks(PeriodBlocks(YEAR, 4)),), 365.0, False),
        ((trend(),), 365.0, False),
        ((season(YEAR, 1), step(100.0)), 365.0, False),  # a step already
        ((season(30.0, 1),), 365.0, False),  # a month's season in a year: seen 12 times
    ],
)
def test_one_change_periodic_terms_are_a_steps_twins_over_less_than_two_periods(
    terms, span, expected
):
    assert one_change_periodic(TimeModel(terms), span) is expected


def test_the_twin_is_the_plausible_periodic_model_of_lowest_key_per_target_and_draw():
    steps = np.array([False, True, False, False])
    periodic = np.array([False, False, True, True])
    ok = np.array([[1, 1], [1, 1], [1, 0], [1, 1]], dtype=bool)  # (C, B)
    key = np.array([[[9, 9]], [[0, 0]], [[1, 1]], [[2, 2]]], dtype=float)  # (C, k, B)
    picks = np.array([[1, 1]])
    # draw 0: both periodic models plausible, the lower key wins; draw 1: only the other
    assert hedge_twins(picks, ok, key, steps, periodic).tolist() == [[2, 3]]
    # a pick without a step is not hedged, nor a step without a plausible twin
    assert hedge_twins(np.array([[0, 2]]), ok, key, steps, periodic).tolist() == [[-1, -1]]
    ok[2:] = False
    assert hedge_twins(picks, ok, key, steps, periodic).tolist() == [[-1, -1]]
    f_all = np.arange(8.0).reshape(4, 1, 2)
    assert hedged_forecasts(picks, ok, key, f_all, (steps, periodic)).tolist() == [[2.0, 3.0]]


def _half_year_log(truth, seed: int = 0, sd: float = 0.3):
    t = np.arange(0.0, 365.0) + 0.5
    return bin_estimates(truth(t) + np.random.default_rng(seed).normal(0, sd, t.size), t)


def test_a_chosen_step_gives_way_to_the_average_with_its_one_period_twin():
    """A step at day 182 under daily noise of sd 0.5 (seed 1): the step is chosen, and the
    halves of the year (one day apart from it in the log) are plausible. 30 days after the
    log the step says 1 and the halves 0 (they return to the first half's level): the
    forecast is their average, in the point and in the interval's bootstrap draws."""
    b = _half_year_log(lambda t: 1.0 * (t >= 182.0), seed=1, sd=0.5)
    models = [TimeModel(()), TimeModel((step(182.0),)), TimeModel((HALVES,))]
    at = lambda m: m.design(np.array([395.0]), *b.span)  # noqa: E731
    alone = choose_time_model(b, at, models=models, alpha=None, twins=False)
    assert alone.model == "const+step(182)"
    f = [choose_time_model(b, at, models=[m], alpha=None).value[0] for m in models[1:]]
    assert f[0] == pytest.approx(1.0, abs=0.1) and f[1] == pytest.approx(0.0, abs=0.1)
    hedged = choose_time_model(b, at, models=models, random_state=0)
    assert hedged.model == "mean of const+step(182) and const+blocks(365.25D/2)"
    assert hedged.value[0] == pytest.approx((f[0] + f[1]) / 2, abs=1e-12)
    assert hedged.zeta[0] @ b.y == pytest.approx(hedged.value[0], abs=1e-12)
    assert hedged.low[0] <= min(f) and hedged.high[0] >= max(f)
    assert alone.value[0] == pytest.approx(f[0], abs=1e-12)


def test_a_chosen_periodic_model_and_a_step_without_a_twin_are_left_alone():
    """The halves of the year exact, daily noise sd 0.5 (seed 0): the halves are chosen
    and the step is plausible (the interval reaches its forecast, which only the plausible
    models' noise intervals put there), yet the forecast is the halves' own: a chosen
    periodic model is not hedged. A step at 0.6 of the log, far from the halves' boundary:
    the halves are not plausible, no hedge. Nor when the model list has no periodic twin."""
    at_of = lambda b: lambda m: m.design(np.array([395.0]), *b.span)  # noqa: E731
    b = _half_year_log(lambda t: 1.0 * ((t % YEAR) >= YEAR / 2), sd=0.5)
    models = [TimeModel(()), TimeModel((step(182.0),)), TimeModel((HALVES,))]
    f = [choose_time_model(b, at_of(b), models=[m], alpha=None).value[0] for m in models[1:]]
    ch = choose_time_model(b, at_of(b), models=models, random_state=0)
    assert ch.model == "const+blocks(365.25D/2)"
    assert ch.value[0] == pytest.approx(f[1], abs=1e-12)
    assert ch.low[0] <= f[1] and ch.high[0] >= f[0], (ch.low, ch.high, f)
    b = _half_year_log(lambda t: 1.0 * (t >= 219.0), sd=0.1)
    models = [TimeModel(()), TimeModel((step(219.0),)), TimeModel((HALVES,))]
    ch = choose_time_model(b, at_of(b), models=models, alpha=None)
    assert ch.model == "const+step(219)"
    ch = choose_time_model(b, at_of(b), models=models[:2], alpha=None)
    assert ch.model == "const+step(219)"


def test_twins_must_be_a_bool():
    b = _half_year_log(lambda t: 0.0 * t)
    with pytest.raises(ValueError, match="twins must be True or False"):
        choose_time_model(b, lambda m: m.design(np.array([400.0]), *b.span), twins="yes")


def test_the_default_candidates_hold_the_twins_of_a_one_year_log():
    from pyprog.offpolicy.time_candidates import default_time_models

    models = default_time_models(0.0, 365.0)
    steps, periodic = twin_masks(models, 365.0)
    names = [m.name for m, p in zip(models, periodic, strict=True) if p]
    assert steps.sum() == 26 and names == [
        "const+season(365.25D,k=1)",
        "const+blocks(365.25D/2)",
        "const+season(365.25D,k=1)+blocks(dow)",
        "const+blocks(365.25D/2)+blocks(dow)",
    ]
    assert not twin_masks(default_time_models(0.0, 800.0), 800.0)[1].any()
