/*
 * The inner loops of the Cython kernels that C compilers should vectorise, kept in C
 * so that they can be compiled for several instruction sets (see PYPROG_VECTOR_CLONES).
 * Each function's comment gives its NumPy meaning.
 *
 * 1. pyprog_rho_terms: the element-wise pass of pdis_weights,
 *
 *     out[t] = mask[t] ? exp(min(c[t], log_clip)) * discount[t] * rewards[t] : 0
 *
 * exp dominates this kernel, and a call to libm's scalar exp per element cannot
 * match NumPy's SIMD exp. pyprog_exp below is branch-free arithmetic and integer
 * bit operations only, so the loop vectorises at the portable baseline (SSE2), and
 * on GCC/x86-64/Linux the loop is also cloned for x86-64-v3 (AVX2, FMA) and
 * x86-64-v4 (AVX-512), chosen at load time by the CPU (no -march=native needed).
 *
 * Accuracy: Cody-Waite range reduction x = k ln2 + r, |r| <= ln2/2, then the
 * degree-13 Taylor polynomial of exp(r) − 1 (truncation error < 4e-18 relative): a few ulp of
 * the correctly rounded result over the whole double range, including overflow to
 * inf above 709.78 and gradual underflow to 0 below -708.4.
 *
 * 2. pyprog_weighted_gram and pyprog_wls_outputs: the O(N d^2) and O(N d) passes of
 *    wls_forecast over a column-major (Fortran) (N, d) design, so that every loop runs
 *    over a contiguous column: dot products with PYPROG_LANES independent partial sums
 *    (a reduction the compiler may vectorise without reassociating) and axpy updates.
 */
#ifndef PYPROG_LOOPS_H
#define PYPROG_LOOPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) \
    && defined(__linux__)
#define PYPROG_VECTOR_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PYPROG_VECTOR_CLONES
#endif

static inline double pyprog_bits_to_double(int64_t bits) {
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static inline int64_t pyprog_double_to_bits(double x) {
    int64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

/* 2**k for an integer-valued double k in [-1022, 1023] */
static inline double pyprog_pow2(double k) {
    const double shifter = 6755399441055744.0; /* 0x1.8p52: x + shifter rounds x to an integer */
    int64_t biased = pyprog_double_to_bits(k + 1023.0 + shifter) - pyprog_double_to_bits(shifter);
    return pyprog_bits_to_double(biased << 52);
}

/* expm1(r) for |r| <= ln2/2 + ε: r + r² P(r), P the degree-11 Taylor polynomial of
   (e^r − 1 − r) / r², evaluated by Estrin's scheme (a dependency chain of ~5 operations
   instead of Horner's 13, so that independent elements overlap in the pipeline). */
static inline double pyprog_expm1_kernel(double r) {
    double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    double p01 = 1.0 / 2.0 + r * (1.0 / 6.0);
    double p23 = 1.0 / 24.0 + r * (1.0 / 120.0);
    double p45 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    double p67 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    double p89 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    double p1011 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    double p03 = p01 + r2 * p23, p47 = p45 + r2 * p67, p811 = p89 + r2 * p1011;
    return r + r2 * ((p03 + r4 * p47) + r8 * p811);
}

/* Range reduction for exp and expm1 of y in [-746, 710] (no clamping):
   y = k ln 2 + r (Cody-Waite, |r| <= ln2/2); returns expm1(r) and sets *k. */
static inline double pyprog_expm1_reduced(double y, double *k) {
    const double log2e = 1.4426950408889634074;
    const double ln2_hi = 6.93147180369123816490e-01; /* ln 2 with 32 trailing zero bits */
    const double ln2_lo = 1.90821492927058770002e-10; /* ln 2 - ln2_hi */
    const double shifter = 6755399441055744.0;
    double kk = (y * log2e + shifter) - shifter; /* round(y / ln 2) */
    *k = kk;
    return pyprog_expm1_kernel((y - kk * ln2_hi) - kk * ln2_lo);
}

static inline double pyprog_exp(double x) {
    const double shifter = 6755399441055744.0;
    double k, k1, p;
    /* outside [-746, 710] exp is 0 or inf in double precision; clamping keeps k in range */
    x = x < -746.0 ? -746.0 : x;
    x = x > 710.0 ? 710.0 : x;
    p = 1.0 + pyprog_expm1_reduced(x, &k);
    /* 2**k as two factors, so that subnormal results and overflow round correctly */
    k1 = (k * 0.5 + shifter) - shifter;
    return p * pyprog_pow2(k1) * pyprog_pow2(k - k1);
}

/* log(x) for finite x > 0 (normal), branch-free: x = 2^k m with m in [√½, √2), then
   log m = 2 atanh(s), s = (m − 1)/(m + 1), |s| <= 0.1716, by its odd series to s^23
   (truncation < 1e-19 relative); a few ulp. */
static inline double pyprog_log(double x) {
    const double two52 = 4503599627370496.0; /* 2^52 */
    const double ln2 = 0.693147180559945309417;
    int64_t bits = pyprog_double_to_bits(x);
    /* the biased exponent, as a double (magic-number conversion, vectorisable) */
    double e = pyprog_bits_to_double((bits >> 52) | 0x4330000000000000LL) - two52 - 1023.0;
    double m = pyprog_bits_to_double((bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
    int big = m > 1.4142135623730951;
    m = big ? 0.5 * m : m;
    e = big ? e + 1.0 : e;
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 23.0;
    p = p * s2 + 1.0 / 21.0;
    p = p * s2 + 1.0 / 19.0;
    p = p * s2 + 1.0 / 17.0;
    p = p * s2 + 1.0 / 15.0;
    p = p * s2 + 1.0 / 13.0;
    p = p * s2 + 1.0 / 11.0;
    p = p * s2 + 1.0 / 9.0;
    p = p * s2 + 1.0 / 7.0;
    p = p * s2 + 1.0 / 5.0;
    p = p * s2 + 1.0 / 3.0;
    p = p * s2 + 1.0;
    return e * ln2 + 2.0 * s * p;
}

/* out[t] = mask[t] != 0 ? exp(min(c[t], log_clip)) * discount[t] * rewards[t] : 0 */
PYPROG_VECTOR_CLONES
static void pyprog_rho_terms(const double *restrict c, const double *restrict discount,
                             const double *restrict rewards, const double *restrict mask,
                             double log_clip, ptrdiff_t h, double *restrict out) {
    for (ptrdiff_t t = 0; t < h; t++) {
        double x = c[t] > log_clip ? log_clip : c[t]; /* NaN stays NaN (np.minimum) */
        double term = pyprog_exp(x) * discount[t] * rewards[t];
        out[t] = mask[t] != 0.0 ? term : 0.0;
    }
}

#define PYPROG_LANES 8

/* sum(a * b), as PYPROG_LANES interleaved partial sums */
static inline double pyprog_dot(const double *restrict a, const double *restrict b, ptrdiff_t n) {
    double lane[PYPROG_LANES] = {0.0};
    double sum = 0.0;
    ptrdiff_t i = 0;
    for (; i + PYPROG_LANES <= n; i += PYPROG_LANES)
        for (int l = 0; l < PYPROG_LANES; l++) lane[l] += a[i + l] * b[i + l];
    for (; i < n; i++) sum += a[i] * b[i];
    for (int l = 0; l < PYPROG_LANES; l++) sum += lane[l];
    return sum;
}

/* With x_j = phi[:, j] (column j, contiguous) and v = w * x_j:
 *   A[j, k] = A[k, j] = v @ x_k  (A = phi.T @ diag(w) @ phi, row-major d x d)
 *   b[j]             = v @ y     (b = phi.T @ (w * y))
 * in blocks of PYPROG_BLOCK rows, so that the block's columns stay in L1 cache across
 * the d(d+1)/2 dot products. scratch holds PYPROG_BLOCK doubles. */
#define PYPROG_BLOCK 512
PYPROG_VECTOR_CLONES
static void pyprog_weighted_gram(const double *restrict phi, const double *restrict w,
                                 const double *restrict y, ptrdiff_t n, ptrdiff_t d,
                                 double *restrict A, double *restrict b,
                                 double *restrict scratch) {
    for (ptrdiff_t j = 0; j < d; j++) {
        b[j] = 0.0;
        for (ptrdiff_t k = 0; k < d; k++) A[j * d + k] = 0.0;
    }
    for (ptrdiff_t start = 0; start < n; start += PYPROG_BLOCK) {
        ptrdiff_t m = n - start < PYPROG_BLOCK ? n - start : PYPROG_BLOCK;
        for (ptrdiff_t j = 0; j < d; j++) {
            const double *xj = phi + j * n + start;
            for (ptrdiff_t i = 0; i < m; i++) scratch[i] = w[start + i] * xj[i];
            b[j] += pyprog_dot(scratch, y + start, m);
            for (ptrdiff_t k = 0; k <= j; k++)
                A[j * d + k] += pyprog_dot(scratch, phi + k * n + start, m);
        }
    }
    for (ptrdiff_t j = 0; j < d; j++)
        for (ptrdiff_t k = 0; k < j; k++) A[k * d + j] = A[j * d + k];
}

/* pu = phi @ u, pw = phi @ wts (column by column);  dfdy = w * pu;  dfdw = pu * (y - pw) */
PYPROG_VECTOR_CLONES
static void pyprog_wls_outputs(const double *restrict phi, const double *restrict w,
                               const double *restrict y, ptrdiff_t n, ptrdiff_t d,
                               const double *restrict wts, const double *restrict u,
                               double *restrict dfdy, double *restrict dfdw) {
    for (ptrdiff_t i = 0; i < n; i++) dfdy[i] = dfdw[i] = 0.0;
    for (ptrdiff_t j = 0; j < d; j++) {
        const double *xj = phi + j * n;
        for (ptrdiff_t i = 0; i < n; i++) {
            dfdy[i] += u[j] * xj[i];   /* pu */
            dfdw[i] += wts[j] * xj[i]; /* pw */
        }
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        double pu = dfdy[i];
        dfdy[i] = w[i] * pu;
        dfdw[i] = pu * (y[i] - dfdw[i]);
    }
}

#endif /* PYPROG_LOOPS_H */
