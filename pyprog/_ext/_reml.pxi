# Included by _kernels.pyx (one extension module): the restricted likelihood of a mixed
# model with known noise (pyprog.value.reml), at many θ at once and with its gradient at
# one. The model fits and the evidence's and τ²'s grids call these thousands of times per
# forecast on matrices of a few dozen columns, where NumPy's per-call overhead is the
# cost. Dense P × P algebra by LAPACK, CᵀWC by BLAS. NumPy twins in fallback_reml.py.


cdef struct _Design:
    const double* C      # (m, P) row-major
    const double* y      # (m,)
    const double* noise  # (m,)
    const cnp.int64_t* owner  # (P,)
    int m
    int P


cdef struct _Work:
    double* w     # (m,)  1/(σ² + v)
    double* X     # (m, P) √w ∘ C, row-major (= P × m column-major for BLAS)
    double* A     # (P, P) CᵀWC, full
    double* cy    # (P,)  CᵀWȳ
    double* M     # (P, P) S A S + J, then its Cholesky factor (lower, column-major)
    double* s     # (P,)  S's diagonal
    double* z     # (P,)
    double* Minv  # (P, P)
    double* u     # (P,)
    double ywy
    double sum_log_var  # Σ log(σ² + v)


cdef int _work_alloc(_Work* k, int m, int P) except -1:
    k.w = <double*>malloc(m * sizeof(double))
    k.X = <double*>malloc(max(m * P, 1) * sizeof(double))
    k.A = <double*>malloc(max(P * P, 1) * sizeof(double))
    k.cy = <double*>malloc(max(P, 1) * sizeof(double))
    k.M = <double*>malloc(max(P * P, 1) * sizeof(double))
    k.s = <double*>malloc(max(P, 1) * sizeof(double))
    k.z = <double*>malloc(max(P, 1) * sizeof(double))
    k.Minv = <double*>malloc(max(P * P, 1) * sizeof(double))
    k.u = <double*>malloc(max(P, 1) * sizeof(double))
    if not (k.w and k.X and k.A and k.cy and k.M and k.s and k.z and k.Minv and k.u):
        _work_free(k)
        raise MemoryError()
    return 0


cdef void _work_free(_Work* k) noexcept:
    free(k.w)
    free(k.X)
    free(k.A)
    free(k.cy)
    free(k.M)
    free(k.s)
    free(k.z)
    free(k.Minv)
    free(k.u)


cdef void _weighted_products(const _Design* d, double v, _Work* k) noexcept nogil:
    """w = 1/(σ² + v), A = CᵀWC (dsyrk of √w ∘ C), CᵀWȳ, ȳᵀWȳ and Σ log(σ² + v)."""
    cdef int n, i, j, P = d.P, m = d.m
    cdef double wn, r, one = 1.0, zero = 0.0
    cdef char uplo = b'U', trans = b'N'
    k.ywy = 0.0
    k.sum_log_var = 0.0
    for i in range(P):
        k.cy[i] = 0.0
    for n in range(m):
        wn = 1.0 / (d.noise[n] + v)
        k.w[n] = wn
        k.sum_log_var -= log(wn)
        k.ywy += wn * d.y[n] * d.y[n]
        r = sqrt(wn)
        for i in range(P):
            k.X[n * P + i] = r * d.C[n * P + i]
            k.cy[i] += wn * d.y[n] * d.C[n * P + i]
    # X row-major (m, P) is column-major (P, m): A = X_f X_fᵀ, upper triangle (column-major)
    dsyrk(&uplo, &trans, &P, &m, &one, k.X, &P, &zero, k.A, &P)
    for j in range(P):
        for i in range(j + 1, P):
            k.A[j * P + i] = k.A[i * P + j]


cdef int _factor(const _Design* d, const double* theta, _Work* k, double* f) noexcept nogil:
    """S from θ, M = S A S + J and its Cholesky factor, z = L⁻¹ g; the objective's
    likelihood part ½ (Σ log(σ² + v) + log det M + ȳᵀWȳ − zᵀz) into f. 0, or LAPACK's info."""
    cdef int i, j, info = 0, one = 1, P = d.P
    cdef char lower = b'L', notrans = b'N', nonunit = b'N'
    cdef double logdet = 0.0, zz = 0.0
    for i in range(P):
        k.s[i] = 1.0 if d.owner[i] == 0 else fabs(theta[d.owner[i]])
    for j in range(P):
        for i in range(P):
            k.M[j * P + i] = k.s[i] * k.A[j * P + i] * k.s[j]
        if d.owner[j] > 0:
            k.M[j * P + j] += 1.0
        k.z[j] = k.s[j] * k.cy[j]
    dpotrf(&lower, &P, k.M, &P, &info)
    if info != 0:
        return info
    dtrtrs(&lower, &notrans, &nonunit, &P, &one, k.M, &P, k.z, &P, &info)
    for i in range(P):
        logdet += 2.0 * log(k.M[i * P + i])
        zz += k.z[i] * k.z[i]
    f[0] = 0.5 * (k.sum_log_var + logdet + k.ywy - zz)
    return info


cdef double _log_prior(const double* theta, int n, double c) noexcept nogil:
    """Σ_k log(1 + θ_k²/c²): the half-Cauchy priors, up to a constant."""
    cdef int i
    cdef double total = 0.0, r
    for i in range(n):
        r = theta[i] / c
        total += log1p(r * r)
    return total


cdef int _design(_Design* d, object C, object y, object noise, object owner) except -1:
    d.C = _input(C, "C", 2)
    d.m = C.shape[0]
    d.P = C.shape[1]
    d.y = _input(y, "y", 1)
    d.noise = _input(noise, "noise", 1)
    _same_shape(y, "y", (d.m,))
    _same_shape(noise, "noise", (d.m,))
    if not (cnp.PyArray_Check(owner) and cnp.PyArray_TYPE(<cnp.ndarray>owner) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>owner) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>owner)):
        raise ValueError("owner must be a 1-D C-contiguous int64 ndarray")
    _same_shape(owner, "owner", (d.P,))
    d.owner = <const cnp.int64_t*>cnp.PyArray_DATA(<cnp.ndarray>owner) or <const cnp.int64_t*>&_ZERO
    return 0


cdef int _owners_fit(const _Design* d, Py_ssize_t n_theta) except -1:
    cdef Py_ssize_t i
    for i in range(d.P):
        if not 0 <= d.owner[i] < n_theta:
            raise ValueError(f"owner must be in [0, {n_theta}) (theta's length); got "
                             f"{d.owner[i]} at column {i}")
    return 0


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
    """
    cdef _Design d
    cdef _Work k
    _design(&d, C, y, noise, owner)
    cdef const double* th = _input(thetas, "thetas", 2)
    cdef const double* dv = _input(day_var, "day_var", 1)
    cdef Py_ssize_t G = thetas.shape[0], nt = thetas.shape[1], g
    _same_shape(day_var, "day_var", (G,))
    _owners_fit(&d, nt)
    cdef double c = _real(prior_scale, "prior_scale")
    cdef cnp.ndarray out = _empty(G)
    cdef double* f = _data(out)
    _work_alloc(&k, d.m, d.P)
    try:
        with nogil:
            for g in range(G):
                if g == 0 or dv[g] != dv[g - 1]:
                    _weighted_products(&d, dv[g], &k)
                if _factor(&d, th + g * nt, &k, f + g) != 0:
                    f[g] = NAN  # M not positive definite (X without support in W)
                else:
                    f[g] += _log_prior(th + g * nt, <int>nt, c)
    finally:
        _work_free(&k)
    return out


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
    """
    cdef _Design d
    cdef _Work k
    _design(&d, C, y, noise, owner)
    cdef const double* th = _input(theta, "theta", 1)
    cdef Py_ssize_t nt = theta.shape[0]
    _owners_fit(&d, nt)
    cdef double c = _real(prior_scale, "prior_scale")
    cdef cnp.ndarray grad = _empty(nt)
    cdef double* gr = _data(grad)
    cdef double f = NAN
    cdef int info = 0
    _work_alloc(&k, d.m, d.P)
    try:
        with nogil:
            _weighted_products(&d, th[0] * th[0], &k)
            info = _factor(&d, th, &k, &f)
            if info == 0:
                info = _gradient(&d, th, <int>nt, c, &k, gr)
            if info == 0:
                f += _log_prior(th, <int>nt, c)
    finally:
        _work_free(&k)
    if info != 0:
        return NAN, _np.full(nt, NAN)
    return f, grad


cdef int _gradient(const _Design* d, const double* theta, int nt, double c, _Work* k,
                   double* grad) noexcept nogil:
    """∂f/∂θ (reml_objective_grad's docstring), M's factor and S in ``k``. 0 or LAPACK's info."""
    cdef int i, j, n, info = 0, P = d.P, m = d.m
    cdef char lower = b'L'
    cdef double acc, r, h, e, wn, t0 = 0.0
    # M⁻¹ from the factor (dpotri: lower triangle), made full
    for i in range(P * P):
        k.Minv[i] = k.M[i]
    dpotri(&lower, &P, k.Minv, &P, &info)
    if info != 0:
        return info
    for j in range(P):
        for i in range(j + 1, P):
            k.Minv[i * P + j] = k.Minv[j * P + i]
    # coef = M⁻¹ g, u = S coef
    for i in range(P):
        acc = 0.0
        for j in range(P):
            acc += k.Minv[j * P + i] * k.s[j] * k.cy[j]
        k.z[i] = acc
        k.u[i] = k.s[i] * acc
    for i in range(nt):
        grad[i] = 0.0
    for i in range(P):
        if d.owner[i] == 0:
            continue
        # (M⁻¹ S A)_ii − coef_i (cy_i − (A u)_i)
        acc = 0.0
        r = 0.0
        for j in range(P):
            acc += k.Minv[j * P + i] * k.s[j] * k.A[i * P + j]
            r += k.A[i * P + j] * k.u[j]
        grad[d.owner[i]] += acc - k.z[i] * (k.cy[i] - r)
    for i in range(1, nt):
        if theta[i] < 0:
            grad[i] = -grad[i]
    # τ: B = S M⁻¹ S into Minv; per bin the fitted value r_n = c_n·u and h_n = c_nᵀ B c_n
    for j in range(P):
        for i in range(P):
            k.Minv[j * P + i] *= k.s[i] * k.s[j]
    if theta[0] != 0.0:
        for n in range(m):
            r = 0.0
            h = 0.0
            for i in range(P):
                r += d.C[n * P + i] * k.u[i]
                acc = 0.0
                for j in range(P):
                    acc += k.Minv[i * P + j] * d.C[n * P + j]
                h += d.C[n * P + i] * acc
            e = d.y[n] - r
            wn = k.w[n]
            t0 += wn * wn * (e * e + h - 1.0 / wn)
        grad[0] = -theta[0] * t0
    for i in range(nt):
        grad[i] += 2.0 * theta[i] / (c * c + theta[i] * theta[i])
    return 0
