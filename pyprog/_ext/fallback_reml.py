"""NumPy twins of ``_reml.pxi``: the restricted likelihood of a mixed model with known noise.

The model is :class:`pyprog.value.reml.MixedModel`'s: bins ȳ (m,) with noise variances
σ² (m,), design C = [X, Z_1, ..., Z_K] (m, P) whose column i has the standard deviation
s_owner(i) (``owner[i] = 0`` for X's columns: s = 1 and a flat prior), a day variance v in
W = diag(1/(σ² + v)), and θ = (τ, s_1, ..., s_K) with half-Cauchy priors of scale c:

    M = S Cᵀ W C S + J,   g = S Cᵀ W ȳ,
    objective = ½ (Σ log(σ² + v) + log det M + ȳᵀ W ȳ − gᵀ M⁻¹ g) + Σ_k log(1 + θ_k²/c²).

:func:`equations` is the batched reference every twin and :mod:`pyprog.value.reml` read.
"""

import numbers

import numpy as np
import scipy.linalg

from pyprog._ext._checks import input_array as _input
from pyprog._ext._checks import same_shape as _same_shape
from pyprog._ext._checks import typed_array as _typed

__all__ = ["equations", "reml_fit", "reml_objective_grad", "reml_objectives"]

# reml_fit's search (its docstring): Armijo's sufficient decrease, the step's halvings, the
# stopping tolerances on the projected gradient and on the objective's relative decrease
# (L-BFGS-B's defaults), the smallest variance at which the gradient is read, and the
# least curvature sᵀy / (‖s‖ ‖y‖) of a step that updates B (below it B restarts at I).
REML_ARMIJO = 1e-4
REML_HALVINGS = 40
REML_GTOL = 1e-5
REML_FTOL = 2.220446049250313e-09
REML_FLOOR = 1e-12
REML_CURVATURE = 1e-10


def _model_inputs(C, y, noise, owner, n_theta) -> None:
    _input(C, "C", 2)
    m, P = C.shape
    for arr, name in ((y, "y"), (noise, "noise")):
        _input(arr, name, 1)
        _same_shape(arr, name, (m,))
    _typed(owner, "owner", 1, np.int64, "int64")
    _same_shape(owner, "owner", (P,))
    bad = np.flatnonzero((owner < 0) | (owner >= n_theta))
    if bad.size:
        raise ValueError(
            f"owner must be in [0, {n_theta}) (theta's length); got {owner[bad[0]]} at column "
            f"{bad[0]}"
        )


def equations(C, y, noise, owner, thetas, day_var, prior_scale) -> tuple:
    """The mixed model equations at each θ of ``thetas`` (G, K + 1) with the day variances
    ``day_var`` (G,) in W (any value above −min σ²).

    Returns W's diagonal (G, m), S's (G, P), CᵀWC and CᵀWȳ ((G or 1, P, P), (G or 1, P):
    1 when every day variance is the same), M's lower Cholesky factor (G, P, P),
    g (G, P) and the objective (G,).
    """
    day = np.asarray(day_var, dtype=np.float64)
    w = 1.0 / (noise[None, :] + day[:, None])  # (G, m)
    values, which = np.unique(day, return_inverse=True)
    wu = 1.0 / (noise[None, :] + values[:, None])
    gram = np.matmul(C.T[None], wu[:, :, None] * C[None])  # (U, P, P), U distinct values
    cy = (wu * y[None, :]) @ C
    y_w_y = (wu * y[None, :] ** 2).sum(axis=1)[which]
    if values.size > 1:
        gram, cy = gram[which], cy[which]
    scale = np.concatenate([np.ones((day.size, 1)), np.abs(thetas[:, 1:])], axis=1)
    scale = scale[:, owner]  # (G, P)
    M = gram * scale[:, :, None] * scale[:, None, :] + np.diag((owner > 0).astype(float))[None]
    L = np.linalg.cholesky(M)
    g = scale * cy
    z = np.linalg.solve(M, g[:, :, None])[:, :, 0]
    quad = y_w_y - np.einsum("gi,gi->g", g, z)
    logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    m2 = -np.log(w).sum(axis=1) + logdet + quad
    objective = 0.5 * m2 + np.log1p((thetas / prior_scale) ** 2).sum(axis=1)
    return w, scale, gram, cy, L, g, objective


def reml_objectives(C, y, noise, owner, thetas, day_var, prior_scale):
    """The mixed model's objective (−log posterior, up to a constant) at many θ at once.

    With W = diag(1/(σ² + v_g)) at the day variance v_g of row g and S, J as in
    :mod:`pyprog.value.reml`::

        M = S Cᵀ W C S + J,   g = S Cᵀ W ȳ,
        f_g = ½ (Σ log(σ² + v_g) + log det M + ȳᵀ W ȳ − gᵀ M⁻¹ g) + Σ_k log(1 + θ_gk²/c²)

    CᵀWC is formed once per run of rows with the same day variance.

    Parameters
    ----------
    C : ndarray of float64, shape (m, P), C-contiguous
        The design [X, Z_1, ..., Z_K].
    y, noise : ndarray of float64, shape (m,)
        The bins ȳ and their noise variances σ² (> 0).
    owner : ndarray of int64, shape (P,)
        The standard deviation each column has: 0 for X (s = 1, flat prior), k for Z_k.
    thetas : ndarray of float64, shape (G, K + 1), C-contiguous
        (τ, s_1, ..., s_K) at each row (τ enters the prior only).
    day_var : ndarray of float64, shape (G,)
        The day variance in W at each row, > −min σ².
    prior_scale : float
        c > 0.

    Returns
    -------
    f : ndarray of float64, shape (G,)
        NaN where M is not positive definite (a fixed column without weight).
    """
    _input(thetas, "thetas", 2)
    _model_inputs(C, y, noise, owner, thetas.shape[1])
    _input(day_var, "day_var", 1)
    _same_shape(day_var, "day_var", (thetas.shape[0],))
    try:
        return equations(C, y, noise, owner, thetas, day_var, float(prior_scale))[-1]
    except np.linalg.LinAlgError:  # some M not positive definite: NaN there, as the kernel
        return np.array([_objective_or_nan(C, y, noise, owner, t, v, prior_scale)
                         for t, v in zip(thetas, day_var, strict=True)])  # fmt: skip


def _objective_or_nan(C, y, noise, owner, theta, v, prior_scale) -> float:
    try:
        args = (C, y, noise, owner, theta[None, :], np.array([v]), float(prior_scale))
        return float(equations(*args)[-1][0])
    except np.linalg.LinAlgError:
        return np.nan


def reml_objective_grad(C, y, noise, owner, theta, prior_scale):
    """The mixed model's objective at θ (day variance τ²) and its gradient in θ (analytic).

    With coef = M⁻¹ g, r = C S coef the fitted bins and h_n = c_nᵀ S M⁻¹ S c_n::

        ∂f/∂s_k = sign(s_k) Σ_(i: owner i = k) [(M⁻¹ S A)_ii − coef_i (CᵀWȳ − A S coef)_i]
                  + 2 s_k / (c² + s_k²)                              (A = CᵀWC)
        ∂f/∂τ   = −τ Σ_n w_n² ((ȳ_n − r_n)² + h_n − 1/w_n) + 2 τ / (c² + τ²)

    (sign(0) read as +1). Parameters as :func:`reml_objectives`, with ``theta`` of shape
    (K + 1,).

    Returns
    -------
    f : float
    grad : ndarray of float64, shape (K + 1,)
        Both NaN where M is not positive definite.
    """
    _input(theta, "theta", 1)
    _model_inputs(C, y, noise, owner, theta.size)
    c = float(prior_scale)
    try:
        w, scale, A, cy, L, g, f = equations(C, y, noise, owner, theta[None, :], theta[:1] ** 2, c)
    except np.linalg.LinAlgError:  # M not positive definite
        return np.nan, np.full(theta.size, np.nan)
    w, scale, A, cy, L, g = w[0], scale[0], A[0], cy[0], L[0], g[0]
    Minv = scipy.linalg.cho_solve((L, True), np.eye(scale.size))
    coef = Minv @ g
    per_col = ((Minv * scale[None, :]) * A.T).sum(axis=1) - coef * (cy - A @ (scale * coef))
    grad = np.zeros(theta.size)
    np.add.at(grad, owner, per_col)
    grad[1:] *= np.where(theta[1:] < 0, -1.0, 1.0)
    fitted = C @ (scale * coef)
    h = np.einsum("np,pq,nq->n", C, Minv * np.outer(scale, scale), C)
    grad[0] = -theta[0] * float(np.sum(w**2 * ((y - fitted) ** 2 + h - 1.0 / w)))
    grad += 2.0 * theta / (c**2 + theta**2)
    return float(f[0]), grad


def reml_fit(C, y, noise, owner, start, prior_scale, maxiter):
    """The posterior mode of θ = (τ, s_1, ..., s_K): the minimum of
    :func:`reml_objective_grad`'s f over the variances θ² >= 0.

    The search is in u = θ²/c²: BFGS on the variables not held at 0 by a gradient pointing
    out of the bounds (the step p = −B_FF⁻¹ g_F on the free set F, a variable at 0 that p
    would push below it joining the bound set), with a backtracking line search (Armijo's
    condition, ``REML_ARMIJO``; the first step of length at most 1, later ones 1, none
    beyond the bounds, where the variable that stops it lands on 0; halved up to
    ``REML_HALVINGS`` times), B restarted at I when a step's curvature sᵀy is below
    ``REML_CURVATURE`` ‖s‖ ‖y‖ (f is not convex everywhere) or B_FF not positive definite. It
    stops when the projected gradient is at most ``REML_GTOL`` or f decreases by at most
    ``REML_FTOL`` relative to itself (L-BFGS-B's defaults). In θ itself every
    s_k = 0 is a stationary point (f is even in s_k); in θ² the gradient at 0 is
    ½ ∂²f/∂s_k² (read at u = ``REML_FLOOR``), so an effect the log shows is found from
    any start.

    Parameters
    ----------
    C, y, noise, owner, prior_scale
        As :func:`reml_objectives`.
    start : ndarray of float64, shape (K + 1,)
        θ to start from (signs ignored).
    maxiter : int
        The most BFGS steps, >= 1.

    Returns
    -------
    theta : ndarray of float64, shape (K + 1,)
        The mode (entries >= 0; 0 where the variance is at its bound).
    evaluations : int
        The evaluations of f and its gradient.
    converged : bool
        False at ``maxiter`` steps.
    """
    _input(start, "start", 1)
    _model_inputs(C, y, noise, owner, start.size)
    c = float(prior_scale)
    if isinstance(maxiter, bool) or not isinstance(maxiter, numbers.Integral) or maxiter < 1:
        raise ValueError(f"maxiter must be an integer >= 1; got {maxiter!r}")

    def fg(u):  # NaN where M is not positive definite: a trial point the search rejects
        theta = c * np.sqrt(np.maximum(u, REML_FLOOR))
        f, grad = reml_objective_grad(C, y, noise, owner, theta, c)
        return f, grad * c * c / (2.0 * theta)  # ∂f/∂u = ∂f/∂θ · c² / (2θ)

    n = start.size
    u = (start / c) ** 2
    f, g = fg(u)
    if not np.isfinite(f):
        raise np.linalg.LinAlgError("M is not positive definite at start")
    B, first, evaluations = np.eye(n), True, 1
    for _ in range(int(min(maxiter, 2**30))):
        bound = (u <= 0.0) & (g > 0.0)  # held at 0 by a gradient pointing outward
        if np.max(np.abs(np.where(bound, 0.0, g))) <= REML_GTOL:
            return c * np.sqrt(u), evaluations, True
        p = _free_direction(B, g, u, bound)
        if p is None:  # B lost its curvature: start again
            B, first = np.eye(n), True
            p = _free_direction(B, g, u, bound)
        norm = float(np.sqrt(p @ p))
        if norm == 0.0:  # every variable that could move is held at 0
            return c * np.sqrt(u), evaluations, True
        alpha = 1.0 / norm if first and norm > 1.0 else 1.0
        # the longest step inside the bounds; the variable that stops it lands on 0
        ratio = np.where(p < 0.0, u / np.where(p < 0.0, -p, 1.0), np.inf)
        stop = int(np.argmin(ratio))
        alpha = min(alpha, float(ratio[stop]))
        for _ in range(REML_HALVINGS):
            un = np.maximum(u + alpha * p, 0.0)
            if alpha == ratio[stop]:
                un[stop] = 0.0
            fn, gn = fg(un)
            evaluations += 1
            if fn <= f + REML_ARMIJO * float(g @ (un - u)):
                break
            alpha *= 0.5
        else:  # no decrease along the direction: at the mode to working precision
            return c * np.sqrt(u), evaluations, True
        # the curvature of the variables still free: one the step laid on its bound would
        # scale B by the gradient's jump there
        held = (un <= 0.0) & (gn > 0.0)
        decrease, s, yv = f - fn, np.where(held, 0.0, un - u), np.where(held, 0.0, gn - g)
        u, g, f = un, gn, fn
        if decrease <= REML_FTOL * max(abs(fn), abs(fn + decrease), 1.0):
            return c * np.sqrt(u), evaluations, True
        sy = float(s @ yv)
        if sy > REML_CURVATURE * float(np.sqrt((s @ s) * (yv @ yv))):
            if first:  # Nocedal & Wright, eq. 6.20, for the Hessian
                B = B * (float(yv @ yv) / sy)
            Bs = B @ s
            B = B + np.outer(yv, yv) / sy - np.outer(Bs, Bs) / float(s @ Bs)
            first = False
        else:  # f is not convex along the step: B's curvature misleads, start again
            B, first = np.eye(n), True
    return c * np.sqrt(u), evaluations, False


def _free_direction(B, g, u, bound):
    """p = −B_FF⁻¹ g_F on the free set F (not ``bound``), 0 elsewhere; a variable at 0 the
    step would push below it joins the bound set and p is solved again. None when B_FF is
    not positive definite."""
    bound = bound.copy()
    for _ in range(u.size + 1):
        free = ~bound
        # B_FF, the bound rows and columns the identity (as the kernel's Cholesky)
        Bf = np.where(free[:, None] & free[None, :], B, np.eye(u.size))
        try:
            L = np.linalg.cholesky(Bf)
        except np.linalg.LinAlgError:
            return None
        p = scipy.linalg.cho_solve((L, True), np.where(free, -g, 0.0))
        grown = free & (u <= 0.0) & (p < 0.0)
        if not grown.any():
            return p
        bound |= grown
    return p
