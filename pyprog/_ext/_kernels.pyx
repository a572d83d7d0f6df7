# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Cython kernels: reversed cumulative PDIS sums, clipped ratios, WLS forecasts.

Each function has a NumPy twin of the same name, signature and docstring in
``fallback.py``; a comment with the NumPy meaning stands above each low-level step.
Kernels trust the values of their inputs; validation happens once, in
:mod:`pyprog.forecast.estimators`. They do check, cheaply, that each array is float64 with
the layout they read (C-contiguous; the design ``phi`` of ``wls_forecast`` is
Fortran-ordered, one contiguous column per feature) and that shapes agree, so that a
wrong call raises instead of reading out of bounds.
"""

cimport numpy as cnp
import math
import numbers

import numpy as _np

from libc.math cimport exp, fabs, frexp, isfinite, ldexp, log, pow, sqrt, NAN
from libc.stdlib cimport calloc, free, malloc
from scipy.linalg.cython_lapack cimport (
    dgeqp3, dgesvd, dormqr, dpocon, dpotrf, dpotrs, dtrtrs
)

from pyprog._ext import _exact

cdef enum WLSStatus:
    CHOLESKY = 0
    LSTSQ = 1
    RANK_DEFICIENT = 2

WLS_CHOLESKY = CHOLESKY
WLS_LSTSQ = LSTSQ
WLS_RANK_DEFICIENT = RANK_DEFICIENT

cdef double DBL_EPSILON = 2.220446049250313e-16

# The normal equations lose about cond(A)·eps digits (A = ΦᵀΛΦ, scaled to unit diagonal):
# while LAPACK's estimate of 1/cond(A) (dpocon) is at least this, Cholesky of A is accurate
# to ~1e-12; below it, A is not formed again: the pivoted QR of √Λ Φ loses cond(√ΛΦ)·eps =
# √cond(A)·eps only.
cdef double RCOND_CHOLESKY_MIN = 1e-4
# Weights and targets are rescaled by powers of 2 (exactly) outside [2**-SAFE, 2**SAFE]:
# WLS does not change when every weight is scaled, and is linear in y.
cdef int SAFE_EXPONENT = 256
# A forecast whose error bound cond(√ΛΦ) · eps · Σ|∂f/∂y_i| (relative to max|y|) exceeds
# this is refused (reported as rank-deficient): its digits would be noise.
cdef double FORECAST_ERROR_MAX = 1e-4


cnp.import_array()


cdef inline cnp.ndarray _empty(Py_ssize_t n, Py_ssize_t h=-1, int typenum=cnp.NPY_FLOAT64):
    """np.empty(n) or np.empty((n, h)), through the C API (this is per-call overhead)."""
    cdef cnp.npy_intp dims[2]
    dims[0] = n
    dims[1] = h
    return cnp.PyArray_EMPTY(1 if h < 0 else 2, dims, typenum, 0)


cdef inline double* _data(cnp.ndarray a) noexcept:
    return <double*>cnp.PyArray_DATA(a)


cdef const double* _input(object a, str name, int ndim, bint fortran=False) except NULL:
    """Data pointer of a float64 array of ``ndim`` dimensions in the expected layout."""
    cdef bint ok = (
        cnp.PyArray_Check(a)
        and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_FLOAT64
        and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a)
        and cnp.PyArray_ISALIGNED(<cnp.ndarray>a)
        and cnp.PyArray_NDIM(<cnp.ndarray>a) == ndim
        and (cnp.PyArray_IS_F_CONTIGUOUS(<cnp.ndarray>a) if fortran
             else cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a))
    )
    if not ok:
        layout = "Fortran" if fortran else "C"
        raise ValueError(f"{name} must be a {ndim}-D {layout}-contiguous float64 ndarray")
    # a zero-size array may have a NULL data pointer; nothing is read from it then
    return <const double*>cnp.PyArray_DATA(<cnp.ndarray>a) or <const double*>&DBL_EPSILON


cdef double _real(object value, str name) except? -1.0:
    """``value`` as a double (a real number; ints beyond float64 are ±inf)."""
    if type(value) is float:  # the usual case, without the slower ABC check below
        return <double>value
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {value!r}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


cdef double _clip(object value) except? -1.0:
    cdef double clip = _real(value, "clip")
    if not clip > 0:
        raise ValueError(f"clip must be > 0 (inf for no clipping); got {value!r}")
    return clip


cdef double _gamma(object value) except? -1.0:
    cdef double gamma = _real(value, "gamma")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {value!r}")
    return gamma


cdef inline int _same_shape(object a, str name, tuple shape) except -1:
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {a.shape}")
    return 0


cdef extern from "_loops.h" nogil:
    enum: PYPROG_BLOCK
    double pyprog_exp(double x)
    void pyprog_rho_terms(const double* c, const double* discount, const double* rewards,
                          const double* mask, double log_clip, Py_ssize_t h, double* out)
    void pyprog_weighted_gram(const double* phi, const double* w, const double* y,
                              Py_ssize_t n, Py_ssize_t d, double* A, double* b, double* scratch)
    void pyprog_wls_outputs(const double* phi, const double* w, const double* y,
                            Py_ssize_t n, Py_ssize_t d, const double* wts, const double* u,
                            double* dfdy, double* dfdw)


cdef extern from "_policy.h" nogil:
    enum: PYPROG_ROWS
    double pyprog_tanh(double x)
    double pyprog_log(double x)
    void pyprog_softmax_forward(
        const double* obs, const cnp.int64_t* actions, Py_ssize_t m, Py_ssize_t d,
        const double* W1t, const double* b1, Py_ssize_t hd, const double* W, const double* b,
        Py_ssize_t a, double* hidden, double* log_probs, double* probs, double* log_prob,
        double* entropy, double* scratch)
    void pyprog_softmax_backward(
        const double* obs, const cnp.int64_t* actions, Py_ssize_t m, Py_ssize_t d,
        Py_ssize_t hd, const double* W, Py_ssize_t a, const double* hidden,
        const double* log_probs, const double* probs, const double* entropy,
        const double* coef_log_prob, const double* coef_entropy, double* gW1t, double* gb1,
        double* gW, double* gb, double* scratch)


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


cdef enum Elementwise:
    EXP = 0
    TANH = 1
    LOG = 2


def _elementwise(str name, x):
    """np.exp / np.tanh / np.log (``name``) of a 1-D array, by the kernels' vectorisable
    functions (exposed for the accuracy tests)."""
    if name not in ("exp", "tanh", "log"):
        raise ValueError(f"name must be 'exp', 'tanh' or 'log'; got {name!r}")
    cdef int which = {"exp": EXP, "tanh": TANH, "log": LOG}[name]
    cdef const double* xs = _input(x, "x", 1)
    cdef Py_ssize_t i, n = len(x)
    cdef cnp.ndarray out = _empty(n)
    cdef double* y = _data(out)
    with nogil:
        for i in range(n):
            if which == EXP:
                y[i] = pyprog_exp(xs[i])
            elif which == TANH:
                y[i] = pyprog_tanh(xs[i])
            else:
                y[i] = pyprog_log(xs[i])
    return out


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
    cdef const double* lp = _input(log_pi, "log_pi", 2)
    cdef const double* lb = _input(log_beta, "log_beta", 2)
    cdef const double* r = _input(rewards, "rewards", 2)
    cdef const double* m = _input(mask, "mask", 2)
    shape = log_pi.shape
    _same_shape(log_beta, "log_beta", shape)
    _same_shape(rewards, "rewards", shape)
    _same_shape(mask, "mask", shape)
    cdef double base = _gamma(gamma), clip_value = _clip(clip)
    cdef Py_ssize_t n = shape[0], h = shape[1], i, t
    cdef cnp.ndarray g_out = _empty(n, h), J_out = _empty(n)
    cdef double* g = _data(g_out)
    cdef double* J = _data(J_out)
    cdef double log_clip = log(clip_value)
    if h == 0:
        for i in range(n):
            J[i] = 0.0
        return g_out, J_out
    # scratch: discount = gamma ** np.arange(H), then one row of c
    cdef double* discount = <double*>malloc(2 * h * sizeof(double))
    if discount == NULL:
        raise MemoryError()
    with nogil:
        for t in range(h):
            discount[t] = pow(base, <double>t)
        for i in range(n):
            J[i] = _pdis_row(lp + i * h, lb + i * h, r + i * h, m + i * h,
                             discount, h, log_clip, discount + h, g + i * h)
    free(discount)
    # a non-finite J is an overflow (or inf − inf) somewhere in its row: recompute it
    for i in range(n):
        if not isfinite(J[i]):
            g_out[i], J[i] = _exact.pdis_row_exact(
                i, log_pi[i], log_beta[i], rewards[i], mask[i], base, clip_value
            )
    return g_out, J_out


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
    cdef const double* lp = _input(log_pi, "log_pi", 2)
    cdef const double* lb = _input(log_beta, "log_beta", 2)
    cdef const double* m = _input(mask, "mask", 2)
    shape = log_pi.shape
    _same_shape(log_beta, "log_beta", shape)
    _same_shape(mask, "mask", shape)
    cdef Py_ssize_t n = shape[0], h = shape[1], i, t
    cdef cnp.ndarray lam_out = _empty(n), unclipped_out = _empty(n, -1, cnp.NPY_BOOL)
    cdef double* lam = _data(lam_out)
    cdef cnp.npy_bool* unclipped = <cnp.npy_bool*>cnp.PyArray_DATA(unclipped_out)
    cdef double clip_value = _clip(clip)
    cdef double log_clip = log(clip_value), s
    with nogil:
        for i in range(n):
            # s = np.where(valid, log_pi - log_beta, 0).sum()
            s = 0.0
            for t in range(i * h, (i + 1) * h):
                if m[t] != 0.0:
                    s = s + (lp[t] - lb[t])
            # np.exp(np.minimum(s, log_clip)), NaN propagating
            lam[i] = exp(log_clip if s > log_clip else s)
            unclipped[i] = s < log_clip
    for i in range(n):
        if not isfinite(lam[i]):
            lam[i], unclipped[i] = _exact.episode_ratio_exact(
                i, log_pi[i], log_beta[i], mask[i], clip_value
            )
    return lam_out, unclipped_out


cdef int _pow2_exponent(double top, bint even) noexcept nogil:
    """0, or the exponent k (even if ``even``, |k| <= 1022) with ``top · 2**k`` near 1
    when ``top`` is outside [2**-SAFE_EXPONENT, 2**SAFE_EXPONENT] (0: nothing to scale)."""
    cdef int e
    if not isfinite(top) or top == 0.0:
        return 0
    if ldexp(1.0, -SAFE_EXPONENT) <= top <= ldexp(1.0, SAFE_EXPONENT):
        return 0
    frexp(top, &e)
    e = -e
    e = -1022 if e < -1022 else (1022 if e > 1022 else e)
    if e % 2 != 0 and even:
        e -= 1
    return e


cdef int _qr_solve(
    const double* phi,
    const double* lam,
    const double* y,
    const double* phi_star,
    int n,
    int d,
    double* w,
    double* u,
    double* cond,
    double* dfdy,
) noexcept nogil:
    """w and u = A⁻¹ φ* from the pivoted QR √Λ Φ P = Q R, without forming A (LAPACK):
    w = P R⁻¹ Qᵀ √Λ y,  u = P R⁻¹ R⁻ᵀ Pᵀ φ*. Returns 0, or -1 if rank-deficient.

    The rank test is numpy.linalg.matrix_rank's, on the singular values of R (those of
    √Λ Φ), and ``cond`` is set to s_max / s_min. ``dfdy`` gets λ Φ u = √λ ⊙ Q R⁻ᵀ Pᵀ φ*
    (N), which never forms u: its error grows as cond(√ΛΦ), not its square.
    ``phi`` is column-major (N×d).
    """
    cdef int info = 0, lwork = -1, one = 1, i, j, k, status = 0
    cdef char side = b'L', trans_t = b'T', trans_n = b'N', upper = b'U', nounit = b'N'
    cdef char job_none = b'N'
    cdef double query, dummy = 0.0
    if n < d:
        return -1
    cdef double* a = <double*>malloc((n * d + 2 * d + n + d * d + d) * sizeof(double))
    cdef int* jpvt = <int*>calloc(d, sizeof(int))
    cdef double* work = NULL
    if a == NULL or jpvt == NULL:
        free(a)
        free(jpvt)
        return -1
    cdef double* tau = a + n * d
    cdef double* sv = tau + d
    cdef double* qty = sv + d            # n
    cdef double* r = qty + n             # d×d copy of R (destroyed by dgesvd)
    cdef double* z = r + d * d           # d
    # a = np.sqrt(lam)[:, None] * phi   (column-major)
    for j in range(d):
        for i in range(n):
            a[i + j * n] = sqrt(lam[i]) * phi[i + j * n]
    for i in range(n):
        qty[i] = sqrt(lam[i]) * y[i]
    for i in range(n * d):
        if not isfinite(a[i]):
            free(a)
            free(jpvt)
            return -1
    # workspace: the largest of the three LAPACK queries
    dgeqp3(&n, &d, a, &n, jpvt, tau, &query, &lwork, &info)
    lwork = <int>query
    k = -1
    dormqr(&side, &trans_t, &n, &one, &d, a, &n, tau, qty, &n, &query, &k, &info)
    lwork = <int>query if <int>query > lwork else lwork
    k = -1
    dgesvd(&job_none, &job_none, &d, &d, r, &d, sv, &dummy, &one, &dummy, &one, &query, &k,
           &info)
    lwork = <int>query if <int>query > lwork else lwork
    lwork = lwork if lwork > 5 * d else 5 * d
    work = <double*>malloc(lwork * sizeof(double))
    if work == NULL:
        status = -1
    else:
        # √Λ Φ P = Q R
        dgeqp3(&n, &d, a, &n, jpvt, tau, work, &lwork, &info)
        # sv = singular values of R
        for j in range(d):
            for i in range(d):
                r[i + j * d] = a[i + j * n] if i <= j else 0.0
        if info == 0:
            dgesvd(&job_none, &job_none, &d, &d, r, &d, sv, &dummy, &one, &dummy, &one, work,
                   &lwork, &info)
        if info != 0 or not sv[d - 1] > sv[0] * (n if n > d else d) * DBL_EPSILON:
            status = -1
        else:
            cond[0] = sv[0] / sv[d - 1]
            # qty = Qᵀ √Λ y ;  x = R⁻¹ qty[:d]
            dormqr(&side, &trans_t, &n, &one, &d, a, &n, tau, qty, &n, work, &lwork, &info)
            dtrtrs(&upper, &trans_n, &nounit, &d, &one, a, &n, qty, &n, &info)
            # z = R⁻ᵀ Pᵀ φ* ;  dfdy = √λ ⊙ (Q [z; 0]) ;  v = R⁻¹ z
            for k in range(d):
                z[k] = phi_star[jpvt[k] - 1]
            dtrtrs(&upper, &trans_t, &nounit, &d, &one, a, &n, z, &d, &info)
            for i in range(n):
                dfdy[i] = z[i] if i < d else 0.0
            dormqr(&side, &trans_n, &n, &one, &d, a, &n, tau, dfdy, &n, work, &lwork, &info)
            for i in range(n):
                dfdy[i] = sqrt(lam[i]) * dfdy[i]
            dtrtrs(&upper, &trans_n, &nounit, &d, &one, a, &n, z, &d, &info)
            # w = P x ;  u = P v
            for k in range(d):
                w[jpvt[k] - 1] = qty[k]
                u[jpvt[k] - 1] = z[k]
    free(a)
    free(jpvt)
    free(work)
    return status


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
    cdef const double* X = _input(phi, "phi", 2, fortran=True)
    cdef const double* lam = _input(weights, "weights", 1)
    cdef const double* Y = _input(y, "y", 1)
    cdef const double* ps = _input(phi_star, "phi_star", 1)
    cdef int n = <int>phi.shape[0], d = <int>phi.shape[1], two = 2, info = 0
    _same_shape(weights, "weights", (n,))
    _same_shape(y, "y", (n,))
    _same_shape(phi_star, "phi_star", (d,))
    cdef int i, j, k, status = CHOLESKY
    cdef char lower = b'L'
    cdef double f = 0.0, anorm = 0.0, col, rcond = 0.0, cond = 1.0, sum_dfdy = 0.0
    cdef double top_lam = 0.0, top_y = 0.0
    cdef int e_lam, e_y
    cdef cnp.ndarray w_out = _empty(d), dfdy_out = _empty(n), dfdw_out = _empty(n)
    cdef double* w = _data(w_out)
    cdef double* dfdy = _data(dfdy_out)
    cdef double* dfdw = _data(dfdw_out)
    if n == 0 or d == 0:
        return _rank_deficient(w_out, dfdy_out, dfdw_out)
    # A (d×d), rhs (d×2: [b, φ*], then [w, u]), scale (d), dpocon's work (3d), scratch
    cdef double* A = <double*>malloc((d * d + 6 * d + PYPROG_BLOCK + n) * sizeof(double))
    cdef int* iwork = <int*>malloc(d * sizeof(int))
    cdef double* scaled = NULL
    if A == NULL or iwork == NULL:
        free(A)
        free(iwork)
        raise MemoryError()
    cdef double* rhs = A + d * d
    cdef double* scale = rhs + 2 * d
    cdef double* work = scale + d
    cdef double* scratch = work + 3 * d
    cdef double* dfdy_qr = scratch + PYPROG_BLOCK  # n: λ Φ u from the QR path
    cdef bint in_range = True
    e_lam = 0
    e_y = 0
    with nogil:
        # A = Φᵀ Λ Φ ;  b = Φᵀ Λ y
        pyprog_weighted_gram(X, lam, Y, n, d, A, rhs, scratch)
        # magnitudes far from 1 (or an overflow) in A or b: rescale λ and y exactly
        for j in range(d):
            if not (ldexp(1.0, -SAFE_EXPONENT) <= A[j + j * d] <= ldexp(1.0, SAFE_EXPONENT)
                    and fabs(rhs[j]) <= ldexp(1.0, SAFE_EXPONENT)):
                in_range = False
        if not in_range:
            # λ → λ·4**k (√λ exact too), y → y·2**m, with
            # top_lam = np.fmax.reduce(λ), top_y = np.fmax.reduce(|y|)   (NaN ignored)
            for i in range(n):
                top_lam = lam[i] if lam[i] > top_lam else top_lam
                top_y = fabs(Y[i]) if fabs(Y[i]) > top_y else top_y
            e_lam = _pow2_exponent(top_lam, True)
            e_y = _pow2_exponent(top_y, False)
            if e_lam != 0 or e_y != 0:
                scaled = <double*>malloc(2 * n * sizeof(double))
                if scaled != NULL:
                    for i in range(n):
                        scaled[i] = ldexp(lam[i], e_lam)
                        scaled[n + i] = ldexp(Y[i], e_y)
                    lam = scaled
                    Y = scaled + n
                    pyprog_weighted_gram(X, lam, Y, n, d, A, rhs, scratch)
    if (e_lam != 0 or e_y != 0) and scaled == NULL:
        free(A)
        free(iwork)
        raise MemoryError()
    with nogil:
        # As = D A D, D = diag(A)^(-1/2), and its 1-norm:  A⁻¹ = D As⁻¹ D
        for j in range(d):
            if not A[j + j * d] > 0.0:
                info = -1
            scale[j] = 1.0 / sqrt(A[j + j * d])
        if info == 0:
            for k in range(d):
                col = 0.0
                for j in range(d):
                    A[j + k * d] = A[j + k * d] * scale[j] * scale[k]
                    col = col + fabs(A[j + k * d])
                anorm = col if col > anorm else anorm
                rhs[k] = rhs[k] * scale[k]
                rhs[d + k] = ps[k] * scale[k]
            # [w, u] = D cho_solve(cho_factor(As), D [b, φ*]) if cond(As) <= 1e4   (LAPACK)
            dpotrf(&lower, &d, A, &d, &info)
        if info == 0:
            dpocon(&lower, &d, A, &d, &anorm, &rcond, work, iwork, &info)
            if not rcond >= RCOND_CHOLESKY_MIN:
                info = -1
        if info == 0:
            dpotrs(&lower, &d, &two, A, &d, rhs, &d, &info)
            for k in range(d):
                rhs[k] = rhs[k] * scale[k]
                rhs[d + k] = rhs[d + k] * scale[k]
        if info != 0:
            status = LSTSQ
            if _qr_solve(X, lam, Y, ps, n, d, rhs, rhs + d, &cond, dfdy_qr) != 0:
                status = RANK_DEFICIENT
        if status != RANK_DEFICIENT:
            # dfdy = λ (Φ u) ;  dfdweights = (Φ u) (y − Φ w)
            pyprog_wls_outputs(X, lam, Y, n, d, rhs, rhs + d, dfdy, dfdw)
        if status == LSTSQ:
            for i in range(n):
                dfdy[i] = dfdy_qr[i]
        if status == LSTSQ:
            # error bound of f relative to max|y|: cond(√ΛΦ) · eps · Σ|∂f/∂y|
            for i in range(n):
                sum_dfdy = sum_dfdy + fabs(dfdy[i])
            if cond * DBL_EPSILON * (sum_dfdy if sum_dfdy > 1.0 else 1.0) > FORECAST_ERROR_MAX:
                status = RANK_DEFICIENT
        if status != RANK_DEFICIENT:
            # undo the rescaling: w · 2**-e_y, dfdweights · 2**(e_lam - e_y)
            for j in range(d):
                w[j] = ldexp(rhs[j], -e_y)
            # f = φ* · w
            for j in range(d):
                f += ps[j] * w[j]
            if e_lam != 0 or e_y != 0:
                for i in range(n):
                    dfdw[i] = ldexp(dfdw[i], e_lam - e_y)
    free(A)
    free(iwork)
    free(scaled)
    if status == RANK_DEFICIENT:
        return _rank_deficient(w_out, dfdy_out, dfdw_out)
    return f, w_out, dfdy_out, dfdw_out, status


cdef tuple _rank_deficient(cnp.ndarray w_out, cnp.ndarray dfdy_out, cnp.ndarray dfdw_out):
    w_out.fill(NAN)
    dfdy_out.fill(NAN)
    dfdw_out.fill(NAN)
    return NAN, w_out, dfdy_out, dfdw_out, RANK_DEFICIENT


cdef const cnp.int64_t* _actions(object a, Py_ssize_t m) except NULL:
    if not (cnp.PyArray_Check(a) and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>a) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a) and a.shape[0] == m):
        raise ValueError(f"actions must be a C-contiguous int64 ndarray of shape ({m},)")
    return <const cnp.int64_t*>cnp.PyArray_DATA(<cnp.ndarray>a) or <const cnp.int64_t*>&_ZERO


cdef cnp.int64_t _ZERO = 0


cdef int _action_range(object actions, const cnp.int64_t* act, Py_ssize_t m,
                       Py_ssize_t a) except -1:
    """Every action in [0, a): an action outside would index out of bounds."""
    cdef Py_ssize_t i, bad = -1
    with nogil:
        for i in range(m):
            if act[i] < 0 or act[i] >= a:
                bad = i
                break
    if bad >= 0:
        raise ValueError(
            f"actions must be in [0, {a}) (one per row of W); got {act[bad]} at row {bad}"
        )
    return 0


cdef int _out_tuple(object out) except -1:
    if out is not None and not (isinstance(out, (tuple, list)) and len(out) == 5):
        raise ValueError(
            "out must be None or a tuple of 5 ndarrays (hidden, log_probs, probs, log_prob, "
            "entropy)"
        )
    return 0


cdef cnp.ndarray _output(object out, Py_ssize_t k, str name, Py_ssize_t n, Py_ssize_t h=-1):
    """out[k] if given (checked), else a new array of shape (n,) or (n, h)."""
    if out is None:
        return _empty(n, h)
    arr = out[k]
    cdef tuple shape
    if h < 0:
        shape = (n,)
    else:
        shape = (n, h)
    _input(arr, f"out[{k}] ({name})", len(shape))
    _same_shape(arr, f"out[{k}] ({name})", shape)
    if not (<cnp.ndarray>arr).flags.writeable:
        raise ValueError(f"out[{k}] ({name}) must be writeable")
    return arr


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
    cdef const double* s = _input(obs, "obs", 2)
    cdef Py_ssize_t m = obs.shape[0], d = obs.shape[1]
    cdef const cnp.int64_t* act = _actions(actions, m)
    cdef const double* w1 = _input(W1, "W1", 2)
    cdef Py_ssize_t hd = W1.shape[0]
    cdef const double* bb1 = _input(b1, "b1", 1)
    cdef const double* w = _input(W, "W", 2)
    cdef const double* bb = _input(b, "b", 1)
    cdef Py_ssize_t a = W.shape[0], f = hd if hd > 0 else d, j, k
    _same_shape(W1, "W1", (hd, d))
    _same_shape(b1, "b1", (hd,))
    _same_shape(W, "W", (a, f))
    _same_shape(b, "b", (a,))
    if a < 1:
        raise ValueError("W must have at least one row (action)")
    _action_range(actions, act, m, a)
    _out_tuple(out)
    hidden_out = _output(out, 0, "hidden", m, hd) if hd > 0 else obs
    cdef cnp.ndarray log_probs_out = _output(out, 1, "log_probs", m, a)
    cdef cnp.ndarray probs_out = _output(out, 2, "probs", m, a)
    cdef cnp.ndarray log_prob_out = _output(out, 3, "log_prob", m)
    cdef cnp.ndarray entropy_out = _output(out, 4, "entropy", m)
    cdef double* hidden = _data(<cnp.ndarray>hidden_out) if hd > 0 else NULL
    cdef double* log_probs_p = _data(log_probs_out)
    cdef double* probs_p = _data(probs_out)
    cdef double* log_prob_p = _data(log_prob_out)
    cdef double* entropy_p = _data(entropy_out)
    # W1 transposed, so that the hidden layer runs over units; then the softmax scratch
    cdef double* w1t = <double*>malloc((d * hd + (2 * a + 4) * PYPROG_ROWS) * sizeof(double))
    if w1t == NULL:
        raise MemoryError()
    with nogil:
        for j in range(hd):
            for k in range(d):
                w1t[k * hd + j] = w1[j * d + k]
        pyprog_softmax_forward(s, act, m, d, w1t, bb1, hd, w, bb, a, hidden, log_probs_p,
                               probs_p, log_prob_p, entropy_p, w1t + d * hd)
    free(w1t)
    return hidden_out, log_probs_out, probs_out, log_prob_out, entropy_out


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
    cdef const double* s = _input(obs, "obs", 2)
    cdef Py_ssize_t m = obs.shape[0], d = obs.shape[1]
    cdef const cnp.int64_t* act = _actions(actions, m)
    _input(W1, "W1", 2)
    cdef Py_ssize_t hd = W1.shape[0]
    _same_shape(W1, "W1", (hd, d))
    cdef const double* w = _input(W, "W", 2)
    cdef Py_ssize_t a = W.shape[0], f = hd if hd > 0 else d, j, k
    _same_shape(W, "W", (a, f))
    if a < 1:
        raise ValueError("W must have at least one row (action)")
    _action_range(actions, act, m, a)
    cdef const double* h = _input(hidden, "hidden", 2)
    _same_shape(hidden, "hidden", (m, f))
    cdef const double* lp = _input(log_probs, "log_probs", 2)
    _same_shape(log_probs, "log_probs", (m, a))
    cdef const double* pr = _input(probs, "probs", 2)
    _same_shape(probs, "probs", (m, a))
    cdef const double* ent = _input(entropy, "entropy", 1)
    cdef const double* cl = _input(coef_log_prob, "coef_log_prob", 1)
    cdef const double* ce = _input(coef_entropy, "coef_entropy", 1)
    _same_shape(entropy, "entropy", (m,))
    _same_shape(coef_log_prob, "coef_log_prob", (m,))
    _same_shape(coef_entropy, "coef_entropy", (m,))
    cdef Py_ssize_t n_hidden = hd * (d + 1), p = n_hidden + a * (f + 1)
    cdef cnp.ndarray grad_out = _empty(p)
    cdef double* grad = _data(grad_out)
    # work: ∂W1ᵀ (d x hd) accumulator, then the per-row scratch (a + hd)
    cdef double* work = <double*>calloc(d * hd + a + hd + 1, sizeof(double))
    if work == NULL:
        raise MemoryError()
    with nogil:
        for j in range(p):
            grad[j] = 0.0
        # grad = [∂W1 (hd x d), ∂b1 (hd), ∂W (a x f), ∂b (a)]
        pyprog_softmax_backward(s, act, m, d, hd, w, a, h, lp, pr, ent, cl, ce, work,
                                grad + hd * d, grad + n_hidden, grad + n_hidden + a * f,
                                work + d * hd)
        for j in range(hd):
            for k in range(d):
                grad[j * d + k] = work[k * hd + j]
    free(work)
    return grad_out


# --- wild bootstrap of a linear forecast (issue 10) ------------------------------------


cdef const cnp.uint8_t* _packed_signs(object a, Py_ssize_t nbytes) except NULL:
    if not (cnp.PyArray_Check(a) and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_UINT8
            and cnp.PyArray_NDIM(<cnp.ndarray>a) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a) and a.shape[1] == nbytes):
        raise ValueError(f"signs must be a C-contiguous uint8 ndarray of shape (B, {nbytes})")
    return <const cnp.uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>a) or <const cnp.uint8_t*>&_NO_SIGNS


cdef cnp.uint8_t _NO_SIGNS = 0


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
    cdef const double* ee = _input(e, "e", 1)
    cdef const double* zz = _input(zeta, "zeta", 1)
    cdef const double* pp = _input(P, "P", 2)
    cdef const double* kk = _input(K, "K", 2)
    cdef const double* vv = _input(v, "v", 1)
    cdef Py_ssize_t n = P.shape[0], k = P.shape[1]
    _same_shape(e, "e", (n,))
    _same_shape(zeta, "zeta", (n,))
    _same_shape(K, "K", (n, k))
    _same_shape(v, "v", (n,))
    cdef Py_ssize_t nbytes = (n + 7) // 8, m = 2 * k + 1
    cdef const cnp.uint8_t* sg = _packed_signs(signs, nbytes)
    cdef Py_ssize_t nb = signs.shape[0], b, i, j, q, r, blk, bit, half
    cdef cnp.ndarray t_out = _empty(nb)
    cdef double* t = _data(t_out)
    cdef double base = 0.0, s2, cg, cvc, ci
    # work: M (8 nbytes × m, rows past N are 0), table (256 × m), column sums (m), V (k × k),
    # then acc (B × m)
    cdef Py_ssize_t rows = 8 * nbytes
    cdef double* M = <double*>calloc(rows * m + 256 * m + m + k * k + nb * m, sizeof(double))
    if M == NULL:
        raise MemoryError()
    cdef double* table = M + rows * m
    cdef double* colsum = table + 256 * m
    cdef double* V = colsum + m
    cdef double* acc = V + k * k
    cdef const double* c
    cdef const double* g
    cdef const double* row
    cdef double* dst
    with nogil:
        # M = [ζ⊙e, e⊙K, v⊙e⊙P];  colsum = M.sum(axis=0);  base = Σ v e²
        for i in range(n):
            row = M + i * m
            M[i * m] = zz[i] * ee[i]
            for j in range(k):
                M[i * m + 1 + j] = ee[i] * kk[i * k + j]
                M[i * m + 1 + k + j] = vv[i] * ee[i] * pp[i * k + j]
            for j in range(m):
                colsum[j] += row[j]
            base += vv[i] * ee[i] * ee[i]
        # V = Pᵀ diag(v) P
        for i in range(n):
            for j in range(k):
                for q in range(k):
                    V[j * k + q] += vv[i] * pp[i * k + j] * pp[i * k + q]
        # acc = σ01 @ M with σ01 = (σ + 1) / 2 ∈ {0, 1}, 8 rows of M at a time:
        # table[s] = Σ_{bit j of s set} M[8 blk + j], the 256 subset sums of the block
        for blk in range(nbytes):
            half = 1
            for bit in range(8):
                row = M + (8 * blk + bit) * m
                for r in range(half):
                    for j in range(m):
                        table[(half + r) * m + j] = table[r * m + j] + row[j]
                half = 2 * half
            for b in range(nb):
                row = table + sg[b * nbytes + blk] * m
                dst = acc + b * m
                for j in range(m):
                    dst[j] += row[j]
        for b in range(nb):
            # S = σ @ M = 2 acc − colsum;  num = S[0], c = S[1:k+1], g = S[k+1:]
            dst = acc + b * m
            for j in range(m):
                dst[j] = 2.0 * dst[j] - colsum[j]
            c = dst + 1
            g = dst + 1 + k
            # Σ v r*² = Σ v e² − 2 c·g + cᵀ V c
            cg = 0.0
            cvc = 0.0
            for j in range(k):
                cg += c[j] * g[j]
                ci = 0.0
                for q in range(k):
                    ci += V[j * k + q] * c[q]
                cvc += c[j] * ci
            s2 = base - 2.0 * cg + cvc
            t[b] = dst[0] / sqrt(s2 if s2 > 0.0 else 0.0)
    free(M)
    return t_out
