"""The default reward model q̂(x, φ(t), a): ridge regression with one slope per action and
its penalty chosen by generalised cross-validation, in NumPy (no scikit-learn needed).

Inputs follow the convention every reward model sees in :mod:`pyprog.offpolicy`
(:func:`pyprog.offpolicy.crossfit.reward_features`): ``X = [z, onehot(a)]``, where
z (n, k) are the context and time-feature columns and the last ``n_actions`` columns are
the one-hot action. :class:`ActionRidge` standardises z (training mean and standard
deviation) and regresses r on

    D(z, a) = [ onehot(a), z, z ⊗ onehot(a) ]          (p = A + k + A·k columns)

with an unpenalised intercept: β̂(λ) = argmin ‖y − ȳ − D_c β‖² + λ‖β‖², D_c the centred
design, so every action has its own intercept and slopes, shrunk towards the shared ones.

The penalty minimises GCV(λ) = n·RSS(λ) / (n − df(λ))² (Golub, Heath & Wahba 1979) over a
log grid of 40 values spanning 10⁻⁶ to 10³ times the mean non-zero eigenvalue of D_cᵀD_c
(so a constant column, all 0 once centred, changes nothing). With
D_cᵀD_c = V diag(s²) Vᵀ and c = Vᵀ D_cᵀ(y − ȳ), everything is closed form from one
eigendecomposition (p × p):

    β̂(λ) = V diag(1/(s² + λ)) c
    RSS(λ) = ‖y − ȳ‖² − 2 Σ_j c_j²/(s_j² + λ) + Σ_j s_j² c_j²/(s_j² + λ)²
    df(λ) = 1 + Σ_j s_j²/(s_j² + λ)                   (1 for the intercept)

The Gram matrix is accumulated over blocks of rows, so memory is O(p² + n·k), and the cost
O(n p²): 10⁴ rounds, 10 context features, 8 time levels and 10 actions (p = 190) take a
few milliseconds. ``predict_all`` gives q̂ for every action at once, (n, A), without
building the n·A rows a generic regressor would need.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["ActionRidge"]

_CHUNK = 8192  # rows per block when accumulating D_cᵀD_c


class ActionRidge:
    """Ridge regression of r on [onehot(a), z, z ⊗ onehot(a)] with the penalty chosen by GCV.

    scikit-learn's regressor interface (``fit(X, y)``, ``predict(X)``), plus
    ``predict_all(z) -> (n, n_actions)``.

    Parameters
    ----------
    n_actions : int
        A: the last A columns of ``X`` are the one-hot action.
    alphas : array_like of float > 0, optional
        The penalties to choose among, on the scale of D_cᵀD_c's eigenvalues; default
        mean non-zero eigenvalue × ``np.logspace(-6, 3, 40)``.

    Attributes
    ----------
    alpha_ : float
        The chosen penalty.
    gcv_ : float
        Its GCV score (an estimate of the prediction mean squared error).
    df_ : float
        Its effective number of parameters (intercept included).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z, a = rng.normal(size=(500, 2)), rng.integers(0, 3, 500)
    >>> y = z[:, 0] * (a == 1) + rng.normal(0, 0.1, 500)
    >>> X = np.column_stack([z, np.eye(3)[a]])
    >>> model = ActionRidge(3).fit(X, y)
    >>> model.predict_all(np.array([[1.0, 0.0]])).round(1) + 0.0  # + 0.0: no -0.
    array([[0., 1., 0.]])
    """

    #: q̂(z, a) is affine in z for each action, so the direct term's mean over many contexts
    #: is q̂ at their mean (:meth:`pyprog.offpolicy.crossfit.CrossFit.pooled_direct`).
    affine_features = True

    def __init__(self, n_actions: int, alphas=None) -> None:
        if (
            isinstance(n_actions, bool)
            or not isinstance(n_actions, numbers.Integral)
            or n_actions < 1
        ):
            raise ValueError(f"n_actions must be an integer >= 1; got {n_actions!r}")
        self.n_actions = int(n_actions)
        if alphas is not None:
            alphas = np.asarray(alphas, dtype=np.float64).ravel()
            if alphas.size == 0 or not (np.isfinite(alphas) & (alphas > 0)).all():
                raise ValueError(f"alphas must be finite numbers > 0; got {alphas!r}")
        self.alphas = alphas

    def _split(self, X) -> tuple[np.ndarray, np.ndarray]:
        X = np.asarray(X, dtype=np.float64)
        A = self.n_actions
        if X.ndim != 2 or X.shape[1] < A:
            raise ValueError(
                f"X must have shape (n, k + n_actions) with the one-hot action last "
                f"(n_actions = {A}); got {X.shape}"
            )
        onehot = X[:, X.shape[1] - A :]
        action = np.argmax(onehot, axis=1)
        if not np.array_equal(onehot, np.eye(A)[action]):
            raise ValueError(f"the last n_actions = {A} columns of X must be a one-hot action")
        return X[:, : X.shape[1] - A], action

    def _design(self, zs: np.ndarray, action: np.ndarray) -> np.ndarray:
        A, (n, k) = self.n_actions, zs.shape
        out = np.zeros((n, A + k + A * k))
        rows = np.arange(n)
        out[rows, action] = 1.0  # onehot(a)
        out[:, A : A + k] = zs  # z
        inter = out[:, A + k :].reshape(n, A, k)  # z ⊗ onehot(a), laid out action-major
        inter[rows, action, :] = zs
        return out

    def fit(self, X, y) -> ActionRidge:
        """Fit on X (n, k + n_actions) and rewards y (n,); returns self."""
        z, action = self._split(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        n, k = z.shape
        if y.shape[0] != n or n < 2:
            raise ValueError(f"y must have one reward per row of X ({n} >= 2); got {y.shape}")
        self.z_mean_ = z.mean(axis=0)
        sd = z.std(axis=0)
        self.z_scale_ = np.where(sd > 0, sd, 1.0)
        zs = (z - self.z_mean_) / self.z_scale_
        p = self.n_actions + k + self.n_actions * k
        gram, dty, col_sum = np.zeros((p, p)), np.zeros(p), np.zeros(p)
        for start in range(0, n, _CHUNK):
            d = self._design(zs[start : start + _CHUNK], action[start : start + _CHUNK])
            gram += d.T @ d  # DᵀD
            dty += d.T @ y[start : start + _CHUNK]  # Dᵀy
            col_sum += d.sum(axis=0)
        mean_d, mean_y = col_sum / n, y.mean()
        gram -= n * np.outer(mean_d, mean_d)  # D_cᵀD_c
        dty -= n * mean_d * mean_y  # D_cᵀ(y − ȳ)
        s2, V = np.linalg.eigh(gram)
        s2 = np.maximum(s2, 0.0)
        c = V.T @ dty
        yy = float(((y - mean_y) ** 2).sum())
        rank = max(int((s2 > 1e-10 * s2.max()).sum()), 1)  # constant columns add zeros
        scale = max(float(s2.sum()) / rank, np.finfo(float).tiny)
        lam = self.alphas if self.alphas is not None else scale * np.logspace(-6, 3, 40)
        shrink = 1.0 / (s2[None, :] + lam[:, None])  # (L, p)
        rss = yy - 2.0 * (c**2 * shrink).sum(axis=1) + (s2 * c**2 * shrink**2).sum(axis=1)
        rss = np.maximum(rss, 0.0)
        df = 1.0 + (s2 * shrink).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            gcv = np.where(df < n, n * rss / (n - df) ** 2, np.inf)
        best = int(np.argmin(gcv))
        self.alpha_, self.gcv_, self.df_ = float(lam[best]), float(gcv[best]), float(df[best])
        beta = V @ (c * shrink[best])
        self.intercept_ = mean_y - float(mean_d @ beta)
        A = self.n_actions
        self.coef_action_ = beta[:A]  # (A,)
        self.coef_shared_ = beta[A : A + k]  # (k,)
        self.coef_interaction_ = beta[A + k :].reshape(A, k).T  # (k, A)
        return self

    def predict_all(self, z) -> np.ndarray:
        """q̂ for every action: shape (n, n_actions), from the features z (n, k) alone."""
        zs = (np.asarray(z, dtype=np.float64) - self.z_mean_) / self.z_scale_
        shared = self.intercept_ + zs @ self.coef_shared_  # (n,)
        return shared[:, None] + self.coef_action_[None, :] + zs @ self.coef_interaction_

    def predict(self, X) -> np.ndarray:
        """q̂ at each row's own action: shape (n,)."""
        z, action = self._split(X)
        return self.predict_all(z)[np.arange(z.shape[0]), action]

    def __repr__(self) -> str:
        return f"ActionRidge(n_actions={self.n_actions})"
