"""Variance components of a mixed model by restricted maximum likelihood, with a prior.

The model of the binned estimates ȳ (m,) with known noise variances σ² (m,):

    ȳ = X β + Σ_k Z_k b_k + u + e,   b_k ~ N(0, s_k² I),  u ~ N(0, τ² I),  e ~ N(0, diag σ²),

β flat (the constant). Written with b_k = s_k v_k, v_k ~ N(0, I), so that s_k = 0 is an
ordinary point (the effect absent) and the likelihood is smooth and even in every s_k.
With C = [X, Z_1, ..., Z_K], S = diag(1, s_1, ..., s_K) repeated over each block's
columns, W = diag(1/(σ² + τ²)) and J = diag(0 for β, 1 for v):

    M = S Cᵀ W C S + J,     g = S Cᵀ W ȳ,
    −2 log L_R = Σ log(σ² + τ²) + log det M + ȳᵀ W ȳ − gᵀ M⁻¹ g

(Henderson's mixed model equations; Harville 1977). Each s_k (and τ) has a half-Cauchy
prior of scale ``prior_scale`` (Gelman 2006; Polson & Scott 2012): weakly informative,
and proper (the REML likelihood of one column decays only as 1/s_k), so the fit is the
posterior mode (searched over the variances s_k², where 0 is no stationary point). The
gradient is analytic. :meth:`MixedModel.log_evidence` integrates the likelihood over the
standard deviations: the model's evidence, for averaging models (:mod:`.averaging`).
Predictions do not take τ from its mode: they average over τ²'s confidence distribution,
read off the REML likelihood in τ² (:meth:`MixedModel.tau_distribution`; Xie & Singh 2013),
which keeps the day's deviation in the interval when the log cannot tell it from 0.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.special

from pyprog._ext.backend import kernels
from pyprog._ext.fallback_reml import equations

__all__ = ["MixedModel", "Solved"]

#: Points of the grid on which the evidence integrates a standard deviation whose mode is 0.
EVIDENCE_GRID = 40
#: Points of the grid over τ² on which predictions are integrated
#: (:meth:`MixedModel.tau_distribution`).
TAU_GRID = 12
#: Points of the log-spaced probes over τ² (its peak, the range its distribution holds).
PROBE = 16
#: The likelihood root beyond which τ²'s confidence distribution is taken as 0 or 1
#: (Φ(−4) = 3·10⁻⁵).
CD_REACH = 4.0


class Solved:
    """The mixed model equations at one set of standard deviations, formed when first read
    (a fit and the evidence read only θ and the objective).

    Attributes
    ----------
    theta : numpy.ndarray, shape (K + 1,)
        (τ, s_1, ..., s_K).
    objective : float
        −log posterior (half of −2 log L_R, minus the log prior), up to a constant.
    scale : numpy.ndarray, shape (P,)
        S's diagonal.
    chol : tuple
        (L, True): M's lower Cholesky factor, as ``scipy.linalg.cho_solve`` takes it.
    g : numpy.ndarray, shape (P,)
        S Cᵀ W ȳ.
    gram, cy : numpy.ndarray, shape (P, P) and (P,)
        Cᵀ W C and Cᵀ W ȳ, unscaled.
    w : numpy.ndarray, shape (m,)
        1/(σ² + τ²).
    """

    def __init__(self, model: MixedModel, theta: np.ndarray, objective: float) -> None:
        self._mm, self.theta, self.objective = model, theta, objective

    @functools.cached_property
    def _equations(self) -> tuple:
        w, scale, gram, cy, L, g, _ = self._mm._equations(self.theta[None, :])
        return w[0], scale[0], gram[0], cy[0], L[0], g[0]

    @property
    def w(self) -> np.ndarray:
        return self._equations[0]

    @property
    def scale(self) -> np.ndarray:
        return self._equations[1]

    @property
    def gram(self) -> np.ndarray:
        return self._equations[2]

    @property
    def cy(self) -> np.ndarray:
        return self._equations[3]

    @property
    def chol(self) -> tuple:
        return self._equations[4], True

    @property
    def g(self) -> np.ndarray:
        return self._equations[5]

    @property
    def coef(self) -> np.ndarray:
        """(β̂, v̂): the posterior mean of the coefficients in the scaled parametrisation."""
        return scipy.linalg.cho_solve(self.chol, self.g)

    def mean_at(self, rows: np.ndarray) -> np.ndarray:
        """The posterior mean of rows @ (β, b): rows (r, P) in C's columns, shape (r,)."""
        return (rows * self.scale[None, :]) @ self.coef


class MixedModel:
    """ȳ = Xβ + Σ_k Z_k b_k + u + e, its variance components fitted by penalised REML.

    Parameters
    ----------
    y : numpy.ndarray, shape (m,)
    noise : numpy.ndarray, shape (m,)
        σ_j² > 0, the known noise variance of each ȳ_j.
    fixed : numpy.ndarray, shape (m, p)
        X (flat prior).
    blocks : list of numpy.ndarray, each (m, q_k)
        Z_k.
    prior_scale : float
        The half-Cauchy scale of every standard deviation, > 0.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(200.0)
    >>> z = np.column_stack([np.cos(2 * np.pi * t / 50), np.sin(2 * np.pi * t / 50)])
    >>> y = 1 + z @ [0.8, 0.0] + rng.normal(0, 0.3, 200)
    >>> fit = MixedModel(y, np.full(200, 0.09), np.ones((200, 1)), [z], 1.0).fit()
    >>> bool(0.3 < fit.theta[1] < 2.0)   # the season's standard deviation
    True
    """

    def __init__(self, y, noise, fixed, blocks, prior_scale: float) -> None:
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.noise = np.ascontiguousarray(noise, dtype=np.float64)
        self.C = np.ascontiguousarray(np.hstack([fixed, *blocks]), dtype=np.float64)
        self.p = fixed.shape[1]
        sizes = [b.shape[1] for b in blocks]
        # which s each column scales: 0 for fixed columns, k for block k (1-based)
        self.owner = np.concatenate([np.zeros(self.p, np.int64)] + [
            np.full(q, k + 1, np.int64) for k, q in enumerate(sizes)
        ])  # fmt: skip
        self.K = len(blocks)
        self.prior_scale = float(prior_scale)

    def solve(self, theta: np.ndarray) -> Solved:
        """The equations at θ = (τ, s_1..s_K), and the objective there."""
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        return Solved(self, theta, float(self.objectives(theta[None, :])[0]))

    def objective_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """−log posterior and its gradient in θ (analytic; the compiled
        ``reml_objective_grad``)."""
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        return kernels.reml_objective_grad(*self._model, theta, self.prior_scale)

    @property
    def _model(self) -> tuple:
        """(C, ȳ, σ², owner): the arguments every kernel of ``_reml.pxi`` takes first."""
        return self.C, self.y, self.noise, self.owner

    def fit(self, start: np.ndarray | None = None, maxiter: int = 500) -> Solved:
        """The posterior mode of θ (the compiled ``reml_fit``: BFGS over the variances
        θ² ≥ 0, from ``start``).

        In θ itself every s_k = 0 is a stationary point (the objective is even in s_k), so
        a search there stops on it whatever the data; in θ² the boundary 0 has the
        gradient ½ ∂²/∂s_k², and an effect the log shows is found from any start.
        """
        theta0 = np.full(self.K + 1, 0.3 * self.prior_scale) if start is None else start
        theta0 = np.ascontiguousarray(theta0, dtype=np.float64)
        theta, _, _ = kernels.reml_fit(*self._model, theta0, self.prior_scale, maxiter)
        return self.solve(theta)

    def log_evidence(self, mode: Solved) -> float:
        """log of the marginal likelihood ∫ L_R(θ) p(θ) dθ, the half-Cauchy priors normalised.

        A product of one-dimensional integrals around the mode, each standard deviation
        s_c varied with the others held there, by the trapezoid rule on ``EVIDENCE_GRID``
        points: in log s_c over ±6 Laplace standard deviations when the mode is inside
        (0, ∞), on 0 and c·10⁻⁴ .. 10c (log-spaced) when it is at 0. Unlike the density at
        the mode this has the Occam factor of each variance: an effect the log does not
        show costs the prior mass the data rule out.
        """
        theta, base = np.asarray(mode.theta, dtype=np.float64), mode.objective
        c = self.prior_scale
        total = -base + theta.size * float(np.log(2.0 / (np.pi * c)))
        for k in range(theta.size):
            if theta[k] > 1e-8 * c:
                total += self._around_mode(theta, k, base)
            else:
                total += self._grid_at_zero(theta, k, base)
        return float(total)

    def tau_distribution(
        self, mode: Solved, points: int = TAU_GRID
    ) -> tuple[np.ndarray, np.ndarray]:
        """τ²'s confidence distribution on a grid, the effects' standard deviations held at
        the mode.

        A log shows the day's own deviation τ only as the excess of the bins' spread over
        their noise; where it cannot resolve it, τ̂ sits at (or near) 0 while values the log
        cannot rule out remain, and a prediction for one day must carry them. Here they
        are weighted by their confidence distribution (Xie & Singh 2013), from the
        likelihood root of the REML likelihood in v = τ², extended below 0 (to
        −min σ²) so that its maximum v̂ is unconstrained:

            H(v) = Φ(sign(v − v̂) √(2 (ℓ(v̂) − ℓ(v)))),   v ≥ 0,

        with the mass H(0) at v = 0. Mixing a predictive over it (Shen, Liu & Xie 2018)
        gives intervals whose coverage over repeated logs is near nominal at every fixed τ
        away from the boundary (at τ = 0 they cover more), where a posterior's prior adds
        mass away from 0 on a log that cannot tell (docs/guides/value-model.md). The grid:
        ``points`` values of v, evenly over the range where the root lies within
        ±``CD_REACH``.

        Returns
        -------
        thetas : numpy.ndarray, shape (points, K + 1)
            The mode with τ = √v at each grid value.
        weights : numpy.ndarray, shape (points,)
            H's mass in each grid value's cell (summing to 1).
        """
        theta = np.asarray(mode.theta, dtype=np.float64)
        v_hat, top, probe, f = self._day_var_peak(theta)
        # the range where |root| <= CD_REACH, the crossings interpolated on the probe (the
        # root is monotone in v)
        r = _likelihood_root(probe, f, v_hat, top)
        lo, hi = np.maximum(np.interp([-CD_REACH, CD_REACH], r, probe), 0.0)
        # hi = 0 when the whole range lies below 0 (bins spread less than their noise
        # says): every point at τ² = 0, which holds all of H's mass
        v = np.linspace(lo, hi, points)
        mid = 0.5 * (v[1:] + v[:-1])
        edges = self._cdf(theta, mid, v_hat, top)
        mass = np.diff(np.concatenate([[0.0], edges, [1.0]]))
        thetas = np.repeat(theta[None, :], points, axis=0)
        thetas[:, 0] = np.sqrt(v)
        return thetas, mass / mass.sum()

    def tau_cdf(self, mode: Solved, v) -> np.ndarray:
        """H(v), τ²'s confidence distribution function (:meth:`tau_distribution`) at day
        variances v >= 0, the effects at the mode: the shape of v."""
        theta = np.asarray(mode.theta, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        v_hat, top, _, _ = self._day_var_peak(theta)
        return self._cdf(theta, v.ravel(), v_hat, top).reshape(v.shape)

    def _cdf(self, theta: np.ndarray, v: np.ndarray, v_hat: float, top: float) -> np.ndarray:
        f = self._day_var_objective(theta, v)
        return scipy.special.ndtr(_likelihood_root(v, f, v_hat, top))

    def _day_var_peak(self, theta: np.ndarray) -> tuple:
        """(v̂, −ℓ_R(v̂), probe, −ℓ_R on the probe): −ℓ_R's minimum over the day variance
        v > −min σ², the effects at θ. A log-spaced probe on both sides of 0, then twice a
        grid of 7 points in the best bracket (an evaluated point, so that the root is 0
        at v̂ and H continuous: a parabola's vertex could fall below every value)."""
        floor = -float(self.noise.min())
        probe = np.unique(np.concatenate([
            floor * np.logspace(-2, np.log10(0.99), 4), [0.0, theta[0] ** 2],
            (self.prior_scale * np.logspace(-4, 1, PROBE)) ** 2,
        ]))  # fmt: skip
        f = self._day_var_objective(theta, probe)
        v, g = probe, f
        for _ in range(2):
            i = int(np.argmin(g))
            v = np.linspace(v[max(i - 1, 0)], v[min(i + 1, v.size - 1)], 7)
            g = self._day_var_objective(theta, v)
        i = int(np.argmin(g))
        return float(v[i]), float(g[i]), probe, f

    def _day_var_objective(self, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        """−ℓ_R at day variances v (G,), which may be below 0 (down to −min σ²), the
        effects at θ[1:] and no prior on τ: (G,)."""
        thetas = np.repeat(theta[None, :], v.size, axis=0)
        thetas[:, 0] = 0.0  # τ's prior term off: H is the likelihood's
        day_var = np.ascontiguousarray(v, dtype=np.float64)
        return kernels.reml_objectives(*self._model, thetas, day_var, self.prior_scale)

    def predictions(self, thetas: np.ndarray, rows: np.ndarray, zeta: bool = False) -> tuple:
        """The posterior mean of rows @ (β, b) and its variance at each θ.

        Parameters
        ----------
        thetas : numpy.ndarray, shape (G, K + 1)
        rows : numpy.ndarray, shape (r, P)
            Design rows in C's columns.
        zeta : bool
            Also each mean's weights on the bins.

        Returns
        -------
        means, variances : numpy.ndarray, shape (G, r)
        weights : numpy.ndarray of shape (G, r, m), or None
            means = weights @ ȳ (given θ the mean is linear in the bins).
        """
        w, scale, _, _, L, g, _ = self._equations(np.asarray(thetas, dtype=np.float64))
        M_inv = np.linalg.inv(np.matmul(L, np.swapaxes(L, 1, 2)))  # (G, P, P), P small
        rs = rows[None, :, :] * scale[:, None, :]  # (G, r, P)
        sol = np.matmul(M_inv, np.swapaxes(rs, 1, 2))  # (G, P, r)
        means = np.einsum("gpr,gp->gr", sol, g)
        variances = np.einsum("grp,gpr->gr", rs, sol)
        if not zeta:
            return means, variances, None
        cs = (self.C[None] * scale[:, None, :]).swapaxes(1, 2)  # (G, P, m): S Cᵀ
        return means, variances, np.matmul(np.swapaxes(sol, 1, 2), cs) * w[:, None, :]

    def objectives(self, thetas: np.ndarray) -> np.ndarray:
        """The objective of :meth:`solve` at many θ at once: (G, K + 1) -> (G,).

        Compiled (``reml_objectives``: CᵀWC once per run of the same τ), for the
        evidence's grids.
        """
        thetas = np.ascontiguousarray(np.atleast_2d(thetas), dtype=np.float64)
        return kernels.reml_objectives(*self._model, thetas, thetas[:, 0] ** 2, self.prior_scale)

    def _equations(self, thetas: np.ndarray) -> tuple:
        """W, S, CᵀWC, CᵀWȳ, M's Cholesky factor, g and the objective at each θ (G, K + 1)
        (:func:`pyprog._ext.fallback_reml.equations`)."""
        return equations(*self._model, thetas, thetas[:, 0] ** 2, self.prior_scale)

    def _varied(self, theta: np.ndarray, k: int, values: np.ndarray) -> np.ndarray:
        """The objective with s_k (τ for k = 0) set to each of ``values``: (G,)."""
        thetas = np.repeat(theta[None, :], values.size, axis=0)
        thetas[:, k] = values
        return self.objectives(thetas)

    def _around_mode(self, theta: np.ndarray, k: int, base: float) -> float:
        # ∫ exp(−(obj − base)) ds = ∫ exp(−(obj(u) − u − base)) du in u = log s, on a grid
        # of ±6 Laplace standard deviations (the curvature by central differences)
        u0, h = float(np.log(theta[k])), 1e-3
        f = self._varied(theta, k, np.exp(u0 + np.array([-h, 0.0, h]))) - (
            u0 + h * np.arange(-1, 2)
        )
        curvature = max((f[0] - 2.0 * f[1] + f[2]) / h**2, 1e-8)
        reach = 6.0 / np.sqrt(curvature)  # within c·10⁻⁶ .. 100c, where the prior's mass is
        lo, hi = np.log(self.prior_scale) + np.array([-6.0, 2.0]) * np.log(10.0)
        u = np.linspace(max(u0 - reach, lo), min(u0 + reach, hi), EVIDENCE_GRID)
        log_f = -(self._varied(theta, k, np.exp(u)) - u - base)
        top = float(log_f.max())
        return top + float(np.log(scipy.integrate.trapezoid(np.exp(log_f - top), u)))

    def _grid_at_zero(self, theta: np.ndarray, k: int, base: float) -> float:
        grid = np.concatenate([[0.0], self.prior_scale * np.logspace(-4, 1, EVIDENCE_GRID - 1)])
        log_f = -(self._varied(theta, k, grid) - base)
        top = float(log_f.max())
        return top + float(np.log(scipy.integrate.trapezoid(np.exp(log_f - top), grid)))


def _likelihood_root(v: np.ndarray, f: np.ndarray, v_hat: float, top: float) -> np.ndarray:
    """sign(v − v̂) √(2 (f − top)): the signed root of the likelihood ratio, f = −ℓ_R(v)."""
    return np.sign(v - v_hat) * np.sqrt(2.0 * np.maximum(f - top, 0.0))
