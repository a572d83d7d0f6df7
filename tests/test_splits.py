"""Splitters as objects: backtest origins, cross-fitting folds, and their registry."""

import numpy as np
import pytest

from pyprog.offpolicy.crossfit import cross_fit
from pyprog.timeseries.splits import (
    FOLDS,
    BlockedFolds,
    Folds,
    RandomFolds,
    RollingOrigin,
    check_folds,
    register_folds,
)


class TestRollingOrigin:
    @pytest.mark.parametrize("n", [12, 13, 20, 61, 500])
    @pytest.mark.parametrize("horizon", [1, 3])
    def test_origins_cover_the_later_half_evenly(self, n, horizon):
        splitter = RollingOrigin(horizon, max_origins=10)
        o = splitter.origins(n)
        assert o[0] == max(n // 2, 2) and o[-1] == n - horizon
        assert len(o) == min(10, n - horizon - max(n // 2, 2) + 1)
        assert np.all(np.diff(o) > 0)
        gaps = np.diff(o)
        assert gaps.max() - gaps.min() <= 1  # evenly spread, up to rounding

    def test_too_short_a_log_has_no_origins(self):
        assert RollingOrigin(5).origins(12).size == 0  # origins 6 and 7: 2 < 3
        assert RollingOrigin(5).get_n_splits(13) == 3
        assert RollingOrigin(5, min_origins=2).get_n_splits(12) == 2

    def test_split_fits_the_past_and_predicts_the_horizon(self):
        splits = list(RollingOrigin(3, max_origins=4).split(30))
        assert len(splits) == RollingOrigin(3, max_origins=4).get_n_splits(30) == 4
        for train, test in splits:
            np.testing.assert_array_equal(train, np.arange(len(train)))
            np.testing.assert_array_equal(test, len(train) + np.arange(3))

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"horizon": 0}, "horizon must be an integer >= 1"),
            ({"horizon": 2.0}, "horizon must be an integer >= 1"),
            ({"horizon": 1, "max_origins": 0}, "max_origins must be"),
            ({"horizon": 1, "min_origins": True}, "min_origins must be"),
        ],
    )
    def test_bad_arguments_are_named(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            RollingOrigin(**kwargs)


class TestFolds:
    @pytest.mark.parametrize("cls", [RandomFolds, BlockedFolds])
    @pytest.mark.parametrize(("n", "k"), [(10, 3), (101, 5), (7, 7)])
    def test_folds_have_equal_sizes(self, cls, n, k):
        ids = cls(k).fold_ids(np.random.default_rng(0).random(n), random_state=1)
        counts = np.bincount(ids, minlength=k)
        assert counts.sum() == n and counts.max() - counts.min() <= 1

    def test_blocked_folds_are_stretches_of_time(self):
        times = np.random.default_rng(2).random(50)
        ids = BlockedFolds(4).fold_ids(times)
        assert np.all(np.diff(ids[np.argsort(times, kind="stable")]) >= 0)

    def test_random_folds_are_the_seeded_permutation(self):
        n, k = 23, 4
        want = np.empty(n, dtype=np.int64)
        want[np.random.default_rng(9).permutation(n)] = (np.arange(n) * k) // n
        np.testing.assert_array_equal(RandomFolds(k).fold_ids(np.zeros(n), 9), want)

    def test_split_partitions_the_units(self):
        seen = []
        for train, test in RandomFolds(3).split(20, random_state=0):
            assert np.intersect1d(train, test).size == 0
            assert len(train) + len(test) == 20
            seen.append(test)
        np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(20))
        assert RandomFolds(3).get_n_splits() == 3

    def test_bad_folds_are_named(self):
        with pytest.raises(ValueError, match="n_folds must be an integer >= 2"):
            BlockedFolds(1)
        with pytest.raises(ValueError, match=r"at most the number of rounds \(3\)"):
            BlockedFolds(4).fold_ids(np.arange(3.0))
        with pytest.raises(ValueError, match="folds must be one of"):
            check_folds("shuffled")
        with pytest.raises(ValueError, match="disagrees with folds=BlockedFolds"):
            check_folds(BlockedFolds(3), 4)
        assert check_folds(BlockedFolds(3)).n_folds == 3


def _rounds(n=300, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 2))
    a = rng.integers(0, 3, n)
    return z, np.arange(n, dtype=float), a, z[:, 0] + a + rng.normal(size=n)


def test_a_folds_object_is_the_same_as_its_name():
    z, t, a, r = _rounds()
    by_name = cross_fit(z, t, a, r, 3, n_folds=3, folds="blocked")
    by_object = cross_fit(z, t, a, r, 3, folds=BlockedFolds(3))
    np.testing.assert_array_equal(by_name.q_hat, by_object.q_hat)
    assert len(by_object.models) == 3


def test_a_registered_way_of_folding_is_taken_by_name():
    class Alternating(Folds):
        """Round i in fold i mod K (for the test: interleaved in time)."""

        name = "alternating-test"

        def order(self, times, rng):
            n = len(times)
            return np.argsort(np.arange(n) % self.n_folds * n + np.arange(n), kind="stable")

    register_folds(Alternating)
    try:
        np.testing.assert_array_equal(Alternating(3).fold_ids(np.arange(9.0)), np.arange(9) % 3)
        z, t, a, r = _rounds()
        fit = cross_fit(z, t, a, r, 3, n_folds=3, folds="alternating-test")
        assert fit.q_hat.shape == (300, 3) and len(fit.models) == 3
    finally:
        del FOLDS["alternating-test"]


def test_register_folds_refuses_what_it_cannot_use():
    with pytest.raises(TypeError, match="subclass of Folds"):
        register_folds(int)

    class Nameless(Folds):
        pass

    with pytest.raises(ValueError, match=r"Nameless\.name must be a non-empty lower-case"):
        register_folds(Nameless)
