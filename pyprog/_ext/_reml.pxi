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
    double* A2    # (P, P) Cᵀ W² C, upper triangle (the gradient in τ)
    double ywy
    double sum_log_var  # Σ log(σ² + v)


cdef int _work_alloc(_Work* k, int m, int P) except -1:
    k.w = <double*>malloc(max(m, 1) * sizeof(double))
    k.X = <double*>malloc(max(m * P, 1) * sizeof(double))
    k.A = <double*>malloc(max(P * P, 1) * sizeof(double))
    k.cy = <double*>malloc(max(P, 1) * sizeof(double))
    k.M = <double*>malloc(max(P * P, 1) * sizeof(double))
    k.s = <double*>malloc(max(P, 1) * sizeof(double))
    k.z = <double*>malloc(max(P, 1) * sizeof(double))
    k.Minv = <double*>malloc(max(P * P, 1) * sizeof(double))
    k.u = <double*>malloc(max(P, 1) * sizeof(double))
    k.A2 = <double*>malloc(max(P * P, 1) * sizeof(double))
    if not (k.w and k.X and k.A and k.cy and k.M and k.s and k.z and k.Minv and k.u and k.A2):
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
    free(k.A2)


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
        NaN where M is not positive definite (a fixed column without weight).
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
        Both NaN where M is not positive definite.
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
    cdef char lower = b'L', upper = b'U', notrans = b'N'
    cdef double acc, r, h, e, wn, t0 = 0.0, one = 1.0, zero = 0.0
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
    # τ: Σ_n w_n² ((ȳ_n − r_n)² − 1/w_n) bin by bin, and Σ_n w_n² h_n = tr(S M⁻¹ S A₂) with
    # A₂ = Cᵀ W² C (upper triangle), by dsyrk of w ∘ C written over X (no longer needed)
    if theta[0] != 0.0:
        for n in range(m):
            r = 0.0
            for i in range(P):
                r += d.C[n * P + i] * k.u[i]
                k.X[n * P + i] = k.w[n] * d.C[n * P + i]
            e = d.y[n] - r
            wn = k.w[n]
            t0 += wn * wn * e * e - wn
        dsyrk(&upper, &notrans, &P, &m, &one, k.X, &P, &zero, k.A2, &P)
        for j in range(P):
            for i in range(j + 1):  # A₂'s upper triangle: (i, j) at [j P + i], i <= j
                h = k.Minv[j * P + i] * k.s[i] * k.s[j] * k.A2[j * P + i]
                t0 += h if i == j else 2.0 * h
        grad[0] = -theta[0] * t0
    for i in range(nt):
        grad[i] += 2.0 * theta[i] / (c * c + theta[i] * theta[i])
    return 0


# reml_fit's search (its docstring): Armijo's sufficient decrease, the step's halvings, the
# stopping tolerances on the projected gradient and on the objective's relative decrease
# (L-BFGS-B's defaults), the smallest variance at which the gradient is read, and the
# least curvature sᵀy / (‖s‖ ‖y‖) of a step that updates B (below it B restarts at I).
cdef double _ARMIJO = 1e-4
cdef int _HALVINGS = 40
cdef double _GTOL = 1e-5
cdef double _FTOL = 2.220446049250313e-09
cdef double _FLOOR = 1e-12
cdef double _CURVATURE = 1e-10
REML_ARMIJO, REML_HALVINGS, REML_GTOL, REML_FTOL, REML_FLOOR, REML_CURVATURE = (
    _ARMIJO, _HALVINGS, _GTOL, _FTOL, _FLOOR, _CURVATURE
)


cdef int _fg_variances(const _Design* d, const double* u, int nt, double c, _Work* k,
                       double* th, double* f, double* g) noexcept nogil:
    """f and its gradient in u = θ²/c² (θ read at u ≥ _FLOOR): 0 or LAPACK's info."""
    cdef int i, info
    for i in range(nt):
        th[i] = c * sqrt(u[i] if u[i] > _FLOOR else _FLOOR)
    _weighted_products(d, th[0] * th[0], k)
    info = _factor(d, th, k, f)
    if info != 0:
        return info
    info = _gradient(d, th, nt, c, k, g)
    f[0] += _log_prior(th, nt, c)
    for i in range(nt):  # ∂f/∂u = ∂f/∂θ · c² / (2θ)
        g[i] *= c * c / (2.0 * th[i])
    return info


cdef int _free_direction(const double* B, const double* g, const double* u, int n,
                         double* bound, double* L, double* p) noexcept nogil:
    """p = −B_FF⁻¹ g_F on the free set F (``bound[i] = 0``), 0 elsewhere; a variable at 0
    the step would push below it joins the bound set and p is solved again. 0, or −1 when
    B_FF is not positive definite."""
    cdef int i, j, q, rounds
    cdef double acc
    cdef bint grown
    for rounds in range(n + 1):
        # Cholesky of B_FF in place of the full n × n (bound rows and columns: identity)
        for i in range(n):
            for j in range(i + 1):
                if bound[i] != 0.0 or bound[j] != 0.0:
                    L[i * n + j] = 1.0 if i == j else 0.0
                    continue
                acc = B[i * n + j]
                for q in range(j):
                    acc -= L[i * n + q] * L[j * n + q]
                if i == j:
                    if not acc > 0.0:
                        return -1
                    L[i * n + i] = sqrt(acc)
                else:
                    L[i * n + j] = acc / L[j * n + j]
        for i in range(n):  # L z = −g_F
            acc = 0.0 if bound[i] != 0.0 else -g[i]
            for q in range(i):
                acc -= L[i * n + q] * p[q]
            p[i] = acc / L[i * n + i]
        for i in range(n - 1, -1, -1):  # Lᵀ p = z
            acc = p[i]
            for q in range(i + 1, n):
                acc -= L[q * n + i] * p[q]
            p[i] = acc / L[i * n + i]
        grown = False
        for i in range(n):
            if bound[i] == 0.0 and u[i] <= 0.0 and p[i] < 0.0:
                bound[i] = 1.0
                grown = True
        if not grown:
            return 0
    return 0


cdef int _bounded_bfgs(const _Design* d, double* u, int nt, double c, int maxiter,
                       _Work* k, double* buf, int* evaluations) noexcept nogil:
    """Minimise f over u >= 0 from u (in place) by BFGS on the free variables with a
    backtracking search inside the bounds (a trial point where M is not positive definite
    is rejected). 0 on convergence, 1 at maxiter, 2 when M is not positive definite at the
    start."""
    cdef double* th = buf
    cdef double* g = buf + nt
    cdef double* un = buf + 2 * nt
    cdef double* gn = buf + 3 * nt
    cdef double* p = buf + 4 * nt
    cdef double* sv = buf + 5 * nt
    cdef double* yv = buf + 6 * nt
    cdef double* Bs = buf + 7 * nt
    cdef double* bound = buf + 8 * nt
    cdef double* B = buf + 9 * nt  # nt × nt Hessian approximation
    cdef double* L = buf + 9 * nt + nt * nt
    cdef int i, it, h, info, stop
    cdef double f, fn, slope, alpha, norm, sy, ss, yy, pg, decrease, ratio
    cdef bint first = True, bounded
    _identity(B, nt)
    info = _fg_variances(d, u, nt, c, k, th, &f, g)
    evaluations[0] = 1
    if info != 0:
        return 2
    for it in range(maxiter):
        # bound: at 0 with the gradient pointing out; the projected gradient's size
        pg = 0.0
        for i in range(nt):
            bound[i] = 1.0 if (u[i] <= 0.0 and g[i] > 0.0) else 0.0
            if bound[i] == 0.0 and fabs(g[i]) > pg:
                pg = fabs(g[i])
        if pg <= _GTOL:
            return 0
        if _free_direction(B, g, u, nt, bound, L, p) != 0:
            _identity(B, nt)  # lost its curvature: start again
            first = True
            _free_direction(B, g, u, nt, bound, L, p)
        norm = 0.0
        for i in range(nt):
            norm += p[i] * p[i]
        if norm == 0.0:
            return 0  # every variable that could move is held at 0
        alpha = 1.0 / sqrt(norm) if first and norm > 1.0 else 1.0
        # the longest step inside the bounds; the variable that stops it lands on 0
        stop = -1
        ratio = INFINITY
        for i in range(nt):
            if p[i] < 0.0 and u[i] / (-p[i]) < ratio:
                ratio = u[i] / (-p[i])
                stop = i
        if ratio < alpha:
            alpha = ratio
        for h in range(_HALVINGS):
            slope = 0.0
            for i in range(nt):
                un[i] = u[i] + alpha * p[i]
                if un[i] < 0.0 or (i == stop and alpha == ratio):
                    un[i] = 0.0
                slope += g[i] * (un[i] - u[i])
            info = _fg_variances(d, un, nt, c, k, th, &fn, gn)
            evaluations[0] += 1
            if info == 0 and fn <= f + _ARMIJO * slope:
                break
            alpha *= 0.5
        else:
            return 0  # no decrease along the direction: at the mode to working precision
        decrease = f - fn
        sy = 0.0
        for i in range(nt):
            # the curvature of the variables still free: one the step laid on its bound
            # would scale B by the gradient's jump there
            bounded = un[i] <= 0.0 and gn[i] > 0.0
            sv[i] = 0.0 if bounded else un[i] - u[i]
            yv[i] = 0.0 if bounded else gn[i] - g[i]
            sy += sv[i] * yv[i]
            u[i] = un[i]
            g[i] = gn[i]
        f = fn
        if decrease <= _FTOL * max(fabs(f), fabs(fn + decrease), 1.0):
            return 0
        ss = 0.0
        yy = 0.0
        for i in range(nt):
            ss += sv[i] * sv[i]
            yy += yv[i] * yv[i]
        if sy > _CURVATURE * sqrt(ss * yy):
            _bfgs_update(B, sv, yv, Bs, sy, nt, first)
            first = False
        else:  # f is not convex along the step: B's curvature misleads, start again
            _identity(B, nt)
            first = True
    return 1


cdef void _identity(double* B, int n) noexcept nogil:
    cdef int i
    for i in range(n * n):
        B[i] = 1.0 if i % (n + 1) == 0 else 0.0


cdef void _bfgs_update(double* B, const double* s, const double* y, double* Bs, double sy,
                       int n, bint first) noexcept nogil:
    """B ← B − B s sᵀ B / sᵀBs + y yᵀ / sᵀy; B scaled to yᵀy / sᵀy first after a reset
    (Nocedal & Wright, eq. 6.20, for the Hessian)."""
    cdef int i, j
    cdef double yy = 0.0, sBs = 0.0
    if first:
        for i in range(n):
            yy += y[i] * y[i]
        for i in range(n * n):
            B[i] *= yy / sy
    for i in range(n):
        Bs[i] = 0.0
        for j in range(n):
            Bs[i] += B[i * n + j] * s[j]
        sBs += s[i] * Bs[i]
    for i in range(n):
        for j in range(n):
            B[i * n + j] += y[i] * y[j] / sy - Bs[i] * Bs[j] / sBs


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
    cdef _Design d
    cdef _Work k
    _design(&d, C, y, noise, owner)
    cdef const double* st = _input(start, "start", 1)
    cdef int nt = <int>start.shape[0], i, evaluations = 0, status = 0
    _owners_fit(&d, nt)
    cdef double c = _real(prior_scale, "prior_scale")
    if isinstance(maxiter, bool) or not isinstance(maxiter, numbers.Integral) or maxiter < 1:
        raise ValueError(f"maxiter must be an integer >= 1; got {maxiter!r}")
    cdef int iters = <int>min(maxiter, 2**30)
    cdef cnp.ndarray out = _empty(nt)
    cdef double* u = _data(out)
    cdef double* buf = <double*>malloc((9 * nt + 2 * nt * nt) * sizeof(double))
    if buf == NULL:
        raise MemoryError()
    for i in range(nt):
        u[i] = (st[i] / c) * (st[i] / c)
    try:
        _work_alloc(&k, d.m, d.P)
        try:
            with nogil:
                status = _bounded_bfgs(&d, u, nt, c, iters, &k, buf, &evaluations)
        finally:
            _work_free(&k)
    finally:
        free(buf)
    if status > 1:
        raise _np.linalg.LinAlgError("M is not positive definite at start")
    for i in range(nt):
        u[i] = c * sqrt(u[i])
    return out, evaluations, status == 0
