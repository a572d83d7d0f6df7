"""``basis="auto"`` on long logs (issue 35, item 9): backtests from block moments.

Above ``blocks.LARGE_N`` episodes the selection and its interval are computed from block
moments (``pyprog.forecast.blocks``) in O(N) memory; at the threshold they must give the
dense path's numbers, and the block-moment kernel its twin's and its definition's.
"""

import inspect
import tracemalloc

import numpy as np
import pytest
from test_kernels import KERNEL_MODULES, compiled, needs_compiled

import pyprog
from pyprog._ext import fallback
from pyprog.forecast import blocks, selected_intervals, selection
from pyprog.forecast.forecasters import parse_forecaster
from pyprog.forecast.intervals import rademacher_chunks, rademacher_signs
from pyprog.timeseries.errors import ForecastError
from pyprog.utils.bounded_cache import array_cache


@pytest.fixture(params=KERNEL_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def K(request):
    return request.param


def drifting(n, seed=0, period=None):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    y = rng.normal(0.0, 1.0, n) + np.sin(2 * np.pi * t / (period or n))
    return y, rng.exponential(1.0, n)


@pytest.fixture
def dense_then_blocks(monkeypatch):
    """Run a callable on the dense path, then on the block path; both results."""

    def run(f, *args, **kwargs):
        monkeypatch.setattr(blocks, "LARGE_N", 10**12)
        dense = f(*args, **kwargs)
        monkeypatch.setattr(blocks, "LARGE_N", 0)
        return dense, f(*args, **kwargs)

    return run


# -- the kernel -----------------------------------------------------------------------


def moments_reference(signs, V, starts):
    """The definition: σ = 2·bits − 1, then each block's Σ σ_i V[i]."""
    n = V.shape[0]
    sigma = np.unpackbits(signs, axis=1, count=n, bitorder="little") * 2.0 - 1.0
    sums = [np.add.reduceat(sigma * V[:, p], starts, axis=1) for p in range(V.shape[1])]
    return np.stack(sums, axis=2)


@needs_compiled
def test_block_moments_twins_share_signature_and_docstring():
    f, c = fallback.block_moments, compiled.block_moments
    assert list(inspect.signature(f).parameters) == list(inspect.signature(c).parameters)
    assert inspect.getdoc(f) == inspect.getdoc(c)


@pytest.mark.parametrize(
    "n, q, b, cuts",
    [(1, 1, 3, 1), (7, 3, 5, 3), (8, 2, 4, 8), (9, 2, 4, 9), (100, 5, 17, 30), (1003, 4, 33, 50),
     (70000, 3, 6, 40)],
)  # fmt: skip
def test_block_moments_are_the_signed_block_sums(K, n, q, b, cuts):
    rng = np.random.default_rng(n)
    V = rng.normal(size=(n, q))
    signs = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
    # blocks of every length, one-episode ones and those that split a byte included
    starts = np.unique(np.concatenate([[0], rng.integers(0, n, size=cuts)])).astype(np.int64)
    got = K.block_moments(signs, V, starts)
    np.testing.assert_allclose(got, moments_reference(signs, V, starts), rtol=1e-10, atol=1e-12)


@needs_compiled
def test_block_moments_compiled_equals_fallback_at_the_bootstraps_size():
    rng = np.random.default_rng(1)
    n = 200_000
    V = rng.normal(size=(n, 6))
    signs = rng.integers(0, 256, size=(20, n // 8), dtype=np.uint8)
    starts = np.arange(0, n, 487, dtype=np.int64)
    a, b = compiled.block_moments(signs, V, starts), fallback.block_moments(signs, V, starts)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(a).max())


def test_block_moments_of_no_episode(K):
    out = K.block_moments(np.zeros((3, 0), np.uint8), np.zeros((0, 2)), np.zeros(0, np.int64))
    assert out.shape == (3, 0, 2)


@pytest.mark.parametrize(
    "starts, message",
    [([1, 5], "starts must begin at 0"), ([0, 5, 5], "strictly increasing"),
     ([0, 16], "lie below N = 16"), ([0.0, 5.0], "starts must be a 1-D C-contiguous int64")],
)  # fmt: skip
def test_block_moments_bad_input_names_the_argument(K, starts, message):
    signs = np.zeros((2, 2), np.uint8)
    with pytest.raises(ValueError, match=message):
        K.block_moments(signs, np.ones((16, 2)), np.array(starts))
    with pytest.raises(ValueError, match="signs must be"):
        K.block_moments(np.zeros((2, 3), np.uint8), np.ones((16, 2)), np.array([0], np.int64))


# -- the pieces ----------------------------------------------------------------------


def test_rademacher_chunks_are_the_same_signs():
    for n, n_boot, rows in [(1000, 37, 4), (1001, 37, 5), (12345, 10, 1), (9, 1, 8)]:
        whole = rademacher_signs(n, n_boot, random_state=5)
        parts = list(rademacher_chunks(n, n_boot, random_state=5, rows=rows))
        assert all(len(p) % 4 == 0 for p in parts[:-1])
        np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_array_cache_is_bounded_in_bytes():
    calls = []

    @array_cache(maxsize=100, max_bytes=8000)
    def ones(n):
        calls.append(n)
        return np.ones(n)

    for n in range(10, 20):  # 80 to 152 bytes each: all kept
        ones(n)
    assert ones.cache_info() == (10, 8 * sum(range(10, 20)))
    big = [ones(120) for _ in range(2)]  # 960 bytes: under an eighth of 8000, kept
    assert big[0] is big[1] and calls.count(120) == 1
    ones(5000)  # 40,000 bytes: recomputed, never kept
    ones(5000)
    assert calls.count(5000) == 2 and ones.cache_info()[1] <= 8000
    for n in range(100, 125):  # pushes the oldest out: the byte budget holds
        ones(n)
    assert ones.cache_info()[1] <= 8000
    ones(10)
    assert calls.count(10) == 2  # evicted, recomputed


def test_cut_blocks_cut_at_every_point_and_are_at_most_length_long():
    b = blocks.cut_blocks(1000, [3, 250, 251, 999, 0, 1000, -5, 2000], 64)
    assert b.starts[0] == 0 and b.ends[-1] == 1000
    np.testing.assert_array_equal(b.starts[1:], b.ends[:-1])
    assert (b.ends - b.starts).max() <= 64
    assert {3, 250, 251, 999} <= set(b.starts.tolist())


CANDIDATES = (
    *selection.DEFAULT_CANDIDATES, "fourier(d=30)", "poly(d=5)", "window(k=2000)",
    "ewma(halflife=300)", "ewma(halflife=0.5)", "window(k=1)",
)  # fmt: skip


@pytest.mark.parametrize("weighted", [False, True], ids=["NIS", "NWIS"])
def test_block_fits_forecast_as_the_dense_weights_do(weighted):
    """Each candidate's forecast at each point, from block moments, against ζ·v with the
    forecast weights of the dense path (the WLS kernel)."""
    n, delta = 6000, 3
    y, lam = drifting(n, seed=2, period=900)
    w = lam if weighted else np.ones(n)
    cands = [parse_forecaster(c) for c in CANDIDATES]
    points = [3100, 4321, 5997, n]
    fits = blocks.BlockFits(cands, n, delta, points, w)
    assert fits.ok.all()
    got = fits.forecasts(y)
    for i, c in enumerate(cands):
        for q, o in enumerate(points):
            Z, _ = selected_intervals.forecast_weights([c], o, delta, w[:o] if weighted else None)
            want = Z[0] @ y[:o]
            assert got[i, q] == pytest.approx(want, rel=1e-10, abs=1e-13), (str(c), o)


def test_block_fits_refuse_what_the_dense_path_refuses():
    n = 5000
    lam = np.zeros(n)
    lam[[10, 4000]] = 1.0  # two episodes of non-zero weight
    cands = [parse_forecaster(c) for c in ("fourier(d=5)", "linear", "window(k=50)")]
    fits = blocks.BlockFits(cands, n, 1, [3000, n], lam)
    # fourier(d=5) has 2 weighted episodes for 5 features; the window none before 3000
    assert fits.ok.tolist() == [[False, False], [False, True], [False, False]]
    for c in cands[::2]:
        with pytest.raises(ForecastError):
            selected_intervals.forecast_weights([c], 3000, 1, lam[:3000])[1][0] or c.nwis(
                np.zeros(3000), lam[:3000]
            )


# -- at the threshold: the same numbers as the dense path -----------------------------


@pytest.mark.parametrize("delta", [1, 5])
def test_selection_at_the_threshold_is_the_dense_one(dense_then_blocks, delta):
    n = blocks.LARGE_N + 1
    y, lam = drifting(n, seed=delta, period=3000)
    for ratios in (None, lam):
        dense, block = dense_then_blocks(selection.select_forecaster, y, delta, ratios)
        assert block.backtest is None and block.fits is not None
        assert block.model == dense.model and block.plausible == dense.plausible
        assert block.eligible == dense.eligible and block.warning == dense.warning
        for name, score in dense.scores.items():
            assert block.scores[name] == pytest.approx(score, rel=1e-12)
        np.testing.assert_allclose(block.errors, dense.errors, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(block.noise_factor, dense.noise_factor, rtol=1e-12)


@pytest.mark.parametrize("delta", [1, 5])
def test_interval_at_the_threshold_is_the_dense_one(dense_then_blocks, delta):
    """The stated approximation: the bootstrap replicates' backtests from BOOT_TERMS terms
    of each feature's series in a block; the interval's ends move by rounding only."""
    n = blocks.LARGE_N + 1
    y, lam = drifting(n, seed=10 + delta, period=4000)
    kw = dict(alpha=0.1, n_boot=400, random_state=3)
    for f, args in ((pyprog.nis_forecast, (y,)), (pyprog.nwis_forecast, (y, lam))):
        dense, block = dense_then_blocks(f, *args, delta, "auto", **kw)
        assert block.model == dense.model and block.plausible == dense.plausible
        assert block.value == dense.value
        width = dense.high - dense.low
        assert block.low == pytest.approx(dense.low, abs=1e-9 * width)
        assert block.high == pytest.approx(dense.high, abs=1e-9 * width)


def test_long_log_safety_test_and_custom_candidates(dense_then_blocks):
    n = 3000
    y, lam = drifting(n, seed=4, period=700)
    cands = ["fourier(d=30)", "poly(d=5)", "window(k=700)", "ewma(halflife=50)", "linear"]
    dense, block = dense_then_blocks(
        pyprog.nwis_forecast,
        y,
        lam,
        7,
        "auto",
        alpha=0.05,
        n_boot=300,
        random_state=0,
        candidates=cands,
    )
    assert (block.model, block.plausible) == (dense.model, dense.plausible)
    assert [block.low, block.high] == pytest.approx([dense.low, dense.high], rel=1e-9)
    from pyprog.forecast.safety import difference_safety_test

    dense, block = dense_then_blocks(
        difference_safety_test, y + 0.1, delta=5, alpha=0.1, n_boot=300, random_state=0
    )
    assert dense.accept == block.accept
    assert block.low == pytest.approx(dense.low, rel=1e-9)
    assert block.se == pytest.approx(dense.se, rel=1e-9)


# -- memory ---------------------------------------------------------------------------


def peak_traced(f, *args, **kwargs):
    tracemalloc.start()
    try:
        result = f(*args, **kwargs)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_at_1e5_episodes():
    """At 10^5 episodes basis="auto" with an interval held 4.4 GB before issue 35's fix
    (tracemalloc, which sees NumPy's allocations); now ~80 MiB compiled and ~130 MiB with the
    NumPy twins, most of it the bootstrap's per-pass block arrays, whose size does not
    grow with N (about 1,300 blocks), the rest a few arrays of length N."""
    y, lam = drifting(10**5, seed=1)
    f, peak = peak_traced(pyprog.nwis_forecast, y, lam, 5, "auto", alpha=0.1, random_state=0)
    assert f.low <= f.value <= f.high
    assert peak < 160 * 2**20, f"{peak / 2**20:.0f} MiB"


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["nis", "nwis"])
def test_one_million_episodes_in_under_a_gigabyte(estimator):
    """Issue 35: basis="auto" with an interval on 10^6 one-step episodes died at 7 GB (18 GB
    on this machine). 6-9 s and 223-245 MiB traced here (bench/bench_long_logs.py)."""
    y, lam = drifting(10**6, seed=0)
    if estimator == "nis":
        f, peak = peak_traced(pyprog.nis_forecast, y, 5, "auto", alpha=0.1, random_state=0)
    else:
        f, peak = peak_traced(pyprog.nwis_forecast, y, lam, 5, "auto", alpha=0.1, random_state=0)
    assert f.low <= f.value <= f.high
    assert peak < 2**30, f"{peak / 2**20:.0f} MiB"
