"""Splitters: how a time-ordered log is cut into parts that fit and parts that are predicted.

Both paths hold data out in time, in the manner of scikit-learn's ``TimeSeriesSplit``
(``split`` yields ``(train, test)`` index arrays; ``get_n_splits`` counts them):

* :class:`RollingOrigin` backtests a forecaster: at each origin ``o`` it fits on units
  ``[0, o)`` and predicts ``[o, o + horizon)``. Origins run evenly from ``n // 2`` to
  ``n − horizon`` (at most ``max_origins`` of them; none when fewer than ``min_origins``
  fit), so the early, short fits never vote. The episode path's model selection and its
  intervals use it.
* :class:`RandomFolds` and :class:`BlockedFolds` cross-fit a reward model: each unit falls
  in one of ``n_folds`` folds of equal size (±1), either at random or as contiguous
  stretches of time; fold ``k``'s model is fit on the other folds. The rounds path uses
  them; ``folds="random"`` and ``folds="blocked"`` name them (:data:`FOLDS`), and a
  subclass of :class:`Folds` registered with :func:`register_folds` is a new way to fold.
* :class:`HashedFolds` folds each row by a hash of its own values, so a log read in chunks
  folds as the whole does: :func:`pyprog.forecast_value`'s cross-fitting, in memory,
  streamed or on a cluster.

May import :mod:`pyprog.utils`.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import numpy as np

__all__ = [
    "FOLDS",
    "MAX_ORIGINS",
    "MIN_ORIGINS",
    "N_FOLDS",
    "BlockedFolds",
    "Folds",
    "HashedFolds",
    "RandomFolds",
    "RollingOrigin",
    "Splitter",
    "check_folds",
    "register_folds",
]


#: The default number of cross-fitting folds.
N_FOLDS = 5
#: Most backtest origins of a :class:`RollingOrigin` by default.
MAX_ORIGINS = 60
#: Fewest backtest origins of a :class:`RollingOrigin` by default.
MIN_ORIGINS = 3


class Splitter:
    """A way to cut ``n`` time-ordered units into training and test parts.

    Subclasses define :meth:`split`; :meth:`get_n_splits` counts what it yields.
    """

    def split(self, n: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train, test)`` index arrays (int, into ``range(n)``)."""
        raise NotImplementedError

    def get_n_splits(self, n: int) -> int:
        """How many ``(train, test)`` pairs :meth:`split` yields for ``n`` units."""
        return sum(1 for _ in self.split(n))


def _check_count(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}; got {value!r}")
    return int(value)


class RollingOrigin(Splitter):
    """Backtest origins for a forecast ``horizon`` units ahead.

    Parameters
    ----------
    horizon : int
        Units predicted after each origin, δ >= 1.
    max_origins : int
        Most origins; they are spread evenly from ``n // 2`` (at least 2) to ``n − horizon``.
    min_origins : int
        Fewest origins; a log with room for fewer gets none.

    Examples
    --------
    >>> RollingOrigin(2, max_origins=3).origins(10)
    array([5, 6, 8])
    >>> [(len(tr), te.tolist()) for tr, te in RollingOrigin(2, max_origins=2).split(10)]
    [(5, [5, 6]), (8, [8, 9])]
    >>> RollingOrigin(5).origins(8)  # room for 1 origin, fewer than min_origins = 3
    array([], dtype=int64)
    """

    def __init__(
        self, horizon: int, max_origins: int = MAX_ORIGINS, min_origins: int = MIN_ORIGINS
    ):
        self.horizon = _check_count(horizon, "horizon", 1)
        self.max_origins = _check_count(max_origins, "max_origins", 1)
        self.min_origins = _check_count(min_origins, "min_origins", 1)

    def __repr__(self) -> str:
        return (
            f"RollingOrigin(horizon={self.horizon}, max_origins={self.max_origins}, "
            f"min_origins={self.min_origins})"
        )

    def origins(self, n: int) -> np.ndarray:
        """The origins for ``n`` units, shape (m,) int, increasing, ``m <= max_origins``."""
        first, last = max(n // 2, 2), n - self.horizon
        if last - first + 1 < self.min_origins:
            return np.zeros(0, dtype=np.intp)
        count = min(self.max_origins, last - first + 1)
        return np.unique(np.round(np.linspace(first, last, count)).astype(np.intp))

    def split(self, n: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(arange(o), arange(o, o + horizon))`` for each origin ``o``."""
        for o in self.origins(n):
            yield np.arange(o), np.arange(o, o + self.horizon)

    def get_n_splits(self, n: int) -> int:
        """The number of origins for ``n`` units."""
        return len(self.origins(n))


class Folds(Splitter):
    """``n_folds`` folds of equal size (±1), contiguous in the order :meth:`order` gives.

    Subclasses define :meth:`order`, the permutation of the units along which the folds
    are laid: fold ``k`` holds the units at positions ``[k·n/K, (k+1)·n/K)`` of it.
    """

    #: The name ``folds=`` takes for this way of folding (set by :func:`register_folds`).
    name = ""

    def __init__(self, n_folds: int = N_FOLDS):
        if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) or n_folds < 2:
            raise ValueError(
                f"n_folds must be an integer >= 2 (cross-fitting: each unit's model is fit on "
                f"the other folds); got {n_folds!r}"
            )
        self.n_folds = int(n_folds)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_folds={self.n_folds})"

    def order(self, times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A permutation of ``range(len(times))``, shape (n,)."""
        raise NotImplementedError

    def fold_ids(self, times, random_state=None) -> np.ndarray:
        """Each unit's fold, shape (n,) int64 in ``[0, n_folds)``.

        Parameters
        ----------
        times : array_like, shape (n,)
            The units' times (the order of :class:`BlockedFolds`).
        random_state : None, int or numpy.random.Generator
            The permutation of :class:`RandomFolds`.
        """
        times = np.asarray(times)
        n = times.shape[0]
        if self.n_folds > n:
            raise ValueError(
                f"n_folds must be at most the number of rounds ({n}); got {self.n_folds}"
            )
        out = np.empty(n, dtype=np.int64)
        # equal counts (±1), contiguous in the order
        out[self.order(times, np.random.default_rng(random_state))] = (
            np.arange(n) * self.n_folds
        ) // n
        return out

    def split_times(self, times, random_state=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train, test)`` index arrays of the units at ``times``, fold by fold."""
        fold = self.fold_ids(times, random_state)
        for k in range(self.n_folds):
            yield np.flatnonzero(fold != k), np.flatnonzero(fold == k)

    def split(self, n: int, random_state=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train, test)`` for ``n`` units in time order ``0, 1, …, n − 1``."""
        yield from self.split_times(np.arange(n), random_state)

    def get_n_splits(self, n: int | None = None) -> int:
        """``n_folds``, whatever ``n``."""
        return self.n_folds


#: The ways of folding ``folds=`` takes by name: name -> :class:`Folds` subclass.
FOLDS: dict[str, type[Folds]] = {}


def register_folds(cls: type[Folds]) -> type[Folds]:
    """Make a :class:`Folds` subclass available as ``folds=cls.name`` (a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Folds)):
        raise TypeError(f"register_folds takes a subclass of Folds; got {cls!r}")
    if not isinstance(cls.name, str) or not cls.name or cls.name != cls.name.lower():
        raise ValueError(
            f"{cls.__name__}.name must be a non-empty lower-case string; got {cls.name!r}"
        )
    FOLDS[cls.name] = cls
    return cls


@register_folds
class RandomFolds(Folds):
    """Folds at random: a uniform permutation of the units.

    Examples
    --------
    >>> RandomFolds(2).fold_ids(np.zeros(4), random_state=0)
    array([0, 1, 0, 1])
    """

    name = "random"

    def order(self, times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniform random permutation."""
        return rng.permutation(times.shape[0])


@register_folds
class BlockedFolds(Folds):
    """Folds as contiguous stretches of time: the units sorted by time (stably).

    Examples
    --------
    >>> BlockedFolds(2).fold_ids(np.array([3.0, 1.0, 2.0, 0.0]))
    array([1, 0, 1, 0])
    """

    name = "blocked"

    def order(self, times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The units in time order; ties keep their order in the log."""
        return np.argsort(times, kind="stable")


class HashedFolds:
    """Folds from a hash of each unit's own values: the same fold for a row wherever it is.

    :class:`RandomFolds` permutes the units of a whole log, so a row's fold depends on
    every other row. Here row i's fold is ``splitmix64`` (Steele, Lea & Flood 2014) mixed
    over the bits of its values, modulo ``n_folds``, so a log read in chunks, in any
    order, on any worker, folds as the whole does: what cross-fitting a log streamed
    from disk or spread over a cluster needs. Rows with the same values share a fold;
    fold sizes are multinomial, not equal.

    Parameters
    ----------
    n_folds : int
        K >= 2.
    seed : int
        Which partition (any integer; :meth:`seed_of` draws one from a ``random_state``).

    Examples
    --------
    >>> f = HashedFolds(3, seed=0)
    >>> t, r = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 0.0, 1.0, 0.0])
    >>> f.fold_ids([t, r]).tolist() == f.fold_ids([t[::-1], r[::-1]])[::-1].tolist()
    True
    """

    #: splitmix64's constants.
    _GAMMA, _M1, _M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB

    def __init__(self, n_folds: int = N_FOLDS, seed: int = 0) -> None:
        if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) or n_folds < 2:
            raise ValueError(f"n_folds must be an integer >= 2; got {n_folds!r}")
        self.n_folds, self.seed = int(n_folds), int(seed) % 2**64

    def __repr__(self) -> str:
        return f"HashedFolds(n_folds={self.n_folds}, seed={self.seed})"

    @staticmethod
    def seed_of(random_state) -> int:
        """An integer seed: ``random_state`` itself if an integer, else one drawn from it."""
        if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
            return int(random_state)
        return int(np.random.default_rng(random_state).integers(2**63))

    @classmethod
    def _mix(cls, h: np.ndarray) -> np.ndarray:
        """splitmix64's finaliser on uint64 (wrapping arithmetic)."""
        h = h + np.uint64(cls._GAMMA)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(cls._M1)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(cls._M2)
        return h ^ (h >> np.uint64(31))

    def fold_ids(self, columns) -> np.ndarray:
        """Each row's fold, shape (n,) int64 in ``[0, n_folds)``.

        Parameters
        ----------
        columns : sequence of numpy.ndarray, each of shape (n,) or (n, d)
            The rows' values (float64 or int64; -0.0 counts as 0.0).
        """
        h = None
        with np.errstate(over="ignore"):
            for col in columns:
                col = np.asarray(col)
                col = col.reshape(col.shape[0], -1)
                bits = col + 0 if col.dtype.kind == "f" else col.astype(np.int64)
                bits = np.ascontiguousarray(bits, dtype=bits.dtype).view(np.uint64)
                if h is None:
                    h = self._mix(np.full(col.shape[0], self.seed, dtype=np.uint64))
                for j in range(bits.shape[1]):
                    h = self._mix(h ^ bits[:, j])
        if h is None:
            raise ValueError("columns must hold at least one column of the rows' values")
        return (h % np.uint64(self.n_folds)).astype(np.int64)


def check_folds(folds, n_folds: int = N_FOLDS) -> Folds:
    """The :class:`Folds` that ``folds=`` and ``n_folds=`` ask for.

    Parameters
    ----------
    folds : str or Folds
        A name in :data:`FOLDS`, or a :class:`Folds` object (which carries its own
        ``n_folds``).
    n_folds : int
        The number of folds for a name; with an object it must be the default
        (:data:`N_FOLDS`) or equal to the object's.

    Examples
    --------
    >>> check_folds("blocked", 3)
    BlockedFolds(n_folds=3)
    """
    if isinstance(folds, Folds):
        if n_folds not in (N_FOLDS, folds.n_folds):
            raise ValueError(
                f"n_folds ({n_folds!r}) disagrees with folds={folds!r}: pass the number of "
                f"folds once, in the Folds object"
            )
        return folds
    if not isinstance(folds, str) or folds not in FOLDS:
        raise ValueError(f"folds must be one of {tuple(FOLDS)} or a Folds object; got {folds!r}")
    return FOLDS[folds](n_folds)
