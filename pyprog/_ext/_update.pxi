# Included by _kernels.pyx (one extension module): a learner's whole update in one call.
# policy_update runs every inner step of an update of a softmax policy (linear or with one
# tanh hidden layer) or of a Gaussian policy with a bounded mean: forward pass (_policy.h for
# the softmax policies), log π scattered to (N, H), the learner's
# coefficients (PDIS weights times a per-episode weight ζ, or the NWIS gradient of Pro-WLS),
# the entropy term, the backward pass and the optimiser's step. It is the compiled twin of
# pyprog.learn.learners.Learner.update's Python loop, which is its NumPy twin: the same
# operations in the same order (tests/test_update.py checks they agree to 1e-12).

cdef enum UpdateStatus:
    U_DONE = 0
    U_NO_FORECAST = 1
    U_NONFINITE_GRAD = 2
    U_NONFINITE_THETA = 3
    U_LAYER_OVERFLOW = 4

cdef enum OptimizerKind:
    O_SGD = 0
    O_RMSPROP = 1
    O_ADAM = 2

# what stopped policy_update (its second output)
UPDATE_DONE = U_DONE                        # every inner step was taken
UPDATE_NO_FORECAST = U_NO_FORECAST          # WLS rank-deficient: no gradient at this θ
UPDATE_NONFINITE_GRAD = U_NONFINITE_GRAD    # the gradient was NaN or infinite
UPDATE_NONFINITE_THETA = U_NONFINITE_THETA  # the step made θ NaN or infinite
UPDATE_LAYER_OVERFLOW = U_LAYER_OVERFLOW    # |W s + b| could overflow: no pass at this θ

# The largest layer bound (Policy.layer_bound: max |θ|, and for each affine layer the largest
# Σ_j c_j |W_kj| + |b_k|, c_j the largest |x_j| over the samples) a pass runs with: below it
# no sum of a layer overflows in any order, nor does a difference of two of its outputs
# (log-softmax), so the compiled and the NumPy passes are finite together (issue 35, item
# 10). float64, and float32 passes.
LAYER_BOUND_MAX = ldexp(1.0, 1022)
LAYER_BOUND_MAX_F32 = ldexp(1.0, 126)


cdef double _affine_bound(const double* c, const double* W, const double* b, Py_ssize_t d,
                          Py_ssize_t a) noexcept nogil:
    """max_k Σ_j c_j |W_kj| + |b_k| (W (a, d)): with c_j >= |x_ij| for every sample i, no
    partial sum of ``x @ W.T + b`` exceeds it, in any order; inf or NaN if it overflows."""
    cdef Py_ssize_t j, k
    cdef double top = 0.0, acc
    for k in range(a):
        acc = fabs(b[k])
        for j in range(d):
            acc += c[j] * fabs(W[k * d + j])
        if not acc <= top:
            top = acc
    return top


cdef double _layer_bound(const double* smax, const double* ones, const double* th,
                         Py_ssize_t d, Py_ssize_t hd, Py_ssize_t a, Py_ssize_t p) noexcept nogil:
    """The policy's layer bound (Policy.layer_bound): max |θ| and each layer's affine bound,
    on the largest |s_j| over the samples (``smax``), then on |tanh| <= 1 (``ones``, hd)."""
    cdef Py_ssize_t j
    cdef double top = 0.0, x
    for j in range(p):
        if not fabs(th[j]) <= top:
            top = fabs(th[j])
    if hd == 0:
        x = _affine_bound(smax, th, th + a * d, d, a)
        return x if not x <= top else top
    x = _affine_bound(smax, th, th + hd * d, d, hd)
    top = x if not x <= top else top
    x = _affine_bound(ones, th + hd * (d + 1), th + hd * (d + 1) + a * hd, hd, a)
    return x if not x <= top else top

# optimisers (the first item of policy_update's ``optimizer``)
OPT_SGD = O_SGD
OPT_RMSPROP = O_RMSPROP
OPT_ADAM = O_ADAM


cdef double* _output_data(object a, str name, Py_ssize_t n) except NULL:
    """Data pointer of a writeable C-contiguous float64 array of shape (n,)."""
    _input(a, name, 1)
    _same_shape(a, name, (n,))
    if not (<cnp.ndarray>a).flags.writeable:
        raise ValueError(f"{name} must be writeable: it is updated in place")
    return _data(<cnp.ndarray>a)


cdef inline bint _all_finite(const double* x, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = 0.0
    # x − x is 0 for a finite x and NaN otherwise: one branch-free pass
    for j in range(n):
        s += x[j] - x[j]
    return s == 0.0


cdef void _optimizer_step(int kind, double* theta, const double* grad, const double* lr,
                          double* s0, double* s1, double* buf, Py_ssize_t p, Py_ssize_t t,
                          double a, double b2, double eps) noexcept nogil:
    """One step of ``kind`` against ``grad`` (the loss's gradient), as pyprog.learn.optim."""
    cdef Py_ssize_t j
    cdef double bias2, bias1
    if kind == O_SGD:
        for j in range(p):
            theta[j] -= grad[j] * lr[j]
    elif kind == O_RMSPROP:
        # v ← α v + (1 − α) g²;  θ ← θ − lr · g / (√v + ε)
        for j in range(p):
            s0[j] = s0[j] * a + (grad[j] * grad[j]) * (1.0 - a)
            buf[j] = grad[j] / (sqrt(s0[j]) + eps)
            theta[j] -= buf[j] * lr[j]
    else:
        # m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²
        # θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)
        bias2 = sqrt(1.0 - pow(b2, <double>t))
        bias1 = 1.0 - pow(a, <double>t)
        for j in range(p):
            s0[j] = s0[j] * a + grad[j] * (1.0 - a)
            s1[j] = s1[j] * b2 + (grad[j] * grad[j]) * (1.0 - b2)
            buf[j] = s0[j] / (sqrt(s1[j]) / bias2 + eps)
            theta[j] -= (buf[j] * lr[j]) / bias1


def policy_update(theta, policy, obs, actions, index, log_beta, rewards, mask, gamma, clip,
                  steps, entropy_coef, zeta, wls, optimizer, single=False):
    """Every inner step of one update of a policy, in one call.

    Per step, at the current ``theta``::

        log π     = the policy's log π(a|s) of the stored steps, scattered to (N, H)
        coef      = PDIS weights g (pdis_weights) times zeta[i]        if zeta is given
                  = mask · (∂f/∂λ_i) λ_i [λ_i < clip]                  otherwise (Pro-WLS:
                    λ = episode_ratios, ∂f/∂λ = wls_forecast(phi, λ, returns, phi_star)[3])
        grad      = Σ coef ∇log π + entropy_coef Σ ∇H  (softmax_backward for softmax)
        theta     = optimiser step against −grad (gradient ascent)

    Parameters
    ----------
    theta : ndarray of float64, shape (P,)
        ``[W1.ravel(), b1, W.ravel(), b]`` (no W1, b1 without a hidden layer); updated in
        place.
    policy : tuple
        ``("softmax", A, Hd)``: a softmax over A >= 1 actions with Hd >= 0 tanh hidden
        units, P = Hd (D + 1) + A (F + 1), F = Hd or D. ``("gaussian", mid, half, dscale,
        std, log_norm)``: a Gaussian policy over K action dimensions whose mean
        ``mid + half tanh((W s + b) / 2)`` lies inside finite bounds (arrays (K,);
        ``dscale = half / (2 std)``; ``log_norm`` the density's constant), P = K (D + 1).
    obs : ndarray of float64, shape (M, D)
        The stored valid steps, episode-major.
    actions : ndarray of int64, shape (M,), or of float64, shape (M, K) (Gaussian)
    index : ndarray of int64, shape (M,)
        Increasing positions of the steps in a flattened (N, H) array.
    log_beta, rewards, mask : ndarray of float64, shape (N, H)
    gamma, clip : float
    steps : int
        Inner steps to take, >= 0.
    entropy_coef : float
        Coefficient of ∇H at every step (λ_H / M).
    zeta : ndarray of float64, shape (N,), or None
        Per-episode weight of the PDIS weights (ζ of Pro-OLS; 1/N for FTRL-PG and ONPG).
    wls : tuple (phi, returns, phi_star), or None
        Pro-WLS's design (N, d) Fortran-ordered, discounted returns (N,) and target
        features (d,), when ``zeta`` is None.
    optimizer : tuple
        ``(kind, lr, state0, state1, t, a, beta2, eps)``: kind ``OPT_SGD``,
        ``OPT_RMSPROP`` or ``OPT_ADAM``; lr (P,); the state arrays (P,) updated in place
        (RMSprop's square average in ``state0``; Adam's moments in both); Adam's step count
        ``t`` before the update; α (RMSprop) or β1 (Adam), β2 and ε.
    single : bool, default False
        Run a softmax policy's forward and backward passes in float32 (float32 policies):
        θ rounded to float32 at every step, the observations once; log π enters the PDIS
        weights, ratios and forecast as float64, the coefficients are rounded to float32
        for the backward pass, and its gradient comes back as float64 to the optimiser,
        whose state and θ stay float64. The two float32 passes run with subnormal floats
        flushed to zero (x86 FTZ/DAZ, restored after each; see ``_policy.h``).

    Returns
    -------
    done : int
        Steps completed.
    status : int
        ``UPDATE_DONE``, or what stopped step ``done + 1``: ``UPDATE_NO_FORECAST``,
        ``UPDATE_NONFINITE_GRAD``, ``UPDATE_NONFINITE_THETA`` (θ was updated) or
        ``UPDATE_LAYER_OVERFLOW`` (the layer bound of ``Policy.layer_bound`` exceeds
        ``LAYER_BOUND_MAX``, or ``LAYER_BOUND_MAX_F32`` with ``single``: the pass could
        overflow, and where is a matter of summation order). A Gaussian policy's gradient
        whose sums ``Σ_i |∂x_i s_ij|`` exceed ``LAYER_BOUND_MAX`` is non-finite (its finite
        digits would depend on the order of the sum).
    t : int
        Adam's step count after the update.
    """
    if not (isinstance(policy, tuple) and len(policy) in (3, 6)
            and policy[0] in ("softmax", "gaussian")):
        raise ValueError(
            "policy must be ('softmax', n_actions, n_hidden) or "
            "('gaussian', mid, half, dscale, std, log_norm)"
        )
    cdef bint gauss = policy[0] == "gaussian"
    cdef bint f32 = bool(single)
    cdef unsigned int fp_state = 0
    if f32 and gauss:
        raise ValueError("single=True (float32 passes) is for the softmax policies only")
    cdef Py_ssize_t a, hd = 0, n_steps = steps
    cdef const double* mid = NULL
    cdef const double* half = NULL
    cdef const double* dscale = NULL
    cdef const double* stdv = NULL
    cdef double log_norm = 0.0
    if gauss:
        a = len(policy[1])
        mid = _input(policy[1], "mid", 1)
        half = _input(policy[2], "half", 1)
        dscale = _input(policy[3], "dscale", 1)
        stdv = _input(policy[4], "std", 1)
        _same_shape(policy[2], "half", (a,))
        _same_shape(policy[3], "dscale", (a,))
        _same_shape(policy[4], "std", (a,))
        log_norm = _real(policy[5], "log_norm")
    else:
        a = policy[1]
        hd = policy[2]
    if a < 1 or hd < 0 or n_steps < 0:
        raise ValueError("n_actions must be >= 1, n_hidden and steps >= 0")
    cdef const double* s = _input(obs, "obs", 2)
    cdef Py_ssize_t m = obs.shape[0], d = obs.shape[1], f = hd if hd > 0 else d
    cdef Py_ssize_t n_hid = hd * (d + 1), p = n_hid + a * (f + 1)
    cdef double* th = _output_data(theta, "theta", p)
    cdef const cnp.int64_t* act = NULL
    cdef const double* act_f = NULL
    if gauss:
        act_f = _input(actions, "actions", 2)
        _same_shape(actions, "actions", (m, a))
    else:
        act = _actions(actions, m)
        _action_range(actions, act, m, a)
    if not (cnp.PyArray_Check(index) and cnp.PyArray_TYPE(<cnp.ndarray>index) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>index) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>index) and index.shape[0] == m):
        raise ValueError(f"index must be a C-contiguous int64 ndarray of shape ({m},)")
    cdef const cnp.int64_t* idx = <const cnp.int64_t*>cnp.PyArray_DATA(<cnp.ndarray>index)
    cdef const double* lb = _input(log_beta, "log_beta", 2)
    cdef Py_ssize_t n = log_beta.shape[0], h = log_beta.shape[1], nh = n * h
    cdef const double* rw = _input(rewards, "rewards", 2)
    cdef const double* mk = _input(mask, "mask", 2)
    _same_shape(rewards, "rewards", (n, h))
    _same_shape(mask, "mask", (n, h))
    cdef Py_ssize_t i, j, k, t, step = 0
    for k in range(m):
        if idx[k] < 0 or idx[k] >= nh or (k > 0 and idx[k] <= idx[k - 1]):
            raise ValueError(f"index must increase within [0, {nh}); got {idx[k]} at {k}")
    cdef double base = _gamma(gamma), clip_value = _clip(clip), log_clip = log(_clip(clip))
    cdef double ce_value = _real(entropy_coef, "entropy_coef")
    cdef const double* zt = NULL
    # Pro-WLS: its design Φ (N, d), returns (N,), φ* (d,), checked as wls_forecast does
    cdef const double* phi = NULL
    cdef const double* returns = NULL
    cdef const double* phi_star = NULL
    cdef int d_wls = 0, wls_status
    cdef double f_wls
    if zeta is not None:
        zt = _input(zeta, "zeta", 1)
        _same_shape(zeta, "zeta", (n,))
    elif not (isinstance(wls, tuple) and len(wls) == 3):
        raise ValueError("wls must be a tuple (phi, returns, phi_star) when zeta is None")
    else:
        phi = _input(wls[0], "phi", 2, fortran=True)
        d_wls = <int>wls[0].shape[1]
        _same_shape(wls[0], "phi", (n, d_wls))
        returns = _input(wls[1], "returns", 1)
        _same_shape(wls[1], "returns", (n,))
        phi_star = _input(wls[2], "phi_star", 1)
        _same_shape(wls[2], "phi_star", (d_wls,))
    if not (isinstance(optimizer, tuple) and len(optimizer) == 8):
        raise ValueError("optimizer must be a tuple (kind, lr, state0, state1, t, a, beta2, eps)")
    cdef int kind = optimizer[0]
    if kind not in (O_SGD, O_RMSPROP, O_ADAM):
        raise ValueError(f"optimizer kind must be 0, 1 or 2; got {kind}")
    cdef const double* lr = _input(optimizer[1], "lr", 1)
    _same_shape(optimizer[1], "lr", (p,))
    cdef double* s0 = _output_data(optimizer[2], "state0", p)
    cdef double* s1 = _output_data(optimizer[3], "state1", p)
    cdef Py_ssize_t t_adam = optimizer[4]
    cdef double opt_a = optimizer[5], opt_b2 = optimizer[6], opt_eps = optimizer[7]
    cdef int status = U_DONE
    cdef bint overflow
    cdef double acc, x, tt, z
    cdef double bound_max = LAYER_BOUND_MAX_F32 if f32 else LAYER_BOUND_MAX
    # Python-visible work: log π (N, H) for the exact PDIS fallback and Pro-WLS's kernels
    cdef cnp.ndarray log_pi_arr = _empty(n, h)
    cdef double* log_pi = _data(log_pi_arr)
    # C work: W1ᵀ, forward scratch, hidden, log_probs, probs, log_prob, entropy, g, c,
    # discount, coef, coef_e, grad, backward work, optimiser buffer, per-episode coefficient,
    # Pro-WLS's λ, w, ∂f/∂y, ∂f/∂λ, and the layer bound's largest |s_j| (then hd ones)
    cdef Py_ssize_t sizes[21]
    sizes[:] = [d * hd, (2 * a + 4) * PYPROG_ROWS, m * hd, m * a, m * a, m, m, nh, h, h,
                m, m, p, d * hd + a + hd + 1, p, n, n, d_wls, n, n, d + hd]
    cdef Py_ssize_t total = 0
    for j in range(21):
        total += sizes[j] + 1
    cdef double* block = <double*>malloc(total * sizeof(double))
    cdef cnp.npy_bool* unc = <cnp.npy_bool*>malloc(n + 1)  # λ unclipped
    cdef Py_ssize_t* episode = <Py_ssize_t*>malloc((m + 1) * sizeof(Py_ssize_t))  # idx // h
    if block == NULL or unc == NULL or episode == NULL:
        free(block)
        free(unc)
        free(episode)
        raise MemoryError()
    for k in range(m):
        episode[k] = idx[k] // h if h > 0 else 0
    cdef double* ptrs[21]
    cdef double* cursor = block
    for j in range(21):
        ptrs[j] = cursor
        cursor += sizes[j] + 1
    cdef double* w1t = ptrs[0]
    cdef double* fscratch = ptrs[1]
    cdef double* hidden = ptrs[2]
    cdef double* lps = ptrs[3]
    cdef double* prs = ptrs[4]
    cdef double* lp = ptrs[5]
    cdef double* ent = ptrs[6]
    cdef double* g = ptrs[7]
    cdef double* c = ptrs[8]
    cdef double* discount = ptrs[9]
    cdef double* coef = ptrs[10]
    cdef double* coef_e = ptrs[11]
    cdef double* grad = ptrs[12]
    cdef double* bwork = ptrs[13]
    cdef double* obuf = ptrs[14]
    cdef double* per = ptrs[15]
    cdef double* lam = ptrs[16]
    cdef double* w_wls = ptrs[17]
    cdef double* dfdy = ptrs[18]
    cdef double* dfdlam = ptrs[19]
    cdef double* smax = ptrs[20]
    cdef const double* W1 = th
    cdef const double* b1 = th + hd * d
    cdef const double* W = th + n_hid
    cdef const double* b = th + n_hid + a * f
    # float32 work (single=True): obs, θ, W1ᵀ, forward scratch, hidden, log_probs, probs,
    # log_prob, entropy, coef, coef_e, grad, backward work
    cdef Py_ssize_t sizes32[13]
    sizes32[:] = [m * d, p, d * hd, (2 * a + 4) * PYPROG_ROWS, m * hd, m * a, m * a, m, m,
                  m, m, p, d * hd + a + hd + 1]
    cdef float* block32 = NULL
    cdef float* ptrs32[13]
    if f32:
        total = 0
        for j in range(13):
            total += sizes32[j] + 1
        block32 = <float*>malloc(total * sizeof(float))
        if block32 == NULL:
            free(block)
            raise MemoryError()
        ptrs32[0] = block32
        for j in range(1, 13):
            ptrs32[j] = ptrs32[j - 1] + sizes32[j - 1] + 1
        for j in range(m * d):
            ptrs32[0][j] = <float>s[j]
        for k in range(m):
            ptrs32[10][k] = <float>ce_value
    cdef float* s32 = ptrs32[0]
    cdef float* th32 = ptrs32[1]
    cdef float* w1t32 = ptrs32[2]
    cdef float* fscratch32 = ptrs32[3]
    cdef float* hidden32 = ptrs32[4]
    cdef float* lps32 = ptrs32[5]
    cdef float* prs32 = ptrs32[6]
    cdef float* lp32 = ptrs32[7]
    cdef float* ent32 = ptrs32[8]
    cdef float* coef32 = ptrs32[9]
    cdef float* coef_e32 = ptrs32[10]
    cdef float* grad32 = ptrs32[11]
    cdef float* bwork32 = ptrs32[12]
    try:
        with nogil:
            for t in range(h):
                discount[t] = pow(base, <double>t)
            for k in range(m):
                coef_e[k] = ce_value
            # the largest |s_j| over the samples (smax), and hd ones, for the layer bound
            for j in range(d):
                smax[j] = 0.0
            for i in range(m):
                for j in range(d):
                    if fabs(s[i * d + j]) > smax[j]:
                        smax[j] = fabs(s[i * d + j])
            for j in range(hd):
                smax[d + j] = 1.0
            while step < n_steps:
                # no pass where a layer's sums could overflow (Policy.layer_bound)
                if not _layer_bound(smax, smax + d, th, d, hd, a, p) <= bound_max:
                    status = U_LAYER_OVERFLOW
                    break
                if gauss:
                    # t = tanh((W s + b) / 2);  z = (a − (mid + half t)) / std  (in lps)
                    # log π = −½ Σ_k z_k² + log_norm
                    for i in range(m):
                        acc = 0.0
                        for k in range(a):
                            x = 0.0
                            for j in range(d):
                                x += s[i * d + j] * W[k * d + j]
                            # libm's tanh, not pyprog_tanh: the Gaussian path is short, and
                            # this keeps it within rounding of the NumPy twin's np.tanh
                            tt = tanh((x + b[k]) * 0.5)
                            prs[i * a + k] = tt
                            z = (act_f[i * a + k] - (tt * half[k] + mid[k])) / stdv[k]
                            lps[i * a + k] = z
                            acc += z * z
                        lp[i] = acc * -0.5 + log_norm
                elif f32:
                    # the same forward pass in float32, at θ rounded to float32
                    for j in range(p):
                        th32[j] = <float>th[j]
                    for j in range(hd):
                        for k in range(d):
                            w1t32[k * hd + j] = th32[j * d + k]
                    fp_state = pyprog_flush_subnormals()  # see _policy.h
                    pyprog_softmax_forward_f32(s32, act, m, d, w1t32, th32 + hd * d, hd,
                                               th32 + n_hid, th32 + n_hid + a * f, a,
                                               hidden32 if hd > 0 else NULL, lps32, prs32,
                                               lp32, ent32, fscratch32)
                    pyprog_restore_fp(fp_state)
                    for k in range(m):
                        lp[k] = lp32[k]
                else:
                    # forward pass at the current θ (W1 transposed, as softmax_forward does)
                    for j in range(hd):
                        for k in range(d):
                            w1t[k * hd + j] = W1[j * d + k]
                    pyprog_softmax_forward(s, act, m, d, w1t, b1, hd, W, b, a,
                                           hidden if hd > 0 else NULL, lps, prs, lp, ent,
                                           fscratch)
                # log π scattered to (N, H), 0 on padding
                if m != nh:
                    for j in range(nh):
                        log_pi[j] = 0.0
                for k in range(m):
                    log_pi[idx[k]] = lp[k]
                if zt != NULL:
                    # g = pdis_weights(log π, log β, r, mask) * ζ[:, None]
                    overflow = False
                    for i in range(n):
                        acc = _pdis_row(log_pi + i * h, lb + i * h, rw + i * h, mk + i * h,
                                        discount, h, log_clip, c, g + i * h)
                        if not isfinite(acc):
                            overflow = True
                    if overflow:  # recompute exactly, as pdis_weights does (or raise)
                        with gil:
                            g_arr, _ = pdis_weights(log_pi_arr, log_beta, rewards, mask,
                                                    gamma, clip)
                            memcpy(g, _data(g_arr), nh * sizeof(double))
                    for i in range(n):
                        for t in range(h):
                            g[i * h + t] *= zt[i]
                    for k in range(m):
                        coef[k] = g[idx[k]]
                else:
                    # Pro-WLS: mask · (∂f/∂λ_i) λ_i [λ_i unclipped], by the kernels' own code
                    # (episode_ratios, wls_forecast) without the GIL
                    _episode_ratios(log_pi, lb, mk, n, h, log_clip, lam, unc)
                    for i in range(n):
                        if not isfinite(lam[i]):  # the exact ratio (or its error)
                            with gil:
                                _exact_ratios(log_pi_arr, log_beta, mask, clip_value, lam, unc)
                            break
                    wls_status = _wls_solve(phi, lam, returns, phi_star, n, d_wls, &f_wls,
                                            w_wls, dfdy, dfdlam)
                    if wls_status < 0:
                        with gil:
                            raise MemoryError()
                    if wls_status == RANK_DEFICIENT:
                        status = U_NO_FORECAST
                        break
                    for i in range(n):
                        per[i] = dfdlam[i] * lam[i] * (1.0 if unc[i] else 0.0)
                    for k in range(m):
                        coef[k] = mk[idx[k]] * per[episode[k]]
                # backward pass: grad = [∂W1, ∂b1, ∂W, ∂b]
                for j in range(p):
                    grad[j] = 0.0
                for j in range(d * hd):
                    bwork[j] = 0.0
                if gauss:
                    # dx = c (1 − t²) z dscale;  ∂W += dx sᵀ, ∂b += dx  (H is constant);
                    # obuf = the same sums of |terms|, the bound of every partial sum
                    for j in range(p):
                        obuf[j] = 0.0
                    for i in range(m):
                        for k in range(a):
                            tt = prs[i * a + k]
                            x = (1.0 - tt * tt) * lps[i * a + k] * dscale[k] * coef[i]
                            for j in range(d):
                                grad[k * d + j] += x * s[i * d + j]
                                obuf[k * d + j] += fabs(x) * fabs(s[i * d + j])
                            grad[a * d + k] += x
                            obuf[a * d + k] += fabs(x)
                    for j in range(p):
                        if not obuf[j] <= bound_max:
                            grad[j] = INFINITY
                elif f32:
                    for j in range(p):
                        grad32[j] = 0.0
                    for j in range(d * hd):
                        bwork32[j] = 0.0
                    for k in range(m):
                        coef32[k] = <float>coef[k]
                    fp_state = pyprog_flush_subnormals()
                    pyprog_softmax_backward_f32(s32, act, m, d, hd, th32 + n_hid, a,
                                                hidden32 if hd > 0 else s32, lps32, prs32,
                                                ent32, coef32, coef_e32, bwork32,
                                                grad32 + hd * d, grad32 + n_hid,
                                                grad32 + n_hid + a * f, bwork32 + d * hd)
                    pyprog_restore_fp(fp_state)
                    for j in range(p):
                        grad[j] = grad32[j]
                    for j in range(d * hd):
                        bwork[j] = bwork32[j]
                else:
                    pyprog_softmax_backward(s, act, m, d, hd, W, a, hidden if hd > 0 else s,
                                            lps, prs, ent, coef, coef_e, bwork, grad + hd * d,
                                            grad + n_hid, grad + n_hid + a * f, bwork + d * hd)
                for j in range(hd):
                    for k in range(d):
                        grad[j * d + k] = bwork[k * hd + j]
                if not _all_finite(grad, p):
                    status = U_NONFINITE_GRAD
                    break
                # optimisers minimise: step against −grad
                for j in range(p):
                    grad[j] = -grad[j]
                t_adam += 1
                _optimizer_step(kind, th, grad, lr, s0, s1, obuf, p, t_adam, opt_a, opt_b2,
                                opt_eps)
                if not _all_finite(th, p):
                    status = U_NONFINITE_THETA
                    break
                step += 1
    finally:
        free(block)
        free(unc)
        free(episode)
        free(block32)
    return step, status, t_adam
