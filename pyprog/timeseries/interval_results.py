"""What every result with an interval shares, and the default levels of both paths.

A forecast of episodes (:class:`~pyprog.Forecast`), of rounds
(:class:`~pyprog.ValueForecast`), a least-squares forecast in time
(:class:`~pyprog.timeseries.TimeForecast`) and a safety test
(:class:`~pyprog.SafetyTest`) each report a value with the ends of an interval at level
1 − ``alpha``. They share :class:`IntervalResult`: the same names (``value``, ``low``,
``high``, ``alpha``), the same questions (:attr:`~IntervalResult.level`,
:meth:`~IntervalResult.covers`, :attr:`~IntervalResult.width`) and the same words when
printed (:meth:`~IntervalResult.interval_text`).

One default level per kind of call:

* :data:`INTERVAL_ALPHA` (0.1): a two-sided interval of a forecast, at 90 %;
* :data:`TEST_ALPHA` (0.05): a one-sided test (the safety tests, the verdicts of a
  sweep), whose lower bound at 95 % is the lower end of the two-sided 90 % interval.
"""

from __future__ import annotations

import math

__all__ = ["INTERVAL_ALPHA", "TEST_ALPHA", "IntervalResult"]

#: The default ``alpha`` of a forecast's two-sided interval (level 90 %).
INTERVAL_ALPHA = 0.1
#: The default ``alpha`` of a one-sided test (size 5 %).
TEST_ALPHA = 0.05


class IntervalResult:
    """A value with the ends of an interval at level 1 − ``alpha``, as every result has.

    A mixin of the result types: they hold ``value``, ``low``, ``high`` (``math.inf`` for a
    one-sided lower bound) and ``alpha`` (``low``, ``high`` and ``alpha`` are None when
    no interval was asked for), and inherit what follows.

    Examples
    --------
    >>> from pyprog.timeseries import time_forecast
    >>> f = time_forecast([1.0, 1.2, 0.9, 1.1, 1.0, 1.05], [0, 1, 2, 3, 4, 5], at=7.0)
    >>> f.level, f.covers(1.05), f.interval_text()
    (0.9, True, '[0.9731, 1.11] (90% interval)')
    """

    __slots__ = ()

    @property
    def level(self) -> float | None:
        """1 − ``alpha``, the interval's nominal coverage (None without an interval)."""
        return None if self.alpha is None else 1.0 - self.alpha

    @property
    def width(self) -> float | None:
        """``high − low`` (``inf`` for a one-sided bound; None without an interval)."""
        return None if self.low is None else self.high - self.low

    def covers(self, truth: float) -> bool:
        """Whether ``low <= truth <= high``: what a Monte Carlo of coverage counts.

        Raises
        ------
        ValueError
            The result has no interval (it was computed with ``alpha=None``).
        """
        if self.low is None:
            raise ValueError(
                f"this {type(self).__name__} has no interval: it was computed with "
                "alpha=None; pass alpha (e.g. 0.1) to get one"
            )
        return bool(self.low <= truth <= self.high)

    def interval_text(self, kind: str = "") -> str:
        """The interval in words, e.g. ``"[0.48, 0.55] (90% prediction interval)"``.

        ``kind`` is the word before "interval" (empty by default); a one-sided bound reads
        ``">= 0.48 (95% lower bound)"``. Empty without an interval.
        """
        if self.low is None:
            return ""
        level = f"{self.level * 100:.12g}%"
        if math.isinf(self.high):
            return f">= {self.low:.4g} ({level} lower bound)"
        words = f"{kind} interval" if kind else "interval"
        return f"[{self.low:.4g}, {self.high:.4g}] ({level} {words})"

    def interval_dict(self) -> dict:
        """``value``, ``low``, ``high``, ``alpha`` as plain numbers (None if absent), for JSON."""

        def plain(x):
            return None if x is None else float(x)

        return {
            "value": plain(self.value),
            "low": plain(self.low),
            "high": None if self.high is None or math.isinf(self.high) else plain(self.high),
            "alpha": plain(self.alpha),
        }
