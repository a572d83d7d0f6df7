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
#define PYPROG_HAVE_CLONES 1
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

/* 3. pyprog_pdis_rows and pyprog_ratio_sums: PYPROG_EPISODES episodes (rows) side by side.
 *
 * A row's cumulative sums are a chain of dependent additions, and the row loop above runs
 * one chain at a time with scalar code. Rows are independent, so these functions put 8 rows
 * in one vector (lane l = row l) and run the 8 chains as one: 8 x 8 tiles (8 rows, 8 steps)
 * are loaded row by row and transposed in registers, so that each vector holds one step of
 * the 8 rows. The arithmetic per row is the row loop's, in the same order, with the same exp
 * (bit-identical results); exp, clip and scale are vector operations across the rows.
 * Written with GCC vector extensions and a few AVX-512 intrinsics, and compiled for
 * x86-64-v4 alone (GCC >= 11, x86-64 Linux); elsewhere the functions are the row loop (and
 * unused, see below). Measured on a 2.3 GHz Xeon, (N, H) = (1000, 13-15): about 2x faster
 * than the row loop with AVX-512 (one register per vector; 2-source permutes and mask
 * registers for the transposes), but 1.6-1.7x slower with AVX2 or SSE2, whose 8 x 8
 * transposes take many more instructions. So pyprog_rows_side_by_side() tells the caller to
 * use these functions only where AVX-512 runs. */
#define PYPROG_EPISODES 8
/* pyprog_pdis_rows keeps a block's terms in scratch (8 h doubles, 32 KB at h = 500, in L2)
   and reads 4 x 8 rows at once: 32 streams, more than the hardware prefetchers follow, so
   past PYPROG_PREFETCH steps it prefetches each row PYPROG_PREFETCH steps (two tiles) ahead,
   and g's rows as many steps behind in the backward pass. At (1000, 500), 2-core 2.3 GHz Xeon,
   one core, builds run in turn: no prefetch 1.43-1.63 ms, 64 steps ahead 1.29-1.34 ms,
   8-32 steps ahead 1.02-1.40 ms, 16 steps 1.02-1.07 ms in the quietest round and the best or
   near it at H = 32, 100 and 2000 too; a single pass that only reads the four inputs and
   writes g (numba) takes 0.95 ms there. */
#define PYPROG_PREFETCH 16

/* 1 if this CPU runs the AVX-512 pyprog_pdis_rows and pyprog_ratio_sums, else 0 */
static int pyprog_rows_side_by_side(void) {
#if defined(PYPROG_HAVE_CLONES)
    __builtin_cpu_init(); /* x86-64-v4's AVX-512 subsets (GCC 11 has no "x86-64-v4" here) */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq")
        && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

#if defined(PYPROG_HAVE_CLONES)
#include <immintrin.h>
typedef double pyprog_v8 __attribute__((vector_size(64)));
typedef int64_t pyprog_m8 __attribute__((vector_size(64)));
/* The functions below run only where AVX-512 does (pyprog_rows_side_by_side), so they are
   compiled for x86-64-v4 alone, as its clone above was, and may use its intrinsics. */
#define PYPROG_AVX512 __attribute__((target("arch=x86-64-v4")))
/* always inlined: a vector passed between functions compiled for different instruction sets
   would not agree on how it is passed */
#define PYPROG_V8_INLINE static inline __attribute__((always_inline)) PYPROG_AVX512
#define PYPROG_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, (pyprog_m8){__VA_ARGS__})

/* np.full(8, a) */
PYPROG_V8_INLINE pyprog_v8 pyprog_v8_set(double a) {
    pyprog_v8 v = {a, a, a, a, a, a, a, a};
    return v;
}

/* np.where(keep, a, b) for a lane mask keep (-1 / 0 per lane) */
PYPROG_V8_INLINE pyprog_v8 pyprog_v8_where(pyprog_m8 keep, pyprog_v8 a, pyprog_v8 b) {
    return (pyprog_v8)(((pyprog_m8)a & keep) | ((pyprog_m8)b & ~keep));
}

/* np.minimum(x, a) (NaN stays NaN): vminpd's result is its second operand where either is NaN
   or they are equal (then x, so -0.0 stays -0.0 as in np.where(x > a, a, x)) */
PYPROG_V8_INLINE pyprog_v8 pyprog_v8_min(pyprog_v8 x, pyprog_v8 a) {
    return (pyprog_v8)_mm512_min_pd((__m512d)a, (__m512d)x);
}

/* np.maximum(x, a), likewise */
PYPROG_V8_INLINE pyprog_v8 pyprog_v8_max(pyprog_v8 x, pyprog_v8 a) {
    return (pyprog_v8)_mm512_max_pd((__m512d)a, (__m512d)x);
}

/* pyprog_exp, lane by lane: the same operations in the same order, except that the clamps are
   one vmaxpd and one vminpd, and p 2^k one vscalefpd (p 2^k rounded once, as
   p 2^k1 2^(k - k1) is: the first product is exact) */
PYPROG_V8_INLINE pyprog_v8 pyprog_v8_exp(pyprog_v8 x) {
    const double log2e = 1.4426950408889634074;
    const double ln2_hi = 6.93147180369123816490e-01;
    const double ln2_lo = 1.90821492927058770002e-10;
    const double shifter = 6755399441055744.0;
    x = pyprog_v8_min(pyprog_v8_max(x, pyprog_v8_set(-746.0)), pyprog_v8_set(710.0));
    pyprog_v8 k = (x * log2e + shifter) - shifter;
    pyprog_v8 r = (x - k * ln2_hi) - k * ln2_lo;
    pyprog_v8 r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    pyprog_v8 p01 = 1.0 / 2.0 + r * (1.0 / 6.0);
    pyprog_v8 p23 = 1.0 / 24.0 + r * (1.0 / 120.0);
    pyprog_v8 p45 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    pyprog_v8 p67 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    pyprog_v8 p89 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    pyprog_v8 p1011 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    pyprog_v8 p03 = p01 + r2 * p23, p47 = p45 + r2 * p67, p811 = p89 + r2 * p1011;
    pyprog_v8 p = 1.0 + (r + r2 * ((p03 + r4 * p47) + r8 * p811));
    return (pyprog_v8)_mm512_scalef_pd((__m512d)p, (__m512d)k);
}

PYPROG_V8_INLINE pyprog_v8 pyprog_v8_load(const double *p) {
    pyprog_v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* v[j] = column j of the 8 x 8 tile whose rows are v[0..7] (in place) */
PYPROG_V8_INLINE void pyprog_v8_transpose(pyprog_v8 v[8]) {
    pyprog_v8 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = PYPROG_SHUFFLE(v[i], v[i + 1], 0, 8, 2, 10, 4, 12, 6, 14);
        t[i + 1] = PYPROG_SHUFFLE(v[i], v[i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    static const int first[4] = {0, 1, 4, 5};
    for (int q = 0; q < 4; q++) {
        const int i = first[q];
        u[i] = PYPROG_SHUFFLE(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 2] = PYPROG_SHUFFLE(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int i = 0; i < 4; i++) {
        v[i] = PYPROG_SHUFFLE(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        v[i + 4] = PYPROG_SHUFFLE(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* d[j] = np.where(mask != 0, log_pi - log_beta, 0)[:, t + j], the 8 rows' step t + j (the
   masking is done on rows, then one transpose); when r != NULL, r[j] likewise for
   np.where(mask != 0, rewards, 0). Masking in row layout spares a transpose of the mask. */
PYPROG_V8_INLINE void pyprog_v8_masked_tiles(const double *log_pi, const double *log_beta,
                                          const double *rewards, const double *mask,
                                          ptrdiff_t h, ptrdiff_t t, pyprog_v8 d[8],
                                          pyprog_v8 *r) {
    const pyprog_v8 zero = pyprog_v8_set(0.0);
    for (int l = 0; l < 8; l++) {
        const pyprog_m8 valid = pyprog_v8_load(mask + l * h + t) != 0.0;
        d[l] = pyprog_v8_where(valid, pyprog_v8_load(log_pi + l * h + t)
                                          - pyprog_v8_load(log_beta + l * h + t), zero);
        if (r != NULL) r[l] = pyprog_v8_where(valid, pyprog_v8_load(rewards + l * h + t), zero);
    }
    pyprog_v8_transpose(d);
    if (r != NULL) pyprog_v8_transpose(r);
}

/* The forward pass of pyprog_pdis_rows over the steps t + j0 .. t + 7 of one tile:
   c = c + d;  terms = exp(min(c, log_clip)) * discount * np.where(valid, rewards, 0)
   (0 where invalid, as the row loop's np.where gives: exp(min(c, log_clip)) * discount is
   finite there, or inf also at the valid step before with the same c, whose row then goes
   to the exact path with either) */
PYPROG_V8_INLINE void pyprog_v8_pdis_forward(const double *log_pi, const double *log_beta,
                                          const double *rewards, const double *mask,
                                          const double *discount, ptrdiff_t h, ptrdiff_t t,
                                          int j0, pyprog_v8 clip, pyprog_v8 *cum,
                                          double *terms) {
    pyprog_v8 d[8], r[8];
    if (h > PYPROG_PREFETCH) { /* long rows: fetch the 8 rows' next lines of each input */
        const ptrdiff_t ahead = t + PYPROG_PREFETCH < h ? t + PYPROG_PREFETCH : h - 1;
        for (int l = 0; l < 8; l++) {
            __builtin_prefetch(log_pi + l * h + ahead, 0, 3);
            __builtin_prefetch(log_beta + l * h + ahead, 0, 3);
            __builtin_prefetch(mask + l * h + ahead, 0, 3);
            __builtin_prefetch(rewards + l * h + ahead, 0, 3);
        }
    }
    pyprog_v8_masked_tiles(log_pi, log_beta, rewards, mask, h, t, d, r);
    for (int j = j0; j < 8; j++) {
        *cum = *cum + d[j];
        pyprog_v8 x = pyprog_v8_min(*cum, clip); /* NaN stays NaN */
        pyprog_v8 term = pyprog_v8_exp(x) * discount[t + j] * r[j];
        memcpy(terms + (t + j) * 8, &term, sizeof term);
    }
}

/* The backward pass over the steps t + 7 down to t + j0 of one tile, written to g's rows:
   acc = acc + terms;  g = np.where(valid, acc, 0) (the mask applied on g's rows) */
PYPROG_V8_INLINE void pyprog_v8_pdis_backward(const double *terms, const double *mask,
                                           ptrdiff_t h, ptrdiff_t t, int j0, pyprog_v8 *acc,
                                           double *g) {
    const pyprog_v8 zero = pyprog_v8_set(0.0);
    pyprog_v8 out[8];
    if (h > PYPROG_PREFETCH) { /* and the lines of g written next (backwards) */
        const ptrdiff_t behind = t > PYPROG_PREFETCH ? t - PYPROG_PREFETCH : 0;
        for (int l = 0; l < 8; l++) __builtin_prefetch(g + l * h + behind, 1, 3);
    }
    for (int j = 7; j >= 0; j--) {
        if (j < j0) {
            out[j] = zero; /* steps of the previous tile, which writes them afterwards */
            continue;
        }
        *acc = *acc + pyprog_v8_load(terms + (t + j) * 8);
        out[j] = *acc;
    }
    pyprog_v8_transpose(out); /* out[l] = row l, steps t..t+7 */
    for (int l = 0; l < 8; l++) {
        pyprog_v8 row = pyprog_v8_where(pyprog_v8_load(mask + l * h + t) != 0.0, out[l], zero);
        memcpy(g + l * h + t, &row, sizeof row);
    }
}

/* pdis_weights for rows 0..7 of (8, h) row-major arrays (row stride h), h >= 8:
 *
 *     c = np.cumsum(np.where(valid, log_pi - log_beta, 0), axis=1)
 *     terms = np.where(valid, np.exp(np.minimum(c, log_clip)) * discount * rewards, 0)
 *     g = np.where(valid, np.cumsum(terms[:, ::-1], axis=1)[:, ::-1], 0);  J = terms.sum(1)
 *
 * Tiles start at steps 0, 8, ...; when 8 does not divide h the last tile starts at h - 8,
 * overlapping the one before, and skips the steps that one has done. scratch: 8 h doubles
 * (the terms, step-major). */
PYPROG_AVX512
static void pyprog_pdis_rows(const double *restrict log_pi, const double *restrict log_beta,
                             const double *restrict rewards, const double *restrict mask,
                             const double *restrict discount, ptrdiff_t h, double log_clip,
                             double *restrict scratch, double *restrict g, double *restrict J) {
    const ptrdiff_t full = h / 8 * 8; /* steps in whole tiles */
    double *restrict terms = scratch;
    const pyprog_v8 clip = pyprog_v8_set(log_clip);
    pyprog_v8 cum = pyprog_v8_set(0.0), acc = pyprog_v8_set(0.0);
    for (ptrdiff_t t = 0; t < full; t += 8)
        pyprog_v8_pdis_forward(log_pi, log_beta, rewards, mask, discount, h, t, 0, clip, &cum,
                               terms);
    if (full < h)
        pyprog_v8_pdis_forward(log_pi, log_beta, rewards, mask, discount, h, h - 8,
                               (int)(full - (h - 8)), clip, &cum, terms);
    if (full < h)
        pyprog_v8_pdis_backward(terms, mask, h, h - 8, (int)(full - (h - 8)), &acc, g);
    for (ptrdiff_t t = full - 8; t >= 0; t -= 8)
        pyprog_v8_pdis_backward(terms, mask, h, t, 0, &acc, g);
    for (int l = 0; l < 8; l++) J[l] = acc[l];
}

/* s[l] = np.where(valid, log_pi - log_beta, 0)[l].sum(), in step order, rows 0..7, h >= 8
   (tiles as in pyprog_pdis_rows) */
PYPROG_AVX512
static void pyprog_ratio_sums(const double *restrict log_pi, const double *restrict log_beta,
                              const double *restrict mask, ptrdiff_t h, double *restrict s) {
    const ptrdiff_t full = h / 8 * 8;
    pyprog_v8 sum = pyprog_v8_set(0.0), d[8];
    for (ptrdiff_t t = 0; t < full; t += 8) {
        if (h > PYPROG_PREFETCH) { /* as in pyprog_v8_pdis_forward */
            const ptrdiff_t ahead = t + PYPROG_PREFETCH < h ? t + PYPROG_PREFETCH : h - 1;
            for (int l = 0; l < 8; l++) {
                __builtin_prefetch(log_pi + l * h + ahead, 0, 3);
                __builtin_prefetch(log_beta + l * h + ahead, 0, 3);
                __builtin_prefetch(mask + l * h + ahead, 0, 3);
            }
        }
        pyprog_v8_masked_tiles(log_pi, log_beta, NULL, mask, h, t, d, NULL);
        for (int j = 0; j < 8; j++) sum = sum + d[j];
    }
    if (full < h) {
        pyprog_v8_masked_tiles(log_pi, log_beta, NULL, mask, h, h - 8, d, NULL);
        for (int j = (int)(full - (h - 8)); j < 8; j++) sum = sum + d[j];
    }
    for (int l = 0; l < 8; l++) s[l] = sum[l];
}

#else /* no clones: the same results, one row at a time */

PYPROG_VECTOR_CLONES
static void pyprog_pdis_rows(const double *restrict log_pi, const double *restrict log_beta,
                             const double *restrict rewards, const double *restrict mask,
                             const double *restrict discount, ptrdiff_t h, double log_clip,
                             double *restrict scratch, double *restrict g, double *restrict J) {
    for (int l = 0; l < 8; l++) {
        const ptrdiff_t o = l * h;
        double cum = 0.0, acc = 0.0;
        for (ptrdiff_t t = 0; t < h; t++) {
            if (mask[o + t] != 0.0) cum = cum + (log_pi[o + t] - log_beta[o + t]);
            scratch[t] = cum;
        }
        pyprog_rho_terms(scratch, discount, rewards + o, mask + o, log_clip, h, g + o);
        for (ptrdiff_t t = h - 1; t >= 0; t--) {
            acc = acc + g[o + t];
            g[o + t] = mask[o + t] != 0.0 ? acc : 0.0;
        }
        J[l] = acc;
    }
}

static void pyprog_ratio_sums(const double *restrict log_pi, const double *restrict log_beta,
                              const double *restrict mask, ptrdiff_t h, double *restrict s) {
    for (int l = 0; l < 8; l++) {
        double sum = 0.0;
        for (ptrdiff_t t = l * h; t < (l + 1) * h; t++)
            if (mask[t] != 0.0) sum = sum + (log_pi[t] - log_beta[t]);
        s[l] = sum;
    }
}
#endif

#define PYPROG_LANES 8

/* NAME(a, b, n) = sum(a * b) over type T, as PYPROG_LANES interleaved partial sums (defined
   for double here, for float in _policy.h) */
#define PYPROG_DEFINE_DOT(NAME, T)                                                              \
    static inline T NAME(const T *restrict a, const T *restrict b, ptrdiff_t n) {               \
        T lane[PYPROG_LANES] = {0};                                                             \
        T sum = 0;                                                                              \
        ptrdiff_t i = 0;                                                                        \
        for (; i + PYPROG_LANES <= n; i += PYPROG_LANES)                                        \
            for (int l = 0; l < PYPROG_LANES; l++) lane[l] += a[i + l] * b[i + l];              \
        for (; i < n; i++) sum += a[i] * b[i];                                                  \
        for (int l = 0; l < PYPROG_LANES; l++) sum += lane[l];                                  \
        return sum;                                                                             \
    }
PYPROG_DEFINE_DOT(pyprog_dot, double)

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
