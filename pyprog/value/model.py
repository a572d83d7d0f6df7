"""One model of the value in time with its uncertainty: shrinkage, not selection.

:class:`ValueModel` fits the mixed model of :mod:`.effects` to binned per-round
estimates (:class:`pyprog.offpolicy.Binned`): every effect (trend, the level's walk,
seasons, blocks of the year, the day of the week) is in, each shrunk by its own variance
chosen from the log (:mod:`.reml`), so weak effects are shrunk rather than switched on or
off. Given the variances, the forecast is linear in the bins' means, f = Σ_j ζ_j ȳ_j.

**Prediction intervals** by a parametric bootstrap of the whole procedure at the fitted
variances θ̂. Each world draws fresh effects b* ~ N(0, ŝ_k²), day deviations u* ~ N(0, τ̂²)
and noise e* ~ N(0, σ_j²), keeps the constant, and so has a true value at every target:
its effects there, the walk's increments between the log's end and the target (which no
log has seen: ŝ_walk² per knot, :meth:`.effects.LevelWalk.future_columns`), and the day's
own deviation u*(t') (τ̂²/L for a window of L days; left out for ``kind="mean"``). The
variances are refitted on each world's bins, and the interval is the forecast minus the
quantiles of the worlds' errors (forecast − true value), plus an error shared by every
bin (``shared_var``: DR's pooled direct term). So the interval carries what REML's own
choice of the variances does, an effect shrunk to 0 in one world and kept in another,
which an interval at θ̂ alone does not (docs/guides/value-model.md has both measured).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from pyprog.offpolicy.time_candidates import Binned
from pyprog.value.effects import Effect, default_effects
from pyprog.value.reml import MixedModel

__all__ = ["ValueModel"]


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
    n_boot : int
        Bootstrap worlds for the interval (>= 100 for 90 % intervals; 0: no interval).
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
        n_boot: int = 200,
        random_state=None,
    ) -> None:
        self.binned = binned
        self.t0, self.t1 = binned.span
        self.effects = default_effects(self.t0, self.t1) if effects is None else list(effects)
        blocks = [e.columns(binned.times, self.t0, self.t1) for e in self.effects]
        scale = float(np.std(binned.y)) or float(np.sqrt(np.mean(noise)))
        self.mm = MixedModel(binned.y, noise, np.ones((binned.m, 1)), blocks, scale)
        self.rng = np.random.default_rng(random_state)
        with threadpool_limits(1, user_api="blas"):  # small solves: threads only thrash
            self.mode = self.mm.fit()
            self.worlds = self._worlds(n_boot)
        self._predict_seed = int(self.rng.integers(2**63))  # every predict draws the same

    @property
    def sd(self) -> dict:
        """Each effect's standard deviation at the mode, and the day's ("day")."""
        out = {"day": float(self.mode.theta[0])}
        out.update(
            {e.name: float(s) for e, s in zip(self.effects, self.mode.theta[1:], strict=True)}
        )
        return out

    def _worlds(self, n_boot: int) -> list:
        """Bootstrap worlds at θ̂: each its coefficients (P,) and its refitted equations."""
        mm, theta = self.mm, self.mode.theta
        start = np.maximum(theta, 0.02 * mm.prior_scale)
        beta, worlds = self.mode.coef[0], []
        for _ in range(n_boot):
            coef = np.concatenate([[beta], theta[mm.owner[1:]]])
            coef[1:] *= self.rng.standard_normal(coef.size - 1)
            y = mm.C @ coef + self.rng.normal(0.0, theta[0], mm.y.size)
            y += self.rng.standard_normal(mm.y.size) * np.sqrt(mm.noise)
            worlds.append((coef, mm.with_y(y).fit(start, maxiter=40)))
        return worlds

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
        rows, future, owners, days = self._rows(targets)
        mean = self.mode.mean_at(rows)  # f = ζ ȳ
        if alpha is None:
            return mean, None, None
        if not self.worlds:
            raise ValueError("this model has no bootstrap worlds (n_boot=0): pass alpha=None")
        theta, rng = self.mode.theta, np.random.default_rng(self._predict_seed)
        errors = np.empty((len(self.worlds), mean.size))
        for i, (coef, solved) in enumerate(self.worlds):
            truth = rows @ coef
            if future.shape[1]:  # the walk's increments after the log
                truth += future @ (theta[owners] * rng.standard_normal(future.shape[1]))
            if kind == "prediction":  # the day's own deviation (τ²/L over L days)
                truth += theta[0] / np.sqrt(days) * rng.standard_normal(mean.size)
            errors[i] = solved.mean_at(rows) - truth
        errors += np.sqrt(shared_var) * rng.standard_normal(errors.shape)
        low = mean - np.quantile(errors, 1 - alpha / 2, axis=0)
        high = mean - np.quantile(errors, alpha / 2, axis=0)
        return mean, low, high
