"""What every policy shares: the flat parameter vector, validation, the evaluation cache.

:class:`Policy` is the base class: its weights are views into one flat ``theta``, and it
implements parameter groups, per-parameter learning rates, input validation, ``evaluate``
/ ``backward`` around the subclasses' forward and backward passes, the per-sample
Jacobian and pickling once. :class:`PolicyEval` is what ``evaluate`` returns, and
:func:`work_array` hands out the reusable work arrays of its cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pyprog.utils.validation import check_positive

__all__ = ["LAYER_BOUND_MAX", "Policy", "PolicyEval", "work_array"]

#: The largest layer bound (:meth:`Policy.layer_bound`) a batched pass runs with, by its
#: precision: below it no sum of a layer overflows in any order, nor a difference of two of
#: its outputs, so the compiled update and the Python loop are finite together (issue 35,
#: item 10); the compiled update's ``LAYER_BOUND_MAX`` and ``LAYER_BOUND_MAX_F32``.
LAYER_BOUND_MAX = {np.dtype(np.float64): 2.0**1022, np.dtype(np.float32): 2.0**126}


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


def work_array(
    work: dict[str, np.ndarray], key: str, shape: tuple[int, ...], dtype: type = np.float64
) -> np.ndarray:
    """A C-contiguous work array of ``shape`` (uninitialised): a leading slice of ``work[key]``.

    The stored array keeps 25 % spare rows, so that a learner's buffer growing by a few
    steps per update reuses it instead of allocating (and page-faulting) fresh memory.
    """
    arr = work.get(key)
    m = shape[0]
    if arr is None or arr.shape[1:] != shape[1:] or arr.shape[0] < m or arr.dtype != dtype:
        arr = work[key] = np.empty((m + m // 4, *shape[1:]), dtype)
    return arr[:m]


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
    dtype : numpy dtype
        float64 or float32: the precision of the batched passes (see ``Hyper.dtype``).
    """

    discrete: bool
    action_shape: tuple[int, ...]
    action_dtype: np.dtype
    #: Precision of the batched passes (``evaluate``, ``backward``) over stored steps:
    #: float64, or float32 for the softmax policies (a learner sets it from
    #: ``Hyper.dtype``). ``theta`` and ``sample`` stay float64 either way.
    dtype: np.dtype = np.dtype(np.float64)

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

    def layer_bound(self, obs: np.ndarray) -> float:
        """A bound on every partial sum of the policy's affine layers at ``obs``.

        ``max |θ|``, and for each layer ``x ↦ x Wᵀ + b`` the largest ``Σ_j c_j |W_kj| + |b_k|``
        over its outputs, ``c_j`` the largest ``|x_j|`` over the samples (1 after a tanh
        layer): no order of the sums can overflow below :data:`LAYER_BOUND_MAX` of the pass's
        precision, and the learners refuse a pass above it (the compiled update and the
        Python loop alike). O(M·D) for the observations, then O(P).

        Parameters
        ----------
        obs : ndarray, shape (M, obs_dim)

        Returns
        -------
        float
            ``inf`` (or NaN) when the bound itself overflows.
        """
        obs = np.asarray(obs, dtype=np.float64)
        c = np.abs(obs).max(axis=0, initial=0.0) if obs.ndim == 2 else np.abs(obs)
        top = float(np.abs(self._theta).max(initial=0.0))
        for W, b in self._affine_layers():
            with np.errstate(over="ignore", invalid="ignore"):
                sums = np.abs(W) @ c + np.abs(b)
            bound = float(np.max(sums, initial=0.0))
            top = bound if not bound <= top else top
            c = np.ones(W.shape[0])  # |tanh| <= 1
        return top

    def _affine_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The affine layers ``(W, b)`` from the input on (each but the last followed by
        tanh), for :meth:`layer_bound`."""
        return []

    def compiled_policy(self) -> tuple | None:
        """How the compiled update (``kernels.policy_update``) sees this policy, or None.

        ``("softmax", n_actions, n_hidden)`` for the softmax policies, ``("gaussian", mid,
        half, dscale, std, log_norm)`` for a Gaussian policy whose mean has finite bounds;
        None where a learner runs its Python loop instead.

        Returns
        -------
        tuple or None
        """
        return None

    # -- subclass hooks -----------------------------------------------------------------
    def _as_actions(self, actions: object, m: int) -> np.ndarray:
        raise NotImplementedError

    def _evaluate(
        self, obs: np.ndarray, actions: np.ndarray, work: dict[str, np.ndarray]
    ) -> PolicyEval:
        """Forward pass; every array of size M comes from ``work`` (see :func:`work_array`)."""
        raise NotImplementedError

    def _backward(
        self, ev: PolicyEval, c_lp: np.ndarray | None, c_h: np.ndarray | None, out: np.ndarray
    ) -> None:
        """Write the VJP into ``out`` — summed over samples if ``out`` is (P,), per sample
        (one row each) if it is (M, P)."""
        raise NotImplementedError
