# Included by _kernels.pyx (one extension module): weighted least-squares forecasts.
# wls_forecast solves ΦᵀΛΦ w = ΦᵀΛy by Cholesky (LAPACK), falling back to a pivoted QR of
# √Λ Φ when ill-conditioned, with exact power-of-2 rescaling; its status constants and
# thresholds are defined here. NumPy twin in fallback.py.


cdef enum WLSStatus:
    CHOLESKY = 0
    LSTSQ = 1
    RANK_DEFICIENT = 2

WLS_CHOLESKY = CHOLESKY
WLS_LSTSQ = LSTSQ
WLS_RANK_DEFICIENT = RANK_DEFICIENT

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
    cdef int n = <int>phi.shape[0], d = <int>phi.shape[1], status
    _same_shape(weights, "weights", (n,))
    _same_shape(y, "y", (n,))
    _same_shape(phi_star, "phi_star", (d,))
    cdef double f = 0.0
    cdef cnp.ndarray w_out = _empty(d), dfdy_out = _empty(n), dfdw_out = _empty(n)
    cdef double* w = _data(w_out)
    cdef double* dfdy = _data(dfdy_out)
    cdef double* dfdw = _data(dfdw_out)
    with nogil:
        status = _wls_solve(X, lam, Y, ps, n, d, &f, w, dfdy, dfdw)
    if status < 0:
        raise MemoryError()
    if status == RANK_DEFICIENT:
        return _rank_deficient(w_out, dfdy_out, dfdw_out)
    return f, w_out, dfdy_out, dfdw_out, status


cdef int _wls_solve(const double* X, const double* lam, const double* Y, const double* ps,
                    int n, int d, double* f_out, double* w, double* dfdy,
                    double* dfdw) noexcept nogil:
    """The work of ``wls_forecast`` (also run by policy_update), on its checked inputs:
    its status, or -1 when out of memory; f and the outputs are set unless rank-deficient."""
    cdef int i, j, k, status = CHOLESKY, two = 2, info = 0
    cdef char lower = b'L'
    cdef double f = 0.0, anorm = 0.0, col, rcond = 0.0, cond = 1.0, sum_dfdy = 0.0
    cdef double top_lam = 0.0, top_y = 0.0
    cdef int e_lam, e_y
    if n == 0 or d == 0:
        return RANK_DEFICIENT
    # A (d×d), rhs (d×2: [b, φ*], then [w, u]), scale (d), dpocon's work (3d), scratch
    cdef double* A = <double*>malloc((d * d + 6 * d + PYPROG_BLOCK + n) * sizeof(double))
    cdef int* iwork = <int*>malloc(d * sizeof(int))
    cdef double* scaled = NULL
    if A == NULL or iwork == NULL:
        free(A)
        free(iwork)
        return -1
    cdef double* rhs = A + d * d
    cdef double* scale = rhs + 2 * d
    cdef double* work = scale + d
    cdef double* scratch = work + 3 * d
    cdef double* dfdy_qr = scratch + PYPROG_BLOCK  # n: λ Φ u from the QR path
    cdef bint in_range = True
    e_lam = 0
    e_y = 0
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
        return -1
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
    f_out[0] = f
    return status


cdef tuple _rank_deficient(cnp.ndarray w_out, cnp.ndarray dfdy_out, cnp.ndarray dfdw_out):
    w_out.fill(NAN)
    dfdy_out.fill(NAN)
    dfdw_out.fill(NAN)
    return NAN, w_out, dfdy_out, dfdw_out, RANK_DEFICIENT
