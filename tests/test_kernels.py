"""The Cython kernels against their NumPy twins, and both against the math."""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyprog._ext import fallback

try:
    from pyprog._ext import _kernels as compiled
except ImportError:  # no compiler at install time: the fallback alone is tested
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels not built")
KERNEL_MODULES = [fallback] + ([compiled] if compiled is not None else [])
RTOL = 1e-10


@pytest.fixture(params=KERNEL_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def K(request):
    return request.param


def random_episodes(rng, n, h, scale=0.3, ragged=True):
    log_pi = rng.normal(size=(n, h)) * scale + np.log(0.5)
    log_beta = rng.normal(size=(n, h)) * scale + np.log(0.5)
    rewards = rng.normal(size=(n, h))
    mask = np.ones((n, h))
    if ragged:  # prefix masks: episode i has T_i valid steps
        lengths = rng.integers(1, h + 1, size=n)
        mask = (np.arange(h) < lengths[:, None]).astype(np.float64)
    return log_pi, log_beta, rewards, mask


def pdis_reference(log_pi, log_beta, rewards, mask, gamma, clip):
    """The definition, one sum at a time (slow, obviously right)."""
    n, h = log_pi.shape
    g = np.zeros((n, h))
    J = np.zeros(n)
    for i in range(n):
        terms = np.zeros(h)
        c = 0.0
        for t in range(h):
            if mask[i, t]:
                c += log_pi[i, t] - log_beta[i, t]
                terms[t] = min(clip, np.exp(c)) * gamma**t * rewards[i, t]
        J[i] = terms.sum()
        for t in range(h):
            g[i, t] = terms[t:].sum() if mask[i, t] else 0.0
    return g, J


def outcome(fn, *args):
    """fn(*args), or the message of the ValueError it raises."""
    try:
        return fn(*args)
    except ValueError as exc:
        return str(exc)


def assert_same(a, b, rtol=RTOL):
    """Equal to ``rtol`` relative to the largest finite magnitude (inf and NaN must match)."""
    b = np.asarray(b)
    finite = np.abs(b[np.isfinite(b)])
    scale = max(1.0, finite.max()) if finite.size else 1.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


class TestSignatures:
    @needs_compiled
    @pytest.mark.parametrize("name", ["pdis_weights", "episode_ratios", "wls_forecast"])
    def test_twins_share_name_signature_and_docstring(self, name):
        f, c = getattr(fallback, name), getattr(compiled, name)
        assert list(inspect.signature(f).parameters) == list(inspect.signature(c).parameters)
        assert inspect.getdoc(f) == inspect.getdoc(c)

    @needs_compiled
    def test_status_constants_agree(self):
        for name in ("WLS_CHOLESKY", "WLS_LSTSQ", "WLS_RANK_DEFICIENT"):
            assert getattr(fallback, name) == getattr(compiled, name)


class TestPDISWeights:
    @pytest.mark.parametrize("shape", [(1, 1), (7, 1), (50, 15), (20, 200)])
    def test_matches_definition(self, K, shape):
        rng = np.random.default_rng(sum(shape))
        args = random_episodes(rng, *shape)
        g, J = K.pdis_weights(*args, 0.95, 3.0)
        g_ref, J_ref = pdis_reference(*args, 0.95, 3.0)
        assert_same(g, g_ref, 1e-12)
        assert_same(J, J_ref, 1e-12)

    @needs_compiled
    @pytest.mark.parametrize(
        "n, h, scale, clip",
        [
            (1000, 1, 0.3, 10.0),  # H = 1
            (300, 15, 0.3, 5.0),  # ragged
            (100, 500, 0.05, 10.0),
            (100, 40, 3.0, 1e-3),  # every ratio clipped
            (50, 30, 80.0, np.inf),  # huge log-ratios: overflow to inf, underflow to 0
            (50, 30, 0.3, np.inf),
        ],
    )
    def test_compiled_equals_fallback(self, n, h, scale, clip):
        rng = np.random.default_rng(n + h)
        args = random_episodes(rng, n, h, scale)
        got = outcome(compiled.pdis_weights, *args, 0.99, clip)
        expected = outcome(fallback.pdis_weights, *args, 0.99, clip)
        if isinstance(expected, str):  # beyond float64: the same error from both
            assert got == expected and "clip" in got
            return
        for a, b in zip(got, expected, strict=True):
            assert_same(a, b)

    def test_every_ratio_clipped_gives_clip_times_discounted_return(self, K):
        rng = np.random.default_rng(1)
        log_pi, log_beta, rewards, mask = random_episodes(rng, 20, 10)
        log_pi = log_beta + 2.0  # every ratio e^2, cumulative e^{2t} > clip
        _, J = K.pdis_weights(log_pi, log_beta, rewards, mask, 0.9, 1.5)
        assert_same(J, 1.5 * (rewards * mask * 0.9 ** np.arange(10)).sum(axis=1))

    def test_zero_rewards_give_zero(self, K):
        rng = np.random.default_rng(2)
        log_pi, log_beta, rewards, mask = random_episodes(rng, 10, 8)
        g, J = K.pdis_weights(log_pi, log_beta, np.zeros_like(rewards), mask, 0.99, 10.0)
        assert not g.any() and not J.any()

    def test_on_policy_is_discounted_return(self, K):
        rng = np.random.default_rng(3)
        log_pi, _, rewards, mask = random_episodes(rng, 30, 12)
        _, J = K.pdis_weights(log_pi, log_pi.copy(), rewards, mask, 0.97, np.inf)
        assert_same(J, (rewards * mask * 0.97 ** np.arange(12)).sum(axis=1))

    def test_padding_is_ignored_and_zero(self, K):
        rng = np.random.default_rng(4)
        log_pi, log_beta, rewards, mask = random_episodes(rng, 30, 12)
        g, J = K.pdis_weights(log_pi, log_beta, rewards, mask, 0.9, 10.0)
        garbage = np.where(mask == 0, 1e300, 0.0)
        g2, J2 = K.pdis_weights(
            log_pi + garbage, log_beta - garbage, rewards + garbage, mask, 0.9, 10.0
        )
        assert_same(g2, g)
        assert_same(J2, J)
        assert not g[mask == 0].any()

    def test_no_steps(self, K):
        g, J = K.pdis_weights(*(np.zeros((3, 0)),) * 4, 0.9, 10.0)
        assert g.shape == (3, 0) and J.tolist() == [0.0, 0.0, 0.0]

    @given(
        data=st.data(),
        n=st.integers(1, 12),
        h=st.integers(1, 12),
        gamma=st.floats(0.0, 1.0),
        clip=st.one_of(st.floats(1e-3, 1e3), st.just(np.inf)),
    )
    @settings(max_examples=60, deadline=None)
    def test_property_kernels_agree_with_definition(self, data, n, h, gamma, clip):
        floats = st.floats(-5, 5, allow_nan=False)
        log_pi, log_beta, rewards = (
            data.draw(hnp.arrays(np.float64, (n, h), elements=floats)) for _ in range(3)
        )
        lengths = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, h)))
        mask = (np.arange(h) < lengths[:, None]).astype(np.float64)
        g_ref, J_ref = pdis_reference(log_pi, log_beta, rewards, mask, gamma, clip)
        for K in KERNEL_MODULES:
            g, J = K.pdis_weights(log_pi, log_beta, rewards, mask, gamma, clip)
            assert_same(g, g_ref, 1e-9)
            assert_same(J, J_ref, 1e-9)
            # prefix masks: J is the first reversed cumulative sum
            has_steps = lengths > 0
            assert_same(g[has_steps, 0], J[has_steps], 1e-12)


class TestEpisodeRatios:
    def test_matches_definition(self, K):
        rng = np.random.default_rng(5)
        log_pi, log_beta, _, mask = random_episodes(rng, 200, 10, scale=1.0)
        lam, unclipped = K.episode_ratios(log_pi, log_beta, mask, 2.0)
        total = ((log_pi - log_beta) * mask).sum(axis=1)
        assert_same(lam, np.minimum(2.0, np.exp(total)))
        np.testing.assert_array_equal(unclipped, np.exp(total) < 2.0)
        assert unclipped.dtype == np.bool_
        assert 0 < unclipped.sum() < 200

    @needs_compiled
    @pytest.mark.parametrize("scale, clip", [(0.3, 10.0), (400.0, np.inf), (3.0, 1e-3)])
    def test_compiled_equals_fallback(self, scale, clip):
        rng = np.random.default_rng(6)
        log_pi, log_beta, _, mask = random_episodes(rng, 300, 20, scale)
        got = outcome(compiled.episode_ratios, log_pi, log_beta, mask, clip)
        expected = outcome(fallback.episode_ratios, log_pi, log_beta, mask, clip)
        if isinstance(expected, str):  # beyond float64: the same error from both
            assert got == expected and "clip" in got
            return
        (lam_c, unc_c), (lam_f, unc_f) = got, expected
        assert_same(lam_c, lam_f)
        np.testing.assert_array_equal(unc_c, unc_f)


def fourier_design(n, d, delta=1):
    scale = n + delta + int(0.05 * n)
    phi = np.cos(np.pi * np.outer(np.arange(1, n + 1) / scale, np.arange(d)))
    phi_star = np.cos(np.pi * np.outer(np.arange(n + 1, n + delta + 1) / scale, np.arange(d))).mean(
        0
    )
    return np.asfortranarray(phi), phi_star


class TestWLSForecast:
    def test_matches_normal_equations(self, K):
        rng = np.random.default_rng(7)
        phi, phi_star = fourier_design(200, 5, delta=3)
        lam, y = rng.random(200) * 3, rng.normal(size=200)
        f, w, dfdy, dfdw, status = K.wls_forecast(phi, lam, y, phi_star)
        A = phi.T @ (lam[:, None] * phi)
        w_ref = np.linalg.solve(A, phi.T @ (lam * y))
        assert status == K.WLS_CHOLESKY
        assert_same(w, w_ref, 1e-9)
        assert f == pytest.approx(phi_star @ w_ref, rel=1e-10)
        assert_same(dfdy, lam * (phi @ np.linalg.solve(A, phi_star)), 1e-9)

    def test_finite_differences(self, K):
        rng = np.random.default_rng(8)
        phi, phi_star = fourier_design(40, 4, delta=2)
        lam, y = rng.random(40) * 2 + 0.1, rng.normal(size=40)
        _, _, dfdy, dfdw, _ = K.wls_forecast(phi, lam, y, phi_star)
        eps = 1e-6
        for i in range(40):
            e = np.zeros(40)
            e[i] = eps
            fy = (
                K.wls_forecast(phi, lam, y + e, phi_star)[0]
                - K.wls_forecast(phi, lam, y - e, phi_star)[0]
            ) / (2 * eps)
            fw = (
                K.wls_forecast(phi, lam + e, y, phi_star)[0]
                - K.wls_forecast(phi, lam - e, y, phi_star)[0]
            ) / (2 * eps)
            assert fy == pytest.approx(dfdy[i], rel=1e-6, abs=1e-9)
            assert fw == pytest.approx(dfdw[i], rel=1e-6, abs=1e-9)

    def test_unit_weights_give_ols_zeta(self, K):
        phi, phi_star = fourier_design(99, 5)
        _, _, zeta, _, _ = K.wls_forecast(phi, np.ones(99), np.zeros(99), phi_star)
        assert_same(zeta, phi_star @ np.linalg.pinv(phi), 1e-9)
        assert zeta.sum() == pytest.approx(1.0, abs=1e-10)

    @needs_compiled
    @pytest.mark.parametrize("n, d", [(1000, 3), (1000, 7), (7, 7), (3, 1), (64, 12), (30, 2)])
    def test_compiled_equals_fallback(self, n, d):
        rng = np.random.default_rng(n * d)
        phi, phi_star = fourier_design(n, d)
        lam, y = rng.random(n) * 5, rng.normal(size=n)
        c = compiled.wls_forecast(phi, lam, y, phi_star)
        f = fallback.wls_forecast(phi, lam, y, phi_star)
        assert c[4] == f[4] == fallback.WLS_CHOLESKY
        # tolerance relative to the forecast's sensitivity (conditioning of ΦᵀΛΦ)
        assert c[0] == pytest.approx(f[0], rel=RTOL, abs=RTOL * np.abs(f[2] * y).sum())
        for a, b in zip(c[1:4], f[1:4], strict=True):
            assert_same(a, b, 1e-9)

    @needs_compiled
    def test_compiled_design_must_be_fortran_ordered(self):
        phi, phi_star = fourier_design(10, 3)
        with pytest.raises(
            ValueError, match="phi must be a 2-D Fortran-contiguous float64 ndarray"
        ):
            compiled.wls_forecast(np.ascontiguousarray(phi), np.ones(10), np.ones(10), phi_star)

    def test_rank_deficient_is_reported_not_raised(self, K):
        phi, phi_star = fourier_design(50, 4)
        lam = np.zeros(50)
        lam[[3, 10, 40]] = 1.0  # 3 weighted episodes for 4 features
        f, w, dfdy, dfdw, status = K.wls_forecast(phi, lam, np.ones(50), phi_star)
        assert status == K.WLS_RANK_DEFICIENT
        assert np.isnan(f) and np.isnan(w).all() and np.isnan(dfdy).all() and np.isnan(dfdw).all()

    def test_fewer_rows_than_features_is_rank_deficient(self, K):
        phi, phi_star = fourier_design(3, 5)
        assert K.wls_forecast(phi, np.ones(3), np.ones(3), phi_star)[4] == K.WLS_RANK_DEFICIENT

    def test_all_zero_weights_is_rank_deficient(self, K):
        phi, phi_star = fourier_design(20, 3)
        assert K.wls_forecast(phi, np.zeros(20), np.ones(20), phi_star)[4] == K.WLS_RANK_DEFICIENT

    def test_ill_conditioned_falls_back_to_least_squares(self, K):
        # two nearly collinear features: ΦᵀΦ is numerically singular (cond ~ 1e20), √ΛΦ is not
        x = np.linspace(0.0, 1.0, 200)
        phi = np.asfortranarray(np.stack([np.ones_like(x), 1.0 + 1e-10 * x], axis=1))
        y = 3.0 + 2e-10 * x
        f, w, _, _, status = K.wls_forecast(phi, np.ones(200), y, phi[-1].copy())
        assert status == K.WLS_LSTSQ
        assert f == pytest.approx(y[-1], rel=1e-6)

    @given(data=st.data(), n=st.integers(1, 30), d=st.integers(1, 6))
    @settings(max_examples=60, deadline=None)
    def test_property_solution_is_weighted_least_squares(self, data, n, d):
        lam = data.draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 10.0)))
        y = data.draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10)))
        phi, phi_star = fourier_design(n, d)
        results = [K.wls_forecast(phi, lam, y, phi_star) for K in KERNEL_MODULES]
        root = np.sqrt(lam)
        rank = np.linalg.matrix_rank(root[:, None] * phi)
        for f, w, _, _, status in results:
            if status == fallback.WLS_RANK_DEFICIENT:
                assert np.isnan(f)
                continue
            assert rank == d
            # the normal equations hold: Φᵀ Λ (y − Φ w) = 0
            resid = phi.T @ (lam * (y - phi @ w))
            scale = np.abs(phi.T @ (lam[:, None] * np.abs(phi))).sum() * (
                np.abs(w).max() + np.abs(y).max() + 1
            )
            # (+ tiny: with subnormal weights the residual's scale itself underflows)
            assert np.abs(resid).max() <= 1e-8 * scale + np.finfo(np.float64).tiny
        if rank < d:
            assert all(r[4] == fallback.WLS_RANK_DEFICIENT for r in results)


@needs_compiled
def test_vectorised_exp_is_accurate_to_a_few_ulp():
    rng = np.random.default_rng(9)
    x = np.concatenate([np.linspace(-760, 720, 400_001), rng.normal(size=100_000) * 5, [0.0, -0.0]])
    with np.errstate(over="ignore"):
        ref = np.exp(x)
    got = compiled._elementwise("exp", x)
    normal = (ref > np.finfo(np.float64).tiny) & np.isfinite(ref)
    assert np.all(np.abs(got[normal] - ref[normal]) <= 4 * np.spacing(ref[normal]))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    np.testing.assert_array_equal(got == 0, ref == 0)
    subnormal = (ref > 0) & (ref < np.finfo(np.float64).tiny)
    assert np.all(np.abs(got[subnormal] - ref[subnormal]) <= 4 * np.spacing(0.0))


def random_policy(rng, m, d, hidden, a):
    obs = rng.normal(size=(m, d))
    actions = rng.integers(0, a, size=m)
    W1, b1 = rng.normal(size=(hidden, d)), rng.normal(size=hidden)
    W, b = rng.normal(size=(a, hidden or d)), rng.normal(size=a)
    return obs, actions, W1, b1, W, b


class TestSoftmaxPolicyKernels:
    @pytest.mark.parametrize(
        "m, d, hidden, a", [(1, 1, 0, 5), (300, 1, 0, 5), (200, 2, 32, 4), (65, 3, 7, 2)]
    )
    def test_forward_matches_definition(self, K, m, d, hidden, a):
        rng = np.random.default_rng(m + hidden)
        obs, actions, W1, b1, W, b = random_policy(rng, m, d, hidden, a)
        h, log_probs, probs, log_prob, entropy = K.softmax_forward(obs, actions, W1, b1, W, b)
        feats = np.tanh(obs @ W1.T + b1) if hidden else obs
        logits = feats @ W.T + b
        ref = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        assert_same(h, feats, 1e-13)
        assert_same(log_probs, ref, 1e-12)
        assert_same(probs, np.exp(ref), 1e-12)
        assert_same(log_prob, ref[np.arange(m), actions], 1e-12)
        assert_same(entropy, -(np.exp(ref) * ref).sum(axis=1), 1e-12)

    @pytest.mark.parametrize("hidden", [0, 16])
    def test_backward_is_the_gradient_by_finite_differences(self, K, hidden):
        rng = np.random.default_rng(hidden)
        obs, actions, W1, b1, W, b = random_policy(rng, 40, 2, hidden, 3)
        c, e = rng.normal(size=40), rng.random(40)
        theta = np.concatenate([W1.ravel(), b1, W.ravel(), b])

        def objective(t):
            k = W1.size
            parts = np.split(t, [k, k + b1.size, k + b1.size + W.size])
            _, _, _, lp, ent = K.softmax_forward(
                obs,
                actions,
                parts[0].reshape(W1.shape),
                parts[1],
                parts[2].reshape(W.shape),
                parts[3],
            )
            return c @ lp + e @ ent

        h, log_probs, probs, _, entropy = K.softmax_forward(obs, actions, W1, b1, W, b)
        grad = K.softmax_backward(obs, actions, h, log_probs, probs, entropy, W1, W, c, e)
        eps = 1e-6
        fd = [
            (objective(theta + eps * u) - objective(theta - eps * u)) / (2 * eps)
            for u in np.eye(theta.size)
        ]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)

    @needs_compiled
    @pytest.mark.parametrize("m, d, a", [(1000, 1, 5), (65, 2, 3), (64, 3, 7), (2, 1, 2)])
    def test_repeated_states_give_the_bits_of_each_state_alone(self, m, d, a):
        """A block of one repeated state (a bandit's context) computes its softmax once, or
        copies the previous block's: the same bits as that state's own pass, also where one
        row differs."""
        rng = np.random.default_rng(m + d)
        _, actions, W1, b1, W, b = random_policy(rng, m, d, 0, a)
        obs = np.repeat(rng.normal(size=(1, d)), m, axis=0)
        odd = obs.copy()
        odd[m // 2] = rng.normal(size=d)
        for states in (obs, odd, -0.0 * obs):
            got = compiled.softmax_forward(states, actions, W1, b1, W, b)
            # across block boundaries (64 rows), and after the odd row
            for i in sorted({0, 63 % m, 64 % m, 65 % m, m // 2, m // 2 + 1, m - 1} - {m}):
                alone = compiled.softmax_forward(
                    states[i : i + 1], actions[i : i + 1], W1, b1, W, b
                )
                for x, y in zip(got[1:], alone[1:], strict=True):
                    np.testing.assert_array_equal(x[i : i + 1], y)
            fallback_out = fallback.softmax_forward(states, actions, W1, b1, W, b)
            for x, y in zip(got, fallback_out, strict=True):
                assert_same(x, y)

    @needs_compiled
    @pytest.mark.parametrize(
        "m, d, hidden, a",
        # the fixed-size instances (a, hidden, d) = (4, 16|32|64, 2), (5, 0, 1), with
        # partial blocks and chunks; the linear forward across samples (d <= 3); and the
        # generic code
        [
            (1000, 1, 0, 5),
            (7500, 2, 32, 4),
            (3, 2, 64, 4),
            (77, 2, 16, 4),
            (130, 2, 5, 1),
            (129, 3, 0, 2),
            (70, 2, 0, 7),
            (65, 4, 0, 3),
        ],
    )
    def test_compiled_equals_fallback(self, m, d, hidden, a):
        rng = np.random.default_rng(m)
        args = random_policy(rng, m, d, hidden, a)
        fwd_c = compiled.softmax_forward(*args)
        fwd_f = fallback.softmax_forward(*args)
        for x, y in zip(fwd_c, fwd_f, strict=True):
            assert_same(x, y)
        c, e = rng.normal(size=m), rng.random(m)
        obs, actions, W1, _, W, _ = args
        grads = [
            K.softmax_backward(obs, actions, f[0], f[1], f[2], f[4], W1, W, c, e)
            for K, f in ((compiled, fwd_c), (fallback, fwd_f))
        ]
        assert_same(grads[0], grads[1], 1e-9)

    def test_forward_writes_into_out(self, K):
        rng = np.random.default_rng(1)
        obs, actions, W1, b1, W, b = random_policy(rng, 50, 2, 8, 4)
        out = (np.empty((50, 8)), np.empty((50, 4)), np.empty((50, 4)), np.empty(50), np.empty(50))
        result = K.softmax_forward(obs, actions, W1, b1, W, b, out=out)
        assert all(r is o for r, o in zip(result, out, strict=True))
        assert_same(out[3], K.softmax_forward(obs, actions, W1, b1, W, b)[3])

    def test_linear_policy_returns_obs_as_features(self, K):
        rng = np.random.default_rng(2)
        obs, actions, W1, b1, W, b = random_policy(rng, 10, 3, 0, 4)
        assert K.softmax_forward(obs, actions, W1, b1, W, b)[0] is obs

    def test_large_logits_do_not_overflow(self, K):
        obs = np.array([[1.0]])
        W = np.array([[800.0], [0.0], [-800.0]])
        _, log_probs, probs, _, entropy = K.softmax_forward(
            obs, np.array([0]), np.empty((0, 1)), np.empty(0), W, np.zeros(3)
        )
        assert np.isfinite(log_probs).all() and probs[0, 0] == 1.0 and entropy[0] == 0.0

    @needs_compiled
    def test_kernel_input_checks(self):
        obs, actions, W1, b1, W, b = random_policy(np.random.default_rng(3), 5, 2, 4, 3)
        with pytest.raises(
            ValueError, match="actions must be a C-contiguous int64 ndarray of shape"
        ):
            compiled.softmax_forward(obs, actions.astype(np.int32), W1, b1, W, b)
        with pytest.raises(ValueError, match=r"W must have shape \(3, 4\)"):
            compiled.softmax_forward(obs, actions, W1, b1, W[:, :2].copy(), b)


@needs_compiled
def test_vectorised_tanh_and_log_are_accurate():
    rng = np.random.default_rng(10)
    x = np.concatenate(
        [np.linspace(-40, 40, 200_001), rng.normal(size=10_000) * 1e-3, [0.0, 1e-300]]
    )
    ref = np.tanh(x)
    assert np.all(
        np.abs(compiled._elementwise("tanh", x) - ref) <= 4 * np.spacing(np.abs(ref)) + 1e-300
    )
    special = compiled._elementwise("tanh", np.array([-0.0, np.nan, np.inf, -np.inf, 19.5]))
    assert np.signbit(special[0]) and special[0] == 0.0 and np.isnan(special[1])
    assert special[2:].tolist() == [1.0, -1.0, 1.0]
    y = np.exp(rng.uniform(-700, 700, size=200_000))
    y = np.concatenate(
        [y, 1 + rng.normal(size=1000) * 1e-9, [1.0, np.finfo(np.float64).tiny, 1e300]]
    )
    assert np.all(
        np.abs(compiled._elementwise("log", y) - np.log(y))
        <= 4 * np.spacing(np.abs(np.log(y))) + 1e-300
    )


@needs_compiled
def test_float32_tanh_is_within_7_ulp_odd_and_bounded():
    # the float32 policies' rational tanh (bench/fit_tanh_f32.py: 6.2 ulp in 10⁶ samples)
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [np.linspace(-30, 30, 600_001), rng.normal(size=10_000) * 1e-3, [1e-30, 8.99, 9.01]]
    ).astype(np.float32)
    got = compiled._elementwise("tanh_f32", x.astype(np.float64))
    assert np.array_equal(got, got.astype(np.float32))  # a float32 result
    ref = np.tanh(x.astype(np.float64))
    assert np.all(np.abs(got - ref) <= 7 * np.spacing(np.abs(ref).astype(np.float32)))
    assert np.array_equal(compiled._elementwise("tanh_f32", -x.astype(np.float64)), -got)
    assert np.all(np.abs(got) <= 1.0)
    special = compiled._elementwise("tanh_f32", np.array([-0.0, np.nan, np.inf, -np.inf, 1e30]))
    assert np.signbit(special[0]) and special[0] == 0.0 and np.isnan(special[1])
    assert special[2:].tolist() == [1.0, -1.0, 1.0]


# --- wild bootstrap of a linear forecast (issue 10) ------------------------------------


def bootstrap_inputs(rng, n, k, b):
    signs = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
    e, zeta, v = rng.normal(size=n), rng.normal(size=n), rng.random(n)
    P, K = rng.normal(size=(n, k)), rng.normal(size=(n, k))
    return signs, e, zeta, P, K, v


def bootstrap_t_reference(signs, e, zeta, P, K, v):
    """The definition: flip, refit through the hat matrix, studentise (B × N arrays)."""
    n = len(e)
    bits = np.array(
        [[(signs[b, i // 8] >> (i % 8)) & 1 for i in range(n)] for b in range(len(signs))]
    )
    flipped = np.where(bits == 1, 1.0, -1.0) * e
    resid = flipped - flipped @ K @ P.T  # (I − P Kᵀ) e*
    return flipped @ zeta / np.sqrt((resid**2) @ v)


class TestWildBootstrapT:
    @needs_compiled
    def test_twins_share_signature_and_docstring(self):
        f, c = fallback.wild_bootstrap_t, compiled.wild_bootstrap_t
        assert list(inspect.signature(f).parameters) == list(inspect.signature(c).parameters)
        assert inspect.getdoc(f) == inspect.getdoc(c)

    @pytest.mark.parametrize("n, k, b", [(1, 1, 5), (8, 2, 17), (13, 3, 40), (200, 5, 64)])
    def test_matches_definition(self, K, n, k, b):
        args = bootstrap_inputs(np.random.default_rng(n * k), n, k, b)
        assert_same(K.wild_bootstrap_t(*args), bootstrap_t_reference(*args), 1e-9)

    @needs_compiled
    @pytest.mark.parametrize(
        "n, k, b", [(7, 1, 300), (64, 5, 500), (1001, 5, 2000), (999, 10, 100)]
    )
    def test_compiled_equals_fallback(self, n, k, b):
        args = bootstrap_inputs(np.random.default_rng(n + k), n, k, b)
        assert_same(compiled.wild_bootstrap_t(*args), fallback.wild_bootstrap_t(*args))

    def test_bits_past_n_are_ignored(self, K):
        signs, *rest = bootstrap_inputs(np.random.default_rng(3), 11, 2, 50)
        other = signs.copy()
        other[:, -1] |= 0b11111000  # bits 11..15 of a row hold no episode
        np.testing.assert_array_equal(
            K.wild_bootstrap_t(signs, *rest), K.wild_bootstrap_t(other, *rest)
        )

    def test_all_plus_signs_give_the_observed_statistic(self, K):
        rng = np.random.default_rng(4)
        _, e, zeta, P, Kmat, v = bootstrap_inputs(rng, 20, 3, 1)
        signs = np.full((2, 3), 255, dtype=np.uint8)
        expected = e @ zeta / np.sqrt(((e - e @ Kmat @ P.T) ** 2) @ v)
        assert_same(K.wild_bootstrap_t(signs, e, zeta, P, Kmat, v), [expected, expected], 1e-9)

    def test_no_draws(self, K):
        signs, *rest = bootstrap_inputs(np.random.default_rng(5), 9, 2, 0)
        assert K.wild_bootstrap_t(signs, *rest).shape == (0,)

    @needs_compiled
    def test_compiled_checks_the_signs_array(self):
        signs, *rest = bootstrap_inputs(np.random.default_rng(6), 9, 2, 4)
        with pytest.raises(ValueError, match="signs must be a C-contiguous uint8"):
            compiled.wild_bootstrap_t(signs[:, :1].copy(), *rest)
        with pytest.raises(ValueError, match="signs"):
            compiled.wild_bootstrap_t(signs.astype(np.int64), *rest)
