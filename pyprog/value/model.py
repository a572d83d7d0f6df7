"""One model of the value in time with its uncertainty: shrinkage, not selection.

:class:`ValueModel` fits the mixed model of :mod:`.effects` to binned per-round
estimates (:class:`pyprog.offpolicy.Binned`): every effect (trend, the level's walk,
seasons, blocks of the year, the day of the week) is in, each shrunk by its own variance
chosen from the log (:mod:`.reml`), so weak effects are shrunk rather than switched on or
off. Given the variances, the forecast is linear in the bins' means, f = Σ_j ζ_j ȳ_j.

**Prediction intervals.** What is asked is the value on a day (``at``) or its average
over a window (``over``). Its error given the variances has four parts:

1. the posterior variance of the fitted effects at the target, c̃ᵀ M⁻¹ c̃ (:mod:`.reml`);
2. the walk's increments between the log's end and the target, which the log has not
   seen: λ_walk per knot (:meth:`.effects.LevelWalk.future_columns`);
3. the day's own deviation from the effects, u(t') ~ N(0, τ²): the excess of the daily
   estimates' spread over their noise, which no effect explains (τ²/L for a window of L
   days; left out for ``kind="mean"``);
4. an error shared by every bin (``shared_var``; DR's pooled direct term).

**The variances' own uncertainty** enters by averaging over their posterior: draws from a
multivariate t around the mode (Laplace's curvature, 4 degrees of freedom), weighted by
the exact posterior over the proposal (importance sampling). The interval is the
mixture's quantiles, so a variance whose mode is 0 still widens the interval by what the
log cannot exclude.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.stats

from pyprog.offpolicy.time_candidates import Binned
from pyprog.value.effects import Effect, default_effects
from pyprog.value.reml import MixedModel, Solved

__all__ = ["ValueModel", "bin_noise"]

#: Prior degrees of freedom of the bins' noise variances (shrunk toward the pooled one).
NOISE_PRIOR_DOF = 10.0


def bin_noise(values: np.ndarray, times: np.ndarray, binned: Binned) -> np.ndarray:
    """The noise variance of each bin's mean, σ_j² = s_j² / n_j: shape (m,).

    s_j² is the bin's within variance shrunk toward the pooled within-bin variance with
    ``NOISE_PRIOR_DOF`` prior degrees of freedom (Smyth 2004), so that bins of one round
    get the pooled variance and large bins their own. When fewer than 10 degrees of
    freedom are within bins, the pooled variance is half the mean squared difference of
    time-consecutive rounds (Rice 1984), which a slow drift barely inflates.
    """
    key = np.floor(times / binned.width)
    _, inv = np.unique(key, return_inverse=True)
    mean = binned.y[inv]
    ss = np.bincount(inv, weights=(values - mean) ** 2, minlength=binned.m)
    dof = binned.count - 1.0
    if dof.sum() >= 10:
        pooled = ss.sum() / dof.sum()
    else:
        order = np.argsort(times, kind="stable")
        pooled = 0.5 * float(np.mean(np.diff(values[order]) ** 2))
    pooled = max(pooled, 1e-12 * max(1.0, float(np.mean(values**2))))
    own = (NOISE_PRIOR_DOF * pooled + ss) / (NOISE_PRIOR_DOF + dof)
    return own / binned.count


@dataclass
class _Draws:
    """Posterior draws of θ and their normalised importance weights."""

    solved: list
    weight: np.ndarray


class ValueModel:
    """The value in time as a penalized additive model fitted to binned estimates.

    Parameters
    ----------
    binned : Binned
        Bin times, means ȳ_j and counts.
    noise : numpy.ndarray, shape (m,)
        σ_j², the noise variance of each ȳ_j (:func:`bin_noise`).
    effects : list of Effect, optional
        Default :func:`pyprog.value.effects.default_effects` for the log's span.
    n_draws : int
        Posterior draws of the variances for the interval (0: the mode alone).
    random_state : None, int or numpy.random.Generator

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(365.0)
    >>> y = 1 + np.sin(2 * np.pi * t / 365.25) + rng.normal(0, 0.5, 365)
    >>> b = Binned(t, y, np.ones(365), 1.0)
    >>> model = ValueModel(b, np.full(365, 0.25), random_state=0)
    >>> mean, low, high = model.predict([("at", 365.25 + 91.3)], alpha=0.1)
    >>> bool(low[0] < 2.0 < high[0]), round(float(mean[0]), 1)
    (True, 2.0)
    """

    def __init__(
        self,
        binned: Binned,
        noise: np.ndarray,
        effects: list[Effect] | None = None,
        n_draws: int = 200,
        random_state=None,
    ) -> None:
        self.binned = binned
        self.t0, self.t1 = binned.span
        self.effects = default_effects(self.t0, self.t1) if effects is None else list(effects)
        blocks = [e.columns(binned.times, self.t0, self.t1) for e in self.effects]
        scale = float(np.std(binned.y)) or float(np.sqrt(np.mean(noise)))
        self.mm = MixedModel(binned.y, noise, np.ones((binned.m, 1)), blocks, scale)
        self.mode = self.mm.fit()
        self.rng = np.random.default_rng(random_state)
        self.draws = self._draw(n_draws)

    @property
    def sd(self) -> dict:
        """Each effect's standard deviation at the mode, and the day's ("day")."""
        out = {"day": float(self.mode.theta[0])}
        out.update(
            {e.name: float(s) for e, s in zip(self.effects, self.mode.theta[1:], strict=True)}
        )
        return out

    def _draw(self, n_draws: int) -> _Draws:
        """Draws of θ from the product of its one-dimensional profiles at the mode,
        weighted by the joint posterior over that proposal (importance sampling)."""
        if n_draws == 0:
            return _Draws([self.mode], np.ones(1))
        theta = self.mode.theta
        samples = np.empty((n_draws, theta.size))
        log_q = np.zeros(n_draws)
        for k in range(theta.size):
            grid, dens = self._profile(k)
            samples[:, k], lq = _sample_cells(grid, dens, n_draws, self.rng)
            log_q += lq
        solved = [self.mm.solve(s) for s in samples]
        logw = -np.array([s.objective for s in solved]) - log_q
        w = np.exp(logw - logw.max())
        return _Draws(solved, w / w.sum())

    def _profile(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """θ_k on a grid from 0 to where the posterior has fallen by e⁻¹⁰ (the others at
        the mode), and the unnormalised posterior there."""
        theta, base = self.mode.theta, self.mode.objective
        step = 0.02 * self.mm.prior_scale
        grid, objective = [0.0], []
        s = 0.0
        while True:
            at = theta.copy()
            at[k] = grid[-1]
            objective.append(self.mm.solve(at).objective - base)
            if (objective[-1] > 10.0 and grid[-1] > theta[k]) or len(grid) > 40:
                break
            s += step
            step *= 1.4
            grid.append(s)
        objective = np.array(objective)
        return np.array(grid), np.exp(-(objective - objective.min()))

    def _rows(self, targets) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Design rows (r, P), future walk columns and owners, and days per target."""
        targets = np.array([tuple(g) for g in targets], dtype=object)
        rows, days = [], []
        for g in targets:
            if g[0] == "at":
                t = np.array([g[1]], dtype=np.float64)
                parts = [e.columns(t, self.t0, self.t1)[0] for e in self.effects]
                days.append(1.0)
            else:
                parts = [e.window(g[1], g[2], self.t0, self.t1) for e in self.effects]
                days.append(max(1.0, (g[2] - g[1]) / self.binned.width))
            rows.append(np.concatenate([[1.0], *parts]))
        future = [e.future_columns(targets, self.t0, self.t1) for e in self.effects]
        owners = np.concatenate([np.full(f.shape[1], k + 1) for k, f in enumerate(future)])
        return np.array(rows), np.hstack(future), owners.astype(int), np.array(days)

    def _moments(self, solved: Solved, rows, future, owners, days, kind: str):
        mean, var = solved.mean_and_var(rows)
        if future.shape[1]:
            var = var + (future**2 * solved.theta[owners] ** 2).sum(axis=1)
        if kind == "prediction":
            var = var + solved.theta[0] ** 2 / days
        return mean, var

    def zeta(self, targets) -> np.ndarray:
        """The forecast's weights on the bins at the mode: shape (r, m), f = ζ ȳ."""
        rows = self._rows(targets)[0]
        s = self.mode
        scaled = rows * s.scale[None, :]
        sol = scipy.linalg.cho_solve(s.chol, scaled.T)  # (P, r)
        return ((self.mm.C * s.scale[None, :]) @ sol * s.w[:, None]).T

    def predict(
        self, targets, alpha: float | None = 0.1, kind: str = "prediction", shared_var=0.0
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The forecast at each target, and its interval at level 1 − ``alpha``.

        Parameters
        ----------
        targets : list of ("at", t) or ("over", a, b)
        alpha : float or None
        kind : {"prediction", "mean"}
            The interval for the value on the day (or the window's average), or for the
            effects' mean there (without the day's own deviation).
        shared_var : float or numpy.ndarray
            A variance shared by every bin, added to each target's.

        Returns
        -------
        mean, low, high : numpy.ndarray of shape (r,) (low, high None without alpha)
        """
        if kind not in ("prediction", "mean"):
            raise ValueError(f"kind must be 'prediction' or 'mean'; got {kind!r}")
        parts = self._rows(targets)
        mean = self._moments(self.mode, *parts, kind)[0]  # at the mode: f = ζ ȳ
        if alpha is None:
            return mean, None, None
        ms, vs = zip(*(self._moments(s, *parts, kind) for s in self.draws.solved), strict=True)
        ms, vs = np.array(ms), np.array(vs) + shared_var  # (draws, r)
        low, high = np.empty(mean.size), np.empty(mean.size)
        for j in range(mean.size):
            low[j], high[j] = _mixture_interval(self.draws.weight, ms[:, j], vs[:, j], alpha)
        return mean, low, high


def _sample_cells(grid, dens, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """n draws from the piecewise-constant density whose cell [g_i, g_i+1] has mass
    ∝ its width × the mean of the density at its ends; and their log densities."""
    width = np.diff(grid)
    mass = width * 0.5 * (dens[:-1] + dens[1:])
    mass = mass / mass.sum()
    cell = rng.choice(width.size, size=n, p=mass)
    draws = grid[cell] + rng.random(n) * width[cell]
    return draws, np.log(mass[cell] / width[cell])


def _mixture_interval(w, mu, var, alpha: float) -> tuple[float, float]:
    """The α/2 and 1 − α/2 quantiles of Σ w_d N(μ_d, var_d)."""
    sd = np.sqrt(np.maximum(var, 1e-300))

    def cdf(x):
        return float(w @ scipy.stats.norm.cdf((x - mu) / sd))

    lo_b, hi_b = float((mu - 10 * sd).min()), float((mu + 10 * sd).max())
    low = scipy.optimize.brentq(lambda x: cdf(x) - alpha / 2, lo_b, hi_b, xtol=1e-10)
    high = scipy.optimize.brentq(lambda x: cdf(x) - 1 + alpha / 2, lo_b, hi_b, xtol=1e-10)
    return low, high
