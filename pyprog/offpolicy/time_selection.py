"""Choosing a forecaster in time from the log alone, and its interval with the choice in it.

From per-round estimates Ŷ_i of the value at their own times t_i (:mod:`.estimates`), the
rounds are first gathered into bins of ``width`` days (default one day): bin j holds the
mean ȳ_j of its rounds' estimates, their count n_j and their mean time. A model of
:mod:`.time_models` fit by least squares to the bins weighted by n_j is the round-level
fit with each round's features read at its bin's time, so from here on the cost depends on
the number of bins (366 for a year of days), not on the number of rounds.

**Choice: blocked cross-validation in time.** The bins are cut into K stretches contiguous
in time (default K = 10: about five weeks of a year). Each stretch is predicted by the
model fit on the other K − 1, and a model's score is the count-weighted mean squared error
of those predictions. For least squares this needs no refit: with the weighted hat matrix
H = QQᵀ and residuals ξ = (I − H)√n ȳ, the held-out residuals of stretch F are
(I − H_FF)⁻¹ ξ_F (the block form of the PRESS identity, e.g. Arlot & Celisse 2010). A
model that cannot predict some stretch from the others (I − H_FF singular: a block of the
year that lies wholly inside the stretch) is not eligible.

Three steps then make the choice:

* **A drift gate.** The constant (no drift) is kept unless the best-scoring model beats
  it by ``gate`` = 2 standard errors of the mean per-bin difference of their losses: with
  some 40 candidates, the best often beats the constant by one s.e. on a stationary log,
  and a spurious trend extrapolated a year ahead costs more than the choice can gain. The
  gate also asks with **interleaved folds** (every K-th bin, so every fold spans the year)
  and lets drift through when either says so: contiguous stretches are unfair to blocks of
  the year (a held-out stretch takes most of a block with it). The choice among drifting
  models stays with contiguous stretches: interleaved folds let 16 blocks of the year
  mimic a step, whose level then "returns" next year. Last, drift passes when the best
  model's heteroskedasticity-robust Wald test rejects the constant at ``drift_level`` /
  (C − 1) (:mod:`.drift_test`; 1 %/43 = 2.3·10⁻⁴ for the 44 default candidates,
  Bonferroni): cross-validation compares squared errors, whose per-bin differences are
  heavy-tailed, and kept the constant in 5 of 200 logs of 10,000 rounds whose value moves
  with the day of the week; the Wald test finds the drift in all 200, and lets none
  through on 200 stationary logs of 10,000 rounds nor on 200 of 2,000.
* **A term gate.** A model of two or more terms (a step or a season added to the day of
  the week) is eligible only where it beats each model with one of its terms dropped by
  the same ``gate`` s.e., under either fold layout: each term must earn its place, as
  drift must against the constant (with 21 terms tried beside the day of the week, one of
  them beat it alone by noise in most logs whose truth is the day of the week). The
  guide (``docs/guides/value-at-a-date.md``) gives each gate's Monte Carlo.
* **The plausible set:** the eligible candidates within ``n_se`` = 1 s.e. of the best
  eligible score (the one-SE rule's set, Breiman et al. 1984).
* **The lowest estimated error at the target** among them, by Claeskens & Hjort's
  (2003) focused criterion with the best-scoring model as the unbiased reference:
  MSE_c = max(0, (f_c − f_best)² − Var(f_c − f_best)) + Var(f_c), the variances from the
  best model's per-bin residuals (HC2). A far target thus favours a model whose forecast
  there is precise, unless its forecast parts from the best one's by more than noise.
  ``rule="simplest"`` takes the fewest parameters instead (a step's time counts as one).
* **Twins hedged:** a chosen step whose one-period twin (two blocks of the year, a yearly
  sinusoid) is plausible gives way to the average of the two (:mod:`.time_twins`).

Cross-validation in time judges how well a model explains the log's course; it cannot
judge whether that course goes on: a one-year log cannot show whether a yearly pattern
repeats or a trend continues. The chosen model is extrapolated on its own terms (seasons
repeat, a trend continues, the level after a step persists), and how far ahead that is
allowed is the caller's rule (:func:`pyprog.forecast.value.forecast_value` refuses
targets further ahead than the log is long). This is the "stated rule" for horizons
longer than any backtest inside the log could reach.

**Interval: a wild bootstrap that repeats the choice.** In a bootstrap world the bins'
means are a model's fit ŷ plus the bins' residuals ξ_j/√(1 − h_j) times Rademacher signs
(heteroskedasticity-robust, Wu 1986, Liu 1988). In each draw the whole choice is repeated
(every candidate scored, the gate, the plausible set, the criterion) and the chosen
forecast f*_b compared with the world's own value; the basic bootstrap interval is
[f̂ − q_{1−α/2}, f̂ − q_{α/2}] of those errors. Two worlds are drawn, the best-scoring
model's (the least biased account of the log, so that the choice's bias toward simpler
models shows in the draws) and the chosen model's (so that a spurious best does not move
the interval off a right choice), and the interval is the hull of the two. Last, the hull
takes in every plausible model's own noise interval f_c ± z·se_c (HC2): the log cannot
rank those below the best, so none of them may be the truth the interval leaves out (a
step at half the year and two blocks of the year fit a one-year log alike and part a year
later). So does a model a gate turned away, if it is within ``n_se`` of the best and its
own robust Wald tests reject at α: against the constant (the drift gate's question) and,
for a model the term gate turned away, each of its terms against the model without it
(:func:`.nested_basis`). The gates' strict levels guard the point forecast against
spurious drift, and the interval must not leave out a drift or a term significant at its
own level (halves of the year and a faint day of the week: the term gate keeps the halves
alone, the day of week's nested test sees it). The interval carries the noise, the
choice's variability and the plausible models' spread, not a model the log cannot show (a
pattern too faint for even those tests, a future that leaves the pattern of the log).

References
----------
Arlot & Celisse (2010), "A survey of cross-validation procedures for model selection",
Statistics Surveys 4. Bergmeir & Benítez (2012), "On the use of cross-validation for time
series predictor evaluation", Information Sciences 191. Breiman, Friedman, Olshen & Stone
(1984), "Classification and regression trees" (the one-SE rule). Claeskens & Hjort
(2003), "The focused information criterion", JASA 98. Wu (1986), Liu (1988): the wild
bootstrap.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from pyprog.offpolicy.drift_test import (
    drift_rejects,
    drift_statistic,
    nested_basis,
    smooth_variance,
)
from pyprog.offpolicy.time_candidates import Binned, default_time_models
from pyprog.offpolicy.time_cv import (
    FOLDS,
    Candidate,
    candidate,
    cv_losses,
    fitted,
    hc2_variance,
    stretches,
)
from pyprog.offpolicy.time_terms import TimeModel
from pyprog.offpolicy.time_twins import hedge_twins, hedged_forecasts, twin_masks

__all__ = [
    "TimeChoice",
    "choose_time_model",
]

#: Bootstrap draws repeated at once (the losses of every candidate, bin and draw are held).
DRAW_CHUNK = 200


def _parents(models: list) -> list[list[int]]:
    """For each model of two or more terms, the indices of the models among ``models`` with
    one of its terms dropped (its parents for the term gate); ``[]`` for the others."""
    index = {mdl.name: i for i, mdl in enumerate(models)}
    out = []
    for mdl in models:
        drop_one = [
            TimeModel(mdl.terms[:j] + mdl.terms[j + 1 :]).name for j in range(len(mdl.terms))
        ]
        out.append([index[n] for n in drop_one if n in index] if len(mdl.terms) >= 2 else [])
    return out


def _beats(losses, c, p: int, total: float, gate: float) -> np.ndarray:
    """Whether candidate c's score beats p's by ``gate`` s.e. of the mean per-bin loss
    difference, per draw: (B,) from losses (C, m, B); c an index or one per draw (B,)."""
    d = losses[p] - losses[c, :, np.arange(losses.shape[2])].T
    se = d.std(axis=0, ddof=1) * math.sqrt(losses.shape[1]) / total
    return d.sum(axis=0) / total > gate * se


def _wald_of_best(cands: list, yw: np.ndarray, var_of: Callable, level) -> Callable | None:
    """The drift gate's Wald test for :func:`_plausible`: ``test(best) -> (B,)``, whether
    the best model of each column of yw (m, B) rejects the constant at ``level``, bin
    variances ``var_of(best)``. Only the draws' few distinct bests are tested, not all C."""
    if level is None:
        return None
    m = yw.shape[0]

    def test(best: np.ndarray) -> np.ndarray:
        out = np.zeros(best.shape, dtype=bool)
        for b in np.unique(best):
            c, sel = cands[b], best == b
            stat = drift_statistic(c.drift, yw[:, sel], var_of(b))
            out[sel] = drift_rejects(stat, c.drift.shape[1], m, c.p, level)
        return out

    return test


def _near(losses, best: np.ndarray, total: float, n_se: float) -> np.ndarray:
    """Whether each candidate's score is within ``n_se`` s.e. of the best's, the s.e. of
    the mean per-bin difference of their losses: (C, B) from losses (C, m, B), best (B,)."""
    m, cols = losses.shape[1], np.arange(losses.shape[2])
    diff = losses - losses[best, :, cols].T[None, :, :]
    se = diff.std(axis=1, ddof=1) * math.sqrt(m) / total
    scores = losses.sum(axis=1) / total
    return scores <= scores[best, cols][None, :] + n_se * se


def _terms_earn(cands: list, c: int, parents: list, yw: np.ndarray, var, level) -> bool:
    """Whether each term of candidate c beats the model without it (each of its
    ``parents``) by the nested robust Wald test at ``level``: the directions c adds to
    the parent (:func:`.nested_basis`) tested on the log yw (m,), bin variances var (m,)."""
    for p in parents:
        u = nested_basis(cands[c].q, cands[p].q)
        stat = drift_statistic(u, yw[:, None], var)
        if not drift_rejects(stat, u.shape[1], yw.shape[0], cands[c].p, level)[0]:
            return False
    return True


def _plausible(
    losses,
    total: float,
    n_se: float,
    gate=None,
    const: int = -1,
    gate_losses=None,
    parents=None,
    wald=None,
):
    """Scores (C, B), the best (B,) and the plausible set (C, B) from losses (C, m, B).

    With ``parents`` (:func:`_parents`), a model of two or more terms is admissible only
    where it beats each parent by ``gate`` s.e. under these losses or under
    ``gate_losses``; the best is the best admissible one. A candidate is plausible when it
    is admissible and its score is within ``n_se`` standard errors of the best's, the s.e.
    of the mean per-bin difference of their losses. The gate keeps the constant unless the
    best beats it by ``gate`` s.e. under these losses or under ``gate_losses`` (the same
    candidates' losses on a second fold layout), when given, or the best's Wald test
    rejects the constant (``wald``, from :func:`_wald_of_best`).
    """
    scores = losses.sum(axis=1) / total
    C, _, B = losses.shape
    cols = np.arange(B)
    admissible = np.ones((C, B), dtype=bool)
    if gate is not None and parents:
        for c, ps in enumerate(parents):
            for p in ps:
                beats = _beats(losses, c, p, total, gate)
                if gate_losses is not None:
                    beats |= _beats(gate_losses, c, p, total, gate)
                admissible[c] &= beats
    best = np.argmin(np.where(admissible, scores, np.inf), axis=0)
    ok = admissible & _near(losses, best, total, n_se)
    ok[best, cols] = True
    if gate is not None and const >= 0:  # no drift unless the best beats the constant clearly
        still = ~_beats(losses, best, const, total, gate)
        if gate_losses is not None:
            g_scores = gate_losses.sum(axis=1) / total
            g_best = np.argmin(np.where(admissible, g_scores, np.inf), axis=0)
            still &= ~_beats(gate_losses, g_best, const, total, gate)
        if wald is not None:
            still &= ~wald(best)
        ok[:, still] = False
        ok[const, still] = True
    return scores, best, ok


def _pick(ok: np.ndarray, scores: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per target and draw, the plausible candidate with the lowest key, then score.

    ok, scores : (C, B); key : (C, k) or (C, k, B). Returns (k, B) candidate indices.
    """
    if key.ndim == 2:
        key = np.broadcast_to(key[:, :, None], (*key.shape, ok.shape[1]))
    key = np.where(ok[:, None, :], key, np.inf)
    low = key.min(axis=0, keepdims=True)
    tied = key <= low * (1 + 1e-12) + 1e-300  # the lowest key, to rounding
    return np.argmin(np.where(tied, scores[:, None, :], np.inf), axis=0)


@dataclass(frozen=True)
class TimeChoice:
    """The chosen forecaster in time, its forecasts and bootstrap intervals.

    Attributes
    ----------
    models : tuple of str, shape (k,)
        The chosen model's name for each target.
    best : str
        The best-scoring model's name (the bootstrap world).
    value : numpy.ndarray, shape (k,)
        Forecasts at the k targets.
    low, high : numpy.ndarray, shape (k,) or None
        Interval ends: the bootstrap's, widened to every plausible model's noise interval
        (and a tested model a gate turned away) with ``cover_plausible`` (None without
        ``alpha``).
    se : numpy.ndarray, shape (k,)
        The chosen model's HC2 standard error (noise only, no choice) per target.
    scores : dict
        CV score of each eligible candidate, by name.
    zeta : numpy.ndarray, shape (k, m)
        Forecast weights on the bins' means: value = zeta @ y.
    """

    models: tuple
    best: str
    value: np.ndarray
    low: np.ndarray | None
    high: np.ndarray | None
    se: np.ndarray
    scores: dict
    zeta: np.ndarray

    @property
    def model(self) -> str:
        """The chosen model's name, when every target has the same."""
        if len(set(self.models)) != 1:
            raise ValueError(f"the targets have different models: {self.models}")
        return self.models[0]


def _zeta(cand: Candidate, x_star: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """Forecast weights on ȳ for targets x_star (k, p): shape (k, m)."""
    u = np.linalg.solve(cand.r.T, (x_star / cand.scale).T)  # (p, k)
    return (cand.q @ u).T * sw[None, :]


def choose_time_model(
    binned: Binned,
    targets: Callable[[TimeModel], np.ndarray],
    *,
    models: list[TimeModel] | None = None,
    n_folds: int = 10,
    alpha: float | None = 0.1,
    n_boot: int = 400,
    n_se: float = 1.0,
    rule: str = "mse",
    gate: float | None = 2.0,
    world: str = "both",
    folds: str = "blocked",
    gate_folds: str | None = "interleaved",
    term_gate: bool = True,
    drift_level: float | None = 0.01,
    cover_plausible: bool = True,
    twins: bool = True,
    random_state=None,
) -> TimeChoice:
    """Choose a model by blocked CV, forecast the targets, bootstrap the interval.

    Parameters
    ----------
    binned : Binned
    targets : callable
        ``targets(model) -> (k, p)``: each target's feature row for a model (its design at
        a time, or its average over a window).
    models : list of TimeModel, optional
        The candidates; default :func:`default_time_models` over the bins' span.
    n_folds : int
        K >= 2 stretches.
    alpha : float or None
        1 − the interval's level; None: no bootstrap.
    n_boot : int
        Bootstrap draws (>= 100).
    n_se : float
        The plausible set: candidates within ``n_se`` standard errors of the best score.
    rule : {"mse", "simplest"}
        Among the plausible: the lowest estimated error at the target ("mse", default) or
        the fewest parameters ("simplest", the classic one-SE rule).
    gate : float or None
        The constant is kept unless the best model beats it by ``gate`` standard errors
        (default 2); None: no gate.
    world : {"both", "best", "chosen"}
        The bootstrap world(s); "both": the interval is the hull of the two.
    folds : {"blocked", "interleaved"}
        The folds that score the candidates: K stretches contiguous in time (default), or
        every K-th bin ("interleaved": judges the fit within the log, not a backtest; it
        cannot tell a step from blocks of the year that mimic it).
    gate_folds : {"interleaved", "blocked"} or None
        A second fold layout for the drift gate: drift passes when the best model beats
        the constant by ``gate`` s.e. under ``folds`` *or* under ``gate_folds`` (default
        "interleaved"); None: ``folds`` only.
    term_gate : bool
        A model of two or more terms is eligible only where it beats each model with one
        of its terms dropped by ``gate`` s.e., under ``folds`` or ``gate_folds`` (default
        True; no effect when ``gate`` is None).
    drift_level : float or None
        The drift gate also lets drift through when the best model's heteroskedasticity-
        robust Wald test rejects the constant at ``drift_level`` / (C − 1), C − 1 the
        drifting candidates (:mod:`.drift_test`; Bonferroni: on a log whose value does
        not move, any of them rejects with probability at most about ``drift_level``, the
        tests' own size being approximate; default 0.01, no effect when ``gate`` is None);
        None: cross-validation alone.
    cover_plausible : bool
        The interval also holds each plausible model's own noise interval f_c ± z·se_c,
        and that of each model a gate turned away whose score is within ``n_se`` s.e. of
        the best and whose own Wald tests reject at ``alpha``: the constant, and (turned
        away by the term gate) each term against the model without it (default True);
        False: the bootstrap worlds alone.
    twins : bool
        A chosen step whose one-period twin is plausible gives way to the average of the
        two, in the bootstrap draws too (:mod:`.time_twins`). Default True.
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    TimeChoice

    Raises
    ------
    ValueError
        Too few bins for K stretches, or no candidate can be scored.

    Examples
    --------
    >>> from pyprog.offpolicy import bin_estimates
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(0.0, 365.0)
    >>> y = np.where(t >= 200, 1.0, 0.0) + rng.normal(0, 0.3, t.size)
    >>> b = bin_estimates(y, t)
    >>> at = lambda model: model.design(np.array([400.0]), *b.span)
    >>> ch = choose_time_model(b, at, alpha=None, random_state=0)
    >>> ch.model, round(float(ch.value[0]), 1)
    ('const+step(204.75)', 1.0)
    """
    if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) or n_folds < 2:
        raise ValueError(f"n_folds must be an integer >= 2; got {n_folds!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 100:
        raise ValueError(f"n_boot must be an integer >= 100; got {n_boot!r}")
    if not callable(targets):
        raise ValueError(f"targets must be a callable targets(model) -> (k, p); got {targets!r}")
    if alpha is not None and not (
        isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and 0 < alpha < 1
    ):
        raise ValueError(f"alpha must be in (0, 1) or None; got {alpha!r}")
    for flag, name in ((term_gate, "term_gate"), (cover_plausible, "cover_plausible"),
                       (twins, "twins")):  # fmt: skip
        if not isinstance(flag, bool | np.bool_):
            raise ValueError(f"{name} must be True or False; got {flag!r}")
    real = isinstance(drift_level, numbers.Real) and not isinstance(drift_level, bool)
    if drift_level is not None and not (real and 0 < drift_level < 1):
        raise ValueError(f"drift_level must be None or in (0, 1); got {drift_level!r}")
    if rule not in ("mse", "simplest"):
        raise ValueError(f"rule must be 'mse' or 'simplest'; got {rule!r}")
    if world not in ("both", "best", "chosen"):
        raise ValueError(f"world must be 'both', 'best' or 'chosen'; got {world!r}")
    if folds not in FOLDS:
        raise ValueError(f"folds must be one of {FOLDS}; got {folds!r}")
    if gate_folds is not None and gate_folds not in FOLDS:
        raise ValueError(f"gate_folds must be None or one of {FOLDS}; got {gate_folds!r}")
    real = isinstance(gate, numbers.Real) and not isinstance(gate, bool)
    if gate is not None and (not real or not math.isfinite(gate) or gate < 0):
        raise ValueError(f"gate must be None or a finite number >= 0; got {gate!r}")
    real = isinstance(n_se, numbers.Real) and not isinstance(n_se, bool)
    if not real or not math.isfinite(n_se) or n_se < 0:
        raise ValueError(f"n_se must be a finite number >= 0; got {n_se!r}")
    if binned.m < 3 * n_folds:
        raise ValueError(
            f"the log has {binned.m} time bins of {binned.width:g} days; choosing a model "
            f"by {n_folds}-fold cross-validation in time needs at least {3 * n_folds}: use "
            f"narrower bins or a longer log"
        )
    t0, t1 = binned.span
    if models is None:
        models = default_time_models(t0, t1)
    k_folds, second = int(n_folds), gate_folds not in (None, folds)
    gate_folds = stretches(binned.m, k_folds, gate_folds) if second else None
    folds = stretches(binned.m, k_folds, folds)
    cands = [c for c in (candidate(mdl, binned, folds) for mdl in models) if c is not None]
    gcands = [candidate(c.model, binned, gate_folds) for c in cands] if second else None
    if gcands is not None and any(g is None for g in gcands):
        gcands = None  # a candidate the second layout cannot score: the first layout alone
    if not cands:
        raise ValueError(
            f"no candidate model can be fit and cross-validated on {binned.m} bins "
            f"({', '.join(mdl.name for mdl in models)})"
        )
    sw = np.sqrt(binned.count)
    yw = sw * binned.y
    total = float(binned.count.sum())
    sizes = np.array([c.size for c in cands])
    losses = np.stack([cv_losses(c, yw, folds) for c in cands])  # (C, m)
    const = next((i for i, c in enumerate(cands) if not c.model.terms), -1)
    g_losses = None
    if gcands is not None:
        g_losses = np.stack([cv_losses(c, yw, gate_folds) for c in gcands])[:, :, None]
    parents = _parents([c.model for c in cands]) if term_gate else None
    # Bonferroni over the drifting candidates: with no drift, any of them rejects at most
    # with probability drift_level
    level = None if gate is None or drift_level is None else drift_level / max(len(cands) - 1, 1)
    # per-bin noise variances of ȳ from a candidate's residuals (HC2), once per candidate
    noise_of = functools.cache(lambda c: hc2_variance(cands[c], binned.y, yw, sw))
    # a model's Wald test on the log uses bin variances from its own residuals
    log_var = lambda c: smooth_variance(binned.count * noise_of(c))  # noqa: E731
    wald = _wald_of_best(cands, yw[:, None], log_var, level)
    score_1, best_1, ok_1 = _plausible(
        losses[:, :, None], total, n_se, gate, const, g_losses, parents, wald
    )
    best = int(best_1[0])
    scores = {c.model.name: float(v) for c, v in zip(cands, score_1[:, 0], strict=True)}

    zetas = np.stack([_zeta(c, targets(c.model), sw) for c in cands])  # (C, k, m)
    # per-bin noise variance from the best model's residuals (HC2), for the forecasts'
    # variances: Var(ζ·ȳ) = Σ ζ_j² v_j
    v = noise_of(best)
    if rule == "mse":  # estimated mean squared error at the target, bias judged by the best
        key = _mse_key(zetas, binned.y[:, None], v, np.array([best]))[..., 0]
    else:  # "simplest": fewest parameters
        key = np.repeat(sizes[:, None], zetas.shape[1], axis=1).astype(np.float64)
    chosen = _pick(ok_1, score_1, key)[:, 0]  # (k,)
    k_rows = np.arange(zetas.shape[1])
    zeta = zetas[chosen, k_rows]  # (k, m)
    masks = twin_masks([c.model for c in cands], t1 - t0) if twins else None
    twin = np.full_like(chosen, -1)
    if masks is not None:  # a step chosen, its one-period twin plausible: their average
        twin = hedge_twins(chosen[:, None], ok_1, key, *masks)[:, 0]
    hedged = twin >= 0
    zeta[hedged] = (zeta[hedged] + zetas[twin[hedged], k_rows[hedged]]) / 2
    value = (zeta * binned.y).sum(axis=1)
    se = np.sqrt([float((zeta[j] ** 2 * noise_of(int(c))).sum()) for j, c in enumerate(chosen)])

    low = high = None
    if alpha is not None:
        rng = np.random.default_rng(random_state)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(binned.m, int(n_boot)))
        low, high = np.full_like(value, np.inf), np.full_like(value, -np.inf)
        k_all = np.arange(len(chosen))
        runs = [(best, k_all)] if world in ("best", "both") else []
        if world in ("chosen", "both"):
            runs += [(w, np.flatnonzero(chosen == w)) for w in sorted(set(chosen.tolist()))]
        for w, rows in runs:
            err = np.concatenate([  # in chunks of draws: memory C·m·DRAW_CHUNK, not C·m·B
                _draw_errors(
                    cands, w, yw, sw, signs[:, b : b + DRAW_CHUNK], folds, total, n_se, gate,
                    (gcands, gate_folds),
                    (const, parents, level), rule, key[:, rows], zetas[:, rows], v, masks,
                )
                for b in range(0, signs.shape[1], DRAW_CHUNK)
            ], axis=1)  # fmt: skip
            lo_q, hi_q = np.quantile(err, [alpha / 2, 1 - alpha / 2], axis=1)
            low[rows] = np.minimum(low[rows], value[rows] - hi_q)
            high[rows] = np.maximum(high[rows], value[rows] - lo_q)
        if cover_plausible:  # no model the log cannot rank below the best is left out
            members = ok_1[:, 0].copy()
            if gate is not None:
                # the gates' strict levels guard the point forecast; the interval also
                # holds a model within n_se of the best that a gate turned away, when its
                # own robust Wald tests reject at α: against the constant (the drift
                # gate's), and each term against the model without it (the term gate's)
                _, best_free, free = _plausible(losses[:, :, None], total, n_se, gate, -1,
                                                g_losses, parents)  # fmt: skip
                near = _near(losses[:, :, None], best_free, total, n_se)[:, 0]
                at_alpha = _wald_of_best(cands, yw[:, None], log_var, alpha)
                for c in np.flatnonzero(near & ~members):
                    members[c] = at_alpha(np.array([c]))[0] and (
                        free[c, 0] or _terms_earn(cands, c, parents[c], yw, log_var(c), alpha)
                    )
            z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
            for c in np.flatnonzero(members):
                f_c = zetas[c] @ binned.y
                s_c = np.sqrt((zetas[c] ** 2 * noise_of(int(c))).sum(axis=1))
                low, high = np.minimum(low, f_c - z * s_c), np.maximum(high, f_c + z * s_c)
        low, high = np.minimum(low, value), np.maximum(high, value)

    names = [cands[c].model.name for c in chosen]
    for j in np.flatnonzero(hedged):
        names[j] = f"mean of {names[j]} and {cands[twin[j]].model.name}"
    return TimeChoice(
        models=tuple(names),
        best=cands[best].model.name,
        value=value,
        low=low,
        high=high,
        se=se,
        scores=scores,
        zeta=zeta,
    )


def _draw_errors(cands, w, yw, sw, signs, folds, total, n_se, gate, second, gated, rule, key,
                 zetas, v, masks):  # fmt: skip
    """The choice repeated in wild-bootstrap draws from world model ``w``: errors (k, B).
    ``gated``: the constant's index, the term gate's parents and the Wald test's level
    (:func:`_plausible`); ``masks``: :func:`.twin_masks` to hedge twins, or None."""
    const, parents, level = gated
    world = cands[w]
    fit_w = fitted(world, yw)  # √n ŷ
    hw = np.einsum("ij,ij->i", world.q, world.q)
    xi = (yw - fit_w) / np.sqrt(np.maximum(1.0 - hw, 1e-12))
    ys_w = fit_w[:, None] + xi[:, None] * signs  # (m, B), weighted scale
    draw_losses = np.stack([cv_losses(c, ys_w, folds) for c in cands])  # (C, m, B)
    g_losses = None
    if second[0] is not None:  # the gate's second fold layout: (candidates, folds)
        g_losses = np.stack([cv_losses(c, ys_w, second[1]) for c in second[0]])
    var_w = smooth_variance(xi**2)  # the world's own noise, whichever model is tested
    wald = _wald_of_best(cands, ys_w, lambda b: var_w, level)
    d_scores, d_best, d_ok = _plausible(
        draw_losses, total, n_se, gate, const, g_losses, parents, wald
    )
    ys = ys_w / sw[:, None]
    key_b = _mse_key(zetas, ys, v, d_best) if rule == "mse" else key
    picks = _pick(d_ok, d_scores, key_b)  # (k, B)
    f_all = np.einsum("ckm,mb->ckb", zetas, ys)  # every candidate's forecast per draw
    f_star = hedged_forecasts(picks, d_ok, key_b, f_all, masks)  # (k, B), as the point's
    truth = zetas[w] @ (fit_w / sw)  # the world's own value at the targets
    return f_star - truth[:, None]


def _mse_key(zetas: np.ndarray, ys: np.ndarray, v: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Estimated MSE of each candidate's forecast, the best model taken as unbiased.

    MSE_c = max(0, (f_c − f_best)² − Var(f_c − f_best)) + Var(f_c) (Claeskens & Hjort's
    focused criterion). zetas (C, k, m), ys (m, B), v (m,), best (B,): shape (C, k, B).
    """
    f = np.einsum("ckm,mb->ckb", zetas, ys)
    cols = np.arange(ys.shape[1])
    f_best = f[best, :, cols].T  # (k, B)
    var = (zetas**2 * v).sum(axis=2)  # (C, k)
    out = np.empty_like(f)
    for b in np.unique(best):
        sel = best == b
        d = zetas - zetas[b][None]
        var_d = (d**2 * v).sum(axis=2)  # (C, k)
        bias2 = (f[:, :, sel] - f_best[None, :, sel]) ** 2 - var_d[:, :, None]
        out[:, :, sel] = np.maximum(bias2, 0.0) + var[:, :, None]
    return out
