"""Stochastic policies with analytic gradients (paper §8; SPEC §4).

Three policies share one interface:

* :class:`SoftmaxLinear` — ``π(·|s) = softmax(W s + b)`` (NS-Reco);
* :class:`SoftmaxMLP` — ``π(·|s) = softmax(W2 tanh(W1 s + b1) + b2)`` (NS-Reacher);
* :class:`GaussianPolicy` — ``a ~ N(low + sigmoid(W s + b)(high − low), diag(std²))``
  (NS-Diabetes).

All parameters of a policy live in ONE flat float64 vector ``policy.theta`` of shape
``(P,)``; the named weights (``W``, ``b``, ``W1``, ...) are views into it, so an
optimiser that updates ``theta`` in place updates the policy.

The learners' hot path is ``evaluate`` then ``backward``::

    ev = policy.evaluate(obs, actions, check=False)          # (M, obs_dim), (M,)
    grad = policy.backward(ev, coef_log_prob=c, coef_entropy=e)
    # grad = Σ_m c[m] ∇θ log π(a_m|s_m) + Σ_m e[m] ∇θ H(π(·|s_m)),  shape (P,)

``backward`` is the vector–Jacobian product, computed from the cache that
``evaluate`` keeps (no autodiff). In a loop, pass the previous result back as
``evaluate(..., out=ev)``: its arrays are then reused, and the hot path allocates
no (M, n_actions) or (M, hidden) array (fresh multi-megabyte arrays cost more in page
faults than the arithmetic). Policies keep small work buffers for ``sample``, so one policy object
must not be shared between threads.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.utils.validation import check_int, check_positive

__all__ = [
    "GaussianEval",
    "GaussianPolicy",
    "Policy",
    "PolicyEval",
    "SoftmaxEval",
    "SoftmaxLinear",
    "SoftmaxMLP",
]

_LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------------------
# Evaluation caches
# --------------------------------------------------------------------------------------
@dataclass(eq=False, slots=True)
class PolicyEval:
    """What :meth:`Policy.evaluate` returns: log-probabilities, entropies and a cache.

    Attributes
    ----------
    log_prob : ndarray of float64, shape (M,)
        ``log π(a_m | s_m)`` (a log-density for continuous actions).
    entropy : ndarray of float64, shape (M,)
        ``H(π(·|s_m))`` — ``−Σ_a π log π`` for discrete actions, the (constant)
        differential entropy for the Gaussian policy.
    obs : ndarray of float64, shape (M, obs_dim)
        The observations, kept for the backward pass.
    owner : Policy
        The policy that made it.
    work : dict of str to ndarray
        Every array of this result and the backward pass's work arrays, by name;
        ``evaluate(..., out=ev)`` reuses them.

    Notes
    -----
    The cache describes the policy at the θ it was evaluated with; call
    :meth:`Policy.backward` before changing ``theta``.
    """

    log_prob: np.ndarray
    entropy: np.ndarray
    obs: np.ndarray
    owner: Policy = field(repr=False)
    work: dict[str, np.ndarray] = field(repr=False)


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


@dataclass(eq=False, slots=True)
class GaussianEval(PolicyEval):
    """Cache of :class:`GaussianPolicy`.

    Attributes
    ----------
    z : ndarray of float64, shape (M, act_dim)
        Standardised actions ``(a − mean) / std``.
    t : ndarray of float64, shape (M, act_dim), or None
        ``tanh((W s + b) / 2)`` when every bound is finite (``sigmoid(x) = (1 + tanh(x/2)) / 2``);
        None otherwise.
    dmean : ndarray of float64, shape (M, act_dim), or None
        ``∂mean/∂x`` at ``x = W s + b`` when some bound is infinite; None otherwise.
    """

    z: np.ndarray
    t: np.ndarray | None
    dmean: np.ndarray | None = None


# --------------------------------------------------------------------------------------
# Shared machinery
# --------------------------------------------------------------------------------------
def _buffer(
    work: dict[str, np.ndarray], key: str, shape: tuple[int, ...], dtype: type = np.float64
) -> np.ndarray:
    """A C-contiguous work array of ``shape`` (uninitialised): a leading slice of ``work[key]``.

    The stored array keeps 25 % spare rows, so that a learner's buffer growing by a few
    steps per update reuses it instead of allocating (and page-faulting) fresh memory.
    """
    arr = work.get(key)
    m = shape[0]
    if arr is None or arr.shape[1:] != shape[1:] or arr.shape[0] < m:
        arr = work[key] = np.empty((m + m // 4, *shape[1:]), dtype)
    return arr[:m]


def _ones(work: dict[str, np.ndarray], m: int) -> np.ndarray:
    """A vector of M ones (sums over samples are products with it)."""
    arr = work.get("ones")
    if arr is None or arr.shape != (m,):
        arr = work["ones"] = np.ones(m)
    return arr


def _linear_grad(
    d: np.ndarray, x: np.ndarray, gW: np.ndarray, gb: np.ndarray, ones: np.ndarray
) -> None:
    """Gradient of ``Σ_m d[m] · (W x[m] + b)`` with respect to ``W`` and ``b``.

    ``d`` (M, A) is the upstream gradient of the layer's output, ``x`` (M, F) its input,
    ``ones`` (M,) a vector of ones. With 2-D ``gW`` (A, F) the sum over samples is
    taken (``gW = dᵀ x``, ``gb = Σ_m d``); with 3-D ``gW`` (M, A, F) each sample keeps
    its own gradient (``gW[m] = d[m] x[m]ᵀ``, ``gb[m] = d[m]``).
    """
    if gW.ndim == 2:
        np.matmul(d.T, x, out=gW)
        # column sums as a BLAS product: several times faster than d.sum(axis=0)
        np.matmul(ones, d, out=gb)
    else:
        np.multiply(d[:, :, None], x[:, None, :], out=gW)
        gb[...] = d


def _as_obs(obs: object, obs_dim: int) -> np.ndarray:
    """``obs`` as a C-contiguous float64 (M, obs_dim) array of finite numbers."""
    try:
        arr = np.ascontiguousarray(obs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"obs must be numbers of shape (M, {obs_dim}); {exc}") from None
    if arr.ndim != 2 or arr.shape[1] != obs_dim:
        raise ValueError(f"obs must have shape (M, {obs_dim}) (M observations); got {arr.shape}")
    if not np.isfinite(arr).all():
        m = int(np.argwhere(~np.isfinite(arr))[0, 0])
        raise ValueError(f"obs must be finite; got {arr[m].tolist()} at sample {m}")
    return arr


def _as_coef(name: str, coef: object, m: int) -> np.ndarray | None:
    if coef is None:
        return None
    arr = np.asarray(coef, dtype=np.float64)
    if arr.shape != (m,):
        raise ValueError(f"{name} must have shape ({m},), one per sample; got {arr.shape}")
    return arr


class Policy:
    """Base class: a parametric policy whose parameters are one flat vector ``theta``.

    Subclasses declare their weights as a list of ``(name, shape, group)`` and
    implement ``_evaluate`` (forward pass with a cache) and ``_backward`` (the
    vector–Jacobian product into a flat gradient). Everything else — the flat
    parameter vector and its views, parameter groups, per-parameter learning rates,
    validation, the per-sample Jacobian, pickling — is implemented here once.

    Attributes
    ----------
    obs_dim : int
    discrete : bool
        True for policies over ``{0, ..., n_actions − 1}``.
    action_shape : tuple of int
        Shape of one action: ``()`` for discrete policies, ``(act_dim,)`` otherwise.
    action_dtype : numpy dtype
        ``int64`` for discrete policies, ``float64`` otherwise.
    """

    discrete: bool
    action_shape: tuple[int, ...]
    action_dtype: np.dtype

    def __init__(self, obs_dim: int, layout: list[tuple[str, tuple[int, ...], str]]) -> None:
        self.obs_dim = obs_dim
        self._layout = layout
        self._theta = np.zeros(sum(math.prod(shape) for _, shape, _ in layout))
        self._group_lr: dict[str, float] = {}
        self._bind()

    # -- the flat parameter vector and its views ----------------------------------------
    def _bind(self) -> None:
        """Make every named weight a view into ``theta`` and allocate work buffers."""
        self._slices: dict[str, tuple[slice, tuple[int, ...]]] = {}
        groups: dict[str, slice] = {}
        start = 0
        for name, shape, group in self._layout:
            stop = start + math.prod(shape)
            self._slices[name] = (slice(start, stop), shape)
            setattr(self, name, self._theta[start:stop].reshape(shape))
            first = groups.get(group, slice(start, start))
            if first.stop != start:
                raise AssertionError(f"parameter group {group!r} is not contiguous")
            groups[group] = slice(first.start, stop)
            start = stop
        self._groups = list(groups.items())
        self._init_buffers()

    def _init_buffers(self) -> None:
        """Allocate the work buffers of ``sample`` (none by default)."""

    def __getstate__(self) -> dict:
        # views and buffers are rebuilt on unpickling: a pickled view would come back as a
        # copy that no longer shares memory with theta
        state = dict(self.__dict__)
        for name, _, _ in self._layout:
            state.pop(name, None)
        return {k: v for k, v in state.items() if not k.startswith("_buf")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind()

    @property
    def theta(self) -> np.ndarray:
        """ndarray of float64, shape (P,): all parameters; the named weights are views.

        Assigning ``policy.theta = values`` copies ``values`` into the existing array,
        so the views (and any optimiser holding ``theta``) stay valid.
        """
        return self._theta

    @theta.setter
    def theta(self, values: object) -> None:
        arr = np.asarray(values, dtype=np.float64)
        if arr.shape != self._theta.shape:
            raise ValueError(f"theta must have shape {self._theta.shape}; got {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError("theta must be finite")
        self._theta[...] = arr

    @property
    def n_params(self) -> int:
        """P, the number of parameters."""
        return self._theta.size

    def param_groups(self) -> list[tuple[str, slice]]:
        """Named contiguous slices of ``theta``, in order, covering it exactly.

        Returns
        -------
        list of (str, slice)
            ``[("hidden", ...), ("output", ...)]`` for the MLP, ``[("output", ...)]``
            for the single-layer policies.
        """
        return list(self._groups)

    def learning_rates(self, lr: float) -> np.ndarray:
        """Per-parameter learning rates: ``lr`` everywhere except groups with their own.

        The MLP's hidden layer trains at ``hidden_lr`` (reference implementation);
        pass the result as the ``lr`` of an optimiser from :mod:`pyprog.learn.optim`.

        Parameters
        ----------
        lr : float
            The learner's learning rate, > 0.

        Returns
        -------
        ndarray of float64, shape (P,)
        """
        out = np.full(self.n_params, check_positive("lr", lr))
        for group, sl in self._groups:
            if group in self._group_lr:
                out[sl] = self._group_lr[group]
        return out

    def _grad_view(self, out: np.ndarray, name: str) -> np.ndarray:
        """The part of a flat gradient (P,) or Jacobian (M, P) that belongs to ``name``."""
        sl, shape = self._slices[name]
        if out.ndim == 1:
            return out[sl].reshape(shape)
        # splitting the contiguous last axis of out[:, sl] is always a view
        return out[:, sl].reshape((out.shape[0], *shape))

    # -- public API ---------------------------------------------------------------------
    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> tuple[object, float]:
        """Draw one action for one observation.

        Trusts its input (it runs once per environment step).

        Parameters
        ----------
        obs : ndarray of float64, shape (obs_dim,)
        rng : numpy.random.Generator

        Returns
        -------
        action : int, or ndarray of float64 of shape (act_dim,)
        log_prob : float
            ``log π(action | obs)`` (a log-density for continuous actions).
        """
        raise NotImplementedError

    def evaluate(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        check: bool = True,
        out: PolicyEval | None = None,
    ) -> PolicyEval:
        """Log-probabilities and entropies of M (state, action) pairs, with a cache.

        Parameters
        ----------
        obs : array_like of float, shape (M, obs_dim)
        actions : array_like, shape (M,) of int (discrete) or (M, act_dim) of float
        check : bool, default True
            Validate and convert the inputs. Learners pass ``check=False`` with
            C-contiguous float64 ``obs`` and int64 / float64 ``actions`` (what
            :meth:`pyprog.learn.buffer.EpisodeBuffer.flat_valid` returns).
        out : PolicyEval, optional
            An earlier result of this policy's ``evaluate``. Its arrays are reused
            (overwritten, reallocated only if M changed), so it must not be used
            afterwards; the new result shares them.

        Returns
        -------
        PolicyEval
            ``log_prob`` (M,), ``entropy`` (M,) and the cache for :meth:`backward`.
        """
        if check:
            obs = _as_obs(obs, self.obs_dim)
            actions = self._as_actions(actions, obs.shape[0])
        if out is None:
            work: dict[str, np.ndarray] = {}
        elif getattr(out, "owner", None) is self:
            work = out.work
        else:
            raise ValueError("out must be a result of this policy's evaluate(), or None")
        return self._evaluate(obs, actions, work)

    def backward(
        self,
        ev: PolicyEval,
        coef_log_prob: np.ndarray | None = None,
        coef_entropy: np.ndarray | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Vector–Jacobian product ``Σ_m c[m] ∇θ log π(a_m|s_m) + Σ_m e[m] ∇θ H(π(·|s_m))``.

        Parameters
        ----------
        ev : PolicyEval
            What :meth:`evaluate` returned, at the current ``theta``.
        coef_log_prob, coef_entropy : ndarray of float64, shape (M,), or None
            The coefficients ``c`` and ``e``; None means zeros.
        out : ndarray of float64, shape (P,), optional
            Where to write the gradient (overwritten).

        Returns
        -------
        ndarray of float64, shape (P,)
        """
        if ev.owner is not self:
            raise ValueError("ev must be a result of this policy's evaluate()")
        m = ev.log_prob.shape[0]
        c_lp = _as_coef("coef_log_prob", coef_log_prob, m)
        c_h = _as_coef("coef_entropy", coef_entropy, m)
        if out is None:
            out = np.empty(self.n_params)
        elif out.shape != self._theta.shape or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape {self._theta.shape}")
        if c_lp is None and c_h is None:
            out.fill(0.0)
            return out
        self._backward(ev, c_lp, c_h, out)
        return out

    def log_prob_and_grad(
        self, obs: np.ndarray, actions: np.ndarray, coef: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Log-probabilities and their gradient: weighted sum, or the per-sample Jacobian.

        Parameters
        ----------
        obs : array_like of float, shape (M, obs_dim)
        actions : array_like, shape (M,) of int or (M, act_dim) of float
        coef : array_like of float, shape (M,), optional

        Returns
        -------
        log_prob : ndarray of float64, shape (M,)
        grad : ndarray of float64
            Shape (P,), ``Σ_m coef[m] ∇θ log π(a_m|s_m)``, if ``coef`` is given;
            otherwise the Jacobian (M, P) with rows ``∇θ log π(a_m|s_m)``.
        """
        ev = self.evaluate(obs, actions)
        m = ev.log_prob.shape[0]
        if coef is not None:
            c = _as_coef("coef", coef, m)
            if not np.isfinite(c).all():
                raise ValueError("coef must be finite")
            return ev.log_prob, self.backward(ev, coef_log_prob=c)
        jac = np.empty((m, self.n_params))
        self._backward(ev, np.ones(m), None, jac)
        return ev.log_prob, jac

    # -- subclass hooks -----------------------------------------------------------------
    def _as_actions(self, actions: object, m: int) -> np.ndarray:
        raise NotImplementedError

    def _evaluate(
        self, obs: np.ndarray, actions: np.ndarray, work: dict[str, np.ndarray]
    ) -> PolicyEval:
        """Forward pass; every array of size M comes from ``work`` (see ``_buffer``)."""
        raise NotImplementedError

    def _backward(
        self, ev: PolicyEval, c_lp: np.ndarray | None, c_h: np.ndarray | None, out: np.ndarray
    ) -> None:
        """Write the VJP into ``out`` — summed over samples if ``out`` is (P,), per sample
        (one row each) if it is (M, P)."""
        raise NotImplementedError


# --------------------------------------------------------------------------------------
# Softmax policies
# --------------------------------------------------------------------------------------
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
        out = (
            _buffer(work, "hidden", (m, W1.shape[0])),
            _buffer(work, "log_probs", (m, n)),
            _buffer(work, "probs", (m, n)),
            _buffer(work, "log_prob", (m,)),
            _buffer(work, "entropy", (m,)),
        )
        features, log_probs, probs, log_prob, entropy = kernels.softmax_forward(
            obs, actions, W1, b1, self.W, self.b, out=out
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
            zeros = _buffer(ev.work, "zeros", (m,))
            zeros.fill(0.0)
        c_lp = zeros if c_lp is None else np.ascontiguousarray(c_lp, dtype=np.float64)
        c_h = zeros if c_h is None else np.ascontiguousarray(c_h, dtype=np.float64)
        W1, _ = self._hidden_layer()
        args = (ev.obs, ev.actions, ev.features, ev.log_probs, ev.probs, ev.entropy)
        if out.ndim == 1:
            out[...] = kernels.softmax_backward(*args, W1, self.W, c_lp, c_h)
            return
        # per-sample Jacobian (inspection and tests): one row at a time
        for k in range(m):
            row = tuple(x[k : k + 1] for x in args)
            out[k] = kernels.softmax_backward(*row, W1, self.W, c_lp[k : k + 1], c_h[k : k + 1])


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


# --------------------------------------------------------------------------------------
# Gaussian policy
# --------------------------------------------------------------------------------------
class GaussianPolicy(Policy):
    """Gaussian policy with a fixed standard deviation and a mean inside the action bounds.

    With ``x = W s + b``, each action dimension's mean follows its bounds:

    ==================  =========================================  =====================
    bounds              ``mean_k(s)``                              ``∂mean_k/∂x_k``
    ==================  =========================================  =====================
    both finite         ``low + sigmoid(x)(high − low)``           ``(high − low) σ(1−σ)``
    only ``low``        ``low + softplus(x)``                      ``sigmoid(x)``
    only ``high``       ``high − softplus(−x)``                    ``sigmoid(−x)``
    neither             ``x``                                      ``1``
    ==================  =========================================  =====================

    The action dimensions are independent, ``a_k ~ N(mean_k(s), std_k²)``. The sample is
    returned raw (unclipped); ``log_prob`` is its density, summed over action dimensions.
    The entropy, ``Σ_k ½ log(2πe std_k²)``, does not depend on θ.

    Parameters
    ----------
    obs_dim : int
        Dimension of the observation, >= 1 (NS-Diabetes: 1, with ``s ≡ [1]``).
    low, high : array_like of float, shape (act_dim,)
        Bounds of the mean, ``low < high`` element-wise (a scalar means act_dim = 1);
        ``-inf`` / ``inf`` for a side without a bound.
    std : float or array_like of float, shape (act_dim,)
        Standard deviation, > 0.
    rng : numpy.random.Generator, optional
        Not used: θ starts at 0. Accepted so that every policy can be built with the same
        call.

    Attributes
    ----------
    theta : ndarray of float64, shape (P,), P = act_dim · (obs_dim + 1)
        ``[W.ravel(), b]``, initially 0 (the mean at the centre of a bounded box, at 0
        where unbounded).
    W : ndarray of float64, shape (act_dim, obs_dim)
    b : ndarray of float64, shape (act_dim,)
    act_dim : int

    Examples
    --------
    >>> import numpy as np
    >>> policy = GaussianPolicy(obs_dim=1, low=[3.0, 5.0], high=[30.0, 50.0], std=1.5)
    >>> action, log_prob = policy.sample(np.array([1.0]), np.random.default_rng(0))
    >>> action.shape
    (2,)
    >>> ev = policy.evaluate(np.ones((1, 1)), np.array([[16.5, 27.5]]))  # the mean
    >>> bool(np.isclose(ev.log_prob[0], -2 * np.log(1.5 * np.sqrt(2 * np.pi))))
    True
    >>> policy.backward(ev, coef_log_prob=np.ones(1))  # at the mean the gradient is 0
    array([0., 0., 0., 0.])
    >>> free = GaussianPolicy(obs_dim=2, low=[-np.inf, 0.0], high=[np.inf, np.inf], std=1.0)
    >>> free.mean(np.ones(2)).round(4)  # x = 0: unbounded mean 0, softplus(0) = log 2
    array([0.    , 0.6931])
    """

    discrete = False
    action_dtype = np.dtype(np.float64)

    def __init__(
        self,
        obs_dim: int,
        low: object,
        high: object,
        std: object,
        rng: np.random.Generator | None = None,
    ) -> None:
        obs_dim = check_int("obs_dim", obs_dim, 1)
        low_arr = np.atleast_1d(np.asarray(low, dtype=np.float64))
        high_arr = np.atleast_1d(np.asarray(high, dtype=np.float64))
        if low_arr.ndim != 1 or high_arr.shape != low_arr.shape:
            raise ValueError(
                f"low and high must be 1-D arrays of the same shape (act_dim,); "
                f"got {low_arr.shape} and {high_arr.shape}"
            )
        if np.isnan(low_arr).any() or np.isnan(high_arr).any():
            raise ValueError("low and high must be numbers or ±inf, not NaN")
        if not (low_arr < high_arr).all():
            raise ValueError(f"low must be < high element-wise; got low={low_arr}, high={high_arr}")
        act_dim = low_arr.size
        try:
            std_arr = np.broadcast_to(np.asarray(std, dtype=np.float64), (act_dim,)).copy()
        except ValueError:
            raise ValueError(
                f"std must be a number or an array of shape ({act_dim},); got {np.shape(std)}"
            ) from None
        if not (np.isfinite(std_arr).all() and (std_arr > 0).all()):
            raise ValueError(f"std must be finite and > 0; got {std_arr}")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator or None; got {rng!r}")
        self.act_dim = act_dim
        self.action_shape = (act_dim,)
        self.low, self.high, self.std = low_arr, high_arr, std_arr
        has_low, has_high = np.isfinite(low_arr), np.isfinite(high_arr)
        #: dimensions by the bounds they have (column indices)
        self._both = np.flatnonzero(has_low & has_high)
        self._low_only = np.flatnonzero(has_low & ~has_high)
        self._high_only = np.flatnonzero(~has_low & has_high)
        self._bounded = self._both.size == act_dim
        # low + sigmoid(x)(high − low) = mid + half · tanh(x/2), the form computed below
        both = self._both
        self._mid = 0.5 * (low_arr[both] + high_arr[both])
        self._half = 0.5 * (high_arr[both] - low_arr[both])
        # d mean / dx = half · (1 − tanh²(x/2)) / 2, and d log N / d mean = z / std
        self._dscale = 0.5 * self._half / std_arr[both]
        self._log_norm = -float(np.log(std_arr).sum()) - 0.5 * act_dim * _LOG_2PI
        self._entropy = float(np.sum(0.5 + 0.5 * _LOG_2PI + np.log(std_arr)))
        layout = [("W", (act_dim, obs_dim), "output"), ("b", (act_dim,), "output")]
        super().__init__(obs_dim, layout)

    def __repr__(self) -> str:
        return (
            f"GaussianPolicy(obs_dim={self.obs_dim}, low={self.low.tolist()}, "
            f"high={self.high.tolist()}, std={self.std.tolist()})"
        )

    def _mean_of(self, x: np.ndarray, dmean: np.ndarray | None = None) -> np.ndarray:
        """The mean (..., act_dim) at pre-activations ``x``, overwriting ``x``.

        With ``dmean`` (same shape), also ``∂mean/∂x`` into it. Handles every kind of
        bound; the all-finite case has a faster path in :meth:`_evaluate`.
        """
        if dmean is not None:
            dmean.fill(1.0)  # unbounded: mean = x
        both, lo, hi = self._both, self._low_only, self._high_only
        if both.size:
            t = np.tanh(0.5 * x[..., both])
            x[..., both] = self._mid + self._half * t
            if dmean is not None:
                dmean[..., both] = 0.5 * self._half * (1.0 - t * t)
        if lo.size:
            xl = x[..., lo]
            if dmean is not None:
                dmean[..., lo] = 0.5 * (1.0 + np.tanh(0.5 * xl))  # sigmoid(x)
            x[..., lo] = self.low[lo] + np.logaddexp(0.0, xl)  # low + softplus(x)
        if hi.size:
            xh = x[..., hi]
            if dmean is not None:
                dmean[..., hi] = 0.5 * (1.0 - np.tanh(0.5 * xh))  # sigmoid(−x)
            x[..., hi] = self.high[hi] - np.logaddexp(0.0, -xh)  # high − softplus(−x)
        return x

    def mean(self, obs: np.ndarray) -> np.ndarray:
        """Mean action at ``obs`` (see the class docstring for each kind of bound).

        Parameters
        ----------
        obs : ndarray of float64, shape (obs_dim,) or (M, obs_dim)

        Returns
        -------
        ndarray of float64, shape (act_dim,) or (M, act_dim)
        """
        obs = np.asarray(obs, dtype=np.float64)
        x = obs @ self.W.T + self.b
        if self._bounded:
            return self._mid + self._half * np.tanh(0.5 * x)
        return self._mean_of(x)

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        eps = rng.standard_normal(self.act_dim)
        action = self.mean(obs)
        action += self.std * eps
        # log N(a; mean, std²) = −½ Σ ((a − mean)/std)² − Σ log std − (k/2) log 2π
        return action, self._log_norm - 0.5 * float(eps @ eps)

    def _as_actions(self, actions: object, m: int) -> np.ndarray:
        try:
            arr = np.ascontiguousarray(actions, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            shape = f"({m}, {self.act_dim})"
            raise ValueError(f"actions must be numbers of shape {shape}; {exc}") from None
        if arr.shape != (m, self.act_dim):
            raise ValueError(
                f"actions must have shape ({m}, {self.act_dim}), one action per observation; "
                f"got {arr.shape}"
            )
        if not np.isfinite(arr).all():
            k = int(np.argwhere(~np.isfinite(arr))[0, 0])
            raise ValueError(f"actions must be finite; got {arr[k].tolist()} at sample {k}")
        return arr

    def _evaluate(
        self, obs: np.ndarray, actions: np.ndarray, work: dict[str, np.ndarray]
    ) -> GaussianEval:
        m, k = obs.shape[0], self.act_dim
        t = dmean = None
        if self._bounded:
            # t = tanh((s Wᵀ + b) / 2);  mean = mid + half · t;  z = (a − mean) / std
            t = np.matmul(obs, self.W.T, out=_buffer(work, "t", (m, k)))
            t += self.b
            t *= 0.5
            np.tanh(t, out=t)
            z = np.multiply(t, self._half, out=_buffer(work, "z", (m, k)))
            z += self._mid
        else:
            # x = s Wᵀ + b;  z = mean(x), with ∂mean/∂x into dmean
            z = np.matmul(obs, self.W.T, out=_buffer(work, "z", (m, k)))
            z += self.b
            dmean = _buffer(work, "dmean", (m, k))
            self._mean_of(z, dmean)
        np.subtract(actions, z, out=z)
        z /= self.std
        # log π = −½ Σ_k z_k² − Σ_k log std_k − (k/2) log 2π
        log_prob = np.einsum("ij,ij->i", z, z, out=_buffer(work, "log_prob", (m,)))
        log_prob *= -0.5
        log_prob += self._log_norm
        entropy = _buffer(work, "entropy", (m,))
        entropy.fill(self._entropy)
        _ones(work, m)
        return GaussianEval(
            log_prob=log_prob,
            entropy=entropy,
            obs=obs,
            owner=self,
            work=work,
            z=z,
            t=t,
            dmean=dmean,
        )

    def _backward(
        self, ev: GaussianEval, c_lp: np.ndarray | None, c_h: np.ndarray | None, out: np.ndarray
    ) -> None:
        if c_lp is None:  # the entropy does not depend on θ
            out.fill(0.0)
            return
        dx = _buffer(ev.work, "dx", ev.z.shape)
        if ev.t is not None:
            # d log π / dx = (z / std) · half · (1 − t²) / 2,  x = W s + b
            np.multiply(ev.t, ev.t, out=dx)
            np.subtract(1.0, dx, out=dx)
            dx *= ev.z
            dx *= self._dscale
        else:
            # d log π / dx = (z / std) · ∂mean/∂x
            np.multiply(ev.z, ev.dmean, out=dx)
            dx /= self.std
        dx *= c_lp[:, None]
        gW, gb = self._grad_view(out, "W"), self._grad_view(out, "b")
        _linear_grad(dx, ev.obs, gW, gb, ev.work["ones"])
