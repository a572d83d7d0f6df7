"""Cross-fitted reward models: q̂ for each round from a model that never saw that round.

The rounds are split into K folds; for each fold k a fresh copy of the reward model is fit
on the other K − 1 folds and predicts q̂(x_i, φ(t_i), a) for every action a of every round
i in fold k (Chernozhukov et al. 2018, "Double/debiased machine learning"; Kallus & Uehara
2020 for off-policy evaluation). Since q̂ for round i does not depend on (a_i, r_i), the
doubly robust correction w_i (r_i − q̂(x_i, t_i, a_i)) has mean 0 given x_i, t_i and q̂
whenever q̂'s error is not q's: DR is unbiased for any reward model, and the model's
overfitting cannot bias it.

Folds:

* ``"random"`` (default): a random partition into K groups of equal size (±1). Every
  training set then spans the whole log, so a time feature's every level (each block of
  the year, each weekday) is seen by every model and q̂(x, φ(t), a) is identified for
  every round; unbiasedness needs only that rounds are independent given their times.
* ``"blocked"``: K stretches contiguous in time (sorted by time, equal counts). Use it
  when rounds close in time are dependent (a user's consecutive visits), or to keep a
  model fit on later rounds from informing earlier rounds' estimates (the direct method
  "seeing the future" in a backtest). A level of a time feature that lies wholly inside
  one stretch is then unseen by that stretch's model (ridge shrinks its effect to 0).

* hashed (:class:`~pyprog.timeseries.splits.HashedFolds`, what :func:`pyprog.forecast_value`
  uses): each round's fold a hash of its time and context, not of its action or reward,
  so the fold is as independent of (a_i, r_i) as a random one and needs no view of the
  whole log: a log read in chunks folds as the whole does (:mod:`pyprog.offpolicy.chunked`).

The first two are :class:`~pyprog.timeseries.splits.Folds` objects; ``folds=`` also takes one of
them, or a registered subclass of its own (:func:`~pyprog.timeseries.splits.register_folds`).

The reward model is any object with scikit-learn's ``fit(X, y)`` and ``predict(X)``; it is
copied (``copy.deepcopy``, as an unfitted scikit-learn estimator can be) once per fold. A
model with ``fit_folds(X, y, fold, n_folds) -> [model per fold]`` (the default
:class:`ActionRidge`, whose statistics are sums over rows) fits all K in one pass. It
sees ``X = [z, onehot(a)]`` (:func:`reward_features`), z = [context, onehot(φ(t))]. A model
with ``predict_all(z) -> (n, A)`` (such as the default :class:`ActionRidge`) is asked once
per fold; any other is asked once per action. A model that raises, or returns values of the
wrong shape or not finite, is a ``ValueError`` naming it and the fold.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from pyprog.offpolicy.reward_model import ActionRidge
from pyprog.timeseries.splits import FOLDS, N_FOLDS, Folds, check_folds

__all__ = [
    "FOLDS",
    "CrossFit",
    "cross_fit",
    "fit_fold_models",
    "fold_ids",
    "pooled_direct_rows",
    "predict_all",
    "reward_features",
]


def reward_features(context: np.ndarray, time_onehot: np.ndarray | None) -> np.ndarray:
    """z = [context, onehot(φ(t))]: the reward model's inputs before the action, (n, k)."""
    if time_onehot is None:
        return context
    return np.concatenate([context, time_onehot], axis=1)


def fold_ids(times: np.ndarray, n_folds: int, folds, rng: np.random.Generator):
    """Each round's fold, shape (n,) int in [0, n_folds).

    The work is :meth:`pyprog.timeseries.Folds.fold_ids`'s.

    Examples
    --------
    >>> fold_ids(np.array([3.0, 1.0, 2.0, 0.0]), 2, "blocked", np.random.default_rng(0))
    array([1, 0, 1, 0])
    """
    return check_folds(folds, n_folds).fold_ids(times, rng)


@dataclass(frozen=True)
class CrossFit:
    """Cross-fitted predictions of a reward model.

    Attributes
    ----------
    q_hat : numpy.ndarray, shape (n, A)
        q̂(x_i, φ(t_i), a) for every action, from the model that did not see round i.
    fold : numpy.ndarray, shape (n,)
        Each round's fold.
    models : list
        The K fitted models (fold k's model was fit without fold k).
    """

    q_hat: np.ndarray
    fold: np.ndarray
    models: list

    def predict(self, z: np.ndarray) -> np.ndarray:
        """q̂ at other inputs z (n, k) for every action, (n, A): row i by its own fold's model."""
        out = np.empty_like(self.q_hat)
        n_folds, n_actions = len(self.models), self.q_hat.shape[1]
        for k, model in enumerate(self.models):
            test = self.fold == k
            out[test] = predict_all(model, z[test], n_actions, k, n_folds)
        return out

    def pooled_direct(self, context: np.ndarray, k_time: int, pi: np.ndarray):
        """The direct term averaged over every logged context, at each round's own time.

        D̄_i = 1/n Σ_j Σ_a π_e(a|x_j) q̂_k(i)(x_j, φ(t_i), a), with k(i) round i's fold.
        For a model affine in its inputs z = [x, τ] (τ the last ``k_time`` columns) for each
        action, 1/n Σ_j π_ja q̂(z_j, a) = p̄_a q̂(z̄_a, a) with p̄_a = mean_j π_ja and z̄_a the
        mean input weighted by π_ja over j, and q̂([x̄_a, τ_i], a) = q̂([x_i, τ_i], a) −
        q̂([x_i, 0], a) + q̂([x̄_a, 0], a): so n + K·A predictions, not n² (O(n) time and
        memory).

        Parameters
        ----------
        context : numpy.ndarray, shape (n, d)
        k_time : int
            The number of time columns at the end of the model's inputs.
        pi : numpy.ndarray, shape (n, A)
            π_e at each round.

        Returns
        -------
        pooled : numpy.ndarray, shape (n,)
            D̄_i.
        own : numpy.ndarray, shape (n,)
            Σ_a π_ia q̂_k(i)(x_i, 0, a), the direct term's part that moves with the context
            (its drift in time is what pooling assumes away).
        """
        n = self.q_hat.shape[0]
        n_folds = len(self.models)
        p_bar = pi.mean(axis=0)  # (A,)
        mass = np.where(p_bar > 0, n * p_bar, 1.0)
        x_bar = pi.T @ context / mass[:, None]  # (A, d): x̄_a
        pooled, own = np.empty(n), np.empty(n)
        for k, model in enumerate(self.models):  # one fold at a time: memory n/K · (d + k)
            test = np.flatnonzero(self.fold == k)
            pooled[test], own[test] = pooled_direct_rows(
                model, (k, n_folds), context[test], self.q_hat[test], pi[test], p_bar, x_bar,
                k_time,
            )  # fmt: skip
        return pooled, own


def pooled_direct_rows(
    model, fold: tuple, context: np.ndarray, q: np.ndarray, pi: np.ndarray,
    p_bar: np.ndarray, x_bar: np.ndarray, k_time: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The pooled direct term D̄_i and the context part at rows of one fold's model.

    D̄_i = q̂(x_i, τ_i, ·) − q̂(x_i, 0, ·) + q̂(x̄_a, 0, ·), weighted by p̄
    (:meth:`CrossFit.pooled_direct` says why); the context part is Σ_a π_ia q̂(x_i, 0, a).

    Parameters
    ----------
    model
        Fold k's fitted reward model; ``fold`` is ``(k, n_folds)``, for messages.
    context : numpy.ndarray, shape (r, d)
    q : numpy.ndarray, shape (r, A)
        q̂(x_i, τ_i, ·) at the rows.
    pi : numpy.ndarray, shape (r, A)
    p_bar : numpy.ndarray, shape (A,)
        mean_j π_e(a|x_j) over the whole log.
    x_bar : numpy.ndarray, shape (A, d)
        The whole log's contexts' mean weighted by π_e(a|x_j).
    k_time : int
        The number of time columns at the end of the model's inputs.

    Returns
    -------
    pooled, part : numpy.ndarray, shape (r,)
    """
    n_actions = q.shape[1]
    z0 = np.concatenate([context, np.zeros((context.shape[0], k_time))], axis=1)
    q0 = predict_all(model, z0, n_actions, *fold)  # q̂(x_i, 0, ·)
    z_bar = np.concatenate([x_bar, np.zeros((n_actions, k_time))], axis=1)
    at_mean = predict_all(model, z_bar, n_actions, *fold)  # (A, A)
    return (q - q0) @ p_bar + p_bar @ np.diag(at_mean), (pi * q0).sum(axis=1)


def _name(model) -> str:
    return type(model).__name__


def predict_all(model, z: np.ndarray, n_actions: int, k: int, n_folds: int) -> np.ndarray:
    """A fitted model's q̂(z, a) for every action, (n, A), checked (fold k of n_folds)."""
    where = f"reward_model {_name(model)} (fold {k + 1} of {n_folds})"
    n = z.shape[0]
    try:
        if hasattr(model, "predict_all"):
            out = np.asarray(model.predict_all(z), dtype=np.float64)
        else:
            cols = []
            for a in range(n_actions):
                onehot = np.zeros((n, n_actions))
                onehot[:, a] = 1.0
                cols.append(np.asarray(model.predict(np.concatenate([z, onehot], 1)), float))
            out = np.stack([np.ravel(c) if c.size == n else c for c in cols], axis=1)
    except Exception as exc:
        raise ValueError(f"{where}: predict raised {type(exc).__name__}: {exc}") from exc
    if out.shape != (n, n_actions):
        raise ValueError(
            f"{where}: predictions must have one value per row ({n} per action); got shape "
            f"{out.shape}"
        )
    if not np.isfinite(out).all():
        i, a = (int(v) for v in np.argwhere(~np.isfinite(out))[0])
        raise ValueError(
            f"{where}: predicted {out[i, a]} for row {i}, action {a}; q̂ must be finite"
        )
    return out


def cross_fit(
    z: np.ndarray,
    times: np.ndarray,
    action: np.ndarray,
    reward: np.ndarray,
    n_actions: int,
    *,
    reward_model=None,
    n_folds: int = N_FOLDS,
    folds: str | Folds = "random",
    random_state=None,
) -> CrossFit:
    """Fit the reward model K times, each without one fold, and predict q̂ on that fold.

    Parameters
    ----------
    z : numpy.ndarray, shape (n, k)
        Inputs before the action (:func:`reward_features`).
    times : numpy.ndarray, shape (n,)
        For folds laid in time (``folds="blocked"``).
    action : numpy.ndarray of int, shape (n,)
    reward : numpy.ndarray, shape (n,)
    n_actions : int
    reward_model : scikit-learn-style regressor, optional
        Default :class:`ActionRidge` (``n_actions``).
    n_folds : int
        K >= 2 (and <= n).
    folds : {"random", "blocked"} or Folds
        How rounds fall into folds (:mod:`pyprog.timeseries.splits`); an object carries
        its own ``n_folds``.
    random_state : None, int or numpy.random.Generator
        For the random partition.

    Returns
    -------
    CrossFit

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z, a = rng.normal(size=(100, 2)), rng.integers(0, 3, 100)
    >>> fit = cross_fit(z, np.arange(100.0), a, z[:, 0], 3, random_state=0)
    >>> fit.q_hat.shape, len(fit.models)
    ((100, 3), 5)
    """
    n = z.shape[0]
    splitter = check_folds(folds, n_folds)
    fold = splitter.fold_ids(times, np.random.default_rng(random_state))
    n_folds = splitter.n_folds
    if reward_model is None:
        reward_model = ActionRidge(n_actions)
    elif not (
        callable(getattr(reward_model, "fit", None))
        and callable(getattr(reward_model, "predict", None))
    ):
        raise ValueError(
            f"reward_model must have fit(X, y) and predict(X) (a scikit-learn regressor); got "
            f"{reward_model!r}"
        )
    models = fit_fold_models(z, action, reward, n_actions, fold, n_folds, reward_model)
    q_hat = np.empty((n, n_actions))
    for k, model in enumerate(models):
        test = fold == k
        q_hat[test] = predict_all(model, z[test], n_actions, k, n_folds)
    return CrossFit(q_hat, fold, models)


def fit_fold_models(
    z: np.ndarray, action: np.ndarray, reward: np.ndarray, n_actions: int,
    fold: np.ndarray, n_folds: int, reward_model,
) -> list:  # fmt: skip
    """The K fold models: fold k's fitted on the rounds outside fold k.

    Parameters
    ----------
    z : numpy.ndarray, shape (n, k)
        Inputs before the action (:func:`reward_features`).
    action : numpy.ndarray of int, shape (n,)
    reward : numpy.ndarray, shape (n,)
    n_actions : int
    fold : numpy.ndarray of int, shape (n,)
        Each round's fold in ``[0, n_folds)``.
    n_folds : int
    reward_model : scikit-learn-style regressor
        Copied for each fold; one with ``fit_folds`` (:class:`ActionRidge`) fits all
        folds from one pass over the rows.

    Returns
    -------
    list of the K fitted models
    """
    X = np.concatenate([z, np.eye(n_actions)[action]], axis=1)
    if hasattr(reward_model, "fit_folds"):  # sums over rows: all folds' fits in one pass
        return reward_model.fit_folds(X, reward, fold, n_folds)
    models = []
    for k in range(n_folds):
        test = fold == k
        try:
            model = copy.deepcopy(reward_model)
        except Exception as exc:
            raise ValueError(
                f"reward_model {_name(reward_model)}: copy.deepcopy raised "
                f"{type(exc).__name__} ({exc}); each fold fits its own copy, so the model must "
                "be copyable (an unfitted scikit-learn estimator is)"
            ) from exc
        try:
            model.fit(X[~test], reward[~test])
        except Exception as exc:
            raise ValueError(
                f"reward_model {_name(reward_model)}: fit raised {type(exc).__name__} on fold "
                f"{k + 1} of {n_folds} ({int((~test).sum())} rounds): {exc}"
            ) from exc
        models.append(model)
    return models
