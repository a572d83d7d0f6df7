"""The mixed model's restricted likelihood (``_reml.pxi``) against its NumPy twin and the
dense definition."""

import inspect

import numpy as np
import pytest

from pyprog._ext import fallback

try:
    from pyprog._ext import _kernels as compiled
except ImportError:  # no compiler at install time: the fallback alone is tested
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels not built")
KERNEL_MODULES = [fallback] + ([compiled] if compiled is not None else [])


@pytest.fixture(params=KERNEL_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def K(request):
    return request.param


def model(rng, m=60, sizes=(3, 5)):
    """A constant and len(sizes) random blocks: (C, y, noise, owner)."""
    C = np.hstack([np.ones((m, 1))] + [rng.normal(size=(m, q)) for q in sizes])
    owner = np.concatenate([[0]] + [np.full(q, k + 1) for k, q in enumerate(sizes)])
    return C, rng.normal(size=m), rng.uniform(0.05, 1.0, m), owner.astype(np.int64)


def definition(C, y, noise, owner, theta, v, c):
    """½ (log det V + log det XᵀV⁻¹X + yᵀ(V⁻¹ − V⁻¹X(XᵀV⁻¹X)⁻¹XᵀV⁻¹)y) + Σ log(1 + θ²/c²),
    V = diag(σ² + v) + Σ_k s_k² Z_k Z_kᵀ: the REML criterion by dense algebra."""
    X, s = C[:, owner == 0], np.abs(theta)[owner]
    V = np.diag(noise + v) + (C * (s * (owner > 0)) ** 2) @ C.T
    Vi = np.linalg.inv(V)
    XVX = X.T @ Vi @ X
    P = Vi - Vi @ X @ np.linalg.solve(XVX, X.T @ Vi)
    crit = np.linalg.slogdet(V)[1] + np.linalg.slogdet(XVX)[1] + y @ P @ y
    return 0.5 * crit + float(np.log1p((theta / c) ** 2).sum())


THETAS = [
    np.array([0.3, 0.8, 0.2]),
    np.array([0.0, 0.5, 0.0]),  # effects and τ at the boundary
    np.array([-0.4, -0.7, 1.5]),  # the objective is even in each entry
]


class TestObjectives:
    @pytest.mark.parametrize("theta", THETAS, ids=["inside", "zeros", "negative"])
    def test_matches_the_dense_definition(self, K, theta):
        C, y, noise, owner = model(np.random.default_rng(0))
        f = K.reml_objectives(C, y, noise, owner, theta[None, :].copy(), theta[:1] ** 2, 1.3)
        assert f[0] == pytest.approx(definition(C, y, noise, owner, theta, theta[0] ** 2, 1.3))

    def test_day_variance_below_zero_and_runs_of_it(self, K):
        # the τ² grid goes below 0 (down to −min σ²); runs of one day variance share CᵀWC
        C, y, noise, owner = model(np.random.default_rng(1))
        thetas = np.tile([0.0, 0.6, 0.3], (5, 1))
        thetas[:, 1] = [0.1, 0.2, 0.3, 0.4, 0.5]
        v = np.array([-0.04, -0.04, 0.2, 0.2, -0.04])
        f = K.reml_objectives(C, y, noise, owner, thetas, v, 2.0)
        ref = [definition(C, y, noise, owner, t, vv, 2.0) for t, vv in zip(thetas, v, strict=True)]
        np.testing.assert_allclose(f, ref, rtol=1e-10)

    def test_a_model_without_effects(self, K):
        rng = np.random.default_rng(2)
        C, y, noise = np.ones((30, 1)), rng.normal(size=30), np.full(30, 0.5)
        theta = np.array([[0.2]])
        f = K.reml_objectives(C, y, noise, np.zeros(1, np.int64), theta, np.array([0.04]), 1.0)
        assert f[0] == pytest.approx(definition(C, y, noise, np.zeros(1, int), theta[0], 0.04, 1.0))


class TestGradient:
    @pytest.mark.parametrize("theta", THETAS, ids=["inside", "zeros", "negative"])
    def test_objective_and_central_differences(self, K, theta):
        C, y, noise, owner = model(np.random.default_rng(3))
        f, grad = K.reml_objective_grad(C, y, noise, owner, theta.copy(), 1.3)
        assert f == pytest.approx(definition(C, y, noise, owner, theta, theta[0] ** 2, 1.3))
        h = 1e-6
        for i in range(theta.size):
            up, down = theta.copy(), theta.copy()
            up[i] += h
            down[i] -= h
            fd = (
                definition(C, y, noise, owner, up, up[0] ** 2, 1.3)
                - definition(C, y, noise, owner, down, down[0] ** 2, 1.3)
            ) / (2 * h)
            assert grad[i] == pytest.approx(fd, rel=1e-6, abs=1e-6)

    def test_even_in_each_entry(self, K):
        C, y, noise, owner = model(np.random.default_rng(4))
        theta = np.array([0.3, 0.8, 0.2])
        f, g = K.reml_objective_grad(C, y, noise, owner, theta, 1.0)
        f2, g2 = K.reml_objective_grad(C, y, noise, owner, -theta, 1.0)
        assert f2 == pytest.approx(f, rel=1e-12)
        np.testing.assert_allclose(g2, -g, rtol=1e-10)


@needs_compiled
class TestTwins:
    @pytest.mark.parametrize("name", ["reml_objectives", "reml_objective_grad"])
    def test_share_name_signature_and_docstring(self, name):
        f, c = getattr(fallback, name), getattr(compiled, name)
        assert list(inspect.signature(f).parameters) == list(inspect.signature(c).parameters)
        assert inspect.getdoc(f) == inspect.getdoc(c)

    @pytest.mark.parametrize("m, sizes", [(5, ()), (40, (2,)), (365, (16, 7, 1)), (900, (3, 8))])
    def test_compiled_equals_fallback(self, m, sizes):
        rng = np.random.default_rng(m)
        C, y, noise, owner = model(rng, m, sizes)
        thetas = rng.uniform(-1, 1, (7, len(sizes) + 1))
        thetas[2, -1] = 0.0
        v = np.repeat(rng.uniform(-0.04, 0.5, 4), 2)[:7]
        np.testing.assert_allclose(
            compiled.reml_objectives(C, y, noise, owner, thetas, v, 0.7),
            fallback.reml_objectives(C, y, noise, owner, thetas, v, 0.7),
            rtol=1e-10,
        )
        for theta in thetas:
            fc, gc = compiled.reml_objective_grad(C, y, noise, owner, theta, 0.7)
            ff, gf = fallback.reml_objective_grad(C, y, noise, owner, theta, 0.7)
            assert fc == pytest.approx(ff, rel=1e-10)
            np.testing.assert_allclose(gc, gf, rtol=1e-8, atol=1e-10 * np.abs(gf).max())


class TestNotPositiveDefinite:
    """A fixed column without weight leaves M singular: NaN, and a fit that says so."""

    def test_nan_and_an_error_at_the_start(self, K):
        C, y, noise, owner = model(np.random.default_rng(13))
        C[:, 0] = 0.0
        theta = np.full(3, 0.3)
        f = K.reml_objectives(C, y, noise, owner, np.tile(theta, (2, 1)), np.full(2, 0.09), 1.0)
        assert np.isnan(f).all()
        f, g = K.reml_objective_grad(C, y, noise, owner, theta, 1.0)
        assert np.isnan(f) and np.isnan(g).all()
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite at start"):
            K.reml_fit(C, y, noise, owner, theta, 1.0, 500)


class TestInputs:
    def test_owner_must_be_int64(self, K):
        C, y, noise, owner = model(np.random.default_rng(5))
        with pytest.raises(ValueError, match="owner must be a 1-D C-contiguous int64"):
            K.reml_objective_grad(C, y, noise, owner.astype(np.int32), np.ones(3), 1.0)

    def test_owner_beyond_theta(self, K):
        C, y, noise, owner = model(np.random.default_rng(6))
        with pytest.raises(ValueError, match=r"owner must be in \[0, 2\)"):
            K.reml_objectives(C, y, noise, owner, np.ones((1, 2)), np.ones(1), 1.0)

    def test_shapes(self, K):
        C, y, noise, owner = model(np.random.default_rng(7))
        with pytest.raises(ValueError, match="day_var must have shape"):
            K.reml_objectives(C, y, noise, owner, np.ones((3, 3)), np.ones(2), 1.0)
        with pytest.raises(ValueError, match="noise must have shape"):
            K.reml_objective_grad(C, y, noise[:-1], owner, np.ones(3), 1.0)


def lbfgsb_mode(C, y, noise, owner, start, c):
    """The mode by SciPy's L-BFGS-B over the variances (the search reml_fit replaced)."""
    import scipy.optimize

    def in_variances(v):
        s = np.sqrt(np.maximum(v, (1e-6 * c) ** 2))
        f, g = fallback.reml_objective_grad(C, y, noise, owner, s, c)
        return f, g / (2.0 * s)

    res = scipy.optimize.minimize(
        in_variances, start**2, jac=True, method="L-BFGS-B", bounds=[(0, None)] * start.size
    )
    return np.sqrt(res.x)


class TestFit:
    @pytest.mark.parametrize("seed", range(6))
    def test_reaches_lbfgsb_objective(self, K, seed):
        rng = np.random.default_rng(seed)
        C, _, noise, owner = model(rng, 200, (3, 5))
        # effects of every size, some absent: the mode inside and on the bounds
        b = np.concatenate([[1.0], rng.normal(size=3) * rng.choice([0, 0.3]),
                            rng.normal(size=5) * rng.choice([0, 0.5])])  # fmt: skip
        y = C @ b + rng.normal(size=200) * np.sqrt(noise) + rng.normal(size=200) * 0.2 * seed % 2
        start = np.full(3, 0.3)
        theta, evaluations, converged = K.reml_fit(C, y, noise, owner, start, 1.0, 500)
        assert converged and 1 < evaluations < 100 and np.all(theta >= 0)
        ours = fallback.reml_objectives(C, y, noise, owner, theta[None], theta[:1] ** 2, 1.0)
        ref = lbfgsb_mode(C, y, noise, owner, start, 1.0)
        theirs = fallback.reml_objectives(C, y, noise, owner, ref[None], ref[:1] ** 2, 1.0)
        assert ours[0] <= theirs[0] + 1e-7 * max(1.0, abs(theirs[0]))

    def test_an_effect_is_found_from_zero(self, K):
        # f is even in each s: from s = 0 a search in s would stay; in s² it leaves
        rng = np.random.default_rng(9)
        C, _, noise, owner = model(rng, 300, (4,))
        y = C @ np.r_[0.0, 1.0, -1.0, 0.5, 0.2] + rng.normal(size=300) * np.sqrt(noise)
        theta, _, converged = K.reml_fit(C, y, noise, owner, np.zeros(2), 1.0, 500)
        assert converged and theta[1] > 0.3

    def test_maxiter_reports_not_converged(self, K):
        C, y, noise, owner = model(np.random.default_rng(10))
        _, evaluations, converged = K.reml_fit(C, y, noise, owner, np.full(3, 0.3), 1.0, 1)
        assert not converged and evaluations >= 2

    @pytest.mark.parametrize("maxiter", [0, 2.5, True])
    def test_maxiter_must_be_a_positive_integer(self, K, maxiter):
        C, y, noise, owner = model(np.random.default_rng(11))
        with pytest.raises(ValueError, match="maxiter must be an integer >= 1"):
            K.reml_fit(C, y, noise, owner, np.full(3, 0.3), 1.0, maxiter)


@needs_compiled
def test_fit_twins_agree_and_share_constants():
    for name in ("REML_ARMIJO", "REML_HALVINGS", "REML_GTOL", "REML_FTOL", "REML_FLOOR",
                 "REML_CURVATURE"):  # fmt: skip
        assert getattr(fallback, name) == getattr(compiled, name)
    f, c = fallback.reml_fit, compiled.reml_fit
    assert list(inspect.signature(f).parameters) == list(inspect.signature(c).parameters)
    assert inspect.getdoc(f) == inspect.getdoc(c)
    rng = np.random.default_rng(12)
    C, _, noise, owner = model(rng, 365, (16, 7))
    y = C @ np.r_[1.0, rng.normal(size=16) * 0.4, rng.normal(size=7) * 0.1] + rng.normal(size=365)
    a = compiled.reml_fit(C, y, noise, owner, np.full(3, 0.3), 1.0, 500)
    b = fallback.reml_fit(C, y, noise, owner, np.full(3, 0.3), 1.0, 500)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-6, atol=1e-8)
