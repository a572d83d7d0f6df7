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

D_cᵀD_c is assembled from each action's moments of z (:func:`action_moments`: D's one-hot
and interaction blocks are nonzero on that action's rows only), so the cost is O(n k²) to
gather them and O(p³) to decompose, the memory O(p² + n·k); the moments are sums, so the K
fits of cross-fitting take one pass (:meth:`ActionRidge.fit_folds`). ``predict_all``
gives q̂ for every action at once, (n, A), without building the n·A rows a generic
regressor would need.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np

__all__ = ["ActionRidge", "action_moments"]

_CHUNK = 8192  # rows per block when accumulating the moments


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

    def fit(self, X, y) -> ActionRidge:
        """Fit on X (n, k + n_actions) and rewards y (n,); returns self."""
        z, action, y = self._checked(X, y)
        shift = z.mean(axis=0)  # moments about the mean: no cancellation in them
        return self._fit_moments(action_moments(z - shift, action, y, self.n_actions)[0], shift)

    def fit_folds(self, X, y, fold: np.ndarray, n_folds: int) -> list[ActionRidge]:
        """One fitted copy per fold k, each on the rows outside fold k, from one pass.

        The same models as ``copy.deepcopy(self).fit(X[fold != k], y[fold != k])`` for each
        k (to rounding), since every statistic the fit needs is a sum over rows: each
        fold's per-action moments are taken once, and fold k's training moments are the
        total minus its own (the cost of one fit, not K; :func:`cross_fit` uses it).

        Parameters
        ----------
        X : numpy.ndarray, shape (n, k + n_actions)
        y : numpy.ndarray, shape (n,)
        fold : numpy.ndarray of int, shape (n,)
            Each row's fold, in [0, n_folds).
        n_folds : int

        Returns
        -------
        list of ActionRidge, one per fold
        """
        z, action, y = self._checked(X, y)
        shift = z.mean(axis=0)
        moments = self.fold_moments(z, action, y, fold, n_folds, shift)
        return self.from_fold_moments(moments, shift)

    def fold_moments(
        self, z: np.ndarray, action: np.ndarray, y: np.ndarray, fold: np.ndarray,
        n_folds: int, shift: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Each fold's per-action moments of [1, z − shift, y]: (n_folds, A, k + 2, k + 2).

        Sums over rows, so the moments of a log's chunks add up to the whole log's
        (``shift``, any point near z's mean, must be the same for every chunk: the moments
        are taken about it so that they do not cancel). ``z`` (n, k) are the inputs before
        the action, ``action`` (n,) the actions.
        """
        return action_moments(z - shift, action, y, self.n_actions, fold, n_folds)

    def from_fold_moments(self, per_fold: np.ndarray, shift: np.ndarray) -> list[ActionRidge]:
        """One fitted copy per fold k from :meth:`fold_moments` (summed over chunks): fold
        k's training moments are the total minus its own."""
        total = per_fold.sum(axis=0)
        out = []
        for k in range(per_fold.shape[0]):
            model = copy.deepcopy(self)  # a fresh copy per fold, as cross_fit's
            out.append(model._fit_moments(total - per_fold[k], shift))
        return out

    def _checked(self, X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z, action = self._split(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != z.shape[0] or z.shape[0] < 2:
            raise ValueError(
                f"y must have one reward per row of X ({z.shape[0]} >= 2); got {y.shape}"
            )
        return z, action, y

    def _fit_moments(self, moments: np.ndarray, shift: np.ndarray) -> ActionRidge:
        """The fit from the per-action moments of [1, z − shift, y]: (A, k + 2, k + 2)."""
        A, k = self.n_actions, moments.shape[1] - 2
        count = moments[:, 0, 0]  # n_a
        n = float(count.sum())
        if n < 2:
            raise ValueError(f"the reward model needs at least 2 rounds to fit; got {n:g}")
        tot = moments.sum(axis=0)
        mean_z = tot[1 : k + 1, 0] / n  # the training mean of z − shift
        sd = np.sqrt(np.maximum(np.diag(tot[1 : k + 1, 1 : k + 1]) / n - mean_z**2, 0.0))
        self.z_mean_ = shift + mean_z
        self.z_scale_ = np.where(sd > 1e-12 * np.maximum(np.abs(self.z_mean_), 1.0), sd, 1.0)
        gram, dty, mean_d, mean_y, yy = self._normal_equations(moments, mean_z, n)
        s2, V = np.linalg.eigh(gram)
        s2 = np.maximum(s2, 0.0)
        c = V.T @ dty
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
        self.coef_action_ = beta[:A]  # (A,)
        self.coef_shared_ = beta[A : A + k]  # (k,)
        self.coef_interaction_ = beta[A + k :].reshape(A, k).T  # (k, A)
        return self

    def _normal_equations(self, moments: np.ndarray, mean_z: np.ndarray, n: float) -> tuple:
        """D_cᵀD_c (p, p), D_cᵀ(y − ȳ) (p,), D's column means (p,), ȳ and ‖y − ȳ‖², for
        D = [onehot(a), zs, zs ⊗ onehot(a)] with zs = (z − z̄)/sd, from the moments.

        D's blocks are each action's moments of zs: the one-hot block is diag(n_a), the
        interaction block of action a is nonzero on a's rows only, so DᵀD is assembled from
        n_a, Σ_a zs and Σ_a zs zsᵀ (O(n k²) to gather, not O(n (A k)²)).
        """
        A, k = self.n_actions, moments.shape[1] - 2
        inv = 1.0 / self.z_scale_
        count = moments[:, 0, 0]
        sz = moments[:, 1 : k + 1, 0]  # (A, k): Σ_a (z − shift)
        szz = moments[:, 1 : k + 1, 1 : k + 1]  # (A, k, k)
        sy, szy = moments[:, k + 1, 0], moments[:, 1 : k + 1, k + 1]
        # the same sums for zs = (z − shift − mean_z) · inv
        zs1 = (sz - count[:, None] * mean_z) * inv  # (A, k)
        zs2 = szz - sz[:, :, None] * mean_z[None, None, :] - mean_z[None, :, None] * sz[:, None, :]
        zs2 = (zs2 + count[:, None, None] * np.outer(mean_z, mean_z)) * np.outer(inv, inv)
        zsy = (szy - mean_z[None, :] * sy[:, None]) * inv  # (A, k)
        p = A + k + A * k
        gram, dty, col = np.zeros((p, p)), np.zeros(p), np.zeros(p)
        gram[np.arange(A), np.arange(A)] = count
        gram[:A, A : A + k] = zs1
        gram[A : A + k, A : A + k] = zs2.sum(axis=0)
        for a in range(A):
            cols = slice(A + k + a * k, A + k + (a + 1) * k)
            gram[a, cols] = zs1[a]
            gram[A : A + k, cols] = zs2[a]
            gram[cols, cols] = zs2[a]
            dty[cols], col[cols] = zsy[a], zs1[a]
        gram = np.triu(gram) + np.triu(gram, 1).T  # the lower triangle by symmetry
        dty[:A], dty[A : A + k] = sy, zsy.sum(axis=0)
        col[:A], col[A : A + k] = count, zs1.sum(axis=0)
        mean_d, mean_y = col / n, float(sy.sum()) / n
        gram -= n * np.outer(mean_d, mean_d)  # D_cᵀD_c
        dty -= n * mean_d * mean_y  # D_cᵀ(y − ȳ)
        yy = max(float(moments[:, k + 1, k + 1].sum()) - n * mean_y**2, 0.0)
        return gram, dty, mean_d, mean_y, yy

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


def action_moments(
    z: np.ndarray, action: np.ndarray, y: np.ndarray, n_actions: int,
    group: np.ndarray | None = None, n_groups: int = 1,
) -> np.ndarray:  # fmt: skip
    """The moments of [1, z, y] per (group, action): shape (n_groups, A, k + 2, k + 2).

    Entry [g, a] is Σ uᵢuᵢᵀ over the rows i of group g with action a, uᵢ = [1, zᵢ, yᵢ]:
    counts, sums, cross products; sums, so they merge over folds (and over chunks of a
    log). Accumulated over blocks of sorted rows: O(n k²) time, O(n k) memory.

    Examples
    --------
    >>> m = action_moments(np.array([[1.0], [2.0], [3.0]]), np.array([0, 1, 1]),
    ...                    np.array([1.0, 0.0, 2.0]), 2)
    >>> m.shape, m[0, 1].tolist()   # action 1: [n, Σz, Σy], [Σz, Σz², Σzy], ...
    ((1, 2, 3, 3), [[2.0, 5.0, 2.0], [5.0, 13.0, 6.0], [2.0, 6.0, 4.0]])
    """
    n, k = z.shape
    key = action if group is None else np.asarray(group) * n_actions + action
    order = np.argsort(key, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=n_groups * n_actions))])
    u = np.empty((n, k + 2))
    u[:, 0], u[:, 1 : k + 1], u[:, k + 1] = 1.0, z[order], y[order]
    out = np.zeros((n_groups * n_actions, k + 2, k + 2))
    for g in range(n_groups * n_actions):
        for lo in range(int(bounds[g]), int(bounds[g + 1]), _CHUNK):
            rows = u[lo : min(lo + _CHUNK, int(bounds[g + 1]))]
            out[g] += rows.T @ rows
    return out.reshape(n_groups, n_actions, k + 2, k + 2)
