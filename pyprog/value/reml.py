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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.optimize

__all__ = ["MixedModel", "Solved"]

#: Points of the grid on which the evidence integrates a standard deviation whose mode is 0.
EVIDENCE_GRID = 40
#: Points of the grid over τ on which predictions are integrated (:meth:`MixedModel.tau_posterior`).
TAU_GRID = 12
#: Points of the log-spaced probe that finds the range of τ the posterior holds.
PROBE = 16


@dataclass(frozen=True)
class Solved:
    """The mixed model equations at one set of standard deviations.

    Attributes
    ----------
    theta : numpy.ndarray, shape (K + 1,)
        (τ, s_1, ..., s_K).
    scale : numpy.ndarray, shape (P,)
        S's diagonal.
    chol : tuple
        (L, True): M's lower Cholesky factor, as ``scipy.linalg.cho_solve`` takes it.
    g : numpy.ndarray, shape (P,)
        S Cᵀ W ȳ.
    gram, cy : numpy.ndarray, shape (P, P) and (P,)
        Cᵀ W C and Cᵀ W ȳ, unscaled (the gradient's too).
    w : numpy.ndarray, shape (m,)
        1/(σ² + τ²).
    objective : float
        −log posterior (half of −2 log L_R, minus the log prior), up to a constant.
    """

    theta: np.ndarray
    scale: np.ndarray
    chol: tuple
    g: np.ndarray
    gram: np.ndarray
    cy: np.ndarray
    w: np.ndarray
    objective: float

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
        self.y = np.asarray(y, dtype=np.float64)
        self.noise = np.asarray(noise, dtype=np.float64)
        self.C = np.hstack([fixed, *blocks]) if blocks else np.asarray(fixed, dtype=np.float64)
        self.p = fixed.shape[1]
        sizes = [b.shape[1] for b in blocks]
        # which s each column scales: 0 for fixed columns, k for block k (1-based)
        self.owner = np.concatenate([np.zeros(self.p, int)] + [
            np.full(q, k + 1) for k, q in enumerate(sizes)
        ])  # fmt: skip
        self.K = len(blocks)
        self.prior = np.where(self.owner > 0, 1.0, 0.0)
        self.prior_scale = float(prior_scale)
        self._cache = None

    def solve(self, theta: np.ndarray) -> Solved:
        """The equations at θ = (τ, s_1..s_K), and the objective there."""
        theta = np.asarray(theta, dtype=np.float64)
        w, scale, gram, cy, L, g, objective = self._equations(theta[None, :])
        return Solved(
            theta, scale[0], (L[0], True), g[0], gram[0], cy[0], w[0], float(objective[0])
        )

    def _weighted(self, tau: float, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """CᵀWC, CᵀWȳ and ȳᵀWȳ at τ, kept for the last τ (the evidence's grids vary one
        s at a time, most at a fixed τ)."""
        if self._cache is None or self._cache[0] != tau:
            cw = self.C * w[:, None]
            self._cache = (tau, self.C.T @ cw, cw.T @ self.y, float(self.y @ (w * self.y)))
        return self._cache[1:]

    def objective_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """−log posterior and its gradient in θ (analytic)."""
        sol = self.solve(theta)
        w, scale, A, Cy = sol.w, sol.scale, sol.gram, sol.cy
        Minv = scipy.linalg.cho_solve(sol.chol, np.eye(scale.size))
        coef = Minv @ sol.g  # M⁻¹ S Cᵀ W ȳ
        # d/ds_i over the columns i of each s: log det M and the quadratic form
        d_logdet = 2.0 * ((Minv * scale[None, :]) * A.T).sum(axis=1)  # diag(M⁻¹ S A)
        d_quad = -2.0 * coef * (Cy - A @ (scale * coef))
        per_col = d_logdet + d_quad
        grad = np.zeros(theta.size)
        np.add.at(grad, self.owner, per_col)
        grad[0] = 0.0
        grad[1:] *= np.sign(theta[1:]) + (theta[1:] == 0)
        # d/dτ: W = diag(1/(σ² + τ²)), dw = −2τ w²
        dw = -2.0 * theta[0] * w**2
        dA = self.C.T @ (self.C * dw[:, None])
        dCy = self.C.T @ (dw * self.y)
        SdAS = dA * np.outer(scale, scale)
        grad[0] = (
            float(-(dw / w).sum())
            + float((Minv * SdAS.T).sum())
            + float(self.y @ (dw * self.y))
            - 2.0 * float((scale * dCy) @ coef)
            + float(coef @ SdAS @ coef)
        )
        grad *= 0.5
        grad += 2.0 * theta / (self.prior_scale**2 + theta**2)
        return sol.objective, grad

    def fit(self, start: np.ndarray | None = None, maxiter: int = 500) -> Solved:
        """The posterior mode of θ (L-BFGS-B over the variances θ² ≥ 0, from ``start``).

        In θ itself every s_k = 0 is a stationary point (the objective is even in s_k), so
        a search there stops on it whatever the data; in θ² the boundary 0 has the
        gradient ½ ∂²/∂s_k², and an effect the log shows is found from any start.
        """
        theta0 = np.full(self.K + 1, 0.3 * self.prior_scale) if start is None else start
        floor = (1e-6 * self.prior_scale) ** 2

        def in_variances(v: np.ndarray) -> tuple[float, np.ndarray]:
            s = np.sqrt(np.maximum(v, floor))
            value, grad = self.objective_and_grad(s)
            return value, grad / (2.0 * s)

        res = scipy.optimize.minimize(
            in_variances, np.asarray(theta0, dtype=np.float64) ** 2, jac=True,
            method="L-BFGS-B", bounds=[(0.0, None)] * (self.K + 1),
            options={"maxiter": maxiter},
        )  # fmt: skip
        return self.solve(np.sqrt(res.x))

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

    def tau_posterior(self, mode: Solved, points: int = TAU_GRID) -> tuple[np.ndarray, np.ndarray]:
        """τ's posterior on a grid, the effects' standard deviations held at the mode.

        A log shows the day's own deviation τ only as the excess of the bins' spread over
        their noise; where it cannot resolve it, the mode sits at (or near) 0 while values
        of τ the log cannot rule out remain, and a prediction for one day must carry them
        (the effects' variances move the forecast only through their shrinkage). The grid:
        ``points`` values of τ, evenly over the range where the density is within e⁻¹² of
        its top (found on a log-spaced probe from 0 to 10c; the density in log τ is often
        too flat for a Laplace approximation); weights the trapezoid rule's times the
        posterior density.

        Returns
        -------
        thetas : numpy.ndarray, shape (points, K + 1)
            The mode with τ set to each grid value.
        weights : numpy.ndarray, shape (points,)
            The posterior probabilities of the grid's points (summing to 1).
        """
        theta, c = np.asarray(mode.theta, dtype=np.float64), self.prior_scale
        # where the density is within e⁻¹² of its top: a log-spaced probe from 0 to 10c
        probe = np.sort(np.concatenate([[0.0, theta[0]], c * np.logspace(-4, 1, PROBE)]))
        log_f = -self._varied(theta, 0, probe)
        inside = np.flatnonzero(log_f > log_f.max() - 12.0)
        lo, hi = probe[max(inside[0] - 1, 0)], probe[min(inside[-1] + 1, probe.size - 1)]
        taus = np.linspace(lo, hi, points)
        rule = _trapezoid_weights(taus)
        thetas = np.repeat(theta[None, :], points, axis=0)
        thetas[:, 0] = taus
        log_p = np.log(rule) - self.objectives(thetas)
        weights = np.exp(log_p - log_p.max())
        return thetas, weights / weights.sum()

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

        Batched (one Cholesky call for the stack of M's), for the evidence's grids.
        """
        return self._equations(np.atleast_2d(np.asarray(thetas, dtype=np.float64)))[-1]

    def _equations(self, thetas: np.ndarray) -> tuple:
        """The equations at each θ of ``thetas`` (G, K + 1), batched: W's diagonal (G, m),
        S's (G, P), CᵀWC and CᵀWȳ (G or 1, P, P) and (G or 1, P), the Cholesky factor
        of M (G, P, P), g (G, P) and the objective (G,)."""
        taus = thetas[:, 0]
        w = 1.0 / (self.noise[None, :] + taus[:, None] ** 2)  # (G, m)
        if np.all(taus == taus[0]):  # one τ: the weighted products once
            gram, cy, y_w_y = self._weighted(float(taus[0]), w[0])
            gram, cy, y_w_y = gram[None], cy[None], np.full(taus.size, y_w_y)
        else:  # the weighted products once per distinct τ (a grid has few)
            values, which = np.unique(taus, return_inverse=True)
            wu = 1.0 / (self.noise[None, :] + values[:, None] ** 2)
            gram = np.matmul(self.C.T[None], wu[:, :, None] * self.C[None])[which]  # (G, P, P)
            cy = ((wu * self.y[None, :]) @ self.C)[which]
            y_w_y = (wu * self.y[None, :] ** 2).sum(axis=1)[which]
        scale = np.concatenate([np.ones((taus.size, 1)), np.abs(thetas[:, 1:])], axis=1)
        scale = scale[:, self.owner]  # (G, P)
        M = gram * scale[:, :, None] * scale[:, None, :] + np.diag(self.prior)[None]
        L = np.linalg.cholesky(M)
        g = scale * cy
        quad = y_w_y - np.einsum("gi,gi->g", g, np.linalg.solve(M, g[:, :, None])[:, :, 0])
        logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        m2 = -np.log(w).sum(axis=1) + logdet + quad
        objective = 0.5 * m2 + np.log1p((thetas / self.prior_scale) ** 2).sum(axis=1)
        return w, scale, gram, cy, L, g, objective

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


def _trapezoid_weights(x: np.ndarray) -> np.ndarray:
    """The trapezoid rule's weights on the points x (increasing): ∫ f ≈ Σ w_i f(x_i)."""
    w = np.zeros_like(x)
    d = np.diff(x)
    w[:-1] += d / 2
    w[1:] += d / 2
    return w
