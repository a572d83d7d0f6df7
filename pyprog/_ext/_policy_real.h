/*
 * The softmax policies' passes for one floating-point type, included twice by _policy.h:
 * PYPROG_REAL is double (names as they are) or float (names suffixed _f32), with
 * PYPROG_EXP, PYPROG_LOG, PYPROG_TANH, PYPROG_DOT the matching primitives. One source
 * serves both precisions; see _policy.h for what the passes compute. No include guard: it
 * undefines its parameters at its end, ready for the next instance.
 */

/* The softmax of a block of n <= PYPROG_ROWS samples whose logits zc are stored column by
   column (zc[c * PYPROG_ROWS + i]), vectorised across the samples:
   log π = z − lse, lse = top + log Σ_c exp(z_c − top); π = exp(z − top) / Σ; H = −Σ π log π.
   ec, top, total, inv, ent are scratch; outputs are row-major, for samples 0..n−1. */
static inline void PYPROG_F(pyprog_softmax_block)(
        PYPROG_REAL *restrict zc, PYPROG_REAL *restrict ec, PYPROG_REAL *restrict top,
        PYPROG_REAL *restrict total, PYPROG_REAL *restrict inv, PYPROG_REAL *restrict ent,
        ptrdiff_t n, ptrdiff_t a, const int64_t *restrict actions, PYPROG_REAL *restrict log_probs,
        PYPROG_REAL *restrict probs, PYPROG_REAL *restrict log_prob,
        PYPROG_REAL *restrict entropy) {
    const ptrdiff_t B = PYPROG_ROWS;
    for (ptrdiff_t i = 0; i < n; i++) {
        top[i] = zc[i];
        total[i] = 0.0;
        ent[i] = 0.0;
    }
    for (ptrdiff_t c = 1; c < a; c++)
        for (ptrdiff_t i = 0; i < n; i++) top[i] = zc[c * B + i] > top[i] ? zc[c * B + i] : top[i];
    for (ptrdiff_t c = 0; c < a; c++)
        for (ptrdiff_t i = 0; i < n; i++) {
            ec[c * B + i] = PYPROG_EXP(zc[c * B + i] - top[i]);
            total[i] += ec[c * B + i];
        }
    for (ptrdiff_t i = 0; i < n; i++) {
        inv[i] = (PYPROG_REAL)1 / total[i];
        top[i] += PYPROG_LOG(total[i]); /* top is now lse */
    }
    for (ptrdiff_t c = 0; c < a; c++)
        for (ptrdiff_t i = 0; i < n; i++) {
            PYPROG_REAL lp = zc[c * B + i] - top[i];
            PYPROG_REAL p = ec[c * B + i] * inv[i];
            ent[i] -= p * lp;
            log_probs[i * a + c] = lp;
            probs[i * a + c] = p;
        }
    for (ptrdiff_t i = 0; i < n; i++) {
        log_prob[i] = log_probs[i * a + actions[i]];
        entropy[i] = ent[i];
    }
}

/* The forward pass with a hidden layer, for sizes known at compile time: chunks of
   PYPROG_CHUNK samples run through each hidden unit together, so that tanh is
   vectorised across samples and the A logits accumulate in registers over the units
   (no horizontal sums). The chunk's hidden values are transposed into `hidden` (row-major)
   through a small tile. Same arithmetic as the generic loops of pyprog_softmax_forward
   (below) except for the order of the sums in the logits; 1.4x to 2.6x faster than them
   (64 to 16 hidden units). A chunk is one 64-byte vector: 8 doubles or 16 floats (8 floats
   fill half an AVX-512 register; on NS-Reacher the 16 made no measurable difference, the
   update's float32 time being elsewhere: docs/guides/speed.md). */
#undef PYPROG_CHUNK
#define PYPROG_CHUNK (64 / (int)sizeof(PYPROG_REAL))
#define PYPROG_FORWARD_FIXED(NAME, A, HD, D)                                                       \
    PYPROG_VECTOR_CLONES                                                                           \
    static void NAME(                                                                              \
            const PYPROG_REAL *restrict obs, const int64_t *restrict actions, ptrdiff_t m,         \
            const PYPROG_REAL *restrict W1t, const PYPROG_REAL *restrict b1,                       \
            const PYPROG_REAL *restrict W, const PYPROG_REAL *restrict b,                          \
            PYPROG_REAL *restrict hidden, PYPROG_REAL *restrict log_probs,                         \
            PYPROG_REAL *restrict probs, PYPROG_REAL *restrict log_prob,                           \
            PYPROG_REAL *restrict entropy, PYPROG_REAL *restrict scratch) {                        \
        enum { B = PYPROG_ROWS, V = PYPROG_CHUNK };                                                \
        PYPROG_REAL *zc = scratch, *ec = zc + (A) * B, *top = ec + (A) * B, *total = top + B;      \
        PYPROG_REAL *inv = total + B, *ent = inv + B;                                              \
        PYPROG_REAL sc[D][B], tile[HD][V]; /* the block's obs, column by column; hidden, chunk */  \
        for (ptrdiff_t start = 0; start < m; start += B) {                                         \
            ptrdiff_t n = m - start < B ? m - start : B;                                           \
            for (int i = 0; i < B; i++) /* zero-padded: the last chunk may be partial */           \
                for (int k = 0; k < (D); k++)                                                      \
                    sc[k][i] = i < n ? obs[(start + i) * (D) + k] : 0;                             \
            for (ptrdiff_t i0 = 0; i0 < n; i0 += V) {                                              \
                PYPROG_REAL z[A][V];                                                               \
                for (int c = 0; c < (A); c++)                                                      \
                    for (int v = 0; v < V; v++) z[c][v] = b[c];                                    \
                for (int j = 0; j < (HD); j++) {                                                   \
                    /* h_j = tanh(b1_j + Σ_k W1[j, k] s_k);  z += W[:, j] h_j */                   \
                    PYPROG_REAL h[V];                                                              \
                    for (int v = 0; v < V; v++) h[v] = b1[j];                                      \
                    for (int k = 0; k < (D); k++)                                                  \
                        for (int v = 0; v < V; v++) h[v] += W1t[k * (HD) + j] * sc[k][i0 + v];     \
                    for (int v = 0; v < V; v++) tile[j][v] = h[v] = PYPROG_TANH(h[v]);             \
                    for (int c = 0; c < (A); c++)                                                  \
                        for (int v = 0; v < V; v++) z[c][v] += W[c * (HD) + j] * h[v];             \
                }                                                                                  \
                for (int c = 0; c < (A); c++)                                                      \
                    for (int v = 0; v < V; v++) zc[c * B + i0 + v] = z[c][v];                      \
                ptrdiff_t nv = n - i0 < V ? n - i0 : V;                                            \
                for (ptrdiff_t v = 0; v < nv; v++)                                                 \
                    for (int j = 0; j < (HD); j++)                                                 \
                        hidden[(start + i0 + v) * (HD) + j] = tile[j][v];                          \
            }                                                                                      \
            PYPROG_F(pyprog_softmax_block)(zc, ec, top, total, inv, ent, n, A,                     \
                                           actions + start, log_probs + start * (A),               \
                                           probs + start * (A), log_prob + start,                  \
                                           entropy + start);                                       \
        }                                                                                          \
    }

PYPROG_FORWARD_FIXED(PYPROG_F(pyprog_softmax_forward_4_16_2), 4, 16, 2)
PYPROG_FORWARD_FIXED(PYPROG_F(pyprog_softmax_forward_4_32_2), 4, 32, 2)
PYPROG_FORWARD_FIXED(PYPROG_F(pyprog_softmax_forward_4_64_2), 4, 64, 2)

/* Whether two states are the same bits (so -0.0 and 0.0 differ). */
static inline int PYPROG_F(pyprog_same_state)(
        const PYPROG_REAL *x, const PYPROG_REAL *y, ptrdiff_t d) {
    return memcmp(x, y, (size_t)d * sizeof(PYPROG_REAL)) == 0;
}

/* The forward pass of a linear softmax with few features (hd = 0, d < PYPROG_LINEAR_FAST_D:
   NS-Reco's one input): each logit z = b + (0 + s_0 W_0 + … + s_{d−1} W_{d−1}) — the sums
   PYPROG_DOT's short loop makes, in the same order — computed feature by feature across a
   block's samples, which vectorises (the generic loop below makes one short dot product per
   sample and action: for NS-Reco that took 3/4 of the update). Up to 3 features, GCC compiles
   the dot product's short loop as a chain of fused multiply-adds, as it does the loop below,
   so the two give the same bits (tests/test_run_regression.py); from 4 on it multiplies a
   vector of products first, unfused, and a fused loop here would differ in the last bit. */
PYPROG_VECTOR_CLONES
static void PYPROG_F(pyprog_softmax_forward_linear)(
        const PYPROG_REAL *restrict obs, const int64_t *restrict actions, ptrdiff_t m, ptrdiff_t d,
        const PYPROG_REAL *restrict W, const PYPROG_REAL *restrict b, ptrdiff_t a,
        PYPROG_REAL *restrict log_probs, PYPROG_REAL *restrict probs,
        PYPROG_REAL *restrict log_prob, PYPROG_REAL *restrict entropy,
        PYPROG_REAL *restrict scratch) {
    const ptrdiff_t B = PYPROG_ROWS;
    PYPROG_REAL *zc = scratch, *ec = zc + a * B, *top = ec + a * B, *total = top + B;
    PYPROG_REAL *inv = total + B, *ent = inv + B;
    const PYPROG_REAL zero = 0;
    for (ptrdiff_t start = 0; start < m; start += B) {
        ptrdiff_t n = m - start < B ? m - start : B;
        const PYPROG_REAL *s = obs + start * d;
        /* A block of one repeated state (a bandit's constant context, as NS-Reco's): its
           softmax for the first sample only (nc = 1), then copied — a sample's results
           depend on its state alone, so the bits are those of the whole block's pass. */
        ptrdiff_t same = 1;
        while (same < n && PYPROG_F(pyprog_same_state)(s + same * d, s, d)) same++;
        ptrdiff_t nc = same == n ? 1 : n;
        PYPROG_REAL *lp_out = log_probs + start * a, *p_out = probs + start * a;
        if (nc == 1 && start > 0 && PYPROG_F(pyprog_same_state)(s, s - d, d)) {
            /* the state of the previous block's last sample, whose results are there */
            memcpy(lp_out, lp_out - a, a * sizeof(PYPROG_REAL));
            memcpy(p_out, p_out - a, a * sizeof(PYPROG_REAL));
            entropy[start] = entropy[start - 1];
            log_prob[start] = lp_out[actions[start]];
        } else {
            for (ptrdiff_t c = 0; c < a; c++) {
                PYPROG_REAL *z = zc + c * B;
                /* z = b[c] + s @ W[c]  (the first product added to 0 in the same loop: a
                   separate zeroing loop becomes a `rep stos`, slow for a block of one) */
                PYPROG_REAL w0 = d > 0 ? W[c * d] : zero;
                for (ptrdiff_t i = 0; i < nc; i++) z[i] = zero + (d > 0 ? s[i * d] : zero) * w0;
                for (ptrdiff_t k = 1; k < d; k++) {
                    PYPROG_REAL w = W[c * d + k];
                    for (ptrdiff_t i = 0; i < nc; i++) z[i] += s[i * d + k] * w;
                }
                for (ptrdiff_t i = 0; i < nc; i++) z[i] = b[c] + z[i];
            }
            PYPROG_F(pyprog_softmax_block)(zc, ec, top, total, inv, ent, nc, a, actions + start,
                                           log_probs + start * a, probs + start * a,
                                           log_prob + start, entropy + start);
        }
        if (nc < n) {
            /* log π, π and H of sample 0 to the others */
            PYPROG_REAL h0 = entropy[start];
            /* rows [0, k) to [k, 2k): a few long copies instead of one short one per row */
            for (ptrdiff_t k = 1; k < n; k *= 2) {
                ptrdiff_t rows = n - k < k ? n - k : k;
                memcpy(lp_out + k * a, lp_out, rows * a * sizeof(PYPROG_REAL));
                memcpy(p_out + k * a, p_out, rows * a * sizeof(PYPROG_REAL));
            }
            for (ptrdiff_t i = 1; i < n; i++) {
                log_prob[start + i] = lp_out[actions[start + i]];
                entropy[start + i] = h0;
            }
        }
    }
}

/* Forward pass of m samples. W1t is W1 transposed (d x hd), so that the hidden layer is
   computed unit-parallel; W is (a x f) row-major, f = hd if hd > 0 else d, so that each
   logit is a dot product over contiguous memory. hidden (m x hd) receives
   tanh(W1 s + b1) when hd > 0; log_probs and probs are (m x a). scratch holds
   (2 a + 4) * PYPROG_ROWS PYPROG_REALs. Shapes with a fixed-size instance (above) go to it. */
PYPROG_VECTOR_CLONES
static void PYPROG_F(pyprog_softmax_forward)(
        const PYPROG_REAL *restrict obs, const int64_t *restrict actions, ptrdiff_t m, ptrdiff_t d,
        const PYPROG_REAL *restrict W1t, const PYPROG_REAL *restrict b1, ptrdiff_t hd,
        const PYPROG_REAL *restrict W, const PYPROG_REAL *restrict b, ptrdiff_t a,
        PYPROG_REAL *restrict hidden, PYPROG_REAL *restrict log_probs, PYPROG_REAL *restrict probs,
        PYPROG_REAL *restrict log_prob, PYPROG_REAL *restrict entropy,
        PYPROG_REAL *restrict scratch) {
#define PYPROG_FIXED_CALL(NAME)                                                                    \
    do {                                                                                           \
        NAME(obs, actions, m, W1t, b1, W, b, hidden, log_probs, probs, log_prob, entropy,          \
             scratch);                                                                             \
        return;                                                                                    \
    } while (0)
    if (a == 4 && d == 2 && hd == 16) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_forward_4_16_2));
    if (a == 4 && d == 2 && hd == 32) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_forward_4_32_2));
    if (a == 4 && d == 2 && hd == 64) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_forward_4_64_2));
#undef PYPROG_FIXED_CALL
    if (hd == 0 && d < PYPROG_LINEAR_FAST_D) {
        PYPROG_F(pyprog_softmax_forward_linear)(obs, actions, m, d, W, b, a, log_probs, probs,
                                                log_prob, entropy, scratch);
        return;
    }
    const ptrdiff_t B = PYPROG_ROWS;
    ptrdiff_t f = hd > 0 ? hd : d;
    PYPROG_REAL *zc = scratch;               /* a x B: the block's logits, column by column */
    PYPROG_REAL *ec = zc + a * B;            /* a x B: exp(z − top) */
    PYPROG_REAL *top = ec + a * B;           /* B */
    PYPROG_REAL *total = top + B;            /* B */
    PYPROG_REAL *inv = total + B;            /* B: 1 / total */
    PYPROG_REAL *ent = inv + B;              /* B */
    for (ptrdiff_t start = 0; start < m; start += B) {
        ptrdiff_t n = m - start < B ? m - start : B;
        for (ptrdiff_t i = 0; i < n; i++) {
            const PYPROG_REAL *s = obs + (start + i) * d;
            const PYPROG_REAL *x = s;
            if (hd > 0) {
                PYPROG_REAL *h = hidden + (start + i) * hd;
                /* h = tanh(b1 + Σ_k s_k W1[:, k]) */
                for (ptrdiff_t j = 0; j < hd; j++) h[j] = b1[j];
                for (ptrdiff_t k = 0; k < d; k++)
                    for (ptrdiff_t j = 0; j < hd; j++) h[j] += s[k] * W1t[k * hd + j];
                for (ptrdiff_t j = 0; j < hd; j++) h[j] = PYPROG_TANH(h[j]);
                x = h;
            }
            /* z = W x + b */
            for (ptrdiff_t c = 0; c < a; c++) zc[c * B + i] = b[c] + PYPROG_DOT(x, W + c * f, f);
        }
        PYPROG_F(pyprog_softmax_block)(zc, ec, top, total, inv, ent, n, a, actions + start,
                                       log_probs + start * a, probs + start * a, log_prob + start,
                                       entropy + start);
    }
}

/* The backward pass for sizes known at compile time: the gradient accumulators
   (a x f and d x hd PYPROG_REALs) then live in registers across all the samples instead of
   being read and written back for every sample, about 5x faster. Instantiated for the
   paper's policies (NS-Reacher's MLPs, NS-Reco's linear policy); other sizes take the
   generic loops of pyprog_softmax_backward (below). Same arithmetic per sample; the sums
   over samples are accumulated in the same order, so results agree to rounding. */
#if defined(__GNUC__) && !defined(__clang__)
/* For some sizes GCC's -O3 unrolls these small fixed loops completely and schedules the
   vector code worse (2.5x slower at 16 hidden units, measured with GCC 12); those
   instances are compiled at -O2 with the vectoriser, which keeps the loops. */
#define PYPROG_O2 \
    __attribute__((optimize("O2", "tree-vectorize", "no-trapping-math", "no-math-errno")))
#else
#define PYPROG_O2
#endif
#define PYPROG_O3

/* The taken action's logit gradient is c (1 − π_a) − e π_a (log π_a + H). In float32 the
   subtraction 1 − π_a rounds to exactly 0 once π_a > 1 − 2⁻²⁴ (a logit gap above about 17),
   and the taken action's logit stops learning while the others keep theirs; the float32
   passes (PYPROG_SCORE_REST) take it as Σ_{c≠a} π_c. Before, NS-Reco at speed 1
   had 7 of 100 float32 runs above a regret of 50 against none in float64
   (bench/dtype_tail.py). float64 keeps 1 − π_a (the same loss only beyond a gap of about
   37), so its committed results keep their bits. The sum is written out where it is used:
   GCC does not inline a helper into the O2 instances (their optimize attribute differs), and
   a call per sample, which spills the accumulators held in vector registers, made
   NS-Reacher's float32 backward pass 3x slower. */
#define PYPROG_BACKWARD_FIXED(NAME, A, HD, D, OPT)                                                 \
    PYPROG_VECTOR_CLONES OPT                                                                       \
    static void NAME(                                                                              \
            const PYPROG_REAL *restrict obs, const int64_t *restrict actions, ptrdiff_t m,         \
            const PYPROG_REAL *restrict W, const PYPROG_REAL *restrict hidden,                     \
            const PYPROG_REAL *restrict log_probs, const PYPROG_REAL *restrict probs,              \
            const PYPROG_REAL *restrict entropy, const PYPROG_REAL *restrict coef_log_prob,        \
            const PYPROG_REAL *restrict coef_entropy, PYPROG_REAL *restrict gW1t,                  \
            PYPROG_REAL *restrict gb1, PYPROG_REAL *restrict gW, PYPROG_REAL *restrict gb) {       \
        enum { F = (HD) > 0 ? (HD) : (D), H1 = (HD) > 0 ? (HD) : 1 };                              \
        PYPROG_REAL aW[A][F] = {{0.0}}, ab[A] = {0.0}, aW1[D][H1] = {{0.0}}, ab1[H1] = {0.0};      \
        for (ptrdiff_t i = 0; i < m; i++) {                                                        \
            PYPROG_REAL cl = coef_log_prob[i], ce = coef_entropy[i], dz[A], dpre[H1];              \
            const PYPROG_REAL *s = obs + i * (D), *lp = log_probs + i * (A), *p = probs + i * (A); \
            const PYPROG_REAL *x = (HD) > 0 ? hidden + i * H1 : s;                                 \
            if ((HD) == 0) {                                                                       \
                /* linear: the taken action's dz += cl in registers, not through a store and       \
                   a load (1.5x for NS-Reco's policy; the MLP instances keep the store: GCC        \
                   then contracts their hidden-layer sums differently for AVX2) */                 \
                int64_t taken = actions[i];                                                        \
                PYPROG_REAL rest = 0.0;                                                            \
                for (int c = 0; c < (A) && PYPROG_SCORE_REST; c++)                                 \
                    rest += c == taken ? (PYPROG_REAL)0 : p[c];                                    \
                for (int c = 0; c < (A); c++) {                                                    \
                    PYPROG_REAL v = -p[c] * (cl + ce * (lp[c] + entropy[i]));                      \
                    PYPROG_REAL t = PYPROG_SCORE_REST                                              \
                                        ? cl * rest - p[c] * (ce * (lp[c] + entropy[i]))           \
                                        : v + cl;                                                  \
                    dz[c] = c == taken ? t : v;                                                    \
                }                                                                                  \
            } else {                                                                               \
                int64_t taken = actions[i];                                                        \
                PYPROG_REAL rest = 0.0;                                                            \
                for (int c = 0; c < (A); c++) dz[c] = -p[c] * (cl + ce * (lp[c] + entropy[i]));    \
                if (PYPROG_SCORE_REST) {                                                           \
                    for (int c = 0; c < (A); c++) rest += c == taken ? (PYPROG_REAL)0 : p[c];      \
                    dz[taken] = cl * rest - p[taken] * (ce * (lp[taken] + entropy[i]));            \
                } else {                                                                           \
                    dz[taken] += cl;                                                               \
                }                                                                                  \
            }                                                                                      \
            for (int c = 0; c < (A); c++) {                                                        \
                ab[c] += dz[c];                                                                    \
                for (int j = 0; j < F; j++) aW[c][j] += dz[c] * x[j];                              \
            }                                                                                      \
            if ((HD) > 0) {                                                                        \
                for (int j = 0; j < H1; j++) {                                                     \
                    PYPROG_REAL t = 0.0;                                                           \
                    for (int c = 0; c < (A); c++) t += dz[c] * W[c * H1 + j];                      \
                    dpre[j] = t * ((PYPROG_REAL)1 - x[j] * x[j]);                                  \
                    ab1[j] += dpre[j];                                                             \
                }                                                                                  \
                for (int k = 0; k < (D); k++)                                                      \
                    for (int j = 0; j < H1; j++) aW1[k][j] += s[k] * dpre[j];                      \
            }                                                                                      \
        }                                                                                          \
        for (int c = 0; c < (A); c++) {                                                            \
            gb[c] += ab[c];                                                                        \
            for (int j = 0; j < F; j++) gW[c * F + j] += aW[c][j];                                 \
        }                                                                                          \
        if ((HD) > 0) {                                                                            \
            for (int k = 0; k < (D); k++)                                                          \
                for (int j = 0; j < H1; j++) gW1t[k * H1 + j] += aW1[k][j];                        \
            for (int j = 0; j < H1; j++) gb1[j] += ab1[j];                                         \
        }                                                                                          \
    }

PYPROG_BACKWARD_FIXED(PYPROG_F(pyprog_softmax_backward_4_16_2), 4, 16, 2, PYPROG_O2)
PYPROG_BACKWARD_FIXED(PYPROG_F(pyprog_softmax_backward_4_32_2), 4, 32, 2, PYPROG_O3)
PYPROG_BACKWARD_FIXED(PYPROG_F(pyprog_softmax_backward_4_64_2), 4, 64, 2, PYPROG_O3)
PYPROG_BACKWARD_FIXED(PYPROG_F(pyprog_softmax_backward_5_0_1), 5, 0, 1, PYPROG_O3)

/* Backward pass: accumulates into gW1t (d x hd), gb1 (hd), gW (a x f), gb (a), which
   the caller zeroes. W is (a x hd) row-major (only read when hd > 0). scratch holds
   a + hd PYPROG_REALs. Shapes with a fixed-size instance (above) go to it. */
PYPROG_VECTOR_CLONES
static void PYPROG_F(pyprog_softmax_backward)(
        const PYPROG_REAL *restrict obs, const int64_t *restrict actions, ptrdiff_t m, ptrdiff_t d,
        ptrdiff_t hd, const PYPROG_REAL *restrict W, ptrdiff_t a,
        const PYPROG_REAL *restrict hidden, const PYPROG_REAL *restrict log_probs,
        const PYPROG_REAL *restrict probs, const PYPROG_REAL *restrict entropy,
        const PYPROG_REAL *restrict coef_log_prob, const PYPROG_REAL *restrict coef_entropy,
        PYPROG_REAL *restrict gW1t, PYPROG_REAL *restrict gb1, PYPROG_REAL *restrict gW,
        PYPROG_REAL *restrict gb, PYPROG_REAL *restrict scratch) {
#define PYPROG_FIXED_CALL(NAME)                                                                    \
    do {                                                                                           \
        NAME(obs, actions, m, W, hidden, log_probs, probs, entropy, coef_log_prob, coef_entropy,   \
             gW1t, gb1, gW, gb);                                                                   \
        return;                                                                                    \
    } while (0)
    if (a == 4 && d == 2 && hd == 16) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_backward_4_16_2));
    if (a == 4 && d == 2 && hd == 32) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_backward_4_32_2));
    if (a == 4 && d == 2 && hd == 64) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_backward_4_64_2));
    if (a == 5 && d == 1 && hd == 0) PYPROG_FIXED_CALL(PYPROG_F(pyprog_softmax_backward_5_0_1));
#undef PYPROG_FIXED_CALL
    ptrdiff_t f = hd > 0 ? hd : d;
    PYPROG_REAL *dz = scratch, *dpre = scratch + a;
    for (ptrdiff_t i = 0; i < m; i++) {
        PYPROG_REAL cl = coef_log_prob[i], ce = coef_entropy[i];
        if (cl == 0.0 && ce == 0.0) continue;
        const PYPROG_REAL *s = obs + i * d;
        const PYPROG_REAL *x = hd > 0 ? hidden + i * hd : s;
        const PYPROG_REAL *lp = log_probs + i * a, *p = probs + i * a;
        /* dz = c (onehot(a) − π) − e π ⊙ (log π + H) */
        for (ptrdiff_t c = 0; c < a; c++) dz[c] = -p[c] * (cl + ce * (lp[c] + entropy[i]));
        if (PYPROG_SCORE_REST) {
            int64_t t = actions[i];
            PYPROG_REAL rest = 0.0;
            for (ptrdiff_t c = 0; c < a; c++) rest += c == t ? (PYPROG_REAL)0 : p[c];
            dz[t] = cl * rest - p[t] * (ce * (lp[t] + entropy[i]));
        } else {
            dz[actions[i]] += cl;
        }
        /* ∂W += dz xᵀ, ∂b += dz */
        for (ptrdiff_t c = 0; c < a; c++) {
            gb[c] += dz[c];
            for (ptrdiff_t j = 0; j < f; j++) gW[c * f + j] += dz[c] * x[j];
        }
        if (hd > 0) {
            /* dpre = (Wᵀ dz) ⊙ (1 − h²);  ∂W1 += dpre sᵀ, ∂b1 += dpre */
            for (ptrdiff_t j = 0; j < hd; j++) dpre[j] = 0.0;
            for (ptrdiff_t c = 0; c < a; c++)
                for (ptrdiff_t j = 0; j < hd; j++) dpre[j] += dz[c] * W[c * hd + j];
            for (ptrdiff_t j = 0; j < hd; j++) {
                dpre[j] *= (PYPROG_REAL)1 - x[j] * x[j];
                gb1[j] += dpre[j];
            }
            for (ptrdiff_t k = 0; k < d; k++)
                for (ptrdiff_t j = 0; j < hd; j++) gW1t[k * hd + j] += s[k] * dpre[j];
        }
    }
}

#undef PYPROG_REAL
#undef PYPROG_SUFFIX
#undef PYPROG_EXP
#undef PYPROG_LOG
#undef PYPROG_TANH
#undef PYPROG_DOT
#undef PYPROG_SCORE_REST
