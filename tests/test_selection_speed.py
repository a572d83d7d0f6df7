"""``basis="auto"``'s fast paths give main's results (issue 18, speed).

The expected values were produced with the slow paths the fast ones replaced (the dense
target product and per-origin NWIS solves, ``bench/bench_selection.py``'s "before") by
``nis_forecast(y, delta, "auto", alpha=0.1, n_boot=B, random_state=0)`` and the NWIS twin, on the
Cython backend, after the interval's widening reached out to the plausible candidates'
forecasts (the values and models as before; four interval ends moved outwards), and again
when the candidates were ranked by forecast noise (``selection.noise_order``: the same
models and values, the bootstrap replicates' choices changed and four upper ends with them),
and when the misfit allowance ``z·√mse`` was added to the interval's reach rather than put
under it as a floor, from the chosen forecaster's errors at denser origins (issue 32: the
same models and values, the ends moved outwards), and when a global model extrapolating a
drift got the bend allowance (issue 32, second round: the same models and values; five
pairs of ends moved outwards, the slow and fast paths agreeing to 1e-12);
the fallback backend agrees to float rounding (1e-12 relative here).
"""

import numpy as np
import pytest

import pyprog
from pyprog.forecast import backtests, selection

# (n, seed, delta, n_boot, NIS model, value, low, high, NWIS model, value, low, high)
MAIN = [
    (1000, 0, 5, 2000, "fourier(d=9)", -0.17272475613829363, -0.5920911213926723,
     0.36662706246717736, "fourier(d=7)", -0.1038708467828583, -0.6293036922137036,
     0.4652694630000364),
    (300, 1, 1, 500, "fourier(d=7)", -0.9275886485547615, -1.8060152920377828,
     -0.2981654326144094, "fourier(d=3)", -1.3436182634790166, -1.730870990668647,
     -0.866472340848291),
    (300, 2, 5, 500, "fourier(d=3)", -1.3617433710552334, -2.049839484470243,
     -0.5422214269275287, "fourier(d=3)", -1.3958958027626027, -2.0664370603138753,
     -0.6056869897223947),
]  # fmt: skip


def _data(n, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.sin(2 * np.pi * t / 400) + rng.normal(0, 0.5, n), rng.exponential(1.0, n)


@pytest.mark.parametrize("case", MAIN, ids=lambda c: f"n{c[0]}-seed{c[1]}-delta{c[2]}")
def test_auto_matches_main(case):
    n, seed, delta, n_boot, nis_model, *nis, nwis_model = case[:9]
    nwis = case[9:]
    y, lam = _data(n, seed)
    f = pyprog.nis_forecast(y, delta, "auto", alpha=0.1, n_boot=n_boot, random_state=0)
    g = pyprog.nwis_forecast(y, lam, delta, "auto", alpha=0.1, n_boot=n_boot, random_state=0)
    assert f.model == nis_model and g.model == nwis_model
    assert [f.value, f.low, f.high] == pytest.approx(nis, rel=1e-12, abs=1e-12)
    assert [g.value, g.low, g.high] == pytest.approx(list(nwis), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("delta", [1, 3, 5])
def test_target_sums_equal_dense_product(delta):
    rng = np.random.default_rng(delta)
    n = 200
    origins = np.arange(100, n - delta + 1, 7)
    w = rng.exponential(1.0, n)
    y = rng.normal(size=(4, n))
    dense = y @ selection.target_rows(origins, delta, n, w).T
    fast = backtests.target_sums(y, origins, delta, w)
    np.testing.assert_allclose(fast, dense, rtol=1e-13, atol=1e-13)


def test_target_sums_rejects_bad_shapes():
    with pytest.raises(ValueError, match="y"):
        backtests.target_sums(np.zeros((2, 3, 4)), np.array([1]), 1, np.ones(4))
    with pytest.raises(ValueError, match="weights"):
        backtests.target_sums(np.zeros((2, 5)), np.array([1]), 1, np.ones(4))
