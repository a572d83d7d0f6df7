"""The value in time as an average over shrinkage models, weighted by their evidence.

One model with every effect in (a trend, a walk of the level, seasons, blocks of the year
and the day of the week side by side; docs/guides/value-model.md) shares the fit between
readings a one-year log cannot tell apart (the yearly pattern that comes back, the trend
or the level that persists), and forecasts a blend of them no reading supports. Here each
candidate of :func:`pyprog.value.candidates.default_time_models` (the constant, a trend, a step
at one of 25 times, a yearly season of 1-3 harmonics, 2-16 blocks of the year, each with
and without the day of the week) is a mixed model of its own (:mod:`.reml`): every term
with its own variance, so an effect is shrunk rather than switched on or off. Model k has
the weight (Bayesian model averaging, Hoeting et al. 1999)

    w_k ∝ π_k ∫ L_R(θ | M_k) p(θ) dθ,

the prior π_k equal for each reading of the future (flat, persists, continues, returns:
:func:`reading`) and shared by its candidates (a prior per candidate gave the 25 steps
most of the mass and drew a sinusoid at 1,000 rounds as a step; one per family of terms
gave two blocks of the year 25 times the mass of the step they cannot be told from, and
covered a step at half the year 0.51 at 10,000 rounds: docs/guides/value-model.md), times
its restricted likelihood integrated over its standard deviations θ under half-Cauchy
priors of scale c = sd(ȳ) (:meth:`MixedModel.log_evidence`). That integral is the Occam
factor: on a one-year log the trend and 16 blocks of the year draw a trend alike, the
trend's one variance costs less prior mass, so its reading of the future wins unless the
data say otherwise; an effect the log does not show costs the prior mass it rules out.
(The density at the mode alone has no such cost for a variance at 0, and on stationary
logs its average is far worse than the constant: the guide ``value-model.md`` has both.)

The **prediction interval** is the mixture of the models' posterior predictive normals,
each with the variance of its coefficients at the target, the day's own deviation τ_k²
that the model does not explain (τ_k²/L over a window of L days; none for ``kind="mean"``)
and a variance shared by every bin (``shared_var``: the pooled direct term's sampling
error, which no bin's spread shows). Each model's normal is itself a mixture over τ²'s
confidence distribution (:meth:`MixedModel.tau_distribution`): a log of a few rounds a day
cannot tell a day's deviation of 0 from one of a tenth of the noise, and a plug-in τ̂ at 0
made such a deviation certain to be absent (a day of the week under a constant covered
0.78 at 1,000 rounds). The forecast is the mixture's mean, linear in the bins given the weights
(f = Σ_k w_k Σ_g p_g ζ_kg ȳ, :meth:`zeta`). No bootstrap: one fit per candidate.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.special
from threadpoolctl import threadpool_limits

from pyprog.timeseries.interval_results import INTERVAL_ALPHA
from pyprog.timeseries.terms import TimeModel
from pyprog.utils.moved import renamed_arguments
from pyprog.value.bins import Binned, BinSums
from pyprog.value.candidates import default_reward_time_model, default_time_models
from pyprog.value.reml import MixedModel, Solved

__all__ = ["ModelAverage", "TermEffect", "drifts", "drifts_in", "reading", "screening_models"]

#: Grid points of a window's average (the terms' own ``window``).
WINDOW_POINTS = 10_000
#: Bisection steps of the mixture's quantiles (interval [min − 10 sd, max + 10 sd]).
QUANTILE_STEPS = 60
#: Candidates below this weight are left out of the forecast and the cross-validation score.
WEIGHT_FLOOR = 1e-6
#: Folds of the blocked cross-validation (:meth:`ModelAverage.cv_score`), and the fewest
#: bins a forecast in time takes (three a fold).
CV_FOLDS = 10
MIN_BINS = 3 * CV_FOLDS
#: The Bayes factor of the best candidate over the constant from which values drift
#: (:func:`drifts`; "strong" evidence on Kass & Raftery's 1995 scale).
DRIFT_BAYES_FACTOR = 20.0


@dataclass(frozen=True)
class TermEffect:
    """A term of :mod:`pyprog.timeseries.terms` as an effect with one variance s².

    Blocks keep every level: under a shared variance the levels are exchangeable, while
    least squares drops level 0 into the constant; it is restored as 1 − the others
    (the levels' indicators, and their averages over a window, sum to 1).
    """

    term: object

    @property
    def name(self) -> str:
        return self.term.name

    def columns(self, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """z(t): shape (len(t), q)."""
        return self._every_level(self.term.columns(t, t0, t1))

    def window(self, a: float, b: float, t0: float, t1: float) -> np.ndarray:
        """The columns' average over [a, b]: shape (q,)."""
        return self._every_level(self.term.window(a, b, t0, t1, WINDOW_POINTS))

    def _every_level(self, z: np.ndarray) -> np.ndarray:
        return self.term.all_levels(z)


@dataclass(frozen=True)
class _Fitted:
    model: TimeModel
    effects: tuple
    mm: MixedModel
    mode: Solved
    log_evidence: float  # log ∫ L_R(θ) p(θ) dθ (:meth:`MixedModel.log_evidence`)

    @functools.cached_property
    def tau_grid(self) -> tuple[np.ndarray, np.ndarray]:
        """θ at each point of τ²'s grid and their probabilities: (G, K + 1), (G,)."""
        return self.mm.tau_distribution(self.mode)

    def held_out(self, folds: list) -> np.ndarray:
        """Each bin's prediction by the model fit on the other folds at the same θ: (m,).

        For a penalised fit the held-out residuals of fold F are (I − H_FF)⁻¹ e_F, with
        H = C S M⁻¹ S Cᵀ W the smoother and e the residuals (the block PRESS identity).
        """
        s, y = self.mode, self.mm.y
        cs = self.mm.C * s.scale[None, :]
        resid = y - cs @ s.coef
        out = np.empty_like(y)
        for f in folds:
            g = cs[f]
            h = g @ scipy.linalg.cho_solve(s.chol, g.T) * s.w[f][None, :]
            out[f] = y[f] - np.linalg.solve(np.eye(h.shape[0]) - h, resid[f])
        return out


class ModelAverage:
    """Bayesian model averaging of shrinkage models fitted to binned estimates.

    Parameters
    ----------
    binned : Binned
        Bin times, means ȳ_j and counts; m bins.
    noise : numpy.ndarray, shape (m,)
        σ_j², the noise variance of each ȳ_j (:func:`pyprog.value.bin_noise`).
    candidates : list of TimeModel, optional
        The candidates; default :func:`pyprog.value.candidates.default_time_models` for the
        log's span.
    shared_var : float
        A variance shared by every bin's error (DR's pooled direct term), >= 0.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(365.0)
    >>> y = 1 + np.sin(2 * np.pi * t / 365.25) + rng.normal(0, 0.5, 365)
    >>> avg = ModelAverage(Binned(t, y, np.ones(365), 1.0), np.full(365, 0.25))
    >>> mean, low, high = avg.predict([("at", 365.25 + 91.3)], alpha=0.1)
    >>> bool(low[0] < 2.0 < high[0]), round(float(mean[0]), 1)
    (True, 2.0)
    >>> max(avg.weights, key=avg.weights.get)
    'const+season(365.25D,k=1)'
    """

    @renamed_arguments(models="candidates")
    def __init__(
        self,
        binned: Binned,
        noise: np.ndarray,
        candidates: list[TimeModel] | None = None,
        shared_var: float = 0.0,
    ) -> None:
        if not (np.isfinite(shared_var) and shared_var >= 0):
            raise ValueError(f"shared_var must be a finite variance >= 0; got {shared_var!r}")
        self.binned, self.noise = binned, np.asarray(noise, dtype=np.float64)
        self.t0, self.t1 = binned.span
        self.shared_var = float(shared_var)
        # every candidate's half-Cauchy scale: the same, or their evidences would not compare
        self.prior_scale = float(np.std(binned.y)) or float(np.sqrt(np.mean(self.noise)))
        models = default_time_models(self.t0, self.t1) if candidates is None else list(candidates)
        with threadpool_limits(1, user_api="blas"):  # small solves: threads only thrash
            self.fits = [self._fit(model) for model in models]
        log_w = np.array([f.log_evidence for f in self.fits]) + _log_prior(models)
        self.w = np.exp(log_w - scipy.special.logsumexp(log_w))

    def _fit(self, model: TimeModel) -> _Fitted:
        b = self.binned
        effects = tuple(TermEffect(term) for term in model.terms)
        blocks = [e.columns(b.times, self.t0, self.t1) for e in effects]
        mm = MixedModel(b.y, self.noise, np.ones((b.m, 1)), blocks, self.prior_scale)
        mode = mm.fit()
        return _Fitted(model, effects, mm, mode, mm.log_evidence(mode))

    @property
    def weights(self) -> dict:
        """Each candidate's weight by name."""
        return {f.model.name: float(w) for f, w in zip(self.fits, self.w, strict=True)}

    @property
    def top(self) -> str:
        """The name of the candidate with the highest weight."""
        return self.fits[int(np.argmax(self.w))].model.name

    def log_bayes_factor(self) -> float:
        """log of the best candidate's evidence over the constant's (the constant fitted
        here when it is not among the candidates)."""
        const = [f for f in self.fits if not f.model.terms]
        if not const:
            with threadpool_limits(1, user_api="blas"):
                const = [self._fit(TimeModel(()))]
        return float(max(f.log_evidence for f in self.fits) - const[0].log_evidence)

    def cv_score(self, n_folds: int = CV_FOLDS) -> float:
        """Blocked cross-validation of the averaged fit: the count-weighted mean squared
        error of each of ``n_folds`` contiguous stretches predicted from the others, the
        weights and variances held at their fitted values (no refits)."""
        b = self.binned
        edges = (np.arange(n_folds + 1) * b.m) // n_folds
        folds = [slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]
        keep = self.w > WEIGHT_FLOOR
        with threadpool_limits(1, user_api="blas"):
            pred = sum(w * f.held_out(folds) for f, w in zip(self.fits, self.w, strict=True)
                       if w > WEIGHT_FLOOR) / self.w[keep].sum()  # fmt: skip
        return float(np.sum(b.count * (b.y - pred) ** 2) / np.sum(b.count))

    def _rows(self, fit: _Fitted, targets) -> np.ndarray:
        """The candidate's design rows at the targets: shape (r, P)."""
        rows = []
        for g in targets:
            if g[0] == "at":
                t = np.array([float(g[1])])
                parts = [e.columns(t, self.t0, self.t1)[0] for e in fit.effects]
            else:
                parts = [e.window(float(g[1]), float(g[2]), self.t0, self.t1) for e in fit.effects]
            rows.append(np.concatenate([[1.0], *parts]))
        return np.array(rows)

    def _days(self, targets) -> np.ndarray:
        return np.array([
            1.0 if g[0] == "at" else max(1.0, (g[2] - g[1]) / self.binned.width) for g in targets
        ])  # fmt: skip

    def _components(self, targets, kind: str, zeta: bool = False) -> tuple:
        """The predictive mixture's components at the targets: each candidate of weight
        above ``WEIGHT_FLOOR`` at each point of its grid over τ²
        (:meth:`MixedModel.tau_distribution`).

        Returns weights (N,) summing to 1, means (N, r), variances (N, r) and, with
        ``zeta``, the means' weights on the bins (N, r, m).
        """
        weights, means, variances, zetas, days = [], [], [], [], self._days(targets)
        for fit, w in zip(self.fits, self.w, strict=True):
            if w <= WEIGHT_FLOOR:
                continue
            thetas, p = fit.tau_grid
            mean, var, z = fit.mm.predictions(thetas, self._rows(fit, targets), zeta)
            if kind == "prediction":  # the day's own deviation, τ²/L over L days
                var = var + thetas[:, :1] ** 2 / days[None, :]
            weights.append(w * p)
            means.append(mean)
            variances.append(var + self.shared_var)
            zetas.append(z)
        weights = np.concatenate(weights)
        return (weights / weights.sum(), np.concatenate(means), np.concatenate(variances),
                np.concatenate(zetas) if zeta else None)  # fmt: skip

    def zeta(self, targets) -> np.ndarray:
        """The forecast's weights on the bins: shape (r, m), f = ζ ȳ."""
        weights, _, _, zetas = self._components(targets, "mean", zeta=True)
        return np.einsum("n,nrm->rm", weights, zetas)

    def forecast(
        self, targets, alpha: float | None = INTERVAL_ALPHA, kind: str = "prediction"
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
        """The forecast at each target, its interval at level 1 − ``alpha`` and the
        mixture's standard deviation, from one pass over the candidates.

        Parameters
        ----------
        targets : list of ("at", t) or ("over", a, b)
        alpha : float or None
        kind : {"prediction", "mean"}
            The interval for the value on the day (or the window's average), or for the
            models' mean there (without the day's own deviation).

        Returns
        -------
        mean, low, high, sd : numpy.ndarray of shape (r,) (low, high None without alpha)
        """
        with threadpool_limits(1, user_api="blas"):
            w, means, variances, _ = self._components(targets, _checked_kind(kind))
        mean = w @ means
        sd = np.sqrt(np.maximum(w @ (variances + means**2) - mean**2, 0.0))
        if alpha is None:
            return mean, None, None, sd
        each = np.sqrt(variances)
        low = _mixture_quantile(w, means, each, alpha / 2)
        high = _mixture_quantile(w, means, each, 1 - alpha / 2)
        return mean, low, high, sd

    def predict(
        self, targets, alpha: float | None = INTERVAL_ALPHA, kind: str = "prediction"
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The forecast and its interval: :meth:`forecast` without the sd."""
        return self.forecast(targets, alpha, kind)[:3]

    def sd(self, targets, kind: str = "prediction") -> np.ndarray:
        """The mixture's standard deviation at each target: shape (r,)."""
        return self.forecast(targets, None, kind)[3]


def screening_models(t0: float, t1: float) -> list[TimeModel]:
    """A few broad candidates for questions cheaper than the forecast: the constant, each
    term of :func:`pyprog.value.candidates.default_reward_time_model` (a trend,
    16 blocks of the year, the day of the week, as the span allows) alone, and all of them
    together (each shrunk: the broad model draws a step or a season too)."""
    rich = default_reward_time_model(t0, t1)
    return [TimeModel(()), *(TimeModel((term,)) for term in rich.terms), rich]


def drifts(values: np.ndarray, times: np.ndarray, width: float = 1.0) -> bool:
    """Whether per-round values drift in time: a candidate of :func:`screening_models`
    beats the constant's evidence by a Bayes factor of ``DRIFT_BAYES_FACTOR`` or more, or
    the values fill fewer than ``MIN_BINS`` bins, too few to tell.

    Parameters
    ----------
    values, times : numpy.ndarray, shape (n,)
    width : float
        Days per bin.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.sort(rng.uniform(0, 365, 2000))
    >>> drifts(rng.normal(size=2000), t), drifts(rng.normal(size=2000) + t / 365, t)
    (False, True)
    """
    return drifts_in(BinSums.of(values, times, width))


def drifts_in(sums: BinSums) -> bool:
    """:func:`drifts` on the values' per-bin sums (of a log read whole or in chunks)."""
    if sums.m < MIN_BINS:
        return True  # too few bins to tell: the cautious answer
    binned = sums.binned()
    avg = ModelAverage(binned, sums.noise(), screening_models(*binned.span))
    return avg.log_bayes_factor() >= float(np.log(DRIFT_BAYES_FACTOR))


def reading(model: TimeModel) -> str:
    """What the model says of the future beyond the log: "flat", "persists" (a step),
    "continues" (a trend), "returns" (a season or blocks of a period), or their sum.

    Each term says its own (:attr:`pyprog.timeseries.Term.reading`); the day of the week
    says nothing of it (every reading holds it or not), so it is left out. The prior gives
    each reading the same mass, shared by its candidates: 25 step times are one reading, as
    are the three seasons and four blocks of the year.

    Examples
    --------
    >>> from pyprog.timeseries import DayOfWeek, blocks, step
    >>> reading(TimeModel((step(100.0), blocks(DayOfWeek()))))
    'persists'
    """
    kinds = {term.reading for term in model.terms} - {None}
    return "+".join(sorted(kinds)) or "flat"


def _log_prior(models: list[TimeModel]) -> np.ndarray:
    """Equal prior mass per reading, shared equally by its candidates: (K,)."""
    names = [reading(m) for m in models]
    counts = {name: names.count(name) for name in names}
    return -np.log(len(counts)) - np.log([counts[name] for name in names])


def _checked_kind(kind) -> str:
    if kind not in ("prediction", "mean"):
        raise ValueError(f"kind must be 'prediction' or 'mean'; got {kind!r}")
    return kind


def _mixture_quantile(w: np.ndarray, means: np.ndarray, sd: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of Σ_k w_k N(means_k, sd_k²) per column: (K, r) -> (r,), by bisection."""
    lo, hi = (means - 10 * sd).min(axis=0), (means + 10 * sd).max(axis=0)
    for _ in range(QUANTILE_STEPS):
        mid = 0.5 * (lo + hi)
        below = w @ scipy.special.ndtr((mid[None, :] - means) / sd) < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)
