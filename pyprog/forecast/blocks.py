"""``basis="auto"`` on long logs: backtests from block moments, in O(N) memory.

Why. Up to :data:`LARGE_N` episodes, :func:`~pyprog.forecast.selection.select_forecaster`
and :func:`~pyprog.forecast.selected_intervals.selected_interval` hold every candidate's
forecast weights at every backtest origin, a (candidates · origins) × N matrix, and each
bootstrap replicate is a product with it: memory and time grow as N times ~800 (3.5 GB
and 25 s at N = 10^5; at 10^6 it did not fit in 18 GB). Above it, nothing the size of the
log is kept per candidate or origin, and a replicate costs O(N) once, not per candidate.

How. Every candidate's fit at an origin o needs only sums over the episodes before it: the
Gram matrix ``ΦᵀΛΦ`` and ``ΦᵀΛy`` of a time basis, the weighted sums of a window or an EWMA,
and the backtest targets. The log is cut into blocks (at every origin, target end and window
start, and at most L episodes long); in block j, centred at episode c_j, a feature is a
series in ``u = (i − c_j)/L``: ``cos(ω(c + t)) = cos ωc cos ωt − sin ωc sin ωt`` expanded in
powers of ωt, a power of ``x`` by the binomial theorem. Every sum is then a combination of
the block moments ``μ_jp = Σ_{i∈j} v_i u_i^p`` of a series v: O(N · p) once per series,
then O(blocks) per origin (:class:`BlockFits`). The systems are solved as NWIS's backtests
are (:func:`~pyprog.forecast.backtests.nwis_backtest_rows`: scaled to unit diagonal, refused
when ``√cond · eps · Σ|∂f/∂y| > 1e-4``).

Accuracy, against the dense path (``tests/test_blocks.py`` compares both at
:data:`LARGE_N`):

* exact (to rounding): windows, EWMAs (exponential block moments
  ``Σ_{i∈j} v_i 2^{−(e_j−1−i)/h}``, e_j the block's end), the targets, and polynomial
  features of degree below :data:`FIT_TERMS` (the binomial series ends);
* Fourier features: :data:`FIT_TERMS` terms over blocks with ``ωL <= MAX_PHASE`` at the
  highest frequency of the Gram matrix: a remainder below 1e-15 relative, rounding;
* the bootstrap replicates (:class:`BootstrapBacktests`): the moments of each replicate's
  signed residuals ``σ ⊙ ξ̃`` (one compiled pass over its packed signs,
  :func:`pyprog._ext.fallback_bootstrap.block_moments`) over about :data:`BOOT_BLOCKS`
  blocks, with :data:`BOOT_TERMS` terms over blocks with ``ωL <= BOOT_PHASE``: each
  replicate's backtest forecasts within ``(BOOT_PHASE/2)^5/5! ≈ 3e-9`` relative of the dense
  path's (whose selection runs in float32, rounding at 6e-8), and its final forecasts too.
  At the threshold the intervals' ends agree to 1e-9 of their width (to 1e-12 on most logs).

Memory at 10^6 one-step episodes: 223-245 MiB (tracemalloc) for either estimator with its
interval, most of it arrays of the log's length, the bootstrap's per-pass block arrays
(~100 MiB with the NumPy twins) not growing with N; time 6-9 s on one core
(``bench/bench_long_logs.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.forecast.forecasters import (
    BasisForecaster,
    EWMAForecaster,
    Forecaster,
    WindowForecaster,
)

__all__ = [
    "BOOT_BLOCKS",
    "BOOT_PHASE",
    "BOOT_TERMS",
    "FIT_TERMS",
    "LARGE_N",
    "MAX_PHASE",
    "BlockFits",
    "Blocks",
    "BootstrapBacktests",
    "Fit",
    "cut_blocks",
    "exp_moments",
    "poly_moments",
]

#: Above this many episodes ``basis="auto"`` computes its backtests and their bootstrap from
#: block moments (this module); at or below it, from dense forecast weights.
LARGE_N = 10_000
#: Terms of the series of a feature in a block, for the fits on the data.
FIT_TERMS = 8
#: ``ω · L`` of the Gram matrix's highest Fourier frequency over one block (of L episodes):
#: with :data:`FIT_TERMS` terms the remainder is below ``(MAX_PHASE/2)^8 / 8! ≈ 1e-15``.
MAX_PHASE = 0.1
#: Terms of the series of a feature in a block, for the bootstrap replicates.
BOOT_TERMS = 5
#: About this many blocks for the bootstrap replicates (more where cuts fall).
BOOT_BLOCKS = 1024
#: ``ω · L`` of the forecasts' highest Fourier frequency over one bootstrap block (at most).
BOOT_PHASE = 0.1
_EPS = np.finfo(np.float64).eps
# a forecast whose error bound cond(√ΛΦ)·eps·Σ|∂f/∂y| exceeds this is refused (as the kernel)
_FORECAST_ERROR_MAX = 1e-4


@dataclass(frozen=True)
class Blocks:
    """A partition of the episodes ``0..n-1`` into blocks ``[starts[j], ends[j])``."""

    starts: np.ndarray
    ends: np.ndarray
    #: ``(starts + ends − 1) / 2``: the block's centre (0-based episode index).
    centre: np.ndarray
    #: L: the series variable of episode i in block j is ``u = (i − centre[j]) / L``.
    scale: float

    def count(self, o: int) -> int:
        """The number of blocks that end at or before episode ``o`` (a cut)."""
        return int(np.searchsorted(self.ends, o, side="right"))

    def between(self, a: int, b: int) -> tuple[int, int]:
        """Indices ``[ja, jb)`` of the blocks that make up ``[a, b)`` (both cuts)."""
        return int(np.searchsorted(self.starts, a)), self.count(b)


def cut_blocks(n: int, cuts, length: int) -> Blocks:
    """Blocks of at most ``length`` episodes, cut at every point of ``cuts`` in (0, n).

    Examples
    --------
    >>> b = cut_blocks(10, [3], 4)
    >>> b.starts.tolist(), b.ends.tolist()
    ([0, 3, 6], [3, 6, 10])
    """
    length = max(1, int(length))
    cuts = np.asarray(cuts, dtype=np.int64)
    edges = np.unique(np.concatenate([[0, n], cuts[(cuts > 0) & (cuts < n)]]))
    a, b = edges[:-1], edges[1:]
    pieces = -(-(b - a) // length)
    seg = np.repeat(np.arange(len(a)), pieces)
    k = np.arange(len(seg)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    starts = a[seg] + (k * (b - a)[seg]) // pieces[seg]
    ends = np.append(starts[1:], n)
    centre = (starts + ends - 1) / 2.0
    return Blocks(starts.astype(np.int64), ends.astype(np.int64), centre, float(length))


def _positions(blocks: Blocks, n: int) -> np.ndarray:
    """``u_i = (i − centre_j) / L`` for every episode i (in block j), shape (n,)."""
    lengths = blocks.ends - blocks.starts
    return (np.arange(n) - np.repeat(blocks.centre, lengths)) / blocks.scale


def poly_moments(blocks: Blocks, v, terms: int) -> np.ndarray:
    """Block moments ``μ[j, p] = Σ_{i∈j} v_i u_i^p``, p < ``terms``, shape (K, terms).

    Examples
    --------
    >>> b = cut_blocks(4, [], 2)
    >>> poly_moments(b, np.ones(4), 2)
    array([[2., 0.],
           [2., 0.]])
    """
    v = np.asarray(v, dtype=np.float64)
    u = _positions(blocks, len(v))
    out = np.empty((len(blocks.starts), terms))
    w = v.copy()
    for p in range(terms):
        if p:
            w *= u
        out[:, p] = np.add.reduceat(w, blocks.starts)
    return out


def _decay(blocks: Blocks, n: int, halflife: float) -> np.ndarray:
    """``2^{−(e_j − 1 − i)/h}`` for every episode i in block j (its end e_j), shape (n,)."""
    lengths = blocks.ends - blocks.starts
    return np.exp2(-(np.repeat(blocks.ends, lengths) - 1 - np.arange(n)) / float(halflife))


def exp_moments(blocks: Blocks, v, halflife: float) -> np.ndarray:
    """Exponential block moments ``Σ_{i∈j} v_i 2^{−(e_j − 1 − i)/h}``, shape (K,)."""
    v = np.asarray(v, dtype=np.float64)
    return np.add.reduceat(v * _decay(blocks, len(v), halflife), blocks.starts)


def _family(c: BasisForecaster) -> tuple[str, list[int]]:
    """The feature family of a basis and the family's features it uses, in its order."""
    if c.basis == "fourier":
        return "fourier", list(range(c.d))
    if c.basis == "poly":
        return "poly", list(range(c.d))
    return "poly", [1, 0]  # linear: [x, 1]


def _coefficients(family: str, kmax: int, centre, scale: float, s: float, terms: int):
    """``a[k, j, p]``: ``Σ_{i∈j} v_i h_k(x_i) = Σ_p a[k, j, p] μ[j, p]`` with ``x_i = (i+1)/s``
    and ``h_k(x) = cos(π k x)`` (fourier) or ``x^k`` (poly), for k <= kmax; (kmax+1, J, terms).

    Fourier: ``cos(ω(c + 1 + t)) = cos(ω(c+1)) cos ωt − sin(ω(c+1)) sin ωt``, ω = πk/s,
    ``t = L u``, each of ``cos ωt``, ``sin ωt`` by its Taylor series. Poly:
    ``((c + 1 + t)/s)^k = Σ_p C(k, p) ((c+1)/s)^{k−p} (L/s)^p u^p``.
    """
    k = np.arange(kmax + 1, dtype=np.float64)
    p = np.arange(terms)
    inv_fact = np.array([1.0 / math.factorial(int(q)) for q in p])
    c1 = np.asarray(centre, dtype=np.float64) + 1.0
    if family == "fourier":
        omega = np.pi * k / s
        # cos(kθ), sin(kθ) of θ = π(c+1)/s by rotations (error ~k·eps): two libm calls a block
        theta = np.pi * c1 / s
        cos_part, sin_part = np.empty((kmax + 1, len(c1))), np.empty((kmax + 1, len(c1)))
        cos_part[0], sin_part[0] = 1.0, 0.0
        if kmax:
            c, sn = np.cos(theta), np.sin(theta)
            cos_part[1], sin_part[1] = c, sn
            for kk in range(2, kmax + 1):
                cos_part[kk] = cos_part[kk - 1] * c - sin_part[kk - 1] * sn
                sin_part[kk] = sin_part[kk - 1] * c + cos_part[kk - 1] * sn
        power = (omega * scale)[:, None] ** p[None, :] * inv_fact  # (k, terms)
        # cos ωt: +1, −1, +1 … on even p;  −sin ωt: −1, +1, … on odd p
        sign = np.where(p % 2 == 0, (-1.0) ** (p // 2), -((-1.0) ** ((p - 1) // 2)))
        even = p % 2 == 0
        out = (
            np.where(even[None, None, :], cos_part[:, :, None], sin_part[:, :, None])
            * (power * sign)[:, None, :]
        )
        return out
    xc = c1 / s
    r = scale / s
    out = np.zeros((kmax + 1, len(c1), terms))
    for kk in range(kmax + 1):
        for q in range(min(kk, terms - 1) + 1):
            out[kk, :, q] = math.comb(kk, q) * xc ** (kk - q) * r**q
    return out


def _future_mean(family: str, kmax: int, o: int, delta: int, s: float) -> np.ndarray:
    """``mean_{Δ=1..δ} h_k((o + Δ)/s)`` for k <= kmax (the forecast target's features)."""
    k = np.arange(kmax + 1, dtype=np.float64)
    if family == "fourier":
        # Σ_Δ cos(a(o + Δ)) = cos(a(o + (δ+1)/2)) sin(aδ/2) / sin(a/2), a = πk/s
        a = np.pi * k / s
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.sin(a * delta / 2.0) / (delta * np.sin(a / 2.0))
        ratio[0] = 1.0
        return np.cos(a * (o + (delta + 1) / 2.0)) * ratio
    total = np.zeros(kmax + 1)
    for start in range(o + 1, o + delta + 1, 1 << 16):
        x = np.arange(start, min(start + (1 << 16), o + delta + 1)) / s
        total += np.power.outer(x, k).sum(axis=0)
    return total / delta


def _solve(A: np.ndarray, phi_star: np.ndarray):
    """``u = A⁻¹ φ*`` scaled to unit diagonal, and ``√cond`` of the scaled A; None if refused."""
    diag = np.diag(A)
    if not (np.isfinite(A).all() and (diag > 0).all()):
        return None
    scale = 1.0 / np.sqrt(diag)
    As = A * np.outer(scale, scale)
    try:
        u = scale * np.linalg.solve(As, scale * phi_star)
        sv = np.linalg.svd(As, compute_uv=False)
    except np.linalg.LinAlgError:
        return None
    if not (sv[-1] > 0 and np.isfinite(u).all()):
        return None
    return u, math.sqrt(sv[0] / sv[-1])


@dataclass
class Fit:
    """One candidate's fit at one point: a basis's ``u = A⁻¹φ*`` and ``φ*``, or the weight
    sum of a window or an EWMA."""

    u: np.ndarray | None = None
    phi_star: np.ndarray | None = None
    total: float = 0.0


class BlockFits:
    """Every candidate's fit at every point (number of episodes fitted), from block moments.

    Parameters
    ----------
    candidates : sequence of Forecaster
    n : int
        Episodes in the log.
    delta : int
    points : array_like of int
        The fits' numbers of episodes (backtest origins, and n for the final forecasts).
    weights : ndarray, shape (n,)
        The fits' weights (NWIS: the ratios; NIS: ones), ``>= 0``.

    Attributes
    ----------
    ok : ndarray of bool, shape (candidates, points)
        Where the fit is not refused (a system without weight, singular or ill-conditioned).
    """

    def __init__(self, candidates, n: int, delta: int, points, weights) -> None:
        self.candidates = tuple(candidates)
        for c in self.candidates:
            if not c.long_logs:  # no block moments: refused by name, not silently unfit
                raise ValueError(
                    f"the forecaster {c} has no long-log path: above LARGE_N = {LARGE_N} "
                    "episodes, basis='auto' backtests from block moments, which only the "
                    "built-in forecasters have (Forecaster.long_logs); pass at most "
                    f"{LARGE_N} episodes, or leave {c} out of the candidates"
                )
        self.n, self.delta = int(n), int(delta)
        self.points = np.asarray(points, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        windows = {c.k for c in self.candidates if isinstance(c, WindowForecaster)}
        cuts = [self.points] + [self.points - k for k in windows]
        self.blocks = cut_blocks(self.n, np.concatenate(cuts), self._length())
        self._halflives = sorted(
            {float(c.halflife) for c in self.candidates if isinstance(c, EWMAForecaster)}
        )
        self._kmax = self._family_kmax(2)
        mu, ex = self._moments(self.weights)
        nonzero = np.concatenate([[0], np.cumsum(self.weights != 0)])
        self.fits: list[list[Fit | None]] = [[] for _ in self.candidates]
        for o in self.points:
            o = int(o)
            sums = self._sums(o, self._kmax, mu, ex)
            J = self.blocks.count(o)
            for i, c in enumerate(self.candidates):
                self.fits[i].append(self._fit(c, o, int(nonzero[o]), sums, mu[:J, 0]))
        self.ok = np.array([[f is not None for f in row] for row in self.fits], dtype=bool)
        self.ok = self.ok.reshape(len(self.candidates), len(self.points))

    # -- layout ------------------------------------------------------------------------
    def _length(self) -> int:
        """Block length: ``ωL <= MAX_PHASE`` at the Gram's top Fourier frequency (at most n/256)."""
        top = max(
            (c.d - 1 for c in self.candidates if isinstance(c, BasisForecaster)
             and c.basis == "fourier"),
            default=0,
        )  # fmt: skip
        length = max(1, -(-self.n // 256))
        if top > 0 and len(self.points):
            o = int(self.points.min())
            s = o + self.delta + int(0.05 * o)
            length = min(length, int(MAX_PHASE * s / (np.pi * 2 * top)))
        return max(1, length)

    def _family_kmax(self, factor: int) -> dict[str, int]:
        """Highest feature index each family needs: Gram (factor 2) or forecasts (1)."""
        kmax: dict[str, int] = {}
        for c in self.candidates:
            if isinstance(c, BasisForecaster):
                family, feats = _family(c)
                kmax[family] = max(kmax.get(family, 0), factor * max(feats))
        return kmax

    def _moments(self, v):
        mu = poly_moments(self.blocks, v, FIT_TERMS)
        ex = {h: exp_moments(self.blocks, v, h) for h in self._halflives}
        return mu, ex

    def _sums(self, o: int, kmax: dict[str, int], mu, ex) -> dict:
        """The sums over episodes before o: per family ``Σ v h_k`` (k <= kmax), per window
        start ``Σ v``, per half-life ``Σ 2^{−(o−1−i)/h} v_i``."""
        J = self.blocks.count(o)
        s = o + self.delta + int(0.05 * o)
        out: dict = {}
        for family, top in kmax.items():
            a = _coefficients(family, top, self.blocks.centre[:J], self.blocks.scale, s, FIT_TERMS)
            out[family] = np.tensordot(a, mu[:J], axes=([1, 2], [0, 1]))
            out[family, "centre"] = a[:, :, 0]  # h_k at the blocks' centres
        prefix = np.concatenate([[0.0], np.cumsum(mu[:J, 0])])
        for c in self.candidates:
            if isinstance(c, WindowForecaster):
                ja, _ = self.blocks.between(max(0, o - c.k), o)
                out["window", c.k] = prefix[J] - prefix[ja]
        for h in self._halflives:
            factor = np.exp2(-(o - self.blocks.ends[:J]) / h)
            out["ewma", h] = float(factor @ ex[h][:J])
        return out

    # -- fits --------------------------------------------------------------------------
    def _fit(self, c: Forecaster, o: int, nonzero: int, sums: dict, weight_mass) -> Fit | None:
        if isinstance(c, WindowForecaster):
            total = float(sums["window", c.k])
            return Fit(total=total) if total > 0 and math.isfinite(total) else None
        if isinstance(c, EWMAForecaster):
            total = float(sums["ewma", float(c.halflife)])
            return Fit(total=total) if total > 0 and math.isfinite(total) else None
        if not isinstance(c, BasisForecaster) or nonzero < c.features:
            return None
        family, feats = _family(c)
        H = sums[family]
        idx = np.array(feats)
        if family == "fourier":  # cos a cos b = (cos(a − b) + cos(a + b)) / 2
            A = 0.5 * (H[np.abs(idx[:, None] - idx[None, :])] + H[idx[:, None] + idx[None, :]])
        else:
            A = H[idx[:, None] + idx[None, :]]
        s = o + self.delta + int(0.05 * o)
        phi_star = _future_mean(family, max(feats), o, self.delta, s)[idx]
        solved = _solve(A, phi_star)
        if solved is None:
            return None
        u, root_cond = solved
        # Σ|∂f/∂y| = Σ_i w_i |φ_i·u|, with φ at the blocks' centres
        centre = sums[family, "centre"][idx]
        spread = float(np.abs(u @ centre) @ weight_mass)
        if not (
            math.isfinite(spread) and root_cond * _EPS * max(spread, 1.0) <= _FORECAST_ERROR_MAX
        ):
            return None
        return Fit(u=u, phi_star=phi_star)

    def subset(self, keep) -> BlockFits:
        """The same fits, of the candidates where ``keep`` (bool, (candidates,)) is true."""
        keep = np.asarray(keep, dtype=bool)
        out = object.__new__(BlockFits)
        out.__dict__.update(self.__dict__)
        out.candidates = tuple(c for c, k in zip(self.candidates, keep, strict=True) if k)
        out.fits = [f for f, k in zip(self.fits, keep, strict=True) if k]
        out.ok = self.ok[keep]
        return out

    def forecasts(self, v) -> np.ndarray:
        """Each candidate's forecast of the series ``v`` at each point, shape
        (candidates, points): ``Σ_i ζ_i v_i`` with ζ the fit's forecast weights (NaN where
        refused)."""
        mu, ex = self._moments(self.weights * np.asarray(v, dtype=np.float64))
        kmax = self._family_kmax(1)
        out = np.full(self.ok.shape, np.nan)
        for q, o in enumerate(self.points):
            sums = self._sums(int(o), kmax, mu, ex)
            for i, c in enumerate(self.candidates):
                fit = self.fits[i][q]
                if fit is None:
                    continue
                if isinstance(c, WindowForecaster):
                    out[i, q] = sums["window", c.k] / fit.total
                elif isinstance(c, EWMAForecaster):
                    out[i, q] = sums["ewma", float(c.halflife)] / fit.total
                else:
                    family, feats = _family(c)
                    out[i, q] = fit.u @ sums[family][np.array(feats)]
        return out


class BootstrapBacktests:
    """The part of each bootstrap replicate's backtest forecasts and targets that its signs
    move, from the block moments of its signed residuals (module docstring).

    A replicate is ``y* = ŷ + σ ⊙ ξ̃``: its forecasts are ``ζ·ŷ`` (the same in every
    replicate, from :meth:`BlockFits.forecasts`) plus ``Σ_i σ_i ξ̃_i ζ_i``, which
    :meth:`replicates` returns for every candidate and point, with the targets' part
    ``Σ_{j=o}^{o+δ−1} σ_j ξ̃_j w_j`` for every origin.

    Parameters
    ----------
    fits : BlockFits
        The candidates' fits at the origins and at n (its points).
    origins : ndarray of int, shape (m,)
        The backtest origins (targets ``[o, o + δ)``).
    resid : ndarray, shape (n,)
        The residuals ξ̃ that the signs flip.
    """

    def __init__(self, fits: BlockFits, origins, resid) -> None:
        n, delta = fits.n, fits.delta
        self.fits = fits
        self.origins = np.asarray(origins, dtype=np.int64)
        cands = fits.candidates
        windows = {c.k for c in cands if isinstance(c, WindowForecaster)}
        cuts = np.concatenate(
            [fits.points, self.origins + delta] + [fits.points - k for k in windows]
        )
        top = max(
            (c.d - 1 for c in cands if isinstance(c, BasisForecaster) and c.basis == "fourier"),
            default=0,
        )
        length = -(-n // BOOT_BLOCKS)
        if top > 0:
            o = int(fits.points.min())
            length = min(length, int(BOOT_PHASE * (o + delta + int(0.05 * o)) / (np.pi * top)))
        self.blocks = b = cut_blocks(n, cuts, max(1, length))
        K = len(b.starts)
        halflives = fits._halflives
        # V = [v u^p (p < BOOT_TERMS), v 2^{−(e_j−1−i)/h} per half-life], v = ξ̃ ⊙ w
        v = np.asarray(resid, dtype=np.float64) * fits.weights
        V = np.empty((n, BOOT_TERMS + len(halflives)))
        u = _positions(b, n)
        V[:, 0] = v
        for p in range(1, BOOT_TERMS):
            V[:, p] = V[:, p - 1] * u
        for h_i, h in enumerate(halflives):
            V[:, BOOT_TERMS + h_i] = v * _decay(b, n, h)
        self.V = V
        P = len(fits.points)
        self.basis_rows = [i for i, c in enumerate(cands) if isinstance(c, BasisForecaster)]
        # T (K·BOOT_TERMS, bases·points): the bases' forecasts from the moments
        T = np.zeros((K, BOOT_TERMS, len(self.basis_rows), P))
        for q, o in enumerate(fits.points):
            o = int(o)
            J = b.count(o)
            s = o + delta + int(0.05 * o)
            coefs = {}
            for r, i in enumerate(self.basis_rows):
                fit = fits.fits[i][q]
                if fit is None:
                    continue
                family, feats = _family(cands[i])
                if family not in coefs:
                    top_k = fits._family_kmax(1)[family]
                    coefs[family] = _coefficients(family, top_k, b.centre[:J], b.scale, s,
                                                  BOOT_TERMS)  # fmt: skip
                T[:J, :, r, q] = np.tensordot(fit.u, coefs[family][feats], axes=1)
        self.T = T.reshape(K * BOOT_TERMS, len(self.basis_rows) * P)
        # windows: block ranges [ja, jb) and the weight sums; EWMAs: block factors
        self.windows = []
        self.ewmas = []
        for i, c in enumerate(cands):
            totals = np.array([f.total if f is not None else np.inf for f in fits.fits[i]])
            if isinstance(c, WindowForecaster):
                ranges = np.array(
                    [b.between(max(0, int(o) - c.k), int(o)) for o in fits.points]
                ).reshape(P, 2)
                self.windows.append((i, ranges[:, 0], ranges[:, 1], totals))
            elif isinstance(c, EWMAForecaster):
                D = np.zeros((K, P))
                for q, o in enumerate(fits.points):
                    J = b.count(int(o))
                    D[:J, q] = np.exp2(-(int(o) - b.ends[:J]) / float(c.halflife)) / totals[q]
                self.ewmas.append((i, BOOT_TERMS + halflives.index(float(c.halflife)), D))
        targets = np.array([b.between(int(o), int(o) + delta) for o in self.origins])
        self.targets = targets.reshape(len(self.origins), 2)

    def replicates(self, signs) -> tuple[np.ndarray, np.ndarray]:
        """The signed parts of replicates' forecasts and targets.

        Parameters
        ----------
        signs : ndarray of uint8, shape (B, ceil(n / 8))
            Packed Rademacher signs, one row per replicate.

        Returns
        -------
        F : ndarray, shape (B, candidates, points)
            ``Σ_i σ_i ξ̃_i ζ_{c,o,i}``; 0 where a fit is refused.
        S : ndarray, shape (B, origins)
            ``Σ_{j=o}^{o+δ−1} σ_j ξ̃_j w_j``.
        """
        M = kernels.block_moments(signs, self.V, self.blocks.starts)
        rows, K = M.shape[0], M.shape[1]
        P = len(self.fits.points)
        F = np.zeros((rows, len(self.fits.candidates), P))
        if self.basis_rows:
            flat = np.ascontiguousarray(M[:, :, :BOOT_TERMS]).reshape(rows, K * BOOT_TERMS)
            F[:, self.basis_rows, :] = (flat @ self.T).reshape(rows, len(self.basis_rows), P)
        cum = np.zeros((rows, K + 1))
        np.cumsum(M[:, :, 0], axis=1, out=cum[:, 1:])
        for i, ja, jb, totals in self.windows:
            F[:, i, :] = (cum[:, jb] - cum[:, ja]) / totals
        for i, col, D in self.ewmas:
            F[:, i, :] = M[:, :, col] @ D
        S = cum[:, self.targets[:, 1]] - cum[:, self.targets[:, 0]]
        return F, S
