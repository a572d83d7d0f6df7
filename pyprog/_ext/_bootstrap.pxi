# Included by _kernels.pyx (one extension module): the wild bootstrap of a linear forecast
# (issue 10). wild_bootstrap_t turns rows of packed Rademacher signs into t-statistics
# without forming a B × N array of residuals. NumPy twin in fallback_bootstrap.py.


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
