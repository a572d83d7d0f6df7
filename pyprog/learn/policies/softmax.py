"""Softmax policies over discrete actions: softmax-linear (NS-Reco) and softmax-MLP (NS-Reacher).

:class:`SoftmaxLinear` is ``π(·|s) = softmax(W s + b)``, :class:`SoftmaxMLP` is
``softmax(W2 tanh(W1 s + b1) + b2)``; both share one output layer, sampling by inverse CDF,
and batched forward and backward passes in the compiled kernels ``softmax_forward`` and
``softmax_backward`` (module attribute ``kernels``, which the tests swap for the NumPy
twins). :class:`SoftmaxEval` is their evaluation cache.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from pyprog._ext import fallback
from pyprog._ext.backend import kernels
from pyprog.learn.policies.base import Policy, PolicyEval, work_array
from pyprog.utils.validation import check_int, check_positive

__all__ = ["SoftmaxEval", "SoftmaxLinear", "SoftmaxMLP"]


@dataclass(eq=False, slots=True)
class SoftmaxEval(PolicyEval):
    """Cache of the softmax policies.

    Attributes
    ----------
    actions : ndarray of int64, shape (M,)
    probs : ndarray of float64, shape (M, n_actions)
        ``π(·|s_m)``.
    log_probs : ndarray of float64, shape (M, n_actions)
        ``log π(·|s_m)``.
    features : ndarray of float64, shape (M, F)
        Input of the output layer: ``s`` for :class:`SoftmaxLinear`, the hidden
        activations ``tanh(W1 s + b1)`` for :class:`SoftmaxMLP`.
    """

    actions: np.ndarray
    probs: np.ndarray
    log_probs: np.ndarray
    features: np.ndarray


class _SoftmaxPolicy(Policy):
    """Softmax over ``n_actions`` with an output layer ``logits = W f(s) + b``.

    ``f(s)`` is ``s`` or, with a hidden layer (``_hidden_layer``), ``tanh(W1 s + b1)``.
    The batched forward and backward passes are the compiled kernels
    ``softmax_forward`` and ``softmax_backward`` (NumPy twins in ``_ext/fallback.py``).
    """

    discrete = True
    action_shape = ()
    action_dtype = np.dtype(np.int64)

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        n_features: int,
        hidden_layout: list[tuple[str, tuple[int, ...], str]],
    ) -> None:
        self.n_actions = n_actions
        output = [("W", (n_actions, n_features), "output"), ("b", (n_actions,), "output")]
        super().__init__(obs_dim, hidden_layout + output)

    def _init_buffers(self) -> None:
        self._buf_logits = np.empty(self.n_actions)
        self._no_hidden = (np.empty((0, self.obs_dim)), np.empty(0))

    def _as_actions(self, actions: object, m: int) -> np.ndarray:
        arr = np.asarray(actions)
        if arr.shape != (m,):
            raise ValueError(
                f"actions must have shape ({m},), one action per observation; got {arr.shape}"
            )
        if arr.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be integers in [0, {self.n_actions}); got dtype {arr.dtype}"
            )
        bad = (arr < 0) | (arr >= self.n_actions)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(
                f"actions must be integers in [0, {self.n_actions}); got {arr[k]} at sample {k}"
            )
        return np.ascontiguousarray(arr, dtype=np.int64)

    def _hidden_layer(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W1, b1)``; shapes (0, obs_dim) and (0,) for a policy without hidden layer."""
        return self._no_hidden

    def compiled_policy(self) -> tuple[str, int, int]:
        return "softmax", self.n_actions, self._hidden_layer()[0].shape[0]

    def _affine_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        W1, b1 = self._hidden_layer()
        return ([(W1, b1)] if W1.shape[0] else []) + [(self.W, self.b)]

    def _features_one(self, obs: np.ndarray) -> np.ndarray:
        """Input of the output layer for one observation (used by ``sample``)."""
        return obs

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> tuple[int, float]:
        z = self._buf_logits
        np.matmul(self.W, self._features_one(obs), out=z)
        z += self.b
        # a handful of actions: Python floats beat NumPy's per-call overhead here
        logits = z.tolist()
        top = max(logits)
        cdf = list(accumulate(math.exp(x - top) for x in logits))
        total = cdf[-1]
        # inverse CDF; the first index whose cumulative mass exceeds u·total (an action of
        # probability 0 never qualifies)
        a = bisect_right(cdf, rng.random() * total)
        if a == len(cdf):  # u·total rounded up to total
            a = bisect_left(cdf, total)
        return a, logits[a] - top - math.log(total)

    def _evaluate(
        self, obs: np.ndarray, actions: np.ndarray, work: dict[str, np.ndarray]
    ) -> SoftmaxEval:
        # one fused pass (kernels.softmax_forward): hidden layer, logits, log-softmax,
        # probabilities, entropies and the taken actions' log-probabilities
        m, n = obs.shape[0], self.n_actions
        W1, b1 = self._hidden_layer()
        W, b, K, dt = self.W, self.b, kernels, self.dtype
        if dt != np.float64:
            # float32 policies: the NumPy twin in float32 (the compiled twin of these passes
            # runs inside kernels.policy_update); obs and θ rounded to float32
            obs = np.ascontiguousarray(obs, dtype=dt)
            W1, b1, W, b = (x.astype(dt) for x in (W1, b1, W, b))
            K = fallback
        out = (
            work_array(work, "hidden", (m, W1.shape[0]), dt),
            work_array(work, "log_probs", (m, n), dt),
            work_array(work, "probs", (m, n), dt),
            work_array(work, "log_prob", (m,), dt),
            work_array(work, "entropy", (m,), dt),
        )
        features, log_probs, probs, log_prob, entropy = K.softmax_forward(
            obs, actions, W1, b1, W, b, out=out
        )
        return SoftmaxEval(
            log_prob=log_prob,
            entropy=entropy,
            obs=obs,
            owner=self,
            work=work,
            actions=actions,
            probs=probs,
            log_probs=log_probs,
            features=features,
        )

    def _backward(
        self, ev: SoftmaxEval, c_lp: np.ndarray | None, c_h: np.ndarray | None, out: np.ndarray
    ) -> None:
        # With respect to the logits:
        #   ∂ log π(a|s) / ∂z = onehot(a) − π,    ∂H / ∂z = −π ⊙ (log π + H),
        # then back through the output (and hidden) layer: kernels.softmax_backward
        m = ev.log_prob.shape[0]
        zeros = None
        if c_lp is None or c_h is None:
            zeros = work_array(ev.work, "zeros", (m,))
            zeros.fill(0.0)
        c_lp = zeros if c_lp is None else np.ascontiguousarray(c_lp, dtype=np.float64)
        c_h = zeros if c_h is None else np.ascontiguousarray(c_h, dtype=np.float64)
        W1, _ = self._hidden_layer()
        W, K, dt = self.W, kernels, ev.log_probs.dtype
        if dt != np.float64:  # float32 policies: as in _evaluate
            W1, W, K = W1.astype(dt), W.astype(dt), fallback
            c_lp, c_h = c_lp.astype(dt), c_h.astype(dt)
        args = (ev.obs, ev.actions, ev.features, ev.log_probs, ev.probs, ev.entropy)
        if out.ndim == 1:
            out[...] = K.softmax_backward(*args, W1, W, c_lp, c_h)
            return
        # per-sample Jacobian (inspection and tests): one row at a time
        for k in range(m):
            row = tuple(x[k : k + 1] for x in args)
            out[k] = K.softmax_backward(*row, W1, W, c_lp[k : k + 1], c_h[k : k + 1])


class SoftmaxLinear(_SoftmaxPolicy):
    """Softmax-linear policy: ``π(·|s) = softmax(W s + b)``, features ``φ(s) = s``.

    Parameters
    ----------
    obs_dim : int
        Dimension of the observation, >= 1 (NS-Reco: 1, with ``s ≡ [1]``).
    n_actions : int
        Number of discrete actions, >= 1.

    Attributes
    ----------
    theta : ndarray of float64, shape (P,), P = n_actions · (obs_dim + 1)
        ``[W.ravel(), b]``, initially 0 (the uniform policy).
    W : ndarray of float64, shape (n_actions, obs_dim)
        View into ``theta``.
    b : ndarray of float64, shape (n_actions,)
        View into ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> policy = SoftmaxLinear(obs_dim=1, n_actions=5)
    >>> policy.theta.shape
    (10,)
    >>> action, log_prob = policy.sample(np.array([1.0]), np.random.default_rng(0))
    >>> bool(np.isclose(log_prob, np.log(1 / 5)))
    True
    >>> ev = policy.evaluate(np.ones((3, 1)), np.array([0, 1, 4]))
    >>> ev.log_prob.round(4)
    array([-1.6094, -1.6094, -1.6094])
    >>> policy.backward(ev, coef_log_prob=np.array([1.0, 0.0, 0.0])).reshape(2, 5).round(2)
    array([[ 0.8, -0.2, -0.2, -0.2, -0.2],
           [ 0.8, -0.2, -0.2, -0.2, -0.2]])
    """

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        obs_dim = check_int("obs_dim", obs_dim, 1)
        n_actions = check_int("n_actions", n_actions, 1)
        super().__init__(obs_dim, n_actions, obs_dim, [])

    def __repr__(self) -> str:
        return f"SoftmaxLinear(obs_dim={self.obs_dim}, n_actions={self.n_actions})"


class SoftmaxMLP(_SoftmaxPolicy):
    """Softmax policy over a tanh hidden layer: ``softmax(W2 tanh(W1 s + b1) + b2)``.

    The hidden layer is initialised like PyTorch's ``nn.Linear`` (``W1``, ``b1`` drawn
    from ``U(−1/√obs_dim, 1/√obs_dim)``); the output layer starts at 0, so the initial
    policy is uniform. The reference implementation trains the hidden layer at its own
    learning rate, ``hidden_lr`` — see :meth:`learning_rates`.

    Parameters
    ----------
    obs_dim : int
        Dimension of the observation, >= 1 (NS-Reacher: 2).
    n_actions : int
        Number of discrete actions, >= 1.
    hidden : int
        Number of hidden units, >= 1.
    rng : numpy.random.Generator
        Source of the hidden layer's initial weights.
    hidden_lr : float, default 1e-3
        Learning rate of the hidden layer (parameter group ``"hidden"``).

    Attributes
    ----------
    theta : ndarray of float64, shape (P,)
        ``[W1.ravel(), b1, W2.ravel(), b2]``, P = hidden·(obs_dim + 1) + n_actions·(hidden + 1).
    W1 : ndarray of float64, shape (hidden, obs_dim)
    b1 : ndarray of float64, shape (hidden,)
    W : ndarray of float64, shape (n_actions, hidden)
        The output weights (also available as ``W2``).
    b : ndarray of float64, shape (n_actions,)
        The output bias (also available as ``b2``).

    Examples
    --------
    >>> import numpy as np
    >>> policy = SoftmaxMLP(obs_dim=2, n_actions=4, hidden=8, rng=np.random.default_rng(0))
    >>> policy.theta.shape, policy.param_groups()
    ((60,), [('hidden', slice(0, 24, None)), ('output', slice(24, 60, None))])
    >>> ev = policy.evaluate(np.array([[0.5, 0.5], [0.1, 0.9]]), np.array([0, 3]))
    >>> np.exp(ev.log_prob)
    array([0.25, 0.25])
    >>> grad = policy.backward(ev, coef_log_prob=np.ones(2), coef_entropy=np.full(2, 0.01))
    >>> grad.shape
    (60,)
    >>> policy.learning_rates(0.01)[[0, 59]]
    array([0.001, 0.01 ])
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden: int,
        rng: np.random.Generator,
        hidden_lr: float = 1e-3,
    ) -> None:
        obs_dim = check_int("obs_dim", obs_dim, 1)
        n_actions = check_int("n_actions", n_actions, 1)
        hidden = check_int("hidden", hidden, 1)
        if not isinstance(rng, np.random.Generator):
            raise ValueError(
                f"rng must be a numpy.random.Generator (np.random.default_rng(seed)); got {rng!r}"
            )
        self.hidden = hidden
        layout = [("W1", (hidden, obs_dim), "hidden"), ("b1", (hidden,), "hidden")]
        super().__init__(obs_dim, n_actions, hidden, layout)
        self.hidden_lr = hidden_lr
        # nn.Linear's default: U(−1/√fan_in, 1/√fan_in) for weights and bias
        bound = 1.0 / math.sqrt(obs_dim)
        hidden_params = self._theta[self._groups[0][1]]
        hidden_params[...] = rng.uniform(-bound, bound, size=hidden_params.shape)

    @property
    def hidden_lr(self) -> float:
        """float: learning rate of the hidden layer."""
        return self._group_lr["hidden"]

    @hidden_lr.setter
    def hidden_lr(self, value: float) -> None:
        self._group_lr["hidden"] = check_positive("hidden_lr", value)

    @property
    def W2(self) -> np.ndarray:
        """ndarray of float64, shape (n_actions, hidden): the output weights, ``W``."""
        return self.W

    @property
    def b2(self) -> np.ndarray:
        """ndarray of float64, shape (n_actions,): the output bias, ``b``."""
        return self.b

    def __repr__(self) -> str:
        return (
            f"SoftmaxMLP(obs_dim={self.obs_dim}, n_actions={self.n_actions}, "
            f"hidden={self.hidden}, hidden_lr={self.hidden_lr})"
        )

    def _init_buffers(self) -> None:
        super()._init_buffers()
        self._buf_hidden = np.empty(self.hidden)

    def _hidden_layer(self) -> tuple[np.ndarray, np.ndarray]:
        return self.W1, self.b1

    def _features_one(self, obs: np.ndarray) -> np.ndarray:
        h = self._buf_hidden
        np.matmul(self.W1, obs, out=h)
        h += self.b1
        return np.tanh(h, out=h)
