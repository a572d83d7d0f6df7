"""A policy for a future date: linear softmax over the context, as a plain file.

:class:`FuturePolicy` is what :func:`pyprog.learn_for_future` returns: π(a | x) =
Σ_k s_k softmax(W_k x + b_k)_a, an average of K linear softmax members with shares s_k
(the cross-fitted halves of the log each learned one; a single member is a plain linear
softmax), or, for a greedy member, the one-hot of its highest logit. It is learned for
one target (a date or a window), so it does not change with the time; ``times`` is taken
for the interface every pyprog policy shares, ``policy(context, times) -> (n, A)``.

The forward pass is the compiled ``softmax_forward`` kernel of :mod:`pyprog._ext`
(NumPy twin in :mod:`pyprog._ext.fallback`). :meth:`FuturePolicy.save` writes JSON
(weights as lists of numbers), so a policy learned here can be read by any language.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from pyprog._ext.backend import kernels

__all__ = ["FuturePolicy", "softmax_pass"]

#: The JSON file's ``format`` field, and the fields it must hold.
FORMAT = "pyprog.FuturePolicy/1"
FIELDS = ("learner", "target", "greedy", "shares", "weights", "bias", "n_actions", "n_features")


def softmax_pass(context: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> tuple:
    """log π, π and the entropy of softmax(context Wᵀ + b), row by row.

    Parameters
    ----------
    context : numpy.ndarray of float64, shape (n, d)
    weights : numpy.ndarray of float64, shape (A, d)
    bias : numpy.ndarray of float64, shape (A,)

    Returns
    -------
    log_probs, probs : numpy.ndarray, shape (n, A)
    entropy : numpy.ndarray, shape (n,)

    Examples
    --------
    >>> lp, p, h = softmax_pass(np.zeros((1, 2)), np.zeros((3, 2)), np.zeros(3))
    >>> p.round(3), round(float(h[0]), 4)  # uniform: entropy log 3
    (array([[0.333, 0.333, 0.333]]), 1.0986)
    """
    context = np.ascontiguousarray(context, dtype=np.float64)
    n, d = context.shape
    no_hidden = np.empty((0, d)), np.empty(0)
    w, b = (np.ascontiguousarray(v, dtype=np.float64) for v in (weights, bias))
    _, log_probs, probs, _, entropy = kernels.softmax_forward(
        context, np.zeros(n, dtype=np.int64), *no_hidden, w, b
    )
    return log_probs, probs, entropy


@dataclass(frozen=True)
class FuturePolicy:
    """π(a | x) = Σ_k s_k softmax(W_k x + b_k)_a: the policy learned for a target.

    Parameters
    ----------
    weights : numpy.ndarray, shape (K, A, d)
        Each member's weights on the raw context (d = 0 for a log without context).
    bias : numpy.ndarray, shape (K, A)
    shares : numpy.ndarray, shape (K,)
        The members' shares s_k (> 0, summing to 1).
    greedy : bool
        Each member takes the action of its highest logit (ties to the lowest action),
        not a softmax draw: the regression baseline's argmax_a q̂(x, t', a).
    learner : str
        Which learner made it (``"prognosticator"``, ``"dr-pg"``, ...).
    target : tuple
        ``("at", t')`` or ``("over", t₁, t₂)``, in days.

    Examples
    --------
    >>> pi = FuturePolicy(np.zeros((1, 2, 1)), np.array([[0.0, np.log(3.0)]]), np.ones(1))
    >>> pi.probabilities(np.zeros((1, 1))).round(2)
    array([[0.25, 0.75]])
    """

    weights: np.ndarray
    bias: np.ndarray
    shares: np.ndarray
    greedy: bool = False
    learner: str = ""
    target: tuple = ()

    def __post_init__(self) -> None:
        w, b, s = (np.asarray(v, dtype=np.float64) for v in (self.weights, self.bias, self.shares))
        if w.ndim != 3 or b.shape != w.shape[:2] or s.shape != w.shape[:1]:
            raise ValueError(
                f"weights (K, A, d), bias (K, A) and shares (K,) must agree; got "
                f"{w.shape}, {b.shape} and {s.shape}"
            )
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError("weights and bias must be finite")
        if not (np.all(s > 0) and abs(s.sum() - 1.0) < 1e-9):
            raise ValueError(f"shares must be > 0 and sum to 1; got {s.tolist()}")
        for name, v in (("weights", w), ("bias", b), ("shares", s)):
            object.__setattr__(self, name, v)

    @property
    def n_actions(self) -> int:
        return int(self.weights.shape[1])

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[2])

    def probabilities(self, context, times=None) -> np.ndarray:
        """π(· | x) for each context: shape (n, A), rows summing to 1.

        Parameters
        ----------
        context : array_like, shape (n, d), or None when d = 0 (then ``times`` gives n)
        times : array_like, shape (n,), optional
            Ignored (the policy is learned for one target); taken so that the policy is
            a ``policy(context, times)`` callable for :func:`pyprog.forecast_value`.
        """
        x = self._context(context, times)
        out = np.zeros((x.shape[0], self.n_actions))
        for w, b, s in zip(self.weights, self.bias, self.shares, strict=True):
            if self.greedy:
                best = np.argmax(x @ w.T + b, axis=1)
                out[np.arange(x.shape[0]), best] += s
            else:
                out += s * softmax_pass(x, w, b)[1]
        return out

    __call__ = probabilities

    def _context(self, context, times) -> np.ndarray:
        d = self.n_features
        if context is None:
            if d:
                raise ValueError(f"context is required: the policy takes {d} context columns")
            if times is None:
                raise ValueError("context is None: pass times, so that n is known")
            return np.zeros((np.shape(times)[0], 0))
        x = np.asarray(context, dtype=np.float64)
        x = x[:, None] if x.ndim == 1 and d == 1 else x
        if x.ndim != 2 or x.shape[1] != d:
            raise ValueError(f"context must have shape (n, {d}); got {np.shape(context)}")
        if not np.isfinite(x).all():
            raise ValueError("context must be finite")
        return x

    def as_dict(self) -> dict:
        """The policy as JSON-ready numbers (:meth:`from_dict` reads it back)."""
        return {
            "format": FORMAT, "learner": self.learner, "target": list(self.target),
            "greedy": self.greedy, "shares": self.shares.tolist(),
            "weights": self.weights.tolist(), "bias": self.bias.tolist(),
            "n_actions": self.n_actions, "n_features": self.n_features,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict) -> FuturePolicy:
        """The policy :meth:`as_dict` wrote."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a pyprog policy: its 'format' must be {FORMAT!r}")
        missing = [key for key in FIELDS if key not in data]
        if missing:
            raise ValueError(f"a pyprog policy without {', '.join(map(repr, missing))}")
        k, a, d = len(data["shares"]), int(data["n_actions"]), int(data["n_features"])
        try:
            weights = np.asarray(data["weights"], dtype=np.float64).reshape(k, a, d)
            bias = np.asarray(data["bias"], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a pyprog policy whose weights are not {k} x {a} x {d} numbers: "
                             f"{exc}") from None  # fmt: skip
        return cls(weights, bias, np.asarray(data["shares"], dtype=np.float64),
                   bool(data["greedy"]), str(data["learner"]), tuple(data["target"]))  # fmt: skip

    def save(self, path: str | os.PathLike) -> None:
        """Write the policy as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.as_dict(), f)

    @classmethod
    def load(cls, path: str | os.PathLike) -> FuturePolicy:
        """Read a policy :meth:`save` wrote."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))
