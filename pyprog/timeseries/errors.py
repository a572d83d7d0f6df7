"""The error of a forecast the log cannot support (as opposed to bad input)."""

__all__ = ["ForecastError"]


class ForecastError(ValueError):
    """No forecast: too few episodes, or a (weighted) least-squares system without a unique,
    well-conditioned solution (e.g. when most importance ratios are 0).

    A learner skips such an update instead (and counts it).
    """
