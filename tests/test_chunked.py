"""A log read in chunks gives the forecast of the whole (issue 51): bins, folds, reward model
and support diagnostics from sums that merge."""

import numpy as np
import pytest
import scipy.stats

import pyprog.value.forecast as value_forecast
from pyprog.logs.chunks import ArraySource, Chunk, RoundSource
from pyprog.logs.rounds import check_rounds
from pyprog.offpolicy.chunked import TIME_GRAIN, Plan
from pyprog.offpolicy.reward_model import ActionRidge
from pyprog.offpolicy.support import WeightSums, support_diagnostics
from pyprog.timeseries.splits import HashedFolds
from pyprog.value.bins import BinSums, bin_estimates
from pyprog.value.forecast import forecast_value


def year(n: int = 6000, seed: int = 0) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 365, n))
    x = rng.normal(size=(n, 3))
    a = rng.integers(0, 3, n)
    r = (a == 1) * (1 + np.sin(2 * np.pi * t / 365.25)) + 0.3 * x[:, 0] + rng.normal(0, 1, n)
    log = {"time": t, "x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "action": a, "reward": r,
           "pscore": np.full(n, 1 / 3)}  # fmt: skip
    return log, np.tile([0.2, 0.6, 0.2], (n, 1))


# -- the sums ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_bin_sums_merged_in_any_order_are_the_whole_logs(seed):
    rng = np.random.default_rng(seed)
    t, v = rng.uniform(0, 40, 3000), rng.normal(5.0, 2.0, 3000) + 1e6  # a large mean
    whole = BinSums.of(v, t)
    parts = np.array_split(rng.permutation(3000), 7)
    merged = BinSums.of(v[parts[0]], t[parts[0]])
    for p in parts[1:]:
        merged = merged.merge(BinSums.of(v[p], t[p]))
    for name in ("key", "count", "t_sum", "mean"):
        np.testing.assert_allclose(getattr(merged, name), getattr(whole, name), rtol=1e-13)
    np.testing.assert_allclose(merged.m2, whole.m2, rtol=1e-9)  # no cancellation at 1e6
    direct = np.array([np.sum((v[np.floor(t) == k] - v[np.floor(t) == k].mean()) ** 2)
                       for k in whole.key])  # fmt: skip
    np.testing.assert_allclose(whole.m2, direct, rtol=1e-9)


def test_bin_noise_is_the_pooled_within_bin_variance_or_rice_on_single_rounds():
    rng = np.random.default_rng(1)
    t, v = rng.uniform(0, 50, 2000), rng.normal(0, 3.0, 2000)
    sums = BinSums.of(v, t)
    b = bin_estimates(v, t)
    pooled = sums.m2.sum() / (sums.count - 1).sum()
    np.testing.assert_allclose(sums.noise(), pooled / b.count)
    # one round a day: half the mean squared difference of consecutive rounds (Rice 1984)
    t1 = np.arange(60.0) + 0.5
    v1 = rng.normal(size=60)
    np.testing.assert_allclose(BinSums.of(v1, t1).noise(), 0.5 * np.mean(np.diff(v1) ** 2))
    with pytest.raises(ValueError, match="cannot merge bins of 1 and 2 days"):
        sums.merge(BinSums.of(v, t, 2.0))


def test_the_reward_models_fold_moments_add_up_over_chunks():
    rng = np.random.default_rng(2)
    z, a = rng.normal(size=(900, 3)), rng.integers(0, 3, 900)
    y = z[:, 0] * (a == 1) + rng.normal(0, 0.5, 900)
    X = np.column_stack([z, np.eye(3)[a]])
    fold = rng.integers(0, 5, 900)
    ridge, shift = ActionRidge(3), z[:300].mean(axis=0)
    whole = ridge.from_fold_moments(ridge.fold_moments(z, a, y, fold, 5, shift), shift)
    parts = sum(ridge.fold_moments(z[s], a[s], y[s], fold[s], 5, shift)
                for s in np.array_split(np.arange(900), 4))  # fmt: skip
    chunked = ridge.from_fold_moments(parts, shift)
    for m1, m2 in zip(whole, chunked, strict=True):
        np.testing.assert_allclose(m1.predict_all(z), m2.predict_all(z), rtol=1e-10, atol=1e-12)
    direct = ridge.fit_folds(X, y, fold, 5)  # about the whole mean: the same fits
    np.testing.assert_allclose(direct[0].predict_all(z), whole[0].predict_all(z), atol=1e-9)


def test_weight_sums_merge_into_the_whole_logs_support():
    rng = np.random.default_rng(3)
    n = 1000
    ps = np.where(rng.random(n) < 0.01, 5e-4, 0.5)
    a = rng.integers(0, 2, n)
    r = check_rounds(None, np.arange(n) / 10.0, a, np.zeros(n), ps, 2)
    dist = rng.dirichlet([1, 1], size=n)
    w = dist[np.arange(n), a] / ps
    half = Chunk(r).rows(0, 400).rounds, Chunk(r).rows(400, n).rounds
    merged = WeightSums.of(w[:400], half[0]).merge(WeightSums.of(w[400:], half[1]))
    counts = np.unique(np.floor(r.times), return_counts=True)[1]
    a, b = merged.support(counts), support_diagnostics(dist, r)
    assert (a.n_rounds, a.rounds_per_bin, list(a.rare_actions)) == (
        b.n_rounds, b.rounds_per_bin, list(b.rare_actions)
    )  # fmt: skip
    np.testing.assert_allclose([a.ess, a.max_weight_share, a.rare_mass],
                               [b.ess, b.max_weight_share, b.rare_mass], rtol=1e-12)  # fmt: skip


# -- the folds ------------------------------------------------------------------------------


def test_hashed_folds_do_not_see_the_action_or_the_reward_and_are_balanced():
    log, _ = year(n=20_000)
    r = check_rounds(np.column_stack([log["x0"], log["x1"]]), log["time"], log["action"],
                     log["reward"], log["pscore"], 3)  # fmt: skip
    plan = Plan(("is",), {}, 3, (0.0, 365.0), np.zeros(2), seed=7)
    fold = plan.folds(r)
    other = check_rounds(r.context, r.times, (r.action + 1) % 3, -r.reward, r.pscore / 2, 3)
    assert np.array_equal(fold, plan.folds(other))  # what was played and earned: no matter
    shuffled = np.random.default_rng(0).permutation(r.n)
    assert np.array_equal(plan.folds(r.take(shuffled)), fold[shuffled])  # order-free
    counts = np.bincount(fold, minlength=5)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3, counts  # a uniform multinomial
    # independent of the reward: the folds' mean rewards agree (one-way ANOVA)
    groups = [r.reward[fold == k] for k in range(5)]
    assert scipy.stats.f_oneway(*groups).pvalue > 1e-3
    # a date and its number of days (equal but for the last bits) fall in one fold
    wobble = check_rounds(r.context, r.times * (1 + 1e-15), r.action, r.reward, r.pscore, 3)
    assert np.array_equal(plan.folds(wobble), fold) and TIME_GRAIN == 1e-4
    other_seed = Plan(("is",), {}, 3, (0.0, 365.0), np.zeros(2), seed=8).folds(r)
    assert (other_seed != fold).mean() > 0.7


def test_hashed_folds_refuse_bad_arguments():
    with pytest.raises(ValueError, match="n_folds must be an integer >= 2; got 1"):
        HashedFolds(1)
    with pytest.raises(ValueError, match="at least one column"):
        HashedFolds(2).fold_ids([])
    assert HashedFolds.seed_of(5) == 5 and HashedFolds.seed_of(np.random.default_rng(0)) >= 0


# -- the forecast in chunks ------------------------------------------------------------------


@pytest.mark.parametrize("rows", [997, 2500])
def test_a_log_in_chunks_gives_the_forecast_of_the_whole(monkeypatch, rows):
    log, pi = year()
    whole = forecast_value(log, pi, at=[380.0, 450.0])
    monkeypatch.setattr(value_forecast, "CHUNK_ROWS", rows)
    chunked = forecast_value(log, pi, at=[380.0, 450.0])
    for a, b in zip(chunked, whole, strict=True):
        assert (a.model, a.estimator) == (b.model, b.estimator)
        np.testing.assert_allclose([a.value, a.low, a.high, a.se],
                                   [b.value, b.low, b.high, b.se], rtol=1e-9)  # fmt: skip
        assert a.support.ess == pytest.approx(b.support.ess, rel=1e-12)


def test_a_policy_that_changes_with_time_in_chunks(monkeypatch):
    log, _ = year(n=3000)

    def policy(x, t):
        p = np.where(t[:, None] < 370.0, [0.2, 0.6, 0.2], [0.6, 0.2, 0.2])
        return np.broadcast_to(p, (len(t), 3)).copy()

    whole = forecast_value(log, policy, at=[368.0, 380.0], n_actions=3)
    monkeypatch.setattr(value_forecast, "CHUNK_ROWS", 700)
    chunked = forecast_value(log, policy, at=[368.0, 380.0], n_actions=3)
    assert whole[0].value != pytest.approx(whole[1].value, rel=0.05)  # two policies
    for a, b in zip(chunked, whole, strict=True):
        np.testing.assert_allclose([a.value, a.low, a.high], [b.value, b.low, b.high], rtol=1e-9)


def test_snis_and_another_reward_model_read_the_whole_log_at_once(monkeypatch):
    log, pi = year(n=2000)
    whole = forecast_value(log, pi, at=380.0, estimator="snis")
    monkeypatch.setattr(value_forecast, "CHUNK_ROWS", 300)
    assert forecast_value(log, pi, at=380.0, estimator="snis").value == whole.value

    class Streamed(RoundSource):  # chunks that no memory holds whole
        def __init__(self, src):
            self.src = src

        scan = property(lambda self: self.src.scan)
        chunks = lambda self: self.src.chunks()  # noqa: E731

    chunk, _, _ = value_forecast.rounds_of(
        log, {"time": "time", "context": "x", "action": "action", "reward": "reward",
              "pscore": "pscore"}, pi, None)  # fmt: skip
    with pytest.raises(ValueError, match="estimator 'snis' normalises over the whole log"):
        value_forecast._estimator_kinds("snis", Streamed(ArraySource(chunk, 300)))


def test_hashed_folds_keep_dr_unbiased_where_many_rounds_share_a_time():
    # no context, whole-day times, binary rewards: every round of a day shares its fold
    # (day-blocked folds), yet the fold never sees the action or the reward, so DR's mean
    # over the log stays unbiased for V(π_e) (200 logs; a z-test at |z| < 4)
    from pyprog.logs.rounds import check_rounds as rounds
    from pyprog.value.gather import estimate_bins

    p0, pe, q = np.array([0.7, 0.3]), np.array([0.2, 0.8]), np.array([0.3, 0.6])
    truth, n = float(pe @ q), 2000
    rng = np.random.default_rng(5)
    means = []
    for seed in range(200):
        t = np.floor(rng.uniform(0, 60, n))
        a = (rng.random(n) < p0[1]).astype(int)
        r = (rng.random(n) < q[a]).astype(float)
        log = rounds(None, t, a, r, p0[a], 2)
        plan = Plan(("dr",), {"": None}, 2, (0.0, 59.0), np.zeros(0), seed=seed)
        gathered, _ = estimate_bins(ArraySource(Chunk(log, np.tile(pe, (n, 1)))), plan, 1.0)
        g = gathered["log"].values["dr"]
        means.append(float(g.count @ g.mean) / n)
    se = np.std(means, ddof=1) / np.sqrt(len(means))
    assert abs(np.mean(means) - truth) < 4 * se, (np.mean(means), truth, se)


def test_chunks_on_threads_give_the_numbers_of_one_thread(monkeypatch):
    import pyprog.logs.chunks as chunks

    log, pi = year(n=3000)
    monkeypatch.setattr(value_forecast, "CHUNK_ROWS", 400)
    monkeypatch.setattr(chunks, "workers", lambda: 2)
    threaded = forecast_value(log, pi, at=[380.0, 420.0])
    monkeypatch.setattr(chunks, "workers", lambda: 1)
    alone = forecast_value(log, pi, at=[380.0, 420.0])
    for a, b in zip(threaded, alone, strict=True):  # merged in the chunks' order: the same bits
        assert (a.value, a.low, a.high, a.se) == (b.value, b.low, b.high, b.se)
