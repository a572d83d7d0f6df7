"""NumPy twins of the Cython kernels in ``_kernels.pyx``.

This module is the reference: every kernel here has the same name, signature and
docstring as its compiled twin, and the test-suite holds the two to 1e-10 on random
and edge-case inputs. The bootstrap kernels' twins are in ``fallback_bootstrap.py``, the
mixed model's in ``fallback_reml.py``; both are re-exported here.
``PYPROG_PURE_PYTHON=1`` makes pyprog use these everywhere.

Kernels trust their inputs (float64, C-contiguous except ``wls_forecast``'s Fortran
``phi``, shapes as documented); the public
functions in :mod:`pyprog.forecast.estimators` validate at the boundary.
"""

import math
import numbers

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from pyprog._ext._checks import input_array as _input
from pyprog._ext._checks import same_shape as _same_shape
from pyprog._ext._exact import episode_ratio_exact, pdis_row_exact

# the twins of _bootstrap.pxi and _choice.pxi live in their own module
from pyprog._ext.fallback_bootstrap import (  # noqa: F401  (re-exported: kernels.<name>)
    block_moments,
    one_se_choice,
    signed_rows,
    wild_bootstrap_t,
)
from pyprog._ext.fallback_reml import (  # noqa: F401  (re-exported)
    REML_ARMIJO,
    REML_CURVATURE,
    REML_FLOOR,
    REML_FTOL,
    REML_GTOL,
    REML_HALVINGS,
    reml_fit,
    reml_objective_grad,
    reml_objectives,
)

# The normal equations lose about cond(A)·eps digits (A = ΦᵀΛΦ, scaled to unit diagonal):
# while LAPACK's estimate of 1/cond(A) (dpocon) is at least this, Cholesky of A is accurate
# to ~1e-12; below it, A is not formed again: the pivoted QR of √Λ Φ loses cond(√ΛΦ)·eps =
# √cond(A)·eps only.
RCOND_CHOLESKY_MIN = 1e-4
# Weights and targets are rescaled by powers of 2 (exactly) outside [2**-SAFE, 2**SAFE]:
# WLS does not change when every weight is scaled, and is linear in y.
SAFE_EXPONENT = 256
# A forecast whose error bound cond(√ΛΦ) · eps · Σ|∂f/∂y_i| (relative to max|y|) exceeds
# this is refused (reported as rank-deficient): its digits would be noise.
FORECAST_ERROR_MAX = 1e-4

#: ``wls_forecast`` status: solved by Cholesky of ΦᵀΛΦ.
WLS_CHOLESKY = 0
#: ``wls_forecast`` status: ΦᵀΛΦ ill-conditioned, solved by pivoted QR of √Λ Φ (full rank).
WLS_LSTSQ = 1
#: ``wls_forecast`` status: rank-deficient weighted system; every output is NaN.
WLS_RANK_DEFICIENT = 2


def _real(value, name):
    """``value`` as a float (a real number; ints beyond float64 are ±inf)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {value!r}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _clip(value):
    clip = _real(value, "clip")
    if not clip > 0:
        raise ValueError(f"clip must be > 0 (inf for no clipping); got {value!r}")
    return clip


def _gamma(value):
    gamma = _real(value, "gamma")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {value!r}")
    return gamma


def _actions(a, m, n_actions):
    """``a`` itself if it is an int64 ndarray of shape (m,) with values in [0, n_actions)."""
    ok = (
        isinstance(a, np.ndarray)
        and a.dtype == np.int64
        and a.dtype.isnative
        and a.ndim == 1
        and a.flags.aligned
        and a.flags.c_contiguous
        and a.shape[0] == m
    )
    if not ok:
        raise ValueError(f"actions must be a C-contiguous int64 ndarray of shape ({m},)")
    bad = np.flatnonzero((a < 0) | (a >= n_actions))
    if bad.size:
        raise ValueError(
            f"actions must be in [0, {n_actions}) (one per row of W); got {a[bad[0]]} at "
            f"row {bad[0]}"
        )
    return a


def _output(out, k, name, shape, real=None):
    """Check out[k] (when an output tuple is given): float64 (or real), C-contiguous, writeable."""
    if out is None:
        return
    arr = out[k]
    label = f"out[{k}] ({name})"
    _input(arr, label, len(shape), real=real)
    _same_shape(arr, label, shape)
    if not arr.flags.writeable:
        raise ValueError(f"{label} must be writeable")


def _out_tuple(out):
    if out is not None and not (isinstance(out, (tuple, list)) and len(out) == 5):
        raise ValueError(
            "out must be None or a tuple of 5 ndarrays (hidden, log_probs, probs, log_prob, "
            "entropy)"
        )


def _episode_inputs(names, arrays):
    """The (N, H) episode arrays, checked: float64, C-contiguous, one shape."""
    for name, a in zip(names, arrays, strict=True):
        _input(a, name, 2)
    for name, a in zip(names[1:], arrays[1:], strict=True):
        _same_shape(a, name, arrays[0].shape)


def pdis_weights(log_pi, log_beta, rewards, mask, gamma, clip):
    """Per-decision importance-sampling weights and estimates, row by row.

    For every episode ``i`` and step ``t``::

        rho[i, l] = min(clip, exp(sum_{m <= l, valid} (log_pi - log_beta)[i, m]))
        g[i, t]   = sum_{l >= t, valid} rho[i, l] * gamma**l * rewards[i, l]
        J[i]      = sum_{l, valid}      rho[i, l] * gamma**l * rewards[i, l]

    ``g[i, t]`` is 0 where ``mask[i, t] == 0``; with the usual prefix masks
    ``J == g[:, 0]``. ``g`` is the PDIS coefficient of ``grad log pi(a_t | s_t)`` in the
    PDIS policy gradient (paper, Property 1) and ``J`` the PDIS estimate of each
    episode's performance.

    A row whose float64 evaluation overflows (a cumulative ratio past ~1e308, or
    ``inf − inf`` in a sum) is recomputed exactly, term by term; where the true value
    itself is beyond float64 a ``ValueError`` names the episode and the step (pass a
    finite ``clip``). Invalid arguments (dtype, layout, shapes, ``gamma`` outside
    [0, 1], ``clip <= 0``) raise ``ValueError``.

    Parameters
    ----------
    log_pi, log_beta : ndarray of float64, shape (N, H)
        Log-probabilities (log-densities) of the logged actions under the evaluated
        policy and under the behaviour policy.
    rewards : ndarray of float64, shape (N, H)
    mask : ndarray of float64, shape (N, H)
        1.0 for the valid steps of each episode, 0.0 for padding.
    gamma : float
        Discount factor.
    clip : float
        Upper clip of the cumulative importance ratio (``inf`` for none).

    Returns
    -------
    g : ndarray of float64, shape (N, H)
    J : ndarray of float64, shape (N,)
    """
    _episode_inputs(("log_pi", "log_beta", "rewards", "mask"), (log_pi, log_beta, rewards, mask))
    gamma, clip = _gamma(gamma), _clip(clip)
    valid = mask != 0
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # c[i, t] = sum_{m <= t, valid} (log_pi - log_beta)[i, m]
        c = np.cumsum(np.where(valid, log_pi - log_beta, 0.0), axis=1)
        # rho = min(clip, exp(c)), evaluated in log space so that it cannot overflow
        rho = np.exp(np.minimum(c, np.log(clip)))
        discount = np.power(gamma, np.arange(log_pi.shape[1], dtype=np.float64))
        terms = np.where(valid, rho * discount * rewards, 0.0)
    # reversed cumulative sum: g[:, t] = sum_{l >= t} terms[:, l]
    with np.errstate(invalid="ignore", over="ignore"):
        g = np.cumsum(terms[:, ::-1], axis=1)[:, ::-1]
    J = g[:, 0].copy() if g.shape[1] else np.zeros(g.shape[0])
    g = np.where(valid, g, 0.0)
    # a non-finite J is an overflow (or inf − inf) somewhere in its row: recompute it
    for i in np.flatnonzero(~np.isfinite(J)):
        g[i], J[i] = pdis_row_exact(i, log_pi[i], log_beta[i], rewards[i], mask[i], gamma, clip)
    return g, J


def episode_ratios(log_pi, log_beta, mask, clip):
    """Whole-episode importance ratios, clipped.

    ``lam[i] = min(clip, exp(sum_{t valid} (log_pi - log_beta)[i, t]))`` and
    ``unclipped[i] = exp(...) < clip``: the rows where the ratio still depends on the
    policy (the gradient of a clipped ratio is 0).

    Where the true ratio is beyond float64 (``clip`` inf and a log-ratio sum past
    ~709.78) a ``ValueError`` names the episode and the step.

    Parameters
    ----------
    log_pi, log_beta, mask : ndarray of float64, shape (N, H)
    clip : float
        Upper clip of the ratio (``inf`` for none).

    Returns
    -------
    lam : ndarray of float64, shape (N,)
    unclipped : ndarray of bool, shape (N,)
    """
    _episode_inputs(("log_pi", "log_beta", "mask"), (log_pi, log_beta, mask))
    clip = _clip(clip)
    n, h = log_pi.shape
    with np.errstate(invalid="ignore", over="ignore"):
        # sequential sums, in the compiled kernel's order
        s = (
            np.cumsum(np.where(mask != 0, log_pi - log_beta, 0.0), axis=1)[:, -1]
            if h
            else np.zeros(n)
        )
    with np.errstate(divide="ignore"):
        log_clip = np.log(clip)
    with np.errstate(over="ignore", invalid="ignore"):
        lam = np.exp(np.minimum(s, log_clip))
    unclipped = s < log_clip
    for i in np.flatnonzero(~np.isfinite(lam)):
        lam[i], unclipped[i] = episode_ratio_exact(i, log_pi[i], log_beta[i], mask[i], clip)
    return lam, unclipped


def wls_forecast(phi, weights, y, phi_star):
    """Weighted least-squares forecast and its exact partial derivatives.

    With ``A = Φᵀ Λ Φ`` (``Λ = diag(weights)``), ``w = A⁻¹ Φᵀ Λ y`` and
    ``u = A⁻¹ φ*ᵀ``::

        f                = φ* · w
        dfdy[i]          = weights[i] * (φ_i · u)
        dfdweights[i]    = (φ_i · u) * (y[i] - φ_i · w)

    Unit weights give ordinary least squares, and ``dfdy`` is then the ζ of the
    paper (Fig. 4). ``A`` is scaled to unit diagonal and factorised by Cholesky while
    LAPACK's estimate of its condition number (``dpocon``) is at most 1e4; otherwise
    (ill-conditioned, or not positive definite) the system is solved by a pivoted QR of
    ``√Λ Φ``, which does not square the condition number (the outputs are then accurate
    to about ``cond(√ΛΦ) · 1e-16``). Weights and targets of extreme magnitude are first
    rescaled by powers of 2 (exactly: WLS does not change when all weights are scaled,
    and is linear in ``y``), so that no intermediate overflows. A rank-deficient system
    (singular values of ``√Λ Φ`` with ``s_min <= s_max · max(N, d) · eps``), or one too
    ill-conditioned for the forecast to keep 4 digits (``cond(√ΛΦ) · eps · Σ|dfdy|``
    above 1e-4), is not an error here: every output is NaN and ``status`` says so. Where the true
    ``dfdweights`` is beyond float64 (weights near 1e-308) it is ±inf.

    Parameters
    ----------
    phi : ndarray of float64, shape (N, d), Fortran-contiguous
        Basis features of the past time indices, one contiguous column per feature
        (as :func:`pyprog.forecast_design` returns them).
    weights : ndarray of float64, shape (N,)
        Non-negative regression weights (importance ratios for NWIS, ones for OLS).
    y : ndarray of float64, shape (N,)
        Regression targets (returns, or PDIS estimates).
    phi_star : ndarray of float64, shape (d,)
        Features of the forecast target (mean over the next δ time indices).

    Returns
    -------
    f : float
    w : ndarray of float64, shape (d,)
    dfdy : ndarray of float64, shape (N,)
    dfdweights : ndarray of float64, shape (N,)
    status : int
        ``WLS_CHOLESKY`` (0), ``WLS_LSTSQ`` (1, pivoted QR) or ``WLS_RANK_DEFICIENT`` (2).
    """
    phi = _input(phi, "phi", 2, fortran=True)
    weights, y, phi_star = (
        _input(a, k, 1) for a, k in ((weights, "weights"), (y, "y"), (phi_star, "phi_star"))
    )
    n, d = phi.shape
    _same_shape(weights, "weights", (n,))
    _same_shape(y, "y", (n,))
    _same_shape(phi_star, "phi_star", (d,))
    if n == 0 or d == 0:
        return _rank_deficient(n, d)
    lam, ys, e_lam, e_y = weights, y, 0, 0
    # A = Φᵀ Λ Φ,  b = Φᵀ Λ y
    A, b = _gram(phi, lam, ys)
    bound = 2.0**SAFE_EXPONENT
    with np.errstate(invalid="ignore"):
        diag = np.diag(A)
        in_range = np.all((1.0 / bound <= diag) & (diag <= bound) & (np.abs(b) <= bound))
    if not in_range:
        # magnitudes far from 1 (or an overflow): λ → λ·4**k (√λ exact too), y → y·2**m
        e_lam = _power_of_two_exponent(max(0.0, np.fmax.reduce(weights)), even=True)
        e_y = _power_of_two_exponent(max(0.0, np.fmax.reduce(np.abs(y))), even=False)
        if e_lam or e_y:
            lam, ys = np.ldexp(weights, e_lam), np.ldexp(y, e_y)
            A, b = _gram(phi, lam, ys)
    w, u, status = _cholesky_solve(A, b, phi_star)
    cond = 1.0
    if status != WLS_CHOLESKY:
        w, u, status, cond, dfdy_qr = _qr_solve(phi, lam, ys, phi_star)
        if status == WLS_RANK_DEFICIENT:
            return _rank_deficient(n, d)
    pu = phi @ u  # pu[i] = φ_i · u
    dfdy = lam * pu if status == WLS_CHOLESKY else dfdy_qr
    # error bound of f relative to max|y|: cond(√ΛΦ) · eps · Σ|∂f/∂y|
    if cond * np.finfo(np.float64).eps * max(1.0, np.abs(dfdy).sum()) > FORECAST_ERROR_MAX:
        return _rank_deficient(n, d)
    with np.errstate(over="ignore"):  # ±inf where the true value is beyond float64
        dfdw = pu * (ys - phi @ w)
    with np.errstate(over="ignore", invalid="ignore"):  # a true w beyond float64: ±inf
        if e_y:
            w = np.ldexp(w, -e_y)
        f = float(phi_star @ w)
    if e_lam or e_y:
        with np.errstate(over="ignore"):
            dfdw = np.ldexp(dfdw, e_lam - e_y)
    return f, w, dfdy, dfdw, status


def _rank_deficient(n, d):
    nan = np.full(n, np.nan)
    return np.nan, np.full(d, np.nan), nan, nan.copy(), WLS_RANK_DEFICIENT


def _power_of_two_exponent(top, even):
    """0, or the exponent k (even if ``even``, |k| <= 1022) with ``top · 2**k`` near 1
    when ``top`` is outside [2**-SAFE_EXPONENT, 2**SAFE_EXPONENT] (0: nothing to scale)."""
    if not math.isfinite(top) or top == 0.0:
        return 0
    if 2.0**-SAFE_EXPONENT <= top <= 2.0**SAFE_EXPONENT:
        return 0
    exponent = min(max(-math.frexp(top)[1], -1022), 1022)
    if exponent % 2 != 0 and even:
        exponent -= 1
    return exponent


def _gram(phi, lam, y):
    """A = Φᵀ Λ Φ and b = Φᵀ Λ y (overflow to ±inf is detected by the caller)."""
    with np.errstate(over="ignore", invalid="ignore"):
        weighted = phi * lam[:, None]
        return phi.T @ weighted, weighted.T @ y


def _cholesky_solve(A, b, phi_star):
    """[w, u] = A⁻¹ [b, φ*] by Cholesky of A = ΦᵀΛΦ scaled to unit diagonal, if its
    estimated condition number is at most 1 / RCOND_CHOLESKY_MIN."""
    diag = np.diag(A)
    if not np.all(diag > 0.0):
        return None, None, WLS_LSTSQ
    # As = D A D, D = diag(A)^(-1/2):  A⁻¹ = D As⁻¹ D
    scale = 1.0 / np.sqrt(diag)
    As = A * scale[:, None] * scale[None, :]
    factor, info = scipy.linalg.lapack.dpotrf(As, lower=1, clean=1)
    if info != 0:
        return None, None, WLS_LSTSQ
    rcond, info = scipy.linalg.lapack.dpocon(factor, np.abs(As).sum(axis=0).max(), uplo="L")
    if info != 0 or not rcond >= RCOND_CHOLESKY_MIN:
        return None, None, WLS_LSTSQ
    rhs = np.stack([b, phi_star], axis=1) * scale[:, None]
    solved, info = scipy.linalg.lapack.dpotrs(factor, rhs, lower=1)
    solved *= scale[:, None]
    return solved[:, 0], solved[:, 1], WLS_CHOLESKY


def _qr_solve(phi, lam, y, phi_star):
    """w and u = A⁻¹ φ* from the pivoted QR √Λ Φ P = Q R, without forming A:
    w = P R⁻¹ Qᵀ √Λ y,  u = P R⁻¹ R⁻ᵀ Pᵀ φ*; also the condition number s_max / s_min
    and dfdy = λ Φ u = √λ ⊙ Q R⁻ᵀ Pᵀ φ*."""
    n, d = phi.shape
    if n < d:
        return None, None, WLS_RANK_DEFICIENT, np.inf, None
    root = np.sqrt(lam)
    scaled = np.asfortranarray(root[:, None] * phi)
    if not np.isfinite(scaled).all():
        return None, None, WLS_RANK_DEFICIENT, np.inf, None
    qr, jpvt, tau, _, info = scipy.linalg.lapack.dgeqp3(scaled)
    R = np.triu(qr[:d, :d])
    # rank test on the singular values of R (those of √Λ Φ), as numpy.linalg.matrix_rank
    s = scipy.linalg.svd(R, compute_uv=False, check_finite=False, lapack_driver="gesvd")
    if info != 0 or not s[-1] > s[0] * max(n, d) * np.finfo(np.float64).eps:
        return None, None, WLS_RANK_DEFICIENT, np.inf, None
    perm = jpvt - 1
    qty, _, info = scipy.linalg.lapack.dormqr("L", "T", qr, tau, (root * y)[:, None], max(1, n))
    x, _ = scipy.linalg.lapack.dtrtrs(R, qty[:d, 0])
    z, _ = scipy.linalg.lapack.dtrtrs(R, phi_star[perm], trans=1)
    # dfdy = λ Φ u = √λ ⊙ (Q [z; 0]): u is never formed, so the error grows as cond(√ΛΦ)
    qz, _, info = scipy.linalg.lapack.dormqr(
        "L", "N", qr, tau, np.concatenate([z, np.zeros(n - d)])[:, None], max(1, n)
    )
    v, _ = scipy.linalg.lapack.dtrtrs(R, z)
    w, u = np.empty(d), np.empty(d)
    w[perm], u[perm] = x, v
    return w, u, WLS_LSTSQ, s[0] / s[-1], root * qz[:, 0]


def _into(out, k, value):
    """value, written into out[k] when an output tuple is given."""
    if out is None:
        return value
    out[k][...] = value
    return out[k]


def softmax_forward(obs, actions, W1, b1, W, b, out=None):
    """Forward pass of a softmax policy, with or without one tanh hidden layer.

    For M samples (rows)::

        hidden    = tanh(obs @ W1.T + b1)      (obs itself when W1 has no rows)
        logits    = hidden @ W.T + b
        log_probs = logits − logsumexp(logits, axis=1)
        probs     = exp(log_probs)
        log_prob  = log_probs[m, actions[m]]
        entropy   = −Σ_a probs log_probs

    Parameters
    ----------
    obs : ndarray of float64, or float32 (then every float array, and the result), shape (M, D)
    actions : ndarray of int64, shape (M,)
        In [0, A) (checked: ValueError otherwise).
    W1 : ndarray of float64, shape (Hd, D)
        Hidden layer weights; Hd = 0 for a softmax-linear policy.
    b1 : ndarray of float64, shape (Hd,)
    W : ndarray of float64, shape (A, F)
        Output weights, F = Hd, or D when Hd = 0.
    b : ndarray of float64, shape (A,)
    out : tuple of 5 ndarrays, optional
        ``(hidden, log_probs, probs, log_prob, entropy)`` to write into (``hidden`` is
        ignored when Hd = 0); saves allocating them on every call.

    Returns
    -------
    hidden : ndarray of float64, shape (M, Hd), or ``obs`` when Hd = 0
    log_probs : ndarray of float64, shape (M, A)
    probs : ndarray of float64, shape (M, A)
    log_prob : ndarray of float64, shape (M,)
    entropy : ndarray of float64, shape (M,)
    """
    _input(obs, "obs", 2, real=getattr(obs, "dtype", None))
    m, d = obs.shape
    _input(W1, "W1", 2, real=obs.dtype)
    _input(b1, "b1", 1, real=obs.dtype)
    _input(W, "W", 2, real=obs.dtype)
    _input(b, "b", 1, real=obs.dtype)
    hd, a = W1.shape[0], W.shape[0]
    _same_shape(W1, "W1", (hd, d))
    _same_shape(b1, "b1", (hd,))
    _same_shape(W, "W", (a, hd if hd > 0 else d))
    _same_shape(b, "b", (a,))
    if a < 1:
        raise ValueError("W must have at least one row (action)")
    _actions(actions, m, a)
    _out_tuple(out)
    if hd > 0:
        _output(out, 0, "hidden", (m, hd), obs.dtype)
    for k, name, shape in (
        (1, "log_probs", (m, a)),
        (2, "probs", (m, a)),
        (3, "log_prob", (m,)),
        (4, "entropy", (m,)),
    ):
        _output(out, k, name, shape, obs.dtype)
    hidden = np.tanh(obs @ W1.T + b1) if W1.shape[0] else obs
    logits = hidden @ W.T + b
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    total = e.sum(axis=1, keepdims=True)
    log_probs = logits - (top + np.log(total))
    if obs.dtype == np.float32:
        # as the compiled pass: π = e / Σe, not exp(log π), which loses log Σe next to a
        # large top (logits past 2^24: the A probabilities summed to A; issue 35, item 10);
        # float64 keeps exp(log π), whose last bits tests/data/run_regression.json records
        probs = e * (1 / total)
    else:
        probs = np.exp(log_probs)
    log_prob = log_probs[np.arange(len(actions)), actions]
    entropy = -(probs * log_probs).sum(axis=1)
    if W1.shape[0]:
        hidden = _into(out, 0, hidden)
    return (
        hidden,
        _into(out, 1, log_probs),
        _into(out, 2, probs),
        _into(out, 3, log_prob),
        _into(out, 4, entropy),
    )


def softmax_backward(
    obs, actions, hidden, log_probs, probs, entropy, W1, W, coef_log_prob, coef_entropy
):
    """Vector–Jacobian product of a softmax policy: ``Σ_m c_m ∇log π(a_m|s_m) + e_m ∇H_m``.

    With, per sample, ``dz = c (onehot(a) − π) − e π ⊙ (log π + H)`` (the gradient
    w.r.t. the logits; in float32 the taken action's ``1 − π_a`` is summed as
    ``Σ_{c≠a} π_c``, which does not round to 0 when π_a is within 2⁻²⁴ of 1)::

        ∂W  = dzᵀ hidden,   ∂b  = Σ_m dz
        dpre = (dz @ W) ⊙ (1 − hidden²)                 (hidden layer only)
        ∂W1 = dpreᵀ obs,    ∂b1 = Σ_m dpre

    Parameters
    ----------
    obs : ndarray of float64, or float32 (then every float array, and the result), shape (M, D)
    actions : ndarray of int64, shape (M,)
    hidden, log_probs, probs, entropy : ndarray of float64
        What :func:`softmax_forward` returned, at the same parameters.
    W1 : ndarray of float64, shape (Hd, D)
        Only its shape is used (Hd = 0: no hidden layer).
    W : ndarray of float64, shape (A, F)
    coef_log_prob, coef_entropy : ndarray of float64, shape (M,)
        The coefficients ``c`` and ``e``.

    Returns
    -------
    grad : ndarray of float64, shape (P,)
        ``[∂W1.ravel(), ∂b1, ∂W.ravel(), ∂b]``, P = Hd (D + 1) + A (F + 1).
    """
    _input(obs, "obs", 2, real=getattr(obs, "dtype", None))
    m, d = obs.shape
    _input(W1, "W1", 2, real=obs.dtype)
    _input(W, "W", 2, real=obs.dtype)
    hd, a = W1.shape[0], W.shape[0]
    f = hd if hd > 0 else d
    _same_shape(W1, "W1", (hd, d))
    _same_shape(W, "W", (a, f))
    if a < 1:
        raise ValueError("W must have at least one row (action)")
    _actions(actions, m, a)
    for arr, name, shape in (
        (hidden, "hidden", (m, f)),
        (log_probs, "log_probs", (m, a)),
        (probs, "probs", (m, a)),
        (entropy, "entropy", (m,)),
        (coef_log_prob, "coef_log_prob", (m,)),
        (coef_entropy, "coef_entropy", (m,)),
    ):
        _input(arr, name, len(shape), real=obs.dtype)
        _same_shape(arr, name, shape)
    # dz = c (onehot(a) − π) − e π ⊙ (log π + H)
    dz = -probs * (coef_log_prob[:, None] + coef_entropy[:, None] * (log_probs + entropy[:, None]))
    taken = np.arange(len(actions)), actions
    if probs.dtype == np.float32:
        # 1 − π_a as Σ_{c≠a} π_c: in float32 the subtraction is exactly 0 once
        # π_a > 1 − 2⁻²⁴, and the taken action's logit stops learning (as in _policy_real.h)
        rest = np.where(np.arange(probs.shape[1]) == actions[:, None], 0, probs).sum(axis=1)
        ent = coef_entropy * (log_probs[taken] + entropy)
        dz[taken] = coef_log_prob * rest - probs[taken] * ent
    else:
        dz[taken] += coef_log_prob
    parts = []
    if W1.shape[0]:
        dpre = (dz @ W) * (1.0 - hidden * hidden)
        parts += [(dpre.T @ obs).ravel(), dpre.sum(axis=0)]
    parts += [(dz.T @ hidden).ravel(), dz.sum(axis=0)]
    return np.concatenate(parts)
