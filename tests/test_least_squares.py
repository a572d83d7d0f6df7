"""The shared weighted least squares in time: leverages and HC2, against their definitions."""

import numpy as np
import pytest

from pyprog.timeseries.least_squares import hc2_residuals, hc2_variances, leverages


def _design(n, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    X = np.column_stack([np.ones(n), t, np.cos(2 * np.pi * t)])
    return X, rng.uniform(0.0, 3.0, n), rng


@pytest.mark.parametrize("chunk", [1 << 16, 37])  # one QR, or TSQR in chunks
def test_leverages_are_the_hat_matrix_diagonal(chunk):
    X, w, _ = _design(200)
    w[:5] = 0.0  # rows of weight 0 have leverage 0
    hat = X @ np.linalg.solve(X.T @ (w[:, None] * X), X.T * w)  # X (XᵀWX)⁻¹ XᵀW
    h = leverages(X, w, chunk=chunk)
    np.testing.assert_allclose(h, np.diag(hat), atol=1e-13)
    assert h.sum() == pytest.approx(X.shape[1])  # trace of the hat matrix: its rank
    assert np.abs(h[:5]).max() < 1e-25  # 0 up to rounding


def test_hc2_standard_error_matches_its_definition():
    X, w, rng = _design(300, seed=1)
    y = X @ np.array([1.0, 2.0, -0.5]) + rng.normal(0.0, 1.0 + X[:, 1], 300)
    A = X.T @ (w[:, None] * X)
    x_star = np.array([1.0, 1.1, np.cos(2 * np.pi * 1.1)])
    zeta = w * (X @ np.linalg.solve(A, x_star))  # f = ζ·y
    resid = y - X @ np.linalg.solve(A, X.T @ (w * y))
    h = leverages(X, w)
    se = np.sqrt(np.sum(zeta**2 * resid**2 / (1.0 - h)))
    assert np.sqrt(hc2_variances(zeta, h) @ resid**2) == pytest.approx(se, rel=1e-12)
    assert np.sqrt(zeta**2 @ hc2_residuals(resid, h) ** 2) == pytest.approx(se, rel=1e-12)


def test_a_unit_fitted_exactly_has_no_hc2_residual():
    # a unit with leverage 1 (alone at its level) is fitted exactly: ξ̂ = 0, so ξ̃ = 0, not NaN
    assert hc2_residuals(np.array([0.0]), np.array([1.0])).tolist() == [0.0]
    assert np.isfinite(hc2_variances(np.array([1.0]), np.array([1.0]))).all()
