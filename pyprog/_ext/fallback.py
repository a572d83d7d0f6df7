"""NumPy twins of the Cython kernels in ``_kernels.pyx``.

This module is the reference: every kernel here has the same name, signature and
docstring as its compiled twin, and the test-suite holds the two to 1e-10 on random
and edge-case inputs. ``PYPROG_PURE_PYTHON=1`` makes pyprog use these everywhere.

Kernels trust their inputs (float64, C-contiguous except ``wls_forecast``'s Fortran
``phi``, shapes as documented); the public
functions in :mod:`pyprog.estimators` validate at the boundary.
"""

import numpy as np
import scipy.linalg

# The normal equations square the condition number: past this ratio of Cholesky pivots
# (min L_jj² / max A_jj, about 1 / cond(A)) they lose more than ~8 digits, and the
# SVD of √Λ Φ is used instead.
PIVOT_RATIO_MIN = 1e-8

#: ``wls_forecast`` status: solved by Cholesky of ΦᵀΛΦ.
WLS_CHOLESKY = 0
#: ``wls_forecast`` status: ΦᵀΛΦ ill-conditioned, solved by SVD of √Λ Φ (full rank).
WLS_LSTSQ = 1
#: ``wls_forecast`` status: rank-deficient weighted system; every output is NaN.
WLS_RANK_DEFICIENT = 2


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
    valid = mask != 0
    with np.errstate(invalid="ignore", over="ignore"):
        # c[i, t] = sum_{m <= t, valid} (log_pi - log_beta)[i, m]
        c = np.cumsum(np.where(valid, log_pi - log_beta, 0.0), axis=1)
        # rho = min(clip, exp(c)), evaluated in log space so that it cannot overflow
        rho = np.exp(np.minimum(c, np.log(clip)))
        discount = np.power(gamma, np.arange(log_pi.shape[1], dtype=np.float64))
        terms = np.where(valid, rho * discount * rewards, 0.0)
    # reversed cumulative sum: g[:, t] = sum_{l >= t} terms[:, l]
    g = np.cumsum(terms[:, ::-1], axis=1)[:, ::-1]
    J = g[:, 0].copy() if g.shape[1] else np.zeros(g.shape[0])
    g = np.where(valid, g, 0.0)
    return g, J


def episode_ratios(log_pi, log_beta, mask, clip):
    """Whole-episode importance ratios, clipped.

    ``lam[i] = min(clip, exp(sum_{t valid} (log_pi - log_beta)[i, t]))`` and
    ``unclipped[i] = exp(...) < clip``: the rows where the ratio still depends on the
    policy (the gradient of a clipped ratio is 0).

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
    with np.errstate(invalid="ignore"):
        s = np.where(mask != 0, log_pi - log_beta, 0.0).sum(axis=1)
    log_clip = np.log(clip)
    with np.errstate(over="ignore"):
        lam = np.exp(np.minimum(s, log_clip))
    return lam, s < log_clip


def wls_forecast(phi, weights, y, phi_star):
    """Weighted least-squares forecast and its exact partial derivatives.

    With ``A = Φᵀ Λ Φ`` (``Λ = diag(weights)``), ``w = A⁻¹ Φᵀ Λ y`` and
    ``u = A⁻¹ φ*ᵀ``::

        f                = φ* · w
        dfdy[i]          = weights[i] * (φ_i · u)
        dfdweights[i]    = (φ_i · u) * (y[i] - φ_i · w)

    Unit weights give ordinary least squares, and ``dfdy`` is then the ζ of the
    paper (Fig. 4). ``A`` is factorised by Cholesky; when it is not positive
    definite, or too ill-conditioned for the normal equations (a pivot ratio
    ``min L_jj² / max A_jj`` below 1e-8), the system is solved by an SVD of ``√Λ Φ``
    instead. A rank-deficient system (``√Λ Φ`` of numerical rank < d) is not an
    error here: every output is NaN and ``status`` says so.

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
        ``WLS_CHOLESKY`` (0), ``WLS_LSTSQ`` (1) or ``WLS_RANK_DEFICIENT`` (2).
    """
    n, d = phi.shape
    # A = Φᵀ Λ Φ,  b = Φᵀ Λ y
    weighted = phi * weights[:, None]
    A = phi.T @ weighted
    b = weighted.T @ y
    try:
        factor = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
        if np.any(np.diag(factor[0]) ** 2 <= np.max(np.diag(A)) * PIVOT_RATIO_MIN):
            raise scipy.linalg.LinAlgError("too ill-conditioned for the normal equations")
        solved = scipy.linalg.cho_solve(factor, np.stack([b, phi_star], axis=1), check_finite=False)
        w, u = solved[:, 0], solved[:, 1]
        status = WLS_CHOLESKY
    except scipy.linalg.LinAlgError:
        # min ‖√Λ (Φ w − y)‖ through the SVD √Λ Φ = U S Vᵀ; then A⁻¹ = V S⁻² Vᵀ
        root = np.sqrt(weights)
        U, S, Vt = scipy.linalg.svd(root[:, None] * phi, full_matrices=False, lapack_driver="gesvd")
        if n < d or S[-1] <= S[0] * max(n, d) * np.finfo(np.float64).eps:
            nan = np.full(n, np.nan)
            return np.nan, np.full(d, np.nan), nan, nan.copy(), WLS_RANK_DEFICIENT
        w = Vt.T @ ((U.T @ (root * y)) / S)
        u = Vt.T @ ((Vt @ phi_star) / S**2)
        status = WLS_LSTSQ
    f = float(phi_star @ w)
    pu = phi @ u  # pu[i] = φ_i · u
    return f, w, weights * pu, pu * (y - phi @ w), status


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
    obs : ndarray of float64, shape (M, D)
    actions : ndarray of int64, shape (M,)
        In [0, A); not checked.
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
    hidden = np.tanh(obs @ W1.T + b1) if W1.shape[0] else obs
    logits = hidden @ W.T + b
    top = logits.max(axis=1, keepdims=True)
    log_probs = logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))
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
    w.r.t. the logits)::

        ∂W  = dzᵀ hidden,   ∂b  = Σ_m dz
        dpre = (dz @ W) ⊙ (1 − hidden²)                 (hidden layer only)
        ∂W1 = dpreᵀ obs,    ∂b1 = Σ_m dpre

    Parameters
    ----------
    obs : ndarray of float64, shape (M, D)
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
    # dz = c (onehot(a) − π) − e π ⊙ (log π + H)
    dz = -probs * (coef_log_prob[:, None] + coef_entropy[:, None] * (log_probs + entropy[:, None]))
    dz[np.arange(len(actions)), actions] += coef_log_prob
    parts = []
    if W1.shape[0]:
        dpre = (dz @ W) * (1.0 - hidden * hidden)
        parts += [(dpre.T @ obs).ravel(), dpre.sum(axis=0)]
    parts += [(dz.T @ hidden).ravel(), dz.sum(axis=0)]
    return np.concatenate(parts)


# --- wild bootstrap of a linear forecast (issue 10) ------------------------------------


def wild_bootstrap_t(signs, e, zeta, P, K, v):
    """Wild-bootstrap t-statistics of a linear forecast, one per row of Rademacher signs.

    Row ``b`` of ``signs`` holds the signs ``σ_b ∈ {−1, +1}^N`` packed 8 to a byte:
    ``σ_bi = +1`` where bit ``i % 8`` (least significant first) of ``signs[b, i // 8]``
    is set, −1 where it is not. With ``e* = σ_b ⊙ e`` the flipped residuals::

        num[b] = ζ · e*                          (f* − f: the forecast moves by ζᵀ e*)
        r*     = e* − P (Kᵀ e*)                  (residuals of the refit, (I − P Kᵀ) e*)
        t[b]   = num[b] / sqrt(Σ_i v_i r*_i²)    (its standardised error)

    For a weighted fit with design Φ and weights Λ, ``P = Φ (ΦᵀΛΦ)⁻¹`` and ``K = ΛΦ``
    (so ``P Kᵀ`` is the hat matrix), ``ζ = K (ΦᵀΛΦ)⁻¹ φ*`` and ``v = ζ² / (1 − h)``.
    Only ``σ @ [ζ⊙e, e⊙K, v⊙e⊙P]`` (B × (2k+1)) is formed, never a B × N array of
    residuals: with ``c = Kᵀe*``, ``g = Pᵀ(v⊙e*)`` and σ² = 1,
    ``Σ_i v_i r*_i² = Σ_i v_i e_i² − 2 c·g + cᵀ (Pᵀ diag(v) P) c``.

    Parameters
    ----------
    signs : ndarray of uint8, shape (B, ceil(N / 8))
        Packed Rademacher signs (bits beyond N are ignored).
    e : ndarray of float64, shape (N,)
        Residuals to flip (leverage-adjusted).
    zeta : ndarray of float64, shape (N,)
        Forecast weights, ``f = ζ · y``.
    P, K : ndarray of float64, shape (N, k), C-contiguous
        Factors of the hat matrix ``H = P Kᵀ``.
    v : ndarray of float64, shape (N,)
        Non-negative weights of the squared residuals in the standard error.

    Returns
    -------
    t : ndarray of float64, shape (B,)
        NaN where the bootstrap standard error is 0 and the numerator too.
    """
    n, k = P.shape
    # bits (B, N) of {0, 1}: σ = 2 bits − 1
    bits = np.unpackbits(signs, axis=1, count=n, bitorder="little").astype(np.float64)
    # M = [ζ⊙e, e⊙K, v⊙e⊙P], (N, 2k+1);  S = σ M = 2 bits M − Σ_i M_i
    M = np.concatenate([(zeta * e)[:, None], e[:, None] * K, (v * e)[:, None] * P], axis=1)
    S = 2.0 * (bits @ M) - M.sum(axis=0)
    num, c, g = S[:, 0], S[:, 1 : k + 1], S[:, k + 1 :]
    # Σ v r*² = Σ v e² − 2 c·g + cᵀ V c,  V = Pᵀ diag(v) P
    V = P.T @ (v[:, None] * P)
    s2 = (v * e * e).sum() - 2.0 * (c * g).sum(axis=1) + ((c @ V) * c).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / np.sqrt(np.maximum(s2, 0.0))
