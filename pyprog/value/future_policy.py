"""A policy for a future date: a softmax over the context, as a plain file.

:class:`FuturePolicy` is what :func:`pyprog.learn_for_future` returns: π(a | x) =
Σ_k s_k softmax(W_k h_k(x) + b_k)_a, an average of K softmax members with shares s_k
(the cross-fitted halves of the log each learned one; a single member is a plain
softmax), with h_k(x) = x (linear) or tanh(V_k x + c_k) (one hidden layer), or, for a
greedy member, the one-hot of its highest logit. It is learned for
one target (a date or a window), so it does not change with the time; ``times`` is taken
for the interface every pyprog policy shares, ``policy(context, times) -> (n, A)``.

The forward pass, hidden layer included, is the compiled ``softmax_forward`` kernel of
:mod:`pyprog._ext` (NumPy twin in :mod:`pyprog._ext.fallback`). :meth:`FuturePolicy.save`
writes JSON (weights as lists of numbers), so a policy learned here can be read by any
language.
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
#: The fields of a policy with a hidden layer (absent: linear).
HIDDEN_FIELDS = ("hidden_weights", "hidden_bias")


def softmax_pass(
    context: np.ndarray, weights: np.ndarray, bias: np.ndarray, hidden: tuple | None = None
) -> tuple:
    """log π, π and the entropy of softmax(h Wᵀ + b), row by row, h = context or
    tanh(context Vᵀ + c).

    Parameters
    ----------
    context : numpy.ndarray of float64, shape (n, d)
    weights : numpy.ndarray of float64, shape (A, F)
        F = d, or H with a hidden layer.
    bias : numpy.ndarray of float64, shape (A,)
    hidden : (V, c), optional
        The hidden layer's weights (H, d) and bias (H,); none: a linear softmax.

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
    layer = (np.empty((0, d)), np.empty(0)) if hidden is None else hidden
    v, c, w, b = (np.ascontiguousarray(a, dtype=np.float64) for a in (*layer, weights, bias))
    _, log_probs, probs, _, entropy = kernels.softmax_forward(
        context, np.zeros(n, dtype=np.int64), v, c, w, b
    )
    return log_probs, probs, entropy


@dataclass(frozen=True)
class FuturePolicy:
    """π(a | x) = Σ_k s_k softmax(W_k h_k(x) + b_k)_a: the policy learned for a target.

    Parameters
    ----------
    weights : numpy.ndarray, shape (K, A, F)
        Each member's output weights: on the raw context (F = d; d = 0 for a log without
        context), or on its hidden layer (F = H).
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
    hidden_weights : numpy.ndarray, shape (K, H, d), optional
        Each member's hidden layer V_k on the raw context, h_k(x) = tanh(V_k x + c_k);
        none: linear members.
    hidden_bias : numpy.ndarray, shape (K, H), optional
        c_k.

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
    hidden_weights: np.ndarray | None = None
    hidden_bias: np.ndarray | None = None

    def __post_init__(self) -> None:
        w, b, s = (np.asarray(v, dtype=np.float64) for v in (self.weights, self.bias, self.shares))
        if w.ndim != 3 or b.shape != w.shape[:2] or s.shape != w.shape[:1]:
            raise ValueError(
                f"weights (K, A, F), bias (K, A) and shares (K,) must agree; got "
                f"{w.shape}, {b.shape} and {s.shape}"
            )
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError("weights and bias must be finite")
        if not (np.all(s > 0) and abs(s.sum() - 1.0) < 1e-9):
            raise ValueError(f"shares must be > 0 and sum to 1; got {s.tolist()}")
        for name, v in (("weights", w), ("bias", b), ("shares", s)):
            object.__setattr__(self, name, v)
        self._check_hidden(w)

    def _check_hidden(self, w: np.ndarray) -> None:
        if (self.hidden_weights is None) != (self.hidden_bias is None):
            raise ValueError("hidden_weights and hidden_bias come together (or neither)")
        if self.hidden_weights is None:
            return
        v, c = (np.asarray(a, dtype=np.float64) for a in (self.hidden_weights, self.hidden_bias))
        if v.ndim != 3 or v.shape[:2] != (w.shape[0], w.shape[2]) or c.shape != v.shape[:2]:
            raise ValueError(
                f"hidden_weights (K, H, d) and hidden_bias (K, H) must agree with weights "
                f"(K, A, H) = {w.shape}; got {v.shape} and {c.shape}"
            )
        if not (np.isfinite(v).all() and np.isfinite(c).all()):
            raise ValueError("hidden_weights and hidden_bias must be finite")
        object.__setattr__(self, "hidden_weights", v)
        object.__setattr__(self, "hidden_bias", c)

    @classmethod
    def mixture(cls, members: list[FuturePolicy], shares, learner: str = "",
                target: tuple = ()) -> FuturePolicy:  # fmt: skip
        """The policy Σ_k s_k π_k of one-member policies of one form (linear or hidden,
        greedy or not)."""
        first = members[0]
        stack = {name: np.concatenate([getattr(m, name) for m in members])
                 for name in ("weights", "bias")}  # fmt: skip
        if first.hidden_weights is not None:
            stack |= {name: np.concatenate([getattr(m, name) for m in members])
                      for name in HIDDEN_FIELDS}  # fmt: skip
        return cls(shares=np.asarray(shares, dtype=np.float64), greedy=first.greedy,
                   learner=learner, target=target, **stack)  # fmt: skip

    @property
    def n_actions(self) -> int:
        return int(self.weights.shape[1])

    @property
    def n_hidden(self) -> int:
        """H, the hidden layer's width; 0 for linear members."""
        return 0 if self.hidden_weights is None else int(self.hidden_weights.shape[1])

    @property
    def n_features(self) -> int:
        """d, the context's width."""
        source = self.weights if self.hidden_weights is None else self.hidden_weights
        return int(source.shape[2])

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
        for k, (w, b, s) in enumerate(zip(self.weights, self.bias, self.shares, strict=True)):
            hidden = None if self.hidden_weights is None else (self.hidden_weights[k],
                                                               self.hidden_bias[k])  # fmt: skip
            if self.greedy:
                h = x if hidden is None else np.tanh(x @ hidden[0].T + hidden[1])
                out[np.arange(x.shape[0]), np.argmax(h @ w.T + b, axis=1)] += s
            else:
                out += s * softmax_pass(x, w, b, hidden)[1]
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
        out = {
            "format": FORMAT, "learner": self.learner, "target": list(self.target),
            "greedy": self.greedy, "shares": self.shares.tolist(),
            "weights": self.weights.tolist(), "bias": self.bias.tolist(),
            "n_actions": self.n_actions, "n_features": self.n_features,
        }  # fmt: skip
        if self.hidden_weights is not None:
            out |= {"hidden_weights": self.hidden_weights.tolist(),
                    "hidden_bias": self.hidden_bias.tolist()}  # fmt: skip
        return out

    @classmethod
    def from_dict(cls, data: dict) -> FuturePolicy:
        """The policy :meth:`as_dict` wrote."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a pyprog policy: its 'format' must be {FORMAT!r}")
        missing = [key for key in FIELDS if key not in data]
        if missing:
            raise ValueError(f"a pyprog policy without {', '.join(map(repr, missing))}")
        k, a, d = len(data["shares"]), int(data["n_actions"]), int(data["n_features"])
        hidden = {}
        try:
            if "hidden_weights" in data:
                v = np.asarray(data["hidden_weights"], dtype=np.float64)
                hidden = {
                    "hidden_weights": v.reshape(k, -1, d),
                    "hidden_bias": np.asarray(data["hidden_bias"], dtype=np.float64),
                }
                d = hidden["hidden_weights"].shape[1]  # the output layer's width: H
            weights = np.asarray(data["weights"], dtype=np.float64).reshape(k, a, d)
            bias = np.asarray(data["bias"], dtype=np.float64)
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"a pyprog policy whose weights are not {k} x {a} x {d} numbers: "
                             f"{exc}") from None  # fmt: skip
        return cls(weights, bias, np.asarray(data["shares"], dtype=np.float64),
                   bool(data["greedy"]), str(data["learner"]), tuple(data["target"]),
                   **hidden)  # fmt: skip

    def save(self, path: str | os.PathLike) -> None:
        """Write the policy as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.as_dict(), f)

    @classmethod
    def load(cls, path: str | os.PathLike) -> FuturePolicy:
        """Read a policy :meth:`save` wrote."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))
