"""Forecasters: one family of forecasts that are linear in the past estimates.

Every forecaster here is a weighted least-squares fit of a time basis Φ with extra
per-episode *kernel weights* κ (paper §4–6 generalised):

* NIS: ``f = φ*(ΦᵀKΦ)⁻¹ΦᵀK Ĵ = ζ·Ĵ`` with ``K = diag(κ)``; ζ depends only on the number
  of episodes n and the horizon δ, so the learners' gradient ``Σ ζ_i ∇Ĵ_i`` is unchanged;
* NWIS: ``f = φ*(ΦᵀKΛΦ)⁻¹ΦᵀKΛ G``, a function of the ratios λ with an exact ``∂f/∂λ``.

The members (their ``str()`` is their name, and :func:`parse_forecaster` reads it back):

* ``fourier(d=9)``, ``poly(d=3)``, ``linear``: the global time bases of
  :mod:`pyprog.forecast.bases`, κ ≡ 1 (the paper's forecasters);
* ``window(k=20)``: the mean of the last k estimates (NIS), or the λ-weighted mean of the
  last k returns (NWIS) — a constant basis with κ = 1 on the last k episodes, 0 before;
* ``ewma(halflife=10)``: the exponentially weighted mean, κ_i = 2^{−(n−i)/halflife}
  (NWIS: weighted by κ_i λ_i).

Forecasts go through the same kernel (:func:`pyprog._ext.fallback.wls_forecast`) with
its conditioning checks and rescaling, whichever forecaster is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.forecast.bases import BASES, forecast_design, n_features, time_basis
from pyprog.timeseries.errors import ForecastError
from pyprog.utils.bounded_cache import array_cache
from pyprog.utils.validation import check_int, check_representable

__all__ = [
    "FORECASTERS",
    "MAX_WINDOW",
    "BasisForecaster",
    "EWMAForecaster",
    "Forecaster",
    "WindowForecaster",
    "parse_forecaster",
    "register_forecaster",
]


#: Largest window ``k`` and half-life of the local forecasters (episodes): longer than any
#: log a machine holds, so a larger one is the same forecaster; bounded so that every
#: index computed from them is a machine integer.
MAX_WINDOW = 10**9


#: The forecasters :func:`parse_forecaster` reads by name (:func:`register_forecaster`).
FORECASTERS: list[type[Forecaster]] = []


@dataclass(frozen=True)
class Forecaster:
    """Base class: a forecaster is its design ``(Φ, φ*, κ)`` for n episodes and horizon δ.

    A new forecaster is a frozen dataclass subclassing this one that writes ``design`` and
    ``__str__`` (its name), and, to be read back from its name (``candidates=["mine(k=3)"]``,
    ``pyprog forecast --candidates``), a :attr:`pattern` and :meth:`from_name`, registered
    with :func:`register_forecaster`. Every forecast, interval and ``basis="auto"`` backtest
    then works with it up to :data:`pyprog.forecast.blocks.LARGE_N` episodes; beyond, the
    backtests come from block moments that only the built-in families have
    (:attr:`long_logs`), and a forecaster without them is refused there, by name.
    """

    #: Its names: a regular expression that :meth:`from_name` reads.
    pattern: ClassVar[re.Pattern | None] = None
    #: Names it is read from, for messages (``("window(k=20)",)``).
    examples: ClassVar[tuple[str, ...]] = ()
    #: Whether :mod:`pyprog.forecast.blocks` has its block moments (backtests above
    #: ``LARGE_N`` episodes in O(N) memory).
    long_logs: ClassVar[bool] = False

    @classmethod
    def from_name(cls, match: re.Match) -> Forecaster:
        """The forecaster that ``match`` (of :attr:`pattern`) names."""
        raise NotImplementedError

    def design(self, n: int, delta: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``phi`` (n, k) Fortran-ordered, ``phi_star`` (k,) and kernel weights ``kappa`` (n,)."""
        raise NotImplementedError

    @property
    def features(self) -> int:
        """Number of basis features k (1 for the local forecasters)."""
        return 1

    @property
    def min_episodes(self) -> int:
        """The fewest episodes with non-zero weight for a forecast with an interval (k + 2:
        two residual degrees of freedom, :data:`pyprog.forecast.intervals.MIN_RESIDUAL_DOF`)."""
        return self.features + 2

    def weights(self, n: int, delta: int = 1) -> np.ndarray:
        """NIS forecast weights ζ, shape (n,): the forecast is ``ζ·Ĵ`` (data-independent).

        Raises
        ------
        ForecastError
            Too few episodes, or a system too ill-conditioned for a 4-digit forecast.

        Examples
        --------
        >>> WindowForecaster(4).weights(6)
        array([0.  , 0.  , 0.25, 0.25, 0.25, 0.25])
        """
        n = check_int("n", n, 1)
        delta = check_int("delta", delta, 1)
        return _nis_weights(self, n, delta)

    def nwis(self, returns: np.ndarray, ratios: np.ndarray, delta: int = 1):
        """NWIS forecast ``f(λ)`` and ``∂f/∂λ`` (shape (n,)) from returns G and ratios λ.

        Inputs are taken as valid (the public :func:`pyprog.nwis_forecast` checks them).

        Examples
        --------
        >>> f, grad = WindowForecaster(2).nwis(np.array([5.0, 1.0, 3.0]), np.ones(3))
        >>> round(f, 12), grad.round(3)
        (2.0, array([ 0. , -0.5,  0.5]))
        """
        returns = np.asarray(returns, dtype=np.float64)
        ratios = np.asarray(ratios, dtype=np.float64)
        phi, phi_star, kappa = self.design(len(returns), delta)
        f, _, dfdw = solve(phi, kappa * ratios, returns, phi_star, str(self))
        return f, dfdw * kappa


def solve(phi, weights, y, phi_star, what: str):
    """The WLS kernel's forecast ``f``, ``∂f/∂y`` and ``∂f/∂weights``, or a ForecastError."""
    f, _, dfdy, dfdweights, status = kernels.wls_forecast(phi, weights, y, phi_star)
    if status == kernels.WLS_RANK_DEFICIENT:
        raise ForecastError(
            f"{what}: the weighted least-squares system is rank-deficient or too "
            f"ill-conditioned for a forecast accurate to 4 digits "
            f"({int(np.count_nonzero(weights))} of {len(weights)} episodes have non-zero "
            f"weight for {phi.shape[1]} features); use a smaller d or delta, or more episodes"
        )
    check_representable(what, f=f, grad_y=dfdy, grad_weights=dfdweights, error=ForecastError)
    return float(f), dfdy, dfdweights


@array_cache(maxsize=4096, max_bytes=64 << 20)
def _nis_weights(forecaster: Forecaster, n: int, delta: int) -> np.ndarray:
    if forecaster.features > n:  # before the design is built: it would be n × features
        raise ForecastError(f"{forecaster}: needs at least {forecaster.features} episodes; got {n}")
    phi, phi_star, kappa = forecaster.design(n, delta)
    if np.count_nonzero(kappa) < forecaster.features:
        raise ForecastError(f"{forecaster}: needs at least {forecaster.features} episodes; got {n}")
    _, zeta, _ = solve(phi, kappa, np.zeros(n), phi_star, str(forecaster))
    zeta.flags.writeable = False
    return zeta


@dataclass(frozen=True)
class BasisForecaster(Forecaster):
    """A global time basis (``"fourier"``, ``"poly"`` or ``"linear"``) with ``d`` features.

    Examples
    --------
    >>> str(BasisForecaster("fourier", 9)), str(BasisForecaster("linear"))
    ('fourier(d=9)', 'linear')
    """

    pattern = re.compile(r"^\s*(?:(?P<basis>fourier|poly)\(d=(?P<d>\d+)\)|(?P<linear>linear))\s*$")
    examples = ("fourier(d=9)", "poly(d=3)", "linear")
    long_logs = True
    basis: str = "fourier"
    d: int = 5

    @classmethod
    def from_name(cls, match: re.Match) -> BasisForecaster:
        return cls("linear", 2) if match["linear"] else cls(match["basis"], int(match["d"]))

    def __post_init__(self):
        n_features(self.basis, self.d)  # validates
        if self.basis == "linear":
            object.__setattr__(self, "d", 2)

    def __str__(self) -> str:
        return "linear" if self.basis == "linear" else f"{self.basis}(d={self.d})"

    @property
    def features(self) -> int:
        return n_features(self.basis, self.d)

    def design(self, n, delta):
        phi, phi_star = forecast_design(n, delta, self.basis, self.d)
        return phi, phi_star, _ones(n)

    def design_at(self, x) -> np.ndarray:
        """The basis features at normalised times ``x``, shape (len(x), k)."""
        return time_basis(x, self.basis, self.d)


@array_cache(maxsize=64, max_bytes=16 << 20)
def _ones(n: int) -> np.ndarray:
    out = np.ones(n)
    out.flags.writeable = False
    return out


@array_cache(maxsize=64, max_bytes=16 << 20)
def _constant_design(n: int) -> tuple[np.ndarray, np.ndarray]:
    phi = np.ones((n, 1), order="F")
    phi.flags.writeable = False
    return phi, np.ones(1)


@dataclass(frozen=True)
class WindowForecaster(Forecaster):
    """The mean of the last ``k`` estimates (all of them when there are fewer).

    Examples
    --------
    >>> str(WindowForecaster(20))
    'window(k=20)'
    """

    pattern = re.compile(r"^\s*window\(k=(?P<k>\d+)\)\s*$")
    examples = ("window(k=20)",)
    long_logs = True
    k: int = 20

    @classmethod
    def from_name(cls, match: re.Match) -> WindowForecaster:
        return cls(int(match["k"]))

    def __post_init__(self):
        check_int("k", self.k, 1)
        if self.k > MAX_WINDOW:
            raise ValueError(f"k must be at most {MAX_WINDOW} (MAX_WINDOW); got {self.k}")

    def __str__(self) -> str:
        return f"window(k={self.k})"

    def design(self, n, delta):
        phi, phi_star = _constant_design(n)
        kappa = np.zeros(n)
        kappa[max(0, n - self.k) :] = 1.0
        return phi, phi_star, kappa


@dataclass(frozen=True)
class EWMAForecaster(Forecaster):
    """The exponentially weighted mean, weights ``2^{−(n−i)/halflife}`` (i = 1..n).

    Examples
    --------
    >>> str(EWMAForecaster(10))
    'ewma(halflife=10)'
    """

    pattern = re.compile(
        r"^\s*ewma\(halflife=(?P<h>[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\)\s*$"
    )
    examples = ("ewma(halflife=10)",)
    long_logs = True
    halflife: float = 10.0

    @classmethod
    def from_name(cls, match: re.Match) -> EWMAForecaster:
        return cls(float(match["h"]))

    def __post_init__(self):
        h = self.halflife
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0 < h <= MAX_WINDOW:
            raise ValueError(
                f"halflife must be a number > 0 and <= {MAX_WINDOW} (MAX_WINDOW); got {h!r}"
            )

    def __str__(self) -> str:
        # short where that is exact, else every digit: the name parses back to this forecaster
        h = float(self.halflife)
        text = f"{h:g}" if float(f"{h:g}") == h else repr(h)
        return f"ewma(halflife={text})"

    def design(self, n, delta):
        phi, phi_star = _constant_design(n)
        kappa = np.exp2(-np.arange(n - 1, -1, -1) / float(self.halflife))
        kappa[kappa < 2.0**-60] = 0.0  # negligible, and no subnormal weights in the kernel
        return phi, phi_star, kappa


def register_forecaster(cls: type[Forecaster]) -> type[Forecaster]:
    """Make ``parse_forecaster`` read ``cls``'s names (a class decorator).

    Raises
    ------
    ValueError
        If ``cls`` is not a :class:`Forecaster` with a :attr:`~Forecaster.pattern`.
    """
    if not (isinstance(cls, type) and issubclass(cls, Forecaster)):
        raise ValueError(f"a forecaster must subclass Forecaster; got {cls!r}")
    if not isinstance(cls.pattern, re.Pattern) or not cls.examples:
        raise ValueError(f"{cls.__name__} needs a pattern (re.compile(...)) and example names")
    if cls not in FORECASTERS:
        FORECASTERS.append(cls)
    return cls


for _cls in (BasisForecaster, WindowForecaster, EWMAForecaster):
    register_forecaster(_cls)


def parse_forecaster(spec) -> Forecaster:
    """A forecaster from its name (``str()``), or the forecaster itself.

    Examples
    --------
    >>> parse_forecaster("fourier(d=9)")
    BasisForecaster(basis='fourier', d=9)
    >>> parse_forecaster("ewma(halflife=10)")
    EWMAForecaster(halflife=10.0)
    """
    if isinstance(spec, Forecaster):
        return spec
    for cls in FORECASTERS if isinstance(spec, str) else ():
        match = cls.pattern.match(spec)
        if match:
            return cls.from_name(match)
    names = ", ".join(repr(name) for cls in FORECASTERS for name in cls.examples)
    raise ValueError(
        f"a forecaster is named like {names} (bases: {', '.join(BASES)}); got {spec!r}"
    )
