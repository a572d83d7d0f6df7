# Included by _kernels.pyx (one extension module): per-decision importance sampling.
# pdis_weights (reversed cumulative PDIS sums of clipped ratios, one episode per row, by
# _pdis_row) and episode_ratios (whole-episode clipped ratios); NumPy twins in fallback.py.
# Where the CPU runs AVX-512, both run blocks of PYPROG_EPISODES rows side by side, one vector
# across the rows (_loops.h), and the last n % PYPROG_EPISODES rows one by one, with the same
# results; elsewhere every row goes one by one (faster there, see _loops.h).


cdef extern from "_loops.h" nogil:
    enum: PYPROG_EPISODES
    int pyprog_rows_side_by_side()
    void pyprog_pdis_rows(const double* log_pi, const double* log_beta,
                          const double* rewards, const double* mask, const double* discount,
                          Py_ssize_t h, double log_clip, double* scratch, double* g, double* J)
    void pyprog_ratio_sums(const double* log_pi, const double* log_beta, const double* mask,
                           Py_ssize_t h, double* s)

cdef bint _SIDE_BY_SIDE = pyprog_rows_side_by_side()


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
    # blocks of PYPROG_EPISODES rows need 8 steps or more (shorter rows go one by one)
    cdef bint blocks = _SIDE_BY_SIDE and h >= 8
    cdef Py_ssize_t n_blocked = n - n % PYPROG_EPISODES if blocks else 0, b
    cdef cnp.ndarray g_out = _empty(n, h), J_out = _empty(n)
    cdef double* g = _data(g_out)
    cdef double* J = _data(J_out)
    cdef double log_clip = log(clip_value)
    if h == 0:
        for i in range(n):
            J[i] = 0.0
        return g_out, J_out
    # scratch: discount = gamma ** np.arange(H), then a block's terms, step-major
    # (PYPROG_EPISODES * H doubles), whose first H doubles are also one row of c for the rows
    # done one by one
    cdef double* discount = <double*>malloc((1 + (PYPROG_EPISODES if blocks else 1)) * h
                                            * sizeof(double))
    if discount == NULL:
        raise MemoryError()
    with nogil:
        for t in range(h):
            discount[t] = pow(base, <double>t)
        for b in range(n_blocked // PYPROG_EPISODES):
            i = b * PYPROG_EPISODES
            pyprog_pdis_rows(lp + i * h, lb + i * h, r + i * h, m + i * h,
                             discount, h, log_clip, discount + h, g + i * h, J + i)
        for i in range(n_blocked, n):
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
    cdef Py_ssize_t n = shape[0], h = shape[1]
    cdef cnp.ndarray lam_out = _empty(n), unclipped_out = _empty(n, -1, cnp.NPY_BOOL)
    cdef double* lam = _data(lam_out)
    cdef cnp.npy_bool* unclipped = <cnp.npy_bool*>cnp.PyArray_DATA(unclipped_out)
    cdef double clip_value = _clip(clip)
    with nogil:
        _episode_ratios(lp, lb, m, n, h, log(clip_value), lam, unclipped)
    _exact_ratios(log_pi, log_beta, mask, clip_value, lam, unclipped)
    return lam_out, unclipped_out


cdef void _episode_ratios(const double* lp, const double* lb, const double* m, Py_ssize_t n,
                          Py_ssize_t h, double log_clip, double* lam,
                          cnp.npy_bool* unclipped) noexcept nogil:
    """The work of ``episode_ratios`` (also run by policy_update); non-finite ratios are left
    to ``_exact_ratios``."""
    cdef Py_ssize_t n_blocked = n - n % PYPROG_EPISODES if _SIDE_BY_SIDE and h >= 8 else 0, b
    cdef Py_ssize_t i, t
    cdef double s
    # lam = np.where(valid, log_pi - log_beta, 0).sum(axis=1), PYPROG_EPISODES rows at once
    for b in range(n_blocked // PYPROG_EPISODES):
        i = b * PYPROG_EPISODES
        pyprog_ratio_sums(lp + i * h, lb + i * h, m + i * h, h, lam + i)
    for i in range(n_blocked, n):
        s = 0.0
        for t in range(i * h, (i + 1) * h):
            if m[t] != 0.0:
                s = s + (lp[t] - lb[t])
        lam[i] = s
    for i in range(n):
        # np.exp(np.minimum(s, log_clip)), NaN propagating
        s = lam[i]
        lam[i] = exp(log_clip if s > log_clip else s)
        unclipped[i] = s < log_clip


cdef int _exact_ratios(object log_pi, object log_beta, object mask, double clip_value,
                       double* lam, cnp.npy_bool* unclipped) except -1:
    """Where a ratio of ``_episode_ratios`` is not finite: the exact one (or its error)."""
    cdef Py_ssize_t i
    for i in range(log_pi.shape[0]):
        if not isfinite(lam[i]):
            lam[i], unclipped[i] = _exact.episode_ratio_exact(
                i, log_pi[i], log_beta[i], mask[i], clip_value
            )
    return 0
