# Included by _kernels.pyx (one extension module): the softmax policies' batched passes.
# softmax_forward (hidden layer, logits, log-softmax, probabilities, entropies) and
# softmax_backward (their vector-Jacobian product), over the C loops of _policy.h, with the
# checks of actions and of reused output arrays. NumPy twins in fallback.py.


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
