"""Per-episode off-policy estimates: per-decision importance sampling and episode ratios.

Pure functions on padded episode arrays, validated here once and computed by the kernels
(:mod:`pyprog._ext`, Cython or the NumPy fallback):

* :func:`pdis` — per-decision importance sampling: each past episode's estimate
  ``Ĵ_i(π)`` and the per-step weights of its policy gradient (paper Property 1);
* :func:`episode_ratios` — whole-episode importance ratios, clipped (NWIS weights);
* :func:`discounted_returns` — each episode's own discounted return ``G_i`` (NWIS targets).

The forecasters of :mod:`pyprog.forecast` fit a curve in time through these.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.utils.validation import (
    as_float_array,
    check_clip,
    check_finite,
    check_gamma,
    check_mask,
    check_same_shape,
)

__all__ = ["PDISResult", "check_episode_arrays", "discounted_returns", "episode_ratios", "pdis"]


class PDISResult(NamedTuple):
    """Output of :func:`pdis`."""

    #: PDIS estimate of each episode's performance, shape (N,).
    J: np.ndarray
    #: Reversed cumulative weights, shape (N, H): ∇Ĵ_i = Σ_t ∇log π(a_t|s_t) g[i, t].
    g: np.ndarray


def check_episode_arrays(log_pi, log_beta, mask, rewards=None):
    """Validate (N, H) episode arrays; a missing mask means every step is valid.

    Returns ``(log_pi, log_beta, rewards, mask)`` as float64 arrays with the padding
    (``mask == 0``) set to 0, so the kernels, which read padding too, see finite numbers;
    ``rewards`` stays None when not given. Raises a ValueError naming the argument.
    """
    shape = "(N, H)"
    log_pi = as_float_array("log_pi", log_pi, 2, shape)
    log_beta = as_float_array("log_beta", log_beta, 2, shape)
    arrays = {"log_pi": log_pi, "log_beta": log_beta}
    if rewards is not None:
        rewards = as_float_array("rewards", rewards, 2, shape)
        arrays["rewards"] = rewards
    if mask is None:
        mask = np.ones_like(log_pi)
    else:
        mask = as_float_array("mask", mask, 2, shape)
        arrays["mask"] = mask
    check_same_shape(**arrays)
    check_mask(mask)
    # padding may hold anything: only the valid steps have to be numbers
    for name in ("log_pi", "log_beta", "rewards"):
        if name in arrays:
            check_finite(name, arrays[name], mask)
    # the kernels read padding too (and discard it): make it finite
    log_pi, log_beta = (np.where(mask != 0, a, 0.0) for a in (log_pi, log_beta))
    if rewards is not None:
        rewards = np.where(mask != 0, rewards, 0.0)
    return log_pi, log_beta, rewards, mask


def discounted_returns(rewards, mask=None, gamma: float = 1.0) -> np.ndarray:
    """Each episode's discounted return ``G_i = Σ_t γ^t r_{i,t}`` over its valid steps.

    The one place pyprog computes it: the NWIS targets, the safety test's baseline and
    Pro-WLS's returns all come from here, so they agree to the last bit.

    Parameters
    ----------
    rewards : array_like, shape (N, H)
    mask : array_like, shape (N, H), optional
        1 for a real step, 0 for padding (default: every step is real).
    gamma : float in [0, 1]

    Returns
    -------
    ndarray, shape (N,)

    Examples
    --------
    >>> discounted_returns([[1.0, 1.0, 5.0]], [[1, 1, 0]], gamma=0.5)
    array([1.5])
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    mask = np.ones_like(rewards) if mask is None else np.asarray(mask, dtype=np.float64)
    discount = float(gamma) ** np.arange(rewards.shape[1])
    return (rewards * mask) @ discount


def pdis(
    log_pi, log_beta, rewards, mask=None, gamma: float = 1.0, clip: float = np.inf
) -> PDISResult:
    """Per-decision importance-sampling estimates of each logged episode's performance.

    ``Ĵ_i(π) = Σ_t ρ_{i,t} γ^t r_{i,t}`` with the cumulative ratio
    ``ρ_{i,t} = min(clip, Π_{l≤t} π(a_l|s_l)/β(a_l|s_l))`` computed in log space
    (paper eq. 2; long episodes' ratios overflow a double otherwise).

    Parameters
    ----------
    log_pi : array_like, shape (N, H)
        ``log π(a_{i,t}|s_{i,t})`` of the evaluated policy (log-densities for
        continuous actions).
    log_beta : array_like, shape (N, H)
        ``log β_i(a_{i,t}|s_{i,t})`` of the behaviour policy that played episode i.
    rewards : array_like, shape (N, H)
    mask : array_like of {0, 1}, shape (N, H), optional
        1 for valid steps, 0 for padding of shorter episodes. Default: all valid.
    gamma : float in [0, 1]
    clip : float > 0
        Upper clip of the cumulative ratio; ``inf`` (default) for none.

    Returns
    -------
    PDISResult
        ``J`` (N,), the estimates, and ``g`` (N, H), the per-step weights of the PDIS
        gradient ``∇Ĵ_i = Σ_t ∇log π(a_{i,t}|s_{i,t}) g[i, t]`` (Property 1).

    Raises
    ------
    ValueError
        For NaN/inf log-probabilities or rewards at valid steps, a mask that is not
        0/1, mismatched shapes, non-real arrays, ``clip <= 0`` or ``gamma`` outside
        [0, 1]; and where a true ``J_i`` or ``g[i, t]`` is beyond float64 (long episodes
        without ``clip``: the message names the episode and step).

    Examples
    --------
    >>> import numpy as np
    >>> log_pi = np.log([[0.5, 0.5], [0.9, 0.1]])
    >>> log_beta = np.log([[0.5, 0.5], [0.5, 0.5]])
    >>> pdis(log_pi, log_beta, rewards=[[1.0, 1.0], [1.0, 1.0]]).J.round(3)
    array([2.  , 2.16])
    """
    log_pi, log_beta, rewards, mask = check_episode_arrays(log_pi, log_beta, mask, rewards)
    g, J = kernels.pdis_weights(
        log_pi, log_beta, rewards, mask, check_gamma(gamma), check_clip(clip)
    )
    return PDISResult(J, g)


def episode_ratios(
    log_pi, log_beta, mask=None, clip: float = np.inf
) -> tuple[np.ndarray, np.ndarray]:
    """Whole-episode importance ratios ``λ_i = min(clip, Π_t π/β)``, the NWIS weights.

    Parameters
    ----------
    log_pi, log_beta : array_like, shape (N, H)
    mask : array_like of {0, 1}, shape (N, H), optional
    clip : float > 0

    Returns
    -------
    lam : ndarray, shape (N,)
    unclipped : ndarray of bool, shape (N,)
        Where ``Π_t π/β < clip``: only there does λ depend on the policy
        (``∇λ_i = λ_i Σ_t ∇log π``, else 0).

    Examples
    --------
    >>> import numpy as np
    >>> lam, unclipped = episode_ratios(np.log([[0.9], [0.1]]), np.log([[0.3], [0.3]]), clip=2)
    >>> lam.round(3), unclipped
    (array([2.   , 0.333]), array([False,  True]))
    """
    log_pi, log_beta, _, mask = check_episode_arrays(log_pi, log_beta, mask)
    return kernels.episode_ratios(log_pi, log_beta, mask, check_clip(clip))
