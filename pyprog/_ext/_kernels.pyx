# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Cython kernels: reversed cumulative PDIS sums, clipped ratios, WLS forecasts.

Each function has a NumPy twin of the same name, signature and docstring in
``fallback.py``; a comment with the NumPy meaning stands above each low-level step.
Kernels trust their inputs (float64, C-contiguous); validation happens once, in
:mod:`pyprog.estimators`.
"""

import numpy as np

from libc.math cimport exp, fmin, log, pow, sqrt, NAN
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_lapack cimport dgesvd, dpotrf, dpotrs

cdef enum WLSStatus:
    CHOLESKY = 0
    LSTSQ = 1
    RANK_DEFICIENT = 2

WLS_CHOLESKY = CHOLESKY
WLS_LSTSQ = LSTSQ
WLS_RANK_DEFICIENT = RANK_DEFICIENT

cdef double DBL_EPSILON = 2.220446049250313e-16


cdef extern from "_loops.h" nogil:
    double pyprog_exp(double x)
    void pyprog_rho_terms(const double* c, const double* discount, const double* rewards,
                          const double* mask, double log_clip, Py_ssize_t h, double* out)
    void pyprog_weighted_gram(const double* phi, const double* w, const double* y,
                              Py_ssize_t n, Py_ssize_t d, double* A, double* b)
    void pyprog_wls_outputs(const double* phi, const double* w, const double* y,
                            Py_ssize_t n, Py_ssize_t d, const double* wts, const double* u,
                            double* dfdy, double* dfdw)


cdef inline double _pdis_row(
    const double* log_pi,
    const double* log_beta,
    const double* rewards,
    const double* mask,
    const double* discount,
    Py_ssize_t h,
    double log_clip,
    double* c,
    double* g,
) noexcept nogil:
    """One episode of ``pdis_weights``: fills g[0:h] (c[0:h] is scratch); returns J."""
    cdef Py_ssize_t t
    cdef double cum = 0.0, acc = 0.0
    # c = np.cumsum(np.where(valid, log_pi - log_beta, 0))   (sequential)
    for t in range(h):
        if mask[t] != 0.0:
            cum = cum + (log_pi[t] - log_beta[t])
        c[t] = cum
    # g = np.where(valid, np.exp(np.minimum(c, log(clip))) * gamma**t * r, 0)   (vectorised)
    pyprog_rho_terms(c, discount, rewards, mask, log_clip, h, g)
    # g = np.cumsum(g[::-1])[::-1], then 0 where invalid   (sequential, backwards)
    for t in range(h - 1, -1, -1):
        acc = acc + g[t]
        g[t] = acc if mask[t] != 0.0 else 0.0
    return acc


def _exp(const double[::1] x):
    """np.exp(x), by the vectorisable exp of the PDIS kernel (exposed for tests)."""
    out = np.empty(x.shape[0], dtype=np.float64)
    cdef double[::1] y = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(x.shape[0]):
            y[i] = pyprog_exp(x[i])
    return out


def pdis_weights(
    const double[:, ::1] log_pi,
    const double[:, ::1] log_beta,
    const double[:, ::1] rewards,
    const double[:, ::1] mask,
    double gamma,
    double clip,
):
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
    cdef Py_ssize_t n = log_pi.shape[0], h = log_pi.shape[1], i, t
    g_out = np.empty((n, h), dtype=np.float64)
    J_out = np.empty(n, dtype=np.float64)
    scratch = np.empty((2, h), dtype=np.float64)  # discount and one row of c
    cdef double[:, ::1] g = g_out
    cdef double[::1] J = J_out
    cdef double[::1] discount = scratch[0], c = scratch[1]
    cdef double log_clip = log(clip)
    if h == 0:
        J_out[:] = 0.0
        return g_out, J_out
    with nogil:
        # discount = gamma ** np.arange(H)
        for t in range(h):
            discount[t] = pow(gamma, <double>t)
        for i in range(n):
            J[i] = _pdis_row(&log_pi[i, 0], &log_beta[i, 0], &rewards[i, 0], &mask[i, 0],
                             &discount[0], h, log_clip, &c[0], &g[i, 0])
    return g_out, J_out


def episode_ratios(
    const double[:, ::1] log_pi,
    const double[:, ::1] log_beta,
    const double[:, ::1] mask,
    double clip,
):
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
    cdef Py_ssize_t n = log_pi.shape[0], h = log_pi.shape[1], i, t
    lam_out = np.empty(n, dtype=np.float64)
    unclipped_out = np.empty(n, dtype=np.bool_)
    cdef double[::1] lam = lam_out
    cdef unsigned char[::1] unclipped = unclipped_out.view(np.uint8)
    cdef double log_clip = log(clip), s
    with nogil:
        for i in range(n):
            # s = np.where(valid, log_pi - log_beta, 0).sum()
            s = 0.0
            for t in range(h):
                if mask[i, t] != 0.0:
                    s = s + (log_pi[i, t] - log_beta[i, t])
            lam[i] = exp(fmin(s, log_clip))
            unclipped[i] = s < log_clip
    return lam_out, unclipped_out


cdef int _svd_solve(
    const double[:, ::1] phi,
    const double[::1] weights,
    const double[::1] y,
    const double[::1] phi_star,
    double* w,
    double* u,
) noexcept nogil:
    """Least squares through the SVD √Λ Φ = U S Vᵀ; returns 0, or -1 if rank-deficient.

    w = V S⁻¹ Uᵀ √Λ y and u = V S⁻² Vᵀ φ*, i.e. A⁻¹ Φᵀ Λ y and A⁻¹ φ* for A = ΦᵀΛΦ.
    """
    cdef int n = <int>phi.shape[0], d = <int>phi.shape[1], info = 0, lwork = -1
    cdef int i, j, k, rank_ok = 1
    cdef char jobu = b'S', jobvt = b'S'
    cdef double query, acc
    cdef double* a = <double*>malloc(n * d * sizeof(double))
    cdef double* s = <double*>malloc(d * sizeof(double))
    cdef double* uu = <double*>malloc(n * d * sizeof(double))
    cdef double* vt = <double*>malloc(d * d * sizeof(double))
    cdef double* tmp = <double*>malloc(d * sizeof(double))
    cdef double* work = NULL
    if n < d:
        info = -1  # fewer equations than unknowns: rank-deficient by construction
    elif a == NULL or s == NULL or uu == NULL or vt == NULL or tmp == NULL:
        info = -2
    else:
        # a = np.sqrt(weights)[:, None] * phi, column-major for LAPACK
        for i in range(n):
            acc = sqrt(weights[i])
            for j in range(d):
                a[i + j * n] = acc * phi[i, j]
        dgesvd(&jobu, &jobvt, &n, &d, a, &n, s, uu, &n, vt, &d, &query, &lwork, &info)
        lwork = <int>query
        work = <double*>malloc(lwork * sizeof(double))
        if work == NULL:
            info = -2
        else:
            dgesvd(&jobu, &jobvt, &n, &d, a, &n, s, uu, &n, vt, &d, work, &lwork, &info)
    if info == 0:
        # rank test, as numpy.linalg.matrix_rank: s_min > s_max * max(N, d) * eps
        if s[d - 1] <= s[0] * (n if n > d else d) * DBL_EPSILON:
            rank_ok = 0
        else:
            # tmp = (Uᵀ (√λ y)) / S ;  w = V tmp
            for k in range(d):
                acc = 0.0
                for i in range(n):
                    acc = acc + uu[i + k * n] * sqrt(weights[i]) * y[i]
                tmp[k] = acc / s[k]
            for j in range(d):
                acc = 0.0
                for k in range(d):
                    acc = acc + vt[k + j * d] * tmp[k]
                w[j] = acc
            # tmp = (Vᵀ φ*) / S² ;  u = V tmp
            for k in range(d):
                acc = 0.0
                for j in range(d):
                    acc = acc + vt[k + j * d] * phi_star[j]
                tmp[k] = acc / (s[k] * s[k])
            for j in range(d):
                acc = 0.0
                for k in range(d):
                    acc = acc + vt[k + j * d] * tmp[k]
                u[j] = acc
    free(a)
    free(s)
    free(uu)
    free(vt)
    free(tmp)
    free(work)
    if info != 0 or not rank_ok:
        return -1
    return 0


def wls_forecast(
    const double[:, ::1] phi,
    const double[::1] weights,
    const double[::1] y,
    const double[::1] phi_star,
):
    """Weighted least-squares forecast and its exact partial derivatives.

    With ``A = Φᵀ Λ Φ`` (``Λ = diag(weights)``), ``w = A⁻¹ Φᵀ Λ y`` and
    ``u = A⁻¹ φ*ᵀ``::

        f                = φ* · w
        dfdy[i]          = weights[i] * (φ_i · u)
        dfdweights[i]    = (φ_i · u) * (y[i] - φ_i · w)

    Unit weights give ordinary least squares, and ``dfdy`` is then the ζ of the
    paper (Fig. 4). ``A`` is factorised by Cholesky; when it is not numerically
    positive definite the system is solved by an SVD of ``√Λ Φ`` instead. A
    rank-deficient system is not an error here: every output is NaN and ``status``
    says so.

    Parameters
    ----------
    phi : ndarray of float64, shape (N, d)
        Basis features of the past time indices.
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
    cdef int n = <int>phi.shape[0], d = <int>phi.shape[1], two = 2, info = 0
    cdef int j, status = CHOLESKY
    cdef char lower = b'L'
    cdef double f = 0.0, tol = 0.0
    w_out = np.empty(d, dtype=np.float64)
    dfdy_out = np.empty(n, dtype=np.float64)
    dfdw_out = np.empty(n, dtype=np.float64)
    work = np.empty(d * d + 2 * d, dtype=np.float64)
    cdef double[::1] w = w_out, dfdy = dfdy_out, dfdw = dfdw_out, wk = work
    cdef double* A = &wk[0]            # d×d: Φᵀ Λ Φ (symmetric), then its Cholesky factor
    cdef double* rhs = A + d * d       # d×2, column-major: [b, φ*], then [w, u]
    if n == 0:
        return _rank_deficient(w_out, dfdy_out, dfdw_out)
    with nogil:
        # A = Φᵀ Λ Φ ;  b = Φᵀ Λ y
        pyprog_weighted_gram(&phi[0, 0], &weights[0], &y[0], n, d, A, rhs)
        for j in range(d):
            rhs[d + j] = phi_star[j]
            # a pivot below tol is numerical rank loss, not a usable factor
            tol = A[j + j * d] if A[j + j * d] > tol else tol
        tol = tol * d * DBL_EPSILON
        # [w, u] = cho_solve(cho_factor(A), [b, φ*])   (LAPACK)
        dpotrf(&lower, &d, A, &d, &info)
        for j in range(d):
            if info == 0 and A[j + j * d] * A[j + j * d] <= tol:
                info = j + 1
        if info == 0:
            dpotrs(&lower, &d, &two, A, &d, rhs, &d, &info)
        if info != 0:
            status = LSTSQ
            if _svd_solve(phi, weights, y, phi_star, rhs, rhs + d) != 0:
                status = RANK_DEFICIENT
    if status == RANK_DEFICIENT:
        return _rank_deficient(w_out, dfdy_out, dfdw_out)
    with nogil:
        # f = φ* · w
        for j in range(d):
            w[j] = rhs[j]
            f += phi_star[j] * rhs[j]
        # dfdy = λ (Φ u) ;  dfdweights = (Φ u) (y − Φ w)
        pyprog_wls_outputs(&phi[0, 0], &weights[0], &y[0], n, d, rhs, rhs + d,
                           &dfdy[0], &dfdw[0])
    return f, w_out, dfdy_out, dfdw_out, status


cdef tuple _rank_deficient(w_out, dfdy_out, dfdw_out):
    w_out[:] = NAN
    dfdy_out[:] = NAN
    dfdw_out[:] = NAN
    return NAN, w_out, dfdy_out, dfdw_out, RANK_DEFICIENT
