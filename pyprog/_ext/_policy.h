/*
 * Softmax policies (with or without one tanh hidden layer), fused over the samples:
 *
 *   forward   h = tanh(W1 s + b1)  (if there is a hidden layer; else h = s)
 *             z = W h + b,  log π = z − logsumexp(z),  π,  H = −Σ_a π log π
 *   backward  dz = c (onehot(a) − π) − e π ⊙ (log π + H)          (per sample)
 *             ∂W += dz hᵀ, ∂b += dz;  dh = Wᵀ dz,  dpre = dh ⊙ (1 − h²),
 *             ∂W1 += dpre sᵀ, ∂b1 += dpre
 *
 * i.e. the vector–Jacobian product Σ_m c_m ∇log π(a_m|s_m) + e_m ∇H(π(·|s_m)).
 *
 * Samples are processed in blocks of PYPROG_ROWS: within a block, per-sample work runs
 * over the hidden units (contiguous, vectorised), and the softmax runs over the block's
 * samples with the logits held column by column, so that exp and log — the costly part
 * of a few-action softmax — are vectorised too (pyprog_exp, pyprog_log, pyprog_tanh are
 * branch-free). For the paper's policy sizes, fixed-size instances go further: the
 * forward pass runs chunks of samples through each hidden unit (tanh vectorised across
 * samples), the backward pass keeps its gradient accumulators in registers. The NumPy
 * twins in fallback.py compute the same with whole arrays.
 *
 * The passes themselves are in _policy_real.h, instantiated here for double and for float
 * (suffix _f32: float32 policies, Hyper(dtype="float32")).
 */
#ifndef PYPROG_POLICY_H
#define PYPROG_POLICY_H

#include <math.h>
#include "_loops.h"

#define PYPROG_ROWS 64

/* tanh(x), branch-free, through expm1 (no cancellation near 0, so one formula serves the
   whole range): with m = expm1(−2|x|) in (−1, 0], tanh|x| = −m / (2 + m), a few ulp.
   Above |x| = 19, tanh is ±1 in double precision, so −2|x| is clamped to [−38, 0] (a NaN
   stays NaN), and 2^k needs one power of two. */
static inline double pyprog_tanh(double x) {
    double ax = fabs(x), k;
    double q = pyprog_expm1_reduced(-2.0 * (ax > 19.0 ? 19.0 : ax), &k);
    double s = pyprog_pow2(k);
    double em1 = (s - 1.0) + s * q; /* expm1(−2|x|) = 2^k (1 + q) − 1 */
    return copysign(fabs(em1) / (2.0 + em1), x);
}

/* float32 primitives, branch-free so that they vectorise at 16 (AVX-512) or 8 lanes.
   exp: x = k ln2 + r, |r| <= ln2 / 2, exp(r) by its Taylor polynomial to r^7 (truncation
   below 2e-8 relative), 2^k through the exponent bits as 2^(k>>1) · 2^(k − (k>>1)), two
   normal floats, so that exp(x) for x in [−104, −87] is the subnormal it is (as NumPy's
   float32 exp), not clamped to exp(−87) = 1.6e-38: an action whose logit trails by more
   than 87 gets probability ~0, as in the NumPy twin (issue 35, item 4). x is clamped to
   [−104, 88] (below −104 exp rounds to 0; a NaN stays NaN). */
static inline float pyprog_exp_f32(float x) {
    x = x < -104.0f ? -104.0f : (x > 88.0f ? 88.0f : x);
    float k = __builtin_roundf(x * 1.44269504f);
    float r = (x - k * 0.693145752f) - k * 1.42860677e-6f; /* ln2 = hi + lo, hi exact in k */
    float q = 1.0f / 5040.0f;
    q = q * r + 1.0f / 720.0f;
    q = q * r + 1.0f / 120.0f;
    q = q * r + 1.0f / 24.0f;
    q = q * r + 1.0f / 6.0f;
    q = q * r + 0.5f;
    q = q * r + 1.0f;
    q = q * r + 1.0f;
    int32_t k1 = (int32_t)k >> 1, k2 = (int32_t)k - k1; /* each in [−75, 64]: normal */
    union { int32_t i; float f; } s1 = {.i = (k1 + 127) << 23}, s2 = {.i = (k2 + 127) << 23};
    return (q * s1.f) * s2.f;
}
/* tanh: x P(x²) / Q(x²), a rational minimax fit on [0, 9] (degrees 9 and 8; relative error
   2.1e-8 in exact arithmetic; in float32 within 6.2 ulp of tanh in 10⁶ samples of [0, 20],
   bench/fit_tanh_f32.py); above 9, tanh is 1 in float32. P and Q have positive
   coefficients, so Horner's rule does not cancel, and the result is clamped to 1. It
   replaced a formula through exp (a Taylor series below 0.4, (1 − e) / (1 + e) with
   e = exp(−2|x|) above, both computed in every lane; 2.4 ulp) of about three times the
   operations, which were most of the float32 forward pass: a 1000-episode NS-Reacher
   Pro-OLS run at speed 2 in float32 took 8.7 s with it and 6.0 s with this, float64
   9.3–9.7 s (docs/guides/speed.md). The clamp is on |x| (one comparison): clamping x
   both ways kept GCC from vectorising the hidden layer. */
static inline float pyprog_tanh_f32(float x) {
    float ax = __builtin_fabsf(x);
    ax = ax > 9.0f ? 9.0f : ax; /* a NaN stays NaN */
    float z = ax * ax;
    float p = 1.33542922e-08f;
    p = p * z + 2.06088037e-05f;
    p = p * z + 3.49557082e-03f;
    p = p * z + 1.33810110e-01f;
    p = p * z + 9.99999979e-01f;
    float q = 7.77640335e-07f;
    q = q * z + 3.28560675e-04f;
    q = q * z + 2.58769161e-02f;
    q = q * z + 4.67143266e-01f;
    q = q * z + 1.0f;
    float t = ax * p / q;
    return __builtin_copysignf(t > 1.0f ? 1.0f : t, x);
}
/* log: once per sample (the log-sum-exp), through the double version */
static inline float pyprog_log_f32(float x) { return (float)pyprog_log((double)x); }
PYPROG_DEFINE_DOT(pyprog_dot_f32, float)

/* Subnormal floats flushed to zero while the float32 passes run (the x86 MXCSR's FTZ and DAZ
   bits, set by pyprog_flush_subnormals and restored by pyprog_restore_fp): a saturated
   policy's probabilities and their products fall below FLT_MIN (1.2e-38), and every
   arithmetic operation on a subnormal takes a microcode assist of a hundred cycles or more.
   NS-Reacher Pro-OLS at speed 0 (16 hidden units), 600 episodes, one core: 8.4 s in float32,
   most of it in the backward pass, against 5.3 s in float64; 3.4 s flushed, with the same
   returns. What is lost is below 1.2e-38, against float32's resolution of 6e-8 relative
   (and the float32 exp never returns less than 1.6e-38). The float64 parts of the update
   run outside, with subnormals as IEEE 754 has them. Elsewhere than x86-64 the two are
   no-ops. */
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
static inline unsigned int pyprog_flush_subnormals(void) {
    unsigned int saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return saved;
}
static inline void pyprog_restore_fp(unsigned int saved) { _mm_setcsr(saved); }
#else
static inline unsigned int pyprog_flush_subnormals(void) { return 0u; }
static inline void pyprog_restore_fp(unsigned int saved) { (void)saved; }
#endif

#define PYPROG_CAT_(a, b) a##b
#define PYPROG_CAT(a, b) PYPROG_CAT_(a, b)
#define PYPROG_F(name) PYPROG_CAT(name, PYPROG_SUFFIX)

/* Linear policies with fewer features than this take the feature-by-feature forward pass
   (pyprog_softmax_forward_linear in _policy_real.h). */
#define PYPROG_LINEAR_FAST_D 4

/* float64: the names without suffix */
#define PYPROG_REAL double
#define PYPROG_SUFFIX
#define PYPROG_EXP pyprog_exp
#define PYPROG_LOG pyprog_log
#define PYPROG_TANH pyprog_tanh
#define PYPROG_DOT pyprog_dot
#define PYPROG_SCORE_REST 0
#include "_policy_real.h"

/* float32: the same passes, names suffixed _f32 */
#define PYPROG_REAL float
#define PYPROG_SUFFIX _f32
#define PYPROG_EXP pyprog_exp_f32
#define PYPROG_LOG pyprog_log_f32
#define PYPROG_TANH pyprog_tanh_f32
#define PYPROG_DOT pyprog_dot_f32
#define PYPROG_SCORE_REST 1
#include "_policy_real.h"

#endif /* PYPROG_POLICY_H */
