"""Compiled kernels vs their NumPy twins, side by side (issue: core kernels).

Run: ``pytest bench/bench_kernels.py --benchmark-columns=median,iqr,rounds``.
Targets: fused PDIS >= 3x the fallback at (N, H) = (1000, 500) (issue 20: >= 15x) and
>= 10x a tuned NumPy version, with a streaming floor beside them (``-k floor``: reading the
four inputs and writing the output in one compiled pass, nothing else); WLS forecast with its
gradients >= 5x at N = 1000, d = 7. The softmax-MLP passes have no target of their own: they
are most of the NS-Reacher run (bench_runs.py), timed here at its mean buffer size; nor do
the mixed model's REML objective and mode search (``pyprog.value``), timed at a year of day
bins under 16 blocks and the day of the week, the search against SciPy's L-BFGS-B.
"""

import numba
import numpy as np
import pytest

from pyprog._ext import fallback
from pyprog.forecast.bases import forecast_design

compiled = pytest.importorskip("pyprog._ext._kernels", reason="compiled kernels not built")

IMPLS = [("numpy", fallback, "baseline"), ("cython", compiled, "candidate")]


def episodes(n, h, seed=0):
    rng = np.random.default_rng(seed)
    log_pi = np.log(0.5) + 0.1 * rng.normal(size=(n, h))
    log_beta = np.log(0.5) + 0.1 * rng.normal(size=(n, h))
    rewards = rng.normal(size=(n, h))
    lengths = rng.integers(max(1, h // 2), h + 1, size=n)
    mask = (np.arange(h) < lengths[:, None]).astype(np.float64)
    return log_pi, log_beta, rewards, mask


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
@pytest.mark.parametrize("n, h", [(1000, 1), (1000, 15), (1000, 500)])
def bench_pdis_weights(benchmark, impl, K, role, n, h):
    benchmark.group = f"pdis_weights (N, H) = ({n}, {h})"
    benchmark.extra_info.update(impl=impl, role=role)
    if role == "candidate" and (n, h) == (1000, 500):
        benchmark.extra_info["target"] = 15.0
    log_pi, log_beta, rewards, mask = episodes(n, h)
    g, J = benchmark(K.pdis_weights, log_pi, log_beta, rewards, mask, 0.99, 10.0)
    assert J.shape == (n,)


def pdis_weights_tuned(log_pi, log_beta, rewards, mask, gamma, clip):
    """The best plain NumPy for ``pdis_weights`` we could write: in place, ``out=`` everywhere.

    Unlike the twin in ``fallback.py`` it assumes a 0/1 mask and finite inputs (it masks by
    multiplying) and does not recompute overflowing rows: the fast path only, as a fair
    NumPy baseline for the compiled kernel.
    """
    h = log_pi.shape[1]
    discount = gamma ** np.arange(h, dtype=np.float64)
    g = np.subtract(log_pi, log_beta)
    g *= mask
    np.cumsum(g, axis=1, out=g)  # c
    np.minimum(g, np.log(clip), out=g)
    np.exp(g, out=g)  # rho
    g *= discount
    g *= rewards
    g *= mask  # rho * gamma**t * r where valid
    J = g.sum(axis=1)
    backwards = g[:, ::-1]
    np.cumsum(backwards, axis=1, out=backwards)
    g *= mask
    return g, J


def episode_ratios_tuned(log_pi, log_beta, mask, clip):
    """The best plain NumPy for ``episode_ratios`` (0/1 mask, finite inputs; as above)."""
    s = np.subtract(log_pi, log_beta)
    s *= mask
    lam = s.sum(axis=1)
    log_clip = np.log(clip)
    unclipped = lam < log_clip
    np.minimum(lam, log_clip, out=lam)
    np.exp(lam, out=lam)
    return lam, unclipped


TUNED = [
    ("numpy-tuned", pdis_weights_tuned, episode_ratios_tuned, "baseline"),
    ("cython", compiled.pdis_weights, compiled.episode_ratios, "candidate"),
]


@pytest.mark.parametrize("impl, pdis, ratios, role", TUNED, ids=[i[0] for i in TUNED])
@pytest.mark.parametrize("n, h", [(1000, 15), (1000, 500)])
def bench_pdis_weights_tuned(benchmark, impl, pdis, ratios, role, n, h):
    benchmark.group = f"pdis_weights (N, H) = ({n}, {h}) vs tuned NumPy"
    benchmark.extra_info.update(impl=impl, role=role)
    if role == "candidate" and (n, h) == (1000, 500):
        benchmark.extra_info["target"] = 10.0
    log_pi, log_beta, rewards, mask = episodes(n, h)
    g, J = benchmark(pdis, log_pi, log_beta, rewards, mask, 0.99, 10.0)
    g_ref, J_ref = fallback.pdis_weights(log_pi, log_beta, rewards, mask, 0.99, 10.0)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)


@numba.njit
def _stream_sum(a, b, c, d, out):  # out = a + b + c + d, one element at a time
    fa, fb, fc, fd, fo = a.ravel(), b.ravel(), c.ravel(), d.ravel(), out.ravel()
    for i in range(fo.size):
        fo[i] = fa[i] + fb[i] + fc[i] + fd[i]


_stream_sum(*(np.zeros((1, 1)) for _ in range(5)))  # compile now, not in the first round


def pdis_streaming_floor(log_pi, log_beta, rewards, mask, gamma, clip):
    """Read ``pdis_weights``' four inputs once and write an (N, H) output once: no more.

    One compiled pass (numba, vectorised by LLVM): ``out = log_pi + log_beta + rewards +
    mask``. Any ``pdis_weights`` that reads its inputs and writes ``g`` must move at least
    these bytes, so on this machine its time bounds the kernel from below: the roofline.
    (An earlier floor, three NumPy passes over blocks of 64 rows in L2, took 1.10-1.31 ms
    against 0.95-0.97 ms for this one, in runs a minute apart.)
    ``gamma`` and ``clip`` are unused (same signature as the kernels).
    """
    out = np.empty_like(log_pi)
    _stream_sum(log_pi, log_beta, rewards, mask, out)
    return out, out[:, 0]


FLOOR = [
    ("streaming-floor", pdis_streaming_floor, "floor"),
    ("cython", compiled.pdis_weights, "kernel"),
    ("numpy-tuned", pdis_weights_tuned, "tuned"),
]


@pytest.mark.parametrize("impl, pdis, what", FLOOR, ids=[i[0] for i in FLOOR])
def bench_pdis_weights_floor(benchmark, impl, pdis, what):
    """The kernel beside the streaming floor: time(kernel) / time(floor) is how far from the
    roofline it runs; (time(tuned) / time(floor)) is the most any kernel could gain over tuned
    NumPy with these inputs and outputs. Ratios printed with ``floor`` as the candidate."""
    n, h = 1000, 500
    benchmark.group = f"pdis_weights (N, H) = ({n}, {h}) vs streaming floor"
    # the summary prints baseline / candidate: kernel time / floor time
    benchmark.extra_info.update(
        impl=impl, role={"floor": "candidate", "kernel": "baseline"}.get(what)
    )
    log_pi, log_beta, rewards, mask = episodes(n, h)
    g, J = benchmark(pdis, log_pi, log_beta, rewards, mask, 0.99, 10.0)
    assert g.shape == (n, h)
    if what == "floor":
        np.testing.assert_array_equal(g, log_pi + log_beta + rewards + mask)


@numba.njit(fastmath=True)  # reassociated sums: vectorised, several accumulators
def _row_sums3(a, b, c, out):  # out[i] = sum(a[i] + b[i] + c[i])
    for i in range(a.shape[0]):
        acc = 0.0
        for t in range(a.shape[1]):
            acc += a[i, t] + b[i, t] + c[i, t]
        out[i] = acc


_row_sums3(*(np.zeros((1, 1)) for _ in range(3)), np.zeros(1))


def ratios_streaming_floor(log_pi, log_beta, mask, clip):
    """Read ``episode_ratios``' three inputs once, write an (N,) output: its roofline, as
    ``pdis_streaming_floor`` is PDIS's (``clip`` unused)."""
    out = np.empty(log_pi.shape[0])
    _row_sums3(log_pi, log_beta, mask, out)
    return out, out > 0


RATIOS_FLOOR = [
    ("streaming-floor", ratios_streaming_floor, "floor"),
    ("cython", compiled.episode_ratios, "kernel"),
    ("numpy-twin", fallback.episode_ratios, "twin"),
]


@pytest.mark.parametrize("impl, ratios, what", RATIOS_FLOOR, ids=[i[0] for i in RATIOS_FLOOR])
def bench_episode_ratios_floor(benchmark, impl, ratios, what):
    """``episode_ratios`` beside its streaming floor (kernel time / floor time printed), and
    its NumPy twin: time(twin) / time(floor) bounds what any kernel can gain over the twin."""
    n, h = 1000, 500
    benchmark.group = f"episode_ratios (N, H) = ({n}, {h}) vs streaming floor"
    benchmark.extra_info.update(
        impl=impl, role={"floor": "candidate", "kernel": "baseline"}.get(what)
    )
    log_pi, log_beta, _, mask = episodes(n, h)
    lam, unclipped = benchmark(ratios, log_pi, log_beta, mask, 10.0)
    assert lam.shape == (n,)


@pytest.mark.parametrize("impl, pdis, ratios, role", TUNED, ids=[i[0] for i in TUNED])
@pytest.mark.parametrize("n, h", [(1000, 15), (1000, 500)])
def bench_episode_ratios_tuned(benchmark, impl, pdis, ratios, role, n, h):
    benchmark.group = f"episode_ratios (N, H) = ({n}, {h}) vs tuned NumPy"
    benchmark.extra_info.update(impl=impl, role=role)
    log_pi, log_beta, _, mask = episodes(n, h)
    lam, unclipped = benchmark(ratios, log_pi, log_beta, mask, 10.0)
    lam_ref, unclipped_ref = fallback.episode_ratios(log_pi, log_beta, mask, 10.0)
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-10)
    np.testing.assert_array_equal(unclipped, unclipped_ref)


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
@pytest.mark.parametrize("d", [3, 7])
def bench_wls_forecast(benchmark, impl, K, role, d):
    n = 1000
    benchmark.group = f"wls_forecast + gradients N = {n}, d = {d}"
    benchmark.extra_info.update(impl=impl, role=role)
    if role == "candidate" and d == 7:
        benchmark.extra_info["target"] = 5.0
    rng = np.random.default_rng(d)
    phi, phi_star = forecast_design(n, 1, "fourier", d)
    ratios, returns = rng.random(n) * 5, rng.normal(size=n)
    f, w, dfdy, dfdw, status = benchmark(K.wls_forecast, phi, ratios, returns, phi_star)
    assert status == K.WLS_CHOLESKY


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
@pytest.mark.parametrize("n, h", [(1000, 15), (1000, 500)])
def bench_episode_ratios(benchmark, impl, K, role, n, h):
    benchmark.group = f"episode_ratios (N, H) = ({n}, {h})"
    benchmark.extra_info.update(impl=impl, role=role)
    if role == "candidate" and (n, h) == (1000, 500):
        benchmark.extra_info["target"] = 15.0
    log_pi, log_beta, _, mask = episodes(n, h)
    lam, unclipped = benchmark(K.episode_ratios, log_pi, log_beta, mask, 10.0)
    assert lam.shape == (n,)


def mlp_batch(m=6500, d=2, hidden=32, a=4, seed=0):
    """NS-Reacher's speed-2 policy (2 -> 32 tanh -> 4) on m stored steps (the run's mean)."""
    rng = np.random.default_rng(seed)
    obs, actions = rng.random((m, d)), rng.integers(0, a, size=m)
    W1, b1 = rng.normal(size=(hidden, d)), rng.normal(size=hidden)
    W, b = 0.3 * rng.normal(size=(a, hidden)), rng.normal(size=a)
    return obs, actions, W1, b1, W, b


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
def bench_softmax_forward(benchmark, impl, K, role):
    benchmark.group = "softmax_forward, M = 6500 steps, 2 -> 32 tanh -> 4"
    benchmark.extra_info.update(impl=impl, role=role)
    args = mlp_batch()
    hidden, *_ = benchmark(K.softmax_forward, *args)
    assert hidden.shape == (6500, 32)


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
def bench_softmax_backward(benchmark, impl, K, role):
    benchmark.group = "softmax_backward, M = 6500 steps, 2 -> 32 tanh -> 4"
    benchmark.extra_info.update(impl=impl, role=role)
    obs, actions, W1, b1, W, b = mlp_batch()
    hidden, log_probs, probs, _, entropy = K.softmax_forward(obs, actions, W1, b1, W, b)
    rng = np.random.default_rng(1)
    c, e = rng.normal(size=6500), np.full(6500, 0.2 / 6500)
    grad = benchmark(
        K.softmax_backward, obs, actions, hidden, log_probs, probs, entropy, W1, W, c, e
    )
    assert grad.shape == (32 * 3 + 4 * 33,)


def mixed_model(m=365, seed=0):
    """A year of day bins under 16 blocks of the year and the day of the week (P = 24),
    as ``pyprog.value`` fits them: (C, y, noise, owner)."""
    rng = np.random.default_rng(seed)
    day = np.arange(m)
    blocks16 = np.eye(16)[(day * 16) // m]
    dow = np.eye(7)[day % 7]
    C = np.ascontiguousarray(np.hstack([np.ones((m, 1)), blocks16, dow]))
    owner = np.r_[0, np.full(16, 1), np.full(7, 2)].astype(np.int64)
    noise = rng.uniform(0.2, 0.4, m)
    y = C @ np.r_[1.0, 0.4 * rng.normal(size=16), 0.1 * rng.normal(size=7)]
    return C, y + rng.normal(size=m) * np.sqrt(noise), noise, owner


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
def bench_reml_objective_grad(benchmark, impl, K, role):
    benchmark.group = "reml_objective_grad m = 365, P = 24"
    benchmark.extra_info.update(impl=impl, role=role)
    C, y, noise, owner = mixed_model()
    f, g = benchmark(K.reml_objective_grad, C, y, noise, owner, np.array([0.1, 0.4, 0.1]), 0.6)
    assert np.isfinite(f) and g.shape == (3,)


def lbfgsb_fit(C, y, noise, owner, start, c, maxiter):
    """The search ``reml_fit`` replaced: SciPy's L-BFGS-B over the variances, on the compiled
    objective and gradient."""
    import scipy.optimize

    def in_variances(v):
        s = np.sqrt(np.maximum(v, (1e-6 * c) ** 2))
        f, g = compiled.reml_objective_grad(C, y, noise, owner, s, c)
        return f, g / (2.0 * s)

    res = scipy.optimize.minimize(
        in_variances, start**2, jac=True, method="L-BFGS-B",
        bounds=[(0.0, None)] * start.size, options={"maxiter": maxiter},
    )  # fmt: skip
    return np.sqrt(res.x), res.nfev, res.success


FITS = [("scipy L-BFGS-B", lbfgsb_fit, "baseline"), ("cython", None, "candidate")]


@pytest.mark.parametrize("impl, fit, role", FITS, ids=[i[0] for i in FITS])
def bench_reml_fit(benchmark, impl, fit, role):
    benchmark.group = "reml_fit m = 365, P = 24 vs L-BFGS-B on the compiled objective"
    benchmark.extra_info.update(impl=impl, role=role)
    C, y, noise, owner = mixed_model()
    theta, evaluations, ok = benchmark(
        fit or compiled.reml_fit, C, y, noise, owner, np.full(3, 0.18), 0.6, 500
    )
    assert ok and theta.shape == (3,)
