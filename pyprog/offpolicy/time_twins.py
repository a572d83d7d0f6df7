"""Twins in time: a level shift, and a pattern that repeats with a period the log covers once.

A log that covers fewer than two periods of a pattern cannot tell a change that recurs
every period from one that persists. A step at τ (:func:`.time_terms.step`) and two
blocks of the year, or a yearly sinusoid, fit a one-year log alike, and their forecasts
part after it: the step's level persists, the pattern returns. On 60 logs of 1,000
rounds whose truth is a yearly sinusoid, the choice of :mod:`.time_selection` fell on a
step near mid-year in 20 and forecast a level the truth leaves, for 72 % of the squared
error.

**The hedge.** When the choice falls on a model with a step while a model with a
one-change periodic term (:func:`one_change_periodic`: a season of one harmonic, or two
blocks of a period, whose period the log covers fewer than two times) is plausible, the
forecast is the average of the two. Either may be the truth and the log cannot rank them,
so this is the minimax forecast between the two readings under squared error: its error
is at most half their gap, where the choice's is all of it or none.

The reverse, a periodic model chosen while a step is plausible, is left alone: the
periodic model then beat every placement of the step (13 by default), while a chosen
step's score is the best of those placements, flattered by that choice. Measured on the
Monte Carlo's logs (``tests/value_montecarlo.py``; the guide has the table), hedging both
ways raised the sinusoid's MSE at 2,000 rounds from 0.019 to 0.024, for 0.059 → 0.056 on
the half-year step; hedging a chosen step alone took the sinusoid at 1,000 rounds from
0.086 to 0.043 (OPFV 0.047), for 0.066 → 0.077 on the half-year step.
"""

from __future__ import annotations

import numpy as np

from pyprog.offpolicy.time_features import PeriodBlocks
from pyprog.offpolicy.time_terms import Blocks, Season, Step, TimeModel

__all__ = ["hedge_twins", "hedged_forecasts", "one_change_periodic", "twin_masks"]


def one_change_periodic(model: TimeModel, span: float) -> bool:
    """Whether ``model`` has a term that changes level once per period (a season of one
    harmonic, two blocks of a period) with a period the log's ``span`` (days) covers fewer
    than two times, and no step.

    Examples
    --------
    >>> from pyprog.offpolicy.time_terms import season, step
    >>> one_change_periodic(TimeModel((season(365.25, 1),)), 365.0)
    True
    >>> one_change_periodic(TimeModel((season(365.25, 1),)), 800.0)  # it recurred: seen
    False
    >>> one_change_periodic(TimeModel((step(180.0),)), 365.0)
    False
    """
    if any(isinstance(t, Step) for t in model.terms):
        return False
    for t in model.terms:
        if isinstance(t, Season) and t.harmonics == 1:
            period = t.period
        elif isinstance(t, Blocks) and isinstance(t.feature, PeriodBlocks):
            if t.feature.n_blocks != 2:
                continue
            period = t.feature.period
        else:
            continue
        if span < 2.0 * period:
            return True
    return False


def twin_masks(models: list[TimeModel], span: float) -> tuple[np.ndarray, np.ndarray]:
    """Which candidates have a step, and which a one-change periodic term: two (C,) bools.

    Examples
    --------
    >>> from pyprog.offpolicy.time_terms import season, step
    >>> twin_masks([TimeModel(()), TimeModel((step(9.0),)), TimeModel((season(20.0),))], 19.0)
    (array([False,  True, False]), array([False, False,  True]))
    """
    steps = np.array([any(isinstance(t, Step) for t in m.terms) for m in models], dtype=bool)
    periodic = np.array([one_change_periodic(m, span) for m in models], dtype=bool)
    return steps, periodic


def hedge_twins(
    picks: np.ndarray,
    ok: np.ndarray,
    key: np.ndarray,
    steps: np.ndarray,
    periodic: np.ndarray,
) -> np.ndarray:
    """Each pick's twin: the plausible one-change periodic model of lowest key, where the
    pick has a step; −1 where it has none or no such model is plausible.

    Parameters
    ----------
    picks : numpy.ndarray, shape (k, B)
        The chosen candidate per target and draw.
    ok : numpy.ndarray, shape (C, B)
        The plausible set per draw.
    key : numpy.ndarray, shape (C, k) or (C, k, B)
        The choice's key per candidate and target (lower is better).
    steps, periodic : numpy.ndarray, shape (C,)
        From :func:`twin_masks`.

    Returns
    -------
    numpy.ndarray, shape (k, B)
        Twin index or −1; the forecast is then the average of the pick's and the twin's.

    Examples
    --------
    >>> ok = np.array([[True], [True], [True]])
    >>> key = np.array([[3.0], [1.0], [2.0]])  # (C, k)
    >>> hedge_twins(np.array([[1]]), ok, key, np.array([0, 1, 0], bool), np.array([0, 0, 1], bool))
    array([[2]])
    """
    if key.ndim == 2:
        key = np.broadcast_to(key[:, :, None], (*key.shape, ok.shape[1]))
    key_p = np.where((periodic[:, None] & ok)[:, None, :], key, np.inf)  # (C, k, B)
    twin = np.argmin(key_p, axis=0)  # (k, B)
    found = np.isfinite(np.min(key_p, axis=0))
    return np.where(steps[picks] & found, twin, -1)


def hedged_forecasts(
    picks: np.ndarray,
    ok: np.ndarray,
    key: np.ndarray,
    f_all: np.ndarray,
    masks: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """The picks' forecasts, each averaged with its twin's (:func:`hedge_twins`) where it
    has one: shape (k, B) from ``f_all`` (C, k, B), every candidate's forecast; ``masks``
    from :func:`twin_masks`, or None for the picks' own forecasts.

    Examples
    --------
    >>> f_all = np.array([[[0.0]], [[1.0]], [[3.0]]])  # (C, k, B)
    >>> ok, key = np.ones((3, 1), bool), np.zeros((3, 1))
    >>> masks = np.array([0, 1, 0], bool), np.array([0, 0, 1], bool)
    >>> hedged_forecasts(np.array([[1]]), ok, key, f_all, masks)
    array([[2.]])
    >>> hedged_forecasts(np.array([[1]]), ok, key, f_all, None)
    array([[1.]])
    """
    f_pick = np.take_along_axis(f_all, picks[None, :, :], axis=0)[0]
    if masks is None:
        return f_pick
    twin = hedge_twins(picks, ok, key, *masks)
    f_twin = np.take_along_axis(f_all, np.maximum(twin, 0)[None, :, :], axis=0)[0]
    return np.where(twin >= 0, (f_pick + f_twin) / 2, f_pick)
