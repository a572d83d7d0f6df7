"""The Gaussian policy over continuous actions, its mean inside the action bounds (NS-Diabetes).

:class:`GaussianPolicy` draws ``a ~ N(mean(W s + b), diag(std²))`` with a fixed standard
deviation and a mean that follows each action dimension's bounds (sigmoid, softplus or
identity); its forward and backward passes are NumPy. :class:`GaussianEval` is its
evaluation cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyprog.learn.policies.base import LAYER_BOUND_MAX, Policy, PolicyEval, work_array
from pyprog.utils.validation import check_int

__all__ = ["GaussianEval", "GaussianPolicy"]

_LOG_2PI = math.log(2.0 * math.pi)


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

    def _affine_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(self.W, self.b)]

    def compiled_policy(self) -> tuple | None:
        if not self._bounded:
            return None
        return "gaussian", self._mid, self._half, self._dscale, self.std, self._log_norm

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
            t = np.matmul(obs, self.W.T, out=work_array(work, "t", (m, k)))
            t += self.b
            t *= 0.5
            np.tanh(t, out=t)
            z = np.multiply(t, self._half, out=work_array(work, "z", (m, k)))
            z += self._mid
        else:
            # x = s Wᵀ + b;  z = mean(x), with ∂mean/∂x into dmean
            z = np.matmul(obs, self.W.T, out=work_array(work, "z", (m, k)))
            z += self.b
            dmean = work_array(work, "dmean", (m, k))
            self._mean_of(z, dmean)
        np.subtract(actions, z, out=z)
        z /= self.std
        # log π = −½ Σ_k z_k² − Σ_k log std_k − (k/2) log 2π
        log_prob = np.einsum("ij,ij->i", z, z, out=work_array(work, "log_prob", (m,)))
        log_prob *= -0.5
        log_prob += self._log_norm
        entropy = work_array(work, "entropy", (m,))
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
        dx = work_array(ev.work, "dx", ev.z.shape)
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
        if gW.ndim == 2:
            # where a sum Σ_i |dx_i s_i| exceeds LAYER_BOUND_MAX, whether it overflows depends
            # on its order (BLAS's or the compiled update's): non-finite in both (issue 35)
            limit = LAYER_BOUND_MAX[np.dtype(np.float64)]
            with np.errstate(over="ignore", invalid="ignore"):
                adx = np.abs(dx)
                gW[~(adx.T @ np.abs(ev.obs) <= limit)] = np.inf
                gb[~(adx.sum(axis=0) <= limit)] = np.inf
