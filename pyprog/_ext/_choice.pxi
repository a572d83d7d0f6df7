# Included by _kernels.pyx (one extension module): the one-standard-error choice among
# forecasters, repeated in every replicate of basis="auto"'s bootstrap (issue 18, speed),
# and the replicates' block moments on long logs (issue 35). NumPy twins in
# fallback_bootstrap.py.


cdef const void* _typed(object a, str name, int ndim, int typenum, str what) except NULL:
    """Data pointer of a C-contiguous array of ``ndim`` dimensions and type ``typenum``."""
    if not (cnp.PyArray_Check(a) and cnp.PyArray_TYPE(<cnp.ndarray>a) == typenum
            and cnp.PyArray_NDIM(<cnp.ndarray>a) == ndim
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)):
        raise ValueError(f"{name} must be a {ndim}-D C-contiguous {what} ndarray")
    return cnp.PyArray_DATA(<cnp.ndarray>a) or <const void*>&DBL_EPSILON


# ties of mean backtest losses, relative to the best's mean |loss| (fallback_bootstrap.py)
cdef double LOSS_RTOL = 1e-6


def one_se_choice(F, S1, W, usable, Py_ssize_t step, double se_rule):
    """The one-standard-error rule's choice in each bootstrap replicate, from its backtests.

    Replicate ``b``'s backtest loss of candidate ``c`` at origin ``o`` is
    ``L[c, o] = F[b, c, o] (W[o] F[b, c, o] − 2 S1[b, o])`` (the squared error
    ``(S1 − W F)²/W`` up to a term the same for every candidate), ``inf`` where
    ``usable[c]`` is false. The best candidate has the least mean loss; the choice is the
    first candidate whose mean loss is within ``se_rule`` standard errors of the best's,
    the standard error that of the per-origin loss differences to the best, taken at
    every ``step``-th origin (``ddof = 1``; 0 with a single one), or tied with it (a gap
    of at most ``LOSS_RTOL`` = 1e-6 times the best's mean ``|L|``). A candidate whose mean
    is not finite is never chosen; with none finite, candidate 0.
    :func:`pyprog.forecast.selection.choose` on the same losses, replicate by replicate,
    without the (B, C, m) arrays of losses and differences.

    Parameters
    ----------
    F : ndarray of float32, shape (B, C, m)
        Backtest forecasts (weight-summed), per replicate, candidate and origin.
    S1 : ndarray of float32, shape (B, m)
        Backtest targets ``Σ_j w_j y*_j`` over each origin's next δ episodes.
    W : ndarray of float64, shape (m,)
        The targets' weight sums ``Σ_j w_j``.
    usable : ndarray of bool, shape (C,)
    step : int >= 1
    se_rule : float >= 0

    Returns
    -------
    pick : ndarray of int64, shape (B,)
    """
    cdef const float* f = <const float*>_typed(F, "F", 3, cnp.NPY_FLOAT32, "float32")
    cdef Py_ssize_t nb = F.shape[0], nc = F.shape[1], m = F.shape[2]
    cdef const float* s1 = <const float*>_typed(S1, "S1", 2, cnp.NPY_FLOAT32, "float32")
    cdef const double* w = _input(W, "W", 1)
    _same_shape(S1, "S1", (nb, m))
    _same_shape(W, "W", (m,))
    cdef const cnp.npy_bool* ok = <const cnp.npy_bool*>_typed(
        usable, "usable", 1, cnp.NPY_BOOL, "bool")
    _same_shape(usable, "usable", (nc,))
    if step < 1:
        raise ValueError(f"step must be >= 1; got {step}")
    if not se_rule >= 0:
        raise ValueError(f"se_rule must be >= 0; got {se_rule}")
    cdef cnp.ndarray out = _empty(nb, -1, cnp.NPY_INT64)
    cdef cnp.int64_t* pick = <cnp.int64_t*>cnp.PyArray_DATA(out)
    cdef double* work = <double*>malloc((nc * m + nc + 1) * sizeof(double))
    if work == NULL:
        raise MemoryError()
    cdef double* L = work
    cdef double* mean = work + nc * m
    cdef Py_ssize_t b, c, o, best, ns = (m + step - 1) // step if m > 0 else 0
    cdef double x, gap, d, dm, ss, se, tie
    with nogil:
        for b in range(nb):
            # L = F ⊙ (W F − 2 S1), inf for unusable candidates; mean over origins
            for c in range(nc):
                mean[c] = 0.0
                for o in range(m):
                    x = f[(b * nc + c) * m + o]
                    # in double, from float32 inputs (as NumPy promotes them)
                    L[c * m + o] = (x * (w[o] * x - 2.0 * <double>s1[b * m + o]) if ok[c]
                                    else INFINITY)
                    mean[c] += L[c * m + o]
                mean[c] = mean[c] / m if isfinite(mean[c]) and m > 0 else INFINITY
            best = 0
            for c in range(1, nc):
                if mean[c] < mean[best]:
                    best = c
            pick[b] = 0
            # ties: within LOSS_RTOL of the best's mean |L| (rounding, e.g. a constant series)
            tie = 0.0
            for o in range(m):
                tie += fabs(L[best * m + o])
            tie = LOSS_RTOL * tie / m if m > 0 and isfinite(tie) else 0.0
            # the first candidate within se_rule standard errors (the best itself at last)
            for c in range(nc):
                gap = mean[c] - mean[best]
                if not isfinite(gap):
                    continue
                if gap <= tie:
                    pick[b] = c
                    break
                se = 0.0
                if ns > 1:
                    # std (ddof = 1) of L[c] − L[best] at every step-th origin, two-pass
                    dm = 0.0
                    for o in range(ns):
                        dm += L[c * m + o * step] - L[best * m + o * step]
                    dm /= ns
                    ss = 0.0
                    for o in range(ns):
                        d = L[c * m + o * step] - L[best * m + o * step] - dm
                        ss += d * d
                    se = sqrt(ss / (ns - 1)) / sqrt(<double>ns)
                if gap <= se_rule * se:
                    pick[b] = c
                    break
    free(work)
    return out


def signed_rows(signs, lo, hi):
    """Bootstrap replicates from packed Rademacher signs: ``y[b, i] = hi[i]`` where sign
    ``σ_bi = +1`` (bit ``i % 8`` of ``signs[b, i // 8]``, least significant first), else
    ``lo[i]``; with ``lo = ŷ − ξ̃`` and ``hi = ŷ + ξ̃`` that is ``ŷ + σ ⊙ ξ̃``, exactly.

    Parameters
    ----------
    signs : ndarray of uint8, shape (B, ceil(N / 8))
    lo, hi : ndarray of float32, shape (N,)

    Returns
    -------
    y : ndarray of float32, shape (B, N)
    """
    cdef const cnp.uint32_t* lb = <const cnp.uint32_t*>_typed(
        lo, "lo", 1, cnp.NPY_FLOAT32, "float32")
    cdef const cnp.uint32_t* hb = <const cnp.uint32_t*>_typed(
        hi, "hi", 1, cnp.NPY_FLOAT32, "float32")
    cdef Py_ssize_t n = lo.shape[0], nbytes = (n + 7) // 8
    _same_shape(hi, "hi", (n,))
    cdef const cnp.uint8_t* sg = _packed_signs(signs, nbytes)
    cdef Py_ssize_t nb = signs.shape[0], b, i
    cdef cnp.ndarray out = _empty(nb, n, cnp.NPY_FLOAT32)
    cdef cnp.uint32_t* y = <cnp.uint32_t*>cnp.PyArray_DATA(out)
    # a blend of the float32 bit patterns, not a branch on random bits (mispredicted half
    # the time: 3x slower)
    cdef const cnp.uint8_t* row
    cdef cnp.uint32_t mask
    with nogil:
        for b in range(nb):
            row = sg + b * nbytes
            for i in range(n):
                mask = 0u - <cnp.uint32_t>((row[i >> 3] >> (i & 7)) & 1)
                y[b * n + i] = (lb[i] & ~mask) | (hb[i] & mask)
    return out


cdef int _check_starts(const cnp.int64_t* st, Py_ssize_t k, Py_ssize_t n) except -1:
    """Block starts: 0 first, strictly increasing, below N (none when N is 0)."""
    cdef Py_ssize_t j
    if n == 0 and k == 0:
        return 0
    if k == 0 or st[0] != 0 or st[k - 1] >= n:
        raise ValueError(f"starts must begin at 0 and lie below N = {n}")
    for j in range(1, k):
        if st[j] <= st[j - 1]:
            raise ValueError("starts must be strictly increasing")
    return 0


def block_moments(signs, V, starts):
    """Signed sums of the rows of ``V`` over blocks of episodes, one set per row of signs.

    ``M[b, j, :] = Σ_{i = starts[j]}^{starts[j+1] − 1} σ_bi V[i, :]`` (the last block ends
    at N), with ``σ_bi = +1`` where bit ``i % 8`` (least significant first) of
    ``signs[b, i // 8]`` is set, −1 where it is not: the block moments of the bootstrap
    replicates of ``basis="auto"`` on long logs (:mod:`pyprog.forecast.blocks`), without a
    B × N array of signs or replicates.

    Parameters
    ----------
    signs : ndarray of uint8, shape (B, ceil(N / 8))
        Packed Rademacher signs (bits beyond N are ignored).
    V : ndarray of float64, shape (N, q), C-contiguous
    starts : ndarray of int64, shape (K,)
        First episode of each block: ``starts[0] == 0``, strictly increasing, below N.

    Returns
    -------
    M : ndarray of float64, shape (B, K, q)
    """
    cdef const double* v = _input(V, "V", 2)
    cdef Py_ssize_t n = V.shape[0], q = V.shape[1], nbytes = (n + 7) // 8
    cdef const cnp.uint8_t* sg = _packed_signs(signs, nbytes)
    cdef const cnp.int64_t* st = <const cnp.int64_t*>_typed(
        starts, "starts", 1, cnp.NPY_INT64, "int64")
    cdef Py_ssize_t k = starts.shape[0], nb = signs.shape[0]
    _check_starts(st, k, n)
    cdef cnp.npy_intp dims[3]
    dims[0] = nb
    dims[1] = k
    dims[2] = q
    cdef cnp.ndarray out = cnp.PyArray_ZEROS(3, dims, cnp.NPY_FLOAT64, 0)
    cdef double* acc = _data(out)
    # the 256 subset sums of a byte's 8 rows (256 rows of qp >= q, a multiple of 4, so that
    # the sums vectorise), one row of V (qp), and each block's plain sum (K × q)
    cdef Py_ssize_t qp = (q + 3) // 4 * 4
    cdef double* table = <double*>calloc(256 * qp + qp + k * q + 1, sizeof(double))
    if table == NULL:
        raise MemoryError()
    cdef double* vrow = table + 256 * qp
    cdef double* total = vrow + qp
    cdef Py_ssize_t blk, bit, half, r, p, b, i, j = 0, lo, hi, end
    cdef const double* row
    cdef double* dst
    cdef unsigned int mask
    with nogil:
        for blk in range(nbytes):
            # table[s] = Σ_{bit t of s set} V[8 blk + t]   (rows past N are 0)
            half = 1
            for bit in range(8):
                i = 8 * blk + bit
                for p in range(q):
                    vrow[p] = v[i * q + p] if i < n else 0.0
                for r in range(half):
                    for p in range(qp):
                        table[(half + r) * qp + p] = table[r * qp + p] + vrow[p]
                half = 2 * half
            # the byte's episodes, block by block: acc[b, j] += table[signs & bits of block j]
            lo = 0
            while lo < 8 and 8 * blk + lo < n:
                while j + 1 < k and st[j + 1] <= 8 * blk + lo:
                    j += 1
                end = st[j + 1] if j + 1 < k else n
                hi = end - 8 * blk if end - 8 * blk < 8 else 8
                mask = ((1u << hi) - 1u) & ~((1u << lo) - 1u)
                for i in range(8 * blk + lo, 8 * blk + hi):
                    for p in range(q):
                        total[j * q + p] += v[i * q + p]
                for b in range(nb):
                    row = table + (sg[b * nbytes + blk] & mask) * qp
                    dst = acc + (b * k + j) * q
                    for p in range(q):
                        dst[p] += row[p]
                lo = hi
        # M = σ-sums = 2 (sums over the set bits) − (sums over all)
        for b in range(nb):
            for j in range(k):
                dst = acc + (b * k + j) * q
                for p in range(q):
                    dst[p] = 2.0 * dst[p] - total[j * q + p]
    free(table)
    return out
