"""NumPy twins of the bootstrap kernels: ``_bootstrap.pxi`` (wild-bootstrap t-statistics)
and ``_choice.pxi`` (the one-SE choice in every replicate of ``basis="auto"``'s interval,
the replicates themselves, and their block moments on long logs). Same names, signatures
and docstrings as the compiled ones; :mod:`pyprog._ext.fallback` re-exports them, so
``kernels.<name>`` finds them on either backend."""

import math

import numpy as np

from pyprog._ext._checks import input_array, same_shape, typed_array

__all__ = [
    "LOSS_RTOL",
    "block_moments",
    "one_se_choice",
    "one_se_gaps",
    "one_se_pick",
    "signed_rows",
    "wild_bootstrap_t",
]


# --- wild bootstrap of a linear forecast (issue 10) ------------------------------------


def wild_bootstrap_t(signs, e, zeta, P, K, v):
    """Wild-bootstrap t-statistics of a linear forecast, one per row of Rademacher signs.

    Row ``b`` of ``signs`` holds the signs ``σ_b ∈ {−1, +1}^N`` packed 8 to a byte:
    ``σ_bi = +1`` where bit ``i % 8`` (least significant first) of ``signs[b, i // 8]``
    is set, −1 where it is not. With ``e* = σ_b ⊙ e`` the flipped residuals::

        num[b] = ζ · e*                          (f* − f: the forecast moves by ζᵀ e*)
        r*     = e* − P (Kᵀ e*)                  (residuals of the refit, (I − P Kᵀ) e*)
        t[b]   = num[b] / sqrt(Σ_i v_i r*_i²)    (its standardised error)

    For a weighted fit with design Φ and weights Λ, ``P = Φ (ΦᵀΛΦ)⁻¹`` and ``K = ΛΦ``
    (so ``P Kᵀ`` is the hat matrix), ``ζ = K (ΦᵀΛΦ)⁻¹ φ*`` and ``v = ζ² / (1 − h)``.
    Only ``σ @ [ζ⊙e, e⊙K, v⊙e⊙P]`` (B × (2k+1)) is formed, never a B × N array of
    residuals: with ``c = Kᵀe*``, ``g = Pᵀ(v⊙e*)`` and σ² = 1,
    ``Σ_i v_i r*_i² = Σ_i v_i e_i² − 2 c·g + cᵀ (Pᵀ diag(v) P) c``.

    Parameters
    ----------
    signs : ndarray of uint8, shape (B, ceil(N / 8))
        Packed Rademacher signs (bits beyond N are ignored).
    e : ndarray of float64, shape (N,)
        Residuals to flip (leverage-adjusted).
    zeta : ndarray of float64, shape (N,)
        Forecast weights, ``f = ζ · y``.
    P, K : ndarray of float64, shape (N, k), C-contiguous
        Factors of the hat matrix ``H = P Kᵀ``.
    v : ndarray of float64, shape (N,)
        Non-negative weights of the squared residuals in the standard error.

    Returns
    -------
    t : ndarray of float64, shape (B,)
        NaN where the bootstrap standard error is 0 and the numerator too.
    """
    n, k = P.shape
    # bits (B, N) of {0, 1}: σ = 2 bits − 1
    bits = np.unpackbits(signs, axis=1, count=n, bitorder="little").astype(np.float64)
    # M = [ζ⊙e, e⊙K, v⊙e⊙P], (N, 2k+1);  S = σ M = 2 bits M − Σ_i M_i
    M = np.concatenate([(zeta * e)[:, None], e[:, None] * K, (v * e)[:, None] * P], axis=1)
    S = 2.0 * (bits @ M) - M.sum(axis=0)
    num, c, g = S[:, 0], S[:, 1 : k + 1], S[:, k + 1 :]
    # Σ v r*² = Σ v e² − 2 c·g + cᵀ V c,  V = Pᵀ diag(v) P
    V = P.T @ (v[:, None] * P)
    s2 = (v * e * e).sum() - 2.0 * (c * g).sum(axis=1) + ((c @ V) * c).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / np.sqrt(np.maximum(s2, 0.0))


# --- the one-standard-error choice in every bootstrap replicate (issue 18) ------------

#: Mean backtest losses within this fraction of the best candidate's mean absolute
#: per-origin loss are ties (issue 35, item 5): on a constant or nearly constant series
#: every candidate fits to rounding, and which one "wins" by 1e-16 would depend on the
#: backend and the float32 replicates; a tie goes to the first candidate (least noisy).
LOSS_RTOL = 1e-6


def one_se_gaps(losses, step):
    """Each candidate's mean backtest loss above the best one's, and its standard error.

    The arithmetic of :func:`pyprog.forecast.selection.loss_gaps` (which documents it),
    here so that :func:`one_se_choice` and the selection on the data share it.
    """
    b, c, m = losses.shape
    # inf − inf (a non-finite candidate) is NaN, and not chosen: no warning for it
    with np.errstate(invalid="ignore", over="ignore"):
        mean = losses.sum(axis=2) / m if m else np.full((b, c), np.inf)
        mean = np.where(np.isfinite(mean), mean, np.inf)
        rows = np.arange(b)
        best = np.argmin(mean, axis=1)
        diff = losses - losses[rows, best][:, None, :]
        sub = diff[:, :, ::step]
        if sub.shape[2] > 1:
            se = sub.std(axis=2, ddof=1) / math.sqrt(sub.shape[2])
        else:
            se = np.zeros(mean.shape)
        gap = mean - mean[rows, best][:, None]
    return np.where(np.isfinite(mean), gap, np.inf), se


def one_se_pick(losses, step, se_rule):
    """The first candidate within ``se_rule`` standard errors of the best, per row of
    ``losses`` (b, candidates, origins), or tied with it (a gap of at most
    :data:`LOSS_RTOL` times the best's mean ``|loss|``); 0 where none has a finite mean."""
    gap, se = one_se_gaps(losses, step)
    b, _, m = losses.shape
    with np.errstate(invalid="ignore", over="ignore"):
        mean = losses.sum(axis=2) / m if m else np.full(gap.shape, np.inf)
        best = np.argmin(np.where(np.isfinite(mean), mean, np.inf), axis=1)
        scale = np.abs(losses[np.arange(b), best]).sum(axis=1) / max(m, 1)
    tie = np.where(np.isfinite(scale), LOSS_RTOL * scale, 0.0)[:, None]
    ok = np.isfinite(gap) & ((gap <= se_rule * se) | (gap <= tie))
    return np.argmax(ok, axis=1)


def one_se_choice(F, S1, W, usable, step, se_rule):
    """The one-standard-error rule's choice in each bootstrap replicate, from its backtests.

    Replicate ``b``'s backtest loss of candidate ``c`` at origin ``o`` is
    ``L[c, o] = F[b, c, o] (W[o] F[b, c, o] − 2 S1[b, o])`` (the squared error
    ``(S1 − W F)²/W`` up to a term the same for every candidate), ``inf`` where
    ``usable[c]`` is false. The best candidate has the least mean loss; the choice is the
    first candidate whose mean loss is within ``se_rule`` standard errors of the best's,
    the standard error that of the per-origin loss differences to the best, taken at
    every ``step``-th origin (``ddof = 1``; 0 with a single one), or tied with it (a gap
    of at most ``LOSS_RTOL`` = 1e-6 times the best's mean ``|L|``). A candidate whose mean
    is not finite is never chosen; with none finite, candidate 0.
    :func:`pyprog.forecast.selection.choose` on the same losses, replicate by replicate,
    without the (B, C, m) arrays of losses and differences.

    Parameters
    ----------
    F : ndarray of float32, shape (B, C, m)
        Backtest forecasts (weight-summed), per replicate, candidate and origin.
    S1 : ndarray of float32, shape (B, m)
        Backtest targets ``Σ_j w_j y*_j`` over each origin's next δ episodes.
    W : ndarray of float64, shape (m,)
        The targets' weight sums ``Σ_j w_j``.
    usable : ndarray of bool, shape (C,)
    step : int >= 1
    se_rule : float >= 0

    Returns
    -------
    pick : ndarray of int64, shape (B,)
    """
    typed_array(F, "F", 3, np.float32, "float32")
    nb, nc, m = F.shape
    typed_array(S1, "S1", 2, np.float32, "float32")
    same_shape(S1, "S1", (nb, m))
    input_array(W, "W", 1)
    same_shape(W, "W", (m,))
    typed_array(usable, "usable", 1, np.bool_, "bool")
    same_shape(usable, "usable", (nc,))
    if step < 1:
        raise ValueError(f"step must be >= 1; got {step}")
    if not se_rule >= 0:
        raise ValueError(f"se_rule must be >= 0; got {se_rule}")
    # L = F ⊙ (W F − 2 S1) in float64 (W is), inf for unusable candidates
    losses = F * (W * F - 2.0 * S1[:, None, :])
    losses[:, ~usable, :] = np.inf
    return one_se_pick(losses, step, se_rule).astype(np.int64)


def signed_rows(signs, lo, hi):
    """Bootstrap replicates from packed Rademacher signs: ``y[b, i] = hi[i]`` where sign
    ``σ_bi = +1`` (bit ``i % 8`` of ``signs[b, i // 8]``, least significant first), else
    ``lo[i]``; with ``lo = ŷ − ξ̃`` and ``hi = ŷ + ξ̃`` that is ``ŷ + σ ⊙ ξ̃``, exactly.

    Parameters
    ----------
    signs : ndarray of uint8, shape (B, ceil(N / 8))
    lo, hi : ndarray of float32, shape (N,)

    Returns
    -------
    y : ndarray of float32, shape (B, N)
    """
    typed_array(lo, "lo", 1, np.float32, "float32")
    n = lo.shape[0]
    typed_array(hi, "hi", 1, np.float32, "float32")
    same_shape(hi, "hi", (n,))
    nbytes = (n + 7) // 8
    _check_signs(signs, nbytes)
    up = np.unpackbits(signs, axis=1, count=n, bitorder="little").view(np.bool_)
    return np.where(up, hi, lo)


def _check_signs(signs, nbytes):
    """Packed signs: a C-contiguous uint8 array of shape (B, nbytes)."""
    if not (
        isinstance(signs, np.ndarray)
        and signs.dtype == np.uint8
        and signs.ndim == 2
        and signs.flags.c_contiguous
        and signs.shape[1] == nbytes
    ):
        raise ValueError(f"signs must be a C-contiguous uint8 ndarray of shape (B, {nbytes})")


def _check_starts(starts, n):
    """Block starts: 0 first, strictly increasing, below N (none when N is 0)."""
    k = len(starts)
    if n == 0 and k == 0:
        return
    if k == 0 or starts[0] != 0 or starts[-1] >= n:
        raise ValueError(f"starts must begin at 0 and lie below N = {n}")
    if (np.diff(starts) <= 0).any():
        raise ValueError("starts must be strictly increasing")


def block_moments(signs, V, starts):
    """Signed sums of the rows of ``V`` over blocks of episodes, one set per row of signs.

    ``M[b, j, :] = Σ_{i = starts[j]}^{starts[j+1] − 1} σ_bi V[i, :]`` (the last block ends
    at N), with ``σ_bi = +1`` where bit ``i % 8`` (least significant first) of
    ``signs[b, i // 8]`` is set, −1 where it is not: the block moments of the bootstrap
    replicates of ``basis="auto"`` on long logs (:mod:`pyprog.forecast.blocks`), without a
    B × N array of signs or replicates.

    Parameters
    ----------
    signs : ndarray of uint8, shape (B, ceil(N / 8))
        Packed Rademacher signs (bits beyond N are ignored).
    V : ndarray of float64, shape (N, q), C-contiguous
    starts : ndarray of int64, shape (K,)
        First episode of each block: ``starts[0] == 0``, strictly increasing, below N.

    Returns
    -------
    M : ndarray of float64, shape (B, K, q)
    """
    input_array(V, "V", 2)
    n, q = V.shape
    nbytes = (n + 7) // 8
    _check_signs(signs, nbytes)
    typed_array(starts, "starts", 1, np.int64, "int64")
    _check_starts(starts, n)
    nb, k = signs.shape[0], len(starts)
    M = np.zeros((nb, k, q))
    if n == 0:
        return M
    ends = np.append(starts[1:], n)
    # σ (rows, span) = 2 bits − 1 for a few rows and a span of episodes at a time (about 2^22
    # signs: memory O(N), not O(B N)): pieces [s, e) of at most span episodes (a block, or
    # part of a long one), grouped while a group spans at most span episodes
    rows = max(1, min(nb, 256))
    span = max(1 << 12, (1 << 22) // rows)
    pieces = [
        (j, s, min(s + span, e))
        for j, (a, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True))
        for s in range(a, e, span)
    ]
    groups, first = [], 0
    for i, (_, _, e) in enumerate(pieces):
        if e - pieces[first][1] > span:
            groups.append(pieces[first:i])
            first = i
    groups.append(pieces[first:])
    for r in range(0, nb, rows):
        for group in groups:
            a, b = group[0][1], group[-1][2]
            packed = signs[r : r + rows, a // 8 : (b + 7) // 8]
            bits = np.unpackbits(packed, axis=1, bitorder="little")[:, a % 8 : a % 8 + b - a]
            sigma = bits.astype(np.float64)
            sigma *= 2.0
            sigma -= 1.0
            for j, s, e in group:
                # M[b, j] += σ_b[s:e] @ V[s:e]
                M[r : r + rows, j] += sigma[:, s - a : e - a] @ V[s:e]
    return M
