"""The candidate models of the value in time, and the reward model's time inputs.

:func:`default_time_models` lists the candidates that :class:`pyprog.value.ModelAverage`
averages, and :func:`default_reward_time_model` the time inputs of the reward model.
"""

from __future__ import annotations

from pyprog.timeseries.features import DayOfWeek, PeriodBlocks
from pyprog.timeseries.terms import TimeModel, blocks, season, step, trend

__all__ = [
    "YEAR",
    "default_reward_time_model",
    "default_time_models",
]

#: Days in a year (the period of the yearly season and blocks).
YEAR = 365.25


def default_time_models(t0: float, t1: float) -> list[TimeModel]:
    """The default candidates for a log spanning [t0, t1] days.

    Bases: the constant; a linear trend; a step (the level after τ persists) at τ = t0 +
    j/32 of the span, j = 4..28 (about every 11 days of a year: a step between two
    coarser positions was drawn better by 16 blocks of the year, which then forecast its
    return); and, when the log covers at least 11/12 of a year, a yearly season with 1-3
    harmonics or 2, 4, 8 or 16 blocks of the year, each season also with a trend (without
    that pair, a weekly effect, a season and a trend together are forecast far worse), and
    the blocks with a trend when the log covers two years (in one year a trend and 8 blocks
    are one shape, and the pair draws spurious trends). The guide ``value-model.md`` has
    the measurements.
    Each base also with the day of the week added when the log covers at least two weeks.

    Examples
    --------
    >>> [m.name for m in default_time_models(0.0, 10.0)][:3]
    ['const', 'const+trend', 'const+step(1.25)']
    >>> len(default_time_models(0.0, 365.0)), len(default_time_models(0.0, 730.5))
    (74, 82)
    """
    span = t1 - t0
    bases = [TimeModel(()), TimeModel((trend(),))]
    bases += [TimeModel((step(t0 + j * span / 32),)) for j in range(4, 29)]
    if span >= YEAR * 11 / 12:
        seasons = [season(YEAR, k) for k in (1, 2, 3)]
        yearly = seasons + [blocks(PeriodBlocks(YEAR, b)) for b in (2, 4, 8, 16)]
        bases += [TimeModel((term,)) for term in yearly]
        # a trend with a pattern: with blocks only once they repeat (blocks of one year
        # draw any shape within it, a trend's too, and the split is then the prior's)
        bases += [TimeModel((trend(), term)) for term in (yearly if span >= 2 * YEAR else seasons)]
    if span < 14.0:
        return bases
    dow = blocks(DayOfWeek())
    return bases + [base + dow for base in bases]


def default_reward_time_model(t0: float, t1: float) -> TimeModel:
    """Time inputs of the reward model q̂ for a log spanning [t0, t1] days.

    A trend, 16 blocks of the year when the log covers 11/12 of a year, and the day of the
    week when it covers two weeks: rich enough that q̂ follows most drifts (so that the
    doubly robust residuals r − q̂ are small), while DR stays unbiased whatever q̂ is.

    Examples
    --------
    >>> default_reward_time_model(0.0, 365.0).name
    'const+trend+blocks(365.25D/16)+blocks(dow)'
    """
    span = t1 - t0
    terms = [trend()]
    if span >= YEAR * 11 / 12:
        terms.append(blocks(PeriodBlocks(YEAR, 16)))
    if span >= 14.0:
        terms.append(blocks(DayOfWeek()))
    return TimeModel(tuple(terms))
