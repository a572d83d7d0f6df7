"""PDIS and episode ratios run 8 rows side by side (compiled): every row as if it ran alone.

The compiled kernels put blocks of 8 episodes in one vector (on AVX-512 CPUs; past 16 steps
PDIS also prefetches each row ahead) and run the last ``N % 8`` rows, and every row shorter
than 8 steps, one by one; a row of ``H`` steps is cut in tiles of 8 steps, the last one
overlapping its neighbour when 8 does not divide ``H``. These tests aim at the seams: row
counts and lengths around multiples of 8, masks with holes, clipping, ``gamma < 1``,
non-finite values, and rows that overflow inside a block. Both backends must match the
definition; the compiled one must also give each row exactly (bit for bit) what it gives
that row alone.
"""

import numpy as np
import pytest

from pyprog._ext import fallback

try:
    from pyprog._ext import _kernels as compiled
except ImportError:  # no compiler at install time: the fallback alone is tested
    compiled = None

KERNEL_MODULES = [fallback] + ([compiled] if compiled is not None else [])
SHAPES = [(8, 8), (9, 8), (15, 9), (16, 15), (17, 16), (24, 17), (7, 100), (33, 1), (40, 7),
          (16, 64), (9, 65), (16, 129), (8, 136), (23, 501), (1, 64)]  # fmt: skip


@pytest.fixture(params=KERNEL_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def K(request):
    return request.param


def episodes(n, h, seed, holes=True, scale=0.4):
    """Random episodes; with ``holes`` the masks are not prefixes (any step may be invalid)."""
    rng = np.random.default_rng(seed)
    log_pi = np.log(0.5) + scale * rng.normal(size=(n, h))
    log_beta = np.log(0.5) + scale * rng.normal(size=(n, h))
    rewards = rng.normal(size=(n, h))
    if holes:
        mask = (rng.random((n, h)) < 0.7).astype(np.float64)
    else:
        mask = (np.arange(h) < rng.integers(0, h + 1, size=n)[:, None]).astype(np.float64)
    return log_pi, log_beta, rewards, mask


def pdis_definition(log_pi, log_beta, rewards, mask, gamma, clip):
    """One sum at a time: rho_l = min(clip, exp(sum of valid log-ratios up to l))."""
    n, h = log_pi.shape
    g, J = np.zeros((n, h)), np.zeros(n)
    for i in range(n):
        terms, c = np.zeros(h), 0.0
        for t in range(h):
            if mask[i, t]:
                c += log_pi[i, t] - log_beta[i, t]
                terms[t] = min(clip, np.exp(c)) * gamma**t * rewards[i, t]
        J[i] = terms.sum()
        g[i] = [terms[t:].sum() if mask[i, t] else 0.0 for t in range(h)]
    return g, J


def close(a, b, rtol=1e-10):
    scale = max(1.0, np.abs(b[np.isfinite(b)]).max(initial=0.0))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("n, h", SHAPES)
@pytest.mark.parametrize("gamma, clip", [(0.9, 2.0), (1.0, np.inf), (0.5, 0.7)])
def test_pdis_matches_definition(K, n, h, gamma, clip):
    args = episodes(n, h, seed=n * 1000 + h)
    g, J = K.pdis_weights(*args, gamma, clip)
    g_ref, J_ref = pdis_definition(*args, gamma, clip)
    close(g, g_ref)
    close(J, J_ref)


@pytest.mark.parametrize("n, h", SHAPES)
@pytest.mark.parametrize("holes", [True, False])
def test_pdis_rows_are_independent(K, n, h, holes):
    """Each row equals the row alone and follows its row when the rows are shuffled."""
    args = episodes(n, h, seed=n + h, holes=holes)
    g, J = K.pdis_weights(*args, 0.95, 3.0)
    for i in range(n):
        gi, Ji = K.pdis_weights(*(a[i : i + 1] for a in args), 0.95, 3.0)
        np.testing.assert_array_equal(g[i], gi[0])
        np.testing.assert_array_equal(J[i], Ji[0])
    order = np.random.default_rng(0).permutation(n)
    g_perm, J_perm = K.pdis_weights(*(np.ascontiguousarray(a[order]) for a in args), 0.95, 3.0)
    np.testing.assert_array_equal(g_perm, g[order])
    np.testing.assert_array_equal(J_perm, J[order])


@pytest.mark.parametrize("clip", [np.inf, 1.0])
def test_pdis_rows_are_independent_at_the_ends_of_exp(K, clip):
    """Log-ratio sums down to about -900 (subnormal and zero ratios) and up to about +500 (ratios
    near e^500, unclipped with clip = inf), and clip = 1 (log clip 0, tied by the sums that
    stay at 0): each row, bit for bit, as it is alone. (Ratios past float64 go to the exact
    path: test_pdis_overflowing_row_inside_a_block_equals_fallback.)"""
    log_pi, log_beta, rewards, mask = episodes(24, 41, seed=3, holes=True)
    steps = np.random.default_rng(3).uniform(-40.0, 30.0, size=(24, 1))
    log_pi = log_beta + steps  # each valid step moves the sum by -40 .. +30
    log_pi[:, ::5] = log_beta[:, ::5]  # and some steps leave it where it is
    expected = [K.pdis_weights(*(a[i : i + 1] for a in (log_pi, log_beta, rewards, mask)),
                               1.0, clip) for i in range(24)]  # fmt: skip
    g, J = K.pdis_weights(log_pi, log_beta, rewards, mask, 1.0, clip)
    for i, (gi, Ji) in enumerate(expected):
        np.testing.assert_array_equal(g[i], gi[0])
        np.testing.assert_array_equal(J[i], Ji[0])
    finite = g[(g != 0.0) & np.isfinite(g)]
    assert np.abs(finite).min() < np.finfo(np.float64).tiny  # subnormal values were reached
    if clip == np.inf:
        assert np.abs(J).max() > 1e200  # and ratios far past the clip of any real use


@pytest.mark.parametrize("h", [8, 13, 40])
def test_pdis_non_finite_values(K, h):
    """NaN and inf in padding change nothing; NaN at a valid step is named, whatever the block."""
    log_pi, log_beta, rewards, mask = episodes(19, h, seed=h)
    mask[:, 0] = 1.0
    clean_g, clean_J = K.pdis_weights(log_pi, log_beta, rewards, mask, 0.9, 5.0)
    bad = log_pi.copy()
    bad[mask == 0] = np.inf
    g, J = K.pdis_weights(bad, log_beta, rewards, mask, 0.9, 5.0)
    np.testing.assert_array_equal(g, clean_g)
    np.testing.assert_array_equal(J, clean_J)
    bad[3, 0] = np.nan  # a valid step of a row inside the first block
    with pytest.raises(ValueError, match=r"log_pi must be finite .* episode 3, step 0"):
        K.pdis_weights(bad, log_beta, rewards, mask, 0.9, 5.0)


def test_pdis_overflowing_row_inside_a_block_equals_fallback():
    """A row whose ratio overflows float64 (clip = inf) is recomputed exactly, block or not."""
    if compiled is None:
        pytest.skip("compiled kernels not built")
    log_pi, log_beta, rewards, mask = episodes(16, 24, seed=7, holes=False)
    mask[5] = 1.0
    log_pi[5, :] = log_beta[5, :] + 40.0  # cumulative log-ratio past 709.78 at step 17
    rewards[5, 17:] = 0.0  # from step 17 (log-ratio 720), where the rewards are 0: finite
    got = compiled.pdis_weights(log_pi, log_beta, rewards, mask, 0.99, np.inf)
    expected = fallback.pdis_weights(log_pi, log_beta, rewards, mask, 0.99, np.inf)
    assert np.isfinite(expected[1]).all()
    for a, b in zip(got, expected, strict=True):
        close(a, b)


@pytest.mark.parametrize("n, h", SHAPES)
@pytest.mark.parametrize("clip", [2.0, np.inf, 0.5])
def test_ratios_match_definition_and_rows_are_independent(K, n, h, clip):
    log_pi, log_beta, _, mask = episodes(n, h, seed=3 * n + h, scale=0.3)
    lam, unclipped = K.episode_ratios(log_pi, log_beta, mask, clip)
    total = np.array([sum(log_pi[i, t] - log_beta[i, t] for t in range(h) if mask[i, t])
                      for i in range(n)])  # fmt: skip
    close(lam, np.minimum(clip, np.exp(total)))
    np.testing.assert_array_equal(unclipped, total < np.log(clip))
    for i in range(n):
        lam_i, unclipped_i = K.episode_ratios(log_pi[i : i + 1], log_beta[i : i + 1],
                                              mask[i : i + 1], clip)  # fmt: skip
        np.testing.assert_array_equal(lam[i], lam_i[0])
        np.testing.assert_array_equal(unclipped[i], unclipped_i[0])


@pytest.mark.parametrize("h", [8, 21])
def test_ratios_non_finite_values(K, h):
    log_pi, log_beta, _, mask = episodes(17, h, seed=h)
    mask[:, 0] = 1.0
    clean = K.episode_ratios(log_pi, log_beta, mask, 10.0)
    bad = log_beta.copy()
    bad[mask == 0] = -np.inf  # padding
    for a, b in zip(K.episode_ratios(log_pi, bad, mask, 10.0), clean, strict=True):
        np.testing.assert_array_equal(a, b)
    bad[9, 0] = np.nan  # a valid step of a row in the second block
    with pytest.raises(ValueError, match="episode 9, step 0"):
        K.episode_ratios(log_pi, bad, mask, 10.0)
