"""An episode forecaster is one class: a new one (a triangular kernel over the last k
episodes) is read by name, forecasts, gets intervals and takes part in ``basis="auto"`` up to
LARGE_N episodes; beyond, where backtests come from block moments it has not, it is refused by
name instead of silently never being chosen."""

import re
from dataclasses import dataclass

import numpy as np
import pytest

import pyprog
from pyprog.forecast import blocks
from pyprog.forecast.forecasters import (
    FORECASTERS,
    Forecaster,
    WindowForecaster,
    parse_forecaster,
    register_forecaster,
)
from pyprog.forecast.selection import select_forecaster


@dataclass(frozen=True)
class Triangle(Forecaster):
    """Weights 1, 2, ..., k on the last k episodes (the latest counts most)."""

    pattern = re.compile(r"^\s*triangle\(k=(?P<k>\d+)\)\s*$")
    examples = ("triangle(k=10)",)
    k: int = 10

    @classmethod
    def from_name(cls, match):
        return cls(int(match["k"]))

    def __str__(self):
        return f"triangle(k={self.k})"

    def design(self, n, delta):
        phi, phi_star = np.ones((n, 1), order="F"), np.ones(1)
        kappa = np.zeros(n)
        m = min(n, self.k)
        kappa[n - m :] = np.arange(1, m + 1)
        return phi, phi_star, kappa


@pytest.fixture
def triangle():
    register_forecaster(Triangle)
    yield Triangle
    FORECASTERS.remove(Triangle)


def test_a_new_forecaster_is_read_by_name_and_forecasts(triangle):
    fc = parse_forecaster("triangle(k=4)")
    assert fc == Triangle(4)
    np.testing.assert_allclose(fc.weights(6), [0, 0, 0.1, 0.2, 0.3, 0.4])
    J = np.random.default_rng(0).normal(size=200)
    f = pyprog.nis_forecast(J, delta=1, candidates=["linear", "triangle(k=30)"], alpha=0.1)
    assert f.model in ("linear", "triangle(k=30)")
    assert f.low < f.value < f.high


def test_auto_chooses_a_new_forecaster_where_it_fits_best(triangle):
    rng = np.random.default_rng(1)
    n = 600  # a level that jumps near the end: only a local forecaster follows it
    J = np.where(np.arange(n) < n - 40, 0.0, 3.0) + rng.normal(0.0, 0.2, n)
    sel = select_forecaster(J, 5, candidates=["linear", "fourier(d=3)", "triangle(k=30)"])
    assert str(sel.forecaster) == "triangle(k=30)"


def test_above_large_n_a_forecaster_without_block_moments_is_refused_by_name(triangle):
    n = blocks.LARGE_N + 1
    J = np.random.default_rng(2).normal(size=n)
    with pytest.raises(ValueError, match=r"triangle\(k=30\) has no long-log path"):
        pyprog.nis_forecast(J, delta=1, candidates=["linear", "triangle(k=30)"])
    assert WindowForecaster.long_logs  # the built-ins have theirs


def test_a_forecaster_without_a_pattern_cannot_be_registered():
    @dataclass(frozen=True)
    class Nameless(Forecaster):
        def design(self, n, delta):
            raise NotImplementedError

    with pytest.raises(ValueError, match="Nameless needs a pattern"):
        register_forecaster(Nameless)
    with pytest.raises(ValueError, match="must subclass Forecaster"):
        register_forecaster(int)


def test_an_unregistered_name_lists_the_registered_ones(triangle):
    with pytest.raises(ValueError, match=r"'ewma\(halflife=10\)', 'triangle\(k=10\)'"):
        parse_forecaster("median(k=3)")
