"""First-order optimisers with PyTorch's semantics, on a flat NumPy parameter vector.

Each optimiser holds the array it was built with (a policy's ``theta``) and updates it
in place. They MINIMISE: ``step(grad)`` moves ``theta`` against ``grad``, so a learner
doing gradient ascent passes the negative gradient of its objective.

``lr`` is a number or an array of shape (P,) (per-parameter learning rates; see
:meth:`pyprog.learn.policies.Policy.learning_rates`).

Example
-------
>>> import numpy as np
>>> theta = np.array([1.0, -2.0])
>>> opt = RMSprop(theta, lr=0.01)
>>> opt.step(np.array([0.5, -0.5]))  # first step: v = 0.01 g², so |Δθ| = lr·|g|/(0.1|g|) ≈ 0.1
>>> theta.round(6)
array([ 0.9, -1.9])
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from pyprog.utils.validation import check_positive

__all__ = ["SGD", "Adam", "Optimizer", "RMSprop", "make_optimizer"]


def _check_theta(theta: object) -> np.ndarray:
    """The array to update in place: never converted, since a copy would not be updated."""
    if not isinstance(theta, np.ndarray):
        raise ValueError(
            f"theta must be a 1-D float64 ndarray (a policy's theta); got {type(theta).__name__}"
        )
    if theta.dtype != np.float64 or theta.ndim != 1:
        raise ValueError(
            f"theta must be a 1-D float64 ndarray (a policy's theta); "
            f"got a {theta.dtype} array of shape {theta.shape}"
        )
    if not theta.flags.writeable:
        raise ValueError("theta must be writeable: the optimiser updates it in place")
    return theta


def _check_lr(lr: object, size: int) -> float | np.ndarray:
    """A learning rate: a finite number > 0, or an array (P,) of them."""
    if isinstance(lr, numbers.Real) and not isinstance(lr, bool):
        if not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"lr must be a finite number > 0; got {lr!r}")
        return float(lr)
    arr = np.array(lr, dtype=np.float64)  # a copy: later changes to the caller's array don't leak
    if arr.shape != (size,):
        raise ValueError(
            f"lr must be a number or an array of shape ({size},) (one rate per parameter); "
            f"got shape {arr.shape}"
        )
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        k = int(np.argmax(~(np.isfinite(arr) & (arr > 0))))
        raise ValueError(f"lr must be finite and > 0 everywhere; got {arr[k]} at index {k}")
    return arr


def _check_unit(name: str, value: object) -> float:
    if not isinstance(value, numbers.Real) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1); got {value!r}")
    return float(value)


class Optimizer:
    """Base class: validates ``theta``, ``lr`` and every gradient; subclasses update.

    Parameters
    ----------
    theta : ndarray of float64, shape (P,)
        The parameters, updated in place by :meth:`step`.
    lr : float or ndarray of float64, shape (P,)
        Learning rate(s), > 0.
    """

    def __init__(self, theta: np.ndarray, lr: float | np.ndarray) -> None:
        self.theta = _check_theta(theta)
        self._lr = _check_lr(lr, theta.size)
        self._buf = np.empty_like(theta)  # work array: steps allocate nothing

    @property
    def lr(self) -> float | np.ndarray:
        """float or ndarray of float64, shape (P,): the learning rate(s)."""
        return self._lr

    @lr.setter
    def lr(self, value: float | np.ndarray) -> None:
        self._lr = _check_lr(value, self.theta.size)

    def step(self, grad: np.ndarray) -> None:
        """One update of ``theta`` in place, against ``grad``.

        Parameters
        ----------
        grad : ndarray of float64, shape (P,)
            Gradient of the loss to minimise. Must be finite: a NaN would poison the
            optimiser's state for good.
        """
        grad = np.asarray(grad, dtype=np.float64)
        if grad.shape != self.theta.shape:
            raise ValueError(f"grad must have shape {self.theta.shape}; got {grad.shape}")
        if not np.isfinite(grad).all():
            k = int(np.argmax(~np.isfinite(grad)))
            raise ValueError(f"grad must be finite; got {grad[k]} at index {k}")
        self._step(grad)

    def reset(self) -> None:
        """Forget the state (moment estimates and step count); ``theta`` is untouched."""

    def _step(self, grad: np.ndarray) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Plain gradient descent: ``θ ← θ − lr · g``.

    Parameters
    ----------
    theta : ndarray of float64, shape (P,)
    lr : float or ndarray of float64, shape (P,)

    Examples
    --------
    >>> theta = np.zeros(2)
    >>> SGD(theta, lr=0.1).step(np.array([1.0, -2.0]))
    >>> theta
    array([-0.1,  0.2])
    """

    def __repr__(self) -> str:
        return f"SGD(P={self.theta.size}, lr={self._lr!r})"

    def _step(self, grad: np.ndarray) -> None:
        np.multiply(grad, self._lr, out=self._buf)
        self.theta -= self._buf


class RMSprop(Optimizer):
    """RMSprop as ``torch.optim.RMSprop`` (no momentum, not centred, no weight decay).

    ::

        v ← α v + (1 − α) g²          (v starts at 0)
        θ ← θ − lr · g / (√v + ε)

    Parameters
    ----------
    theta : ndarray of float64, shape (P,)
    lr : float or ndarray of float64, shape (P,)
    alpha : float, default 0.99
        Smoothing constant, in [0, 1).
    eps : float, default 1e-8
        Added to the denominator, > 0.

    Attributes
    ----------
    square_avg : ndarray of float64, shape (P,)
        ``v``, kept across steps.

    Examples
    --------
    >>> theta = np.zeros(1)
    >>> opt = RMSprop(theta, lr=1e-3)
    >>> for _ in range(3):
    ...     opt.step(np.array([2.0]))
    >>> round(float(opt.square_avg[0]), 8), round(float(theta[0]), 6)
    (0.118804, -0.022891)
    """

    def __init__(
        self, theta: np.ndarray, lr: float | np.ndarray, alpha: float = 0.99, eps: float = 1e-8
    ) -> None:
        super().__init__(theta, lr)
        self.alpha = _check_unit("alpha", alpha)
        self.eps = check_positive("eps", eps)
        self.square_avg = np.zeros_like(theta)

    def __repr__(self) -> str:
        return f"RMSprop(P={self.theta.size}, lr={self._lr!r}, alpha={self.alpha}, eps={self.eps})"

    def reset(self) -> None:
        self.square_avg.fill(0.0)

    def _step(self, grad: np.ndarray) -> None:
        v, buf = self.square_avg, self._buf
        # v ← α v + (1 − α) g²
        v *= self.alpha
        np.multiply(grad, grad, out=buf)
        buf *= 1.0 - self.alpha
        v += buf
        # θ ← θ − lr · g / (√v + ε)
        np.sqrt(v, out=buf)
        buf += self.eps
        np.divide(grad, buf, out=buf)
        buf *= self._lr
        self.theta -= buf


class Adam(Optimizer):
    """Adam as ``torch.optim.Adam`` (bias-corrected, no weight decay, no amsgrad).

    At step ``t = 1, 2, ...``::

        m ← β1 m + (1 − β1) g,        v ← β2 v + (1 − β2) g²       (m, v start at 0)
        θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)

    Parameters
    ----------
    theta : ndarray of float64, shape (P,)
    lr : float or ndarray of float64, shape (P,)
    betas : (float, float), default (0.9, 0.999)
        Decay rates of the first and second moment estimates, in [0, 1).
    eps : float, default 1e-8
        Added to the denominator, > 0.

    Attributes
    ----------
    exp_avg, exp_avg_sq : ndarray of float64, shape (P,)
        ``m`` and ``v``, kept across steps.
    step_count : int
        ``t``, the number of steps taken.

    Examples
    --------
    >>> theta = np.zeros(2)
    >>> opt = Adam(theta, lr=0.01)
    >>> opt.step(np.array([3.0, -1e-4]))  # the first step is ≈ lr · sign(g)
    >>> theta.round(6)
    array([-0.01    ,  0.009999])
    """

    def __init__(
        self,
        theta: np.ndarray,
        lr: float | np.ndarray,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        super().__init__(theta, lr)
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2); got {betas!r}")
        self.betas = (_check_unit("betas[0]", betas[0]), _check_unit("betas[1]", betas[1]))
        self.eps = check_positive("eps", eps)
        self.exp_avg = np.zeros_like(theta)
        self.exp_avg_sq = np.zeros_like(theta)
        self._buf2 = np.empty_like(theta)
        self.step_count = 0

    def __repr__(self) -> str:
        return f"Adam(P={self.theta.size}, lr={self._lr!r}, betas={self.betas}, eps={self.eps})"

    def reset(self) -> None:
        self.exp_avg.fill(0.0)
        self.exp_avg_sq.fill(0.0)
        self.step_count = 0

    def _step(self, grad: np.ndarray) -> None:
        beta1, beta2 = self.betas
        m, v, buf, den = self.exp_avg, self.exp_avg_sq, self._buf, self._buf2
        self.step_count += 1
        t = self.step_count
        # m ← β1 m + (1 − β1) g;   v ← β2 v + (1 − β2) g²
        m *= beta1
        np.multiply(grad, 1.0 - beta1, out=buf)
        m += buf
        v *= beta2
        np.multiply(grad, grad, out=buf)
        buf *= 1.0 - beta2
        v += buf
        # θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)
        np.sqrt(v, out=den)
        den /= math.sqrt(1.0 - beta2**t)
        den += self.eps
        np.divide(m, den, out=buf)
        buf *= self._lr
        buf /= 1.0 - beta1**t
        self.theta -= buf


_OPTIMIZERS: dict[str, type[Optimizer]] = {"rmsprop": RMSprop, "adam": Adam, "sgd": SGD}


def make_optimizer(name: str, theta: np.ndarray, lr: float | np.ndarray, **kwargs) -> Optimizer:
    """Build an optimiser by name.

    Parameters
    ----------
    name : {"rmsprop", "adam", "sgd"}
        Case-insensitive.
    theta : ndarray of float64, shape (P,)
        Updated in place.
    lr : float or ndarray of float64, shape (P,)
    **kwargs
        Passed on (``alpha``, ``eps`` for RMSprop; ``betas``, ``eps`` for Adam).

    Returns
    -------
    Optimizer

    Examples
    --------
    >>> make_optimizer("RMSprop", np.zeros(3), lr=1e-3)
    RMSprop(P=3, lr=0.001, alpha=0.99, eps=1e-08)
    """
    key = name.lower() if isinstance(name, str) else name
    if key not in _OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {sorted(_OPTIMIZERS)}")
    return _OPTIMIZERS[key](theta, lr, **kwargs)
