"""The rows the fast kernels cannot represent, recomputed without overflow (both backends).

``pdis_weights`` and ``episode_ratios`` compute ``exp`` of a cumulative log-ratio in
float64: past ``log(DBL_MAX) ≈ 709.78`` it overflows, and a product ``inf · 0`` or a sum
``inf − inf`` then gives NaN where the true value may be an ordinary number. Both kernels
(compiled and NumPy) send every row whose result is not finite here. Each term is
carried as a mantissa and a power of 2 and summed exactly (Shewchuk's expansions, as
:func:`math.fsum`), so that a row comes back finite whenever its true values are
representable; otherwise a ``ValueError`` names the episode and the step and suggests
``clip``. This is the rare path: plain Python, a few microseconds per step.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BeyondFloat64Error", "episode_ratio_exact", "pdis_row_exact"]

_LN2 = math.log(2.0)
_LOG_MAX = math.log(np.finfo(np.float64).max)  # 709.78...


def _add(partials: list[float], x: float) -> None:
    """partials += x, exactly (a non-overlapping expansion, smallest magnitude first)."""
    i = 0
    for p in partials:
        if abs(x) < abs(p):
            x, p = p, x
        hi = x + p
        lo = p - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


def _cumulative_log_ratio(log_pi, log_beta, valid) -> list[float]:
    """c[t] = Σ_{m <= t, valid} (log_pi − log_beta)[m], correctly rounded (±inf beyond range).

    The terms are scaled by 2**-k (exactly, but for subnormals) so that no partial sum
    of the expansion can overflow, and scaled back at the end of each step.
    """
    h = len(log_pi)
    k = max(1, math.ceil(math.log2(2 * h + 1)))
    partials: list[float] = []
    out = []
    for t in range(h):
        if valid[t]:
            _add(partials, math.ldexp(float(log_pi[t]), -k))
            _add(partials, math.ldexp(-float(log_beta[t]), -k))
        scaled = math.fsum(partials)
        try:
            out.append(math.ldexp(scaled, k))
        except OverflowError:
            out.append(math.copysign(math.inf, scaled))
    return out


def _check_finite(i: int, valid: list[bool], **rows) -> None:
    for name, row in rows.items():
        for t, value in enumerate(row):
            if valid[t] and not math.isfinite(value):
                raise ValueError(
                    f"{name} must be finite at the valid steps; got {value} at episode {i}, "
                    f"step {t}"
                )


def _frexp_exp(x: float) -> tuple[float, int]:
    """exp(x) as (m, e) with exp(x) = m · 2**e, for any x <= 709.78 · 2 (no overflow)."""
    if x <= _LOG_MAX:
        return math.frexp(math.exp(x))
    e = math.floor(x / _LN2)
    return math.exp(x - e * _LN2), e


def _frexp_pow(gamma: float, t: int) -> tuple[float, int]:
    """gamma**t as (m, e), without underflow (gamma in [0, 1])."""
    value = gamma**t
    if value == 0.0 and gamma > 0.0:
        e = t * math.log2(gamma)
        whole = math.floor(e)
        return 2.0 ** (e - whole), whole
    return math.frexp(value)


def _capped(c: list[float], log_clip: float) -> list[float]:
    return [min(ct, log_clip) for ct in c]


class BeyondFloat64Error(ValueError, FloatingPointError):
    """A PDIS term or sum that no float64 can hold (huge rewards, or an unclipped ratio).

    A ``ValueError`` (bad input to an estimator) and a ``FloatingPointError`` (a training
    run that diverged: a grid reports that run and finishes the others).
    """


def _not_representable(
    what: str, i: int, t: int, log10: float, c: list[float]
) -> BeyondFloat64Error:
    """The error for a value beyond float64: where, about how large, and what to do."""
    size = f"about 1e{log10:.0f}" if math.isfinite(log10) else "infinite"
    first = next((s for s, ct in enumerate(c) if not ct <= _LOG_MAX), None)
    if first is not None:  # only an infinite (or huge) clip lets the ratio itself overflow
        cause = f"the cumulative importance ratio passes 1.8e308 at step {first}"
        advice = "pass a finite clip (e.g. clip=10), or shorten the episodes"
    else:  # the ratio is clipped: the rewards are what is too large
        cause = "its terms (clipped ratio x discount x reward) sum beyond float64"
        advice = "rescale the rewards, or shorten the episodes"
    return BeyondFloat64Error(
        f"{what} at episode {i}, step {t} is {size}, beyond float64's range (±1.8e308): "
        f"{cause}; {advice}"
    )


def pdis_row_exact(
    i: int, log_pi, log_beta, rewards, mask, gamma: float, clip: float
) -> tuple[np.ndarray, float]:
    """Row ``i`` of ``pdis_weights`` (g[i], J[i]) without intermediate overflow.

    Raises
    ------
    BeyondFloat64Error
        Where a true ``g[i, t]`` (or a ratio it needs) is beyond float64 (a ValueError).
    """
    h = len(log_pi)
    valid = [m != 0.0 for m in mask]
    _check_finite(i, valid, log_pi=log_pi, log_beta=log_beta, rewards=rewards)
    log_clip = math.log(clip) if clip > 0 else -math.inf
    c = _cumulative_log_ratio(log_pi, log_beta, valid)
    terms: list[tuple[float, int]] = []  # term[t] = m · 2**e
    for t in range(h):
        r = float(rewards[t])
        if not valid[t] or r == 0.0 or (gamma == 0.0 and t > 0):
            terms.append((0.0, 0))
            continue
        x = min(c[t], log_clip)
        if math.isnan(x) or x == math.inf or x > 2 * _LOG_MAX:
            raise _not_representable(
                "the importance ratio", i, t, x / math.log(10), _capped(c, log_clip)
            )
        m_rho, e_rho = _frexp_exp(x)
        m_disc, e_disc = _frexp_pow(gamma, t)
        m_r, e_r = math.frexp(r)
        terms.append((m_rho * m_disc * m_r, e_rho + e_disc + e_r))
    top = max((e for m, e in terms if m != 0.0), default=0)
    g = np.zeros(h)
    partials: list[float] = []
    total = 0.0
    for t in range(h - 1, -1, -1):
        m, e = terms[t]
        if m != 0.0:
            _add(partials, math.ldexp(m, e - top))
        scaled = math.fsum(partials)
        try:
            total = math.ldexp(scaled, top)
        except OverflowError:
            log10 = (math.log2(abs(scaled)) + top) * math.log10(2.0)
            raise _not_representable(
                "the PDIS weight g", i, t, log10, _capped(c, log_clip)
            ) from None
        if valid[t]:
            g[t] = total
    return g, total


def episode_ratio_exact(i: int, log_pi, log_beta, mask, clip: float) -> tuple[float, bool]:
    """Row ``i`` of ``episode_ratios`` (lam[i], unclipped[i]) from the exact log-ratio.

    Raises
    ------
    ValueError
        Where the true ratio ``min(clip, exp(Σ log π/β))`` is beyond float64.
    """
    valid = [m != 0.0 for m in mask]
    _check_finite(i, valid, log_pi=log_pi, log_beta=log_beta)
    c = _cumulative_log_ratio(log_pi, log_beta, valid)
    total = c[-1] if c else 0.0
    log_clip = math.log(clip) if clip > 0 else -math.inf
    x = min(total, log_clip)
    if math.isnan(x) or x > _LOG_MAX:
        t = next((t for t, ct in enumerate(c) if not ct <= _LOG_MAX), len(c) - 1)
        raise _not_representable(
            "the importance ratio", i, t, x / math.log(10), _capped(c, log_clip)
        )
    return math.exp(x), total < log_clip
