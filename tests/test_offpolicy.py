"""pyprog.offpolicy: what each estimate computes, cross-fitting, the default reward model, and
bad input (errors that name the argument). The Monte Carlo claims are in
test_offpolicy_mc.py."""

import numpy as np
import pytest
from contextual_year import YearOfRounds, as_datetime64

from pyprog.offpolicy import ActionRidge, opfv, opfv_select, round_estimates
from pyprog.offpolicy.crossfit import cross_fit, fold_ids
from pyprog.offpolicy.reward_model import action_moments
from pyprog.timeseries import Crossed, DayOfWeek, PeriodBlocks

GEN = YearOfRounds("blocks")


@pytest.fixture(scope="module")
def log():
    return GEN.sample(600, np.random.default_rng(3))


def args(log, **change):
    keys = ("context", "times", "action", "reward", "pscore", "action_dist")
    return [change.get(k, log[k]) for k in keys]


# --- what the estimates are ---------------------------------------------------------------


def test_is_snis_dm_dr_match_their_formulas(log):
    n, rows = len(log["reward"]), np.arange(len(log["reward"]))
    pi = log["action_dist"]
    w = pi[rows, log["action"]] / log["pscore"]
    est_is = round_estimates(*args(log), estimator="is")
    np.testing.assert_allclose(est_is.values, w * log["reward"])
    np.testing.assert_allclose(est_is.weights, w)
    snis = round_estimates(*args(log), estimator="snipw")
    assert snis.estimator == "snis"
    assert snis.value == pytest.approx((w * log["reward"]).sum() / w.sum())
    dr = round_estimates(*args(log), estimator="dr", random_state=0)
    dm = round_estimates(*args(log), estimator="dm", random_state=0)
    direct = (pi * dr.q_hat).sum(axis=1)
    np.testing.assert_allclose(dm.values, direct)
    np.testing.assert_allclose(
        dr.values, w * (log["reward"] - dr.q_hat[rows, log["action"]]) + direct
    )
    assert dr.values.shape == (n,) and dr.se > 0


@pytest.mark.parametrize("estimator", ["dr", "dm"])
def test_the_pooled_direct_term_is_the_mean_over_every_context(log, estimator):
    """D̄_i = 1/n Σ_j Σ_a π_e(a|x_j) q̂_k(i)(x_j, φ(t_i), a), by brute force (n² predictions)."""
    feature = PeriodBlocks(365.25, 8)
    kw = {"estimator": estimator, "time_feature": feature, "random_state": 0}
    own = round_estimates(*args(log), **kw)
    pooled = round_estimates(*args(log), pool_contexts=True, **kw)
    x, pi = log["context"], log["action_dist"]
    n, rows = len(x), np.arange(len(x))
    onehot = np.eye(8)[feature.labels(log["times"])]
    fit = cross_fit(
        np.concatenate([x, onehot], axis=1),
        log["times"],
        log["action"],
        log["reward"],
        10,
        random_state=0,
    )  # the same folds and models as the estimates'
    np.testing.assert_allclose(fit.q_hat, own.q_hat)
    brute = np.empty(n)
    for i in range(n):
        model = fit.models[fit.fold[i]]
        q_all = model.predict_all(np.concatenate([x, np.tile(onehot[i], (n, 1))], axis=1))
        brute[i] = (pi * q_all).sum(axis=1).mean()
    w = pi[rows, log["action"]] / log["pscore"]
    correction = 0.0 if estimator == "dm" else w * (log["reward"] - own.q_hat[rows, log["action"]])
    np.testing.assert_allclose(pooled.values, brute + correction, atol=1e-10)
    q_at_zero = fit.predict(np.concatenate([x, np.zeros_like(onehot)], axis=1))
    np.testing.assert_allclose(pooled.context_part, (pi * q_at_zero).sum(axis=1), atol=1e-12)
    assert own.context_part is None


def test_pooling_cuts_the_noise_of_a_block_mean_and_stays_unbiased():
    """Across 40 logs of 2,000 rounds: the mean of each block of the year, pooled vs own DR.

    Stated test: paired over logs, the squared error of the 8 block means is lower pooled
    (z < −2), and the pooled error's mean is 0 within 3 s.e. (unbiased at fixed contexts).
    """
    gen, feature = YearOfRounds("blocks"), PeriodBlocks(365.25, 8)
    sq_own, sq_pooled, err_pooled = [], [], []
    for seed in range(40):
        d = gen.sample(2000, np.random.default_rng(seed))
        block = feature.labels(d["times"])
        truth = np.bincount(block, weights=d["value"]) / np.bincount(block)
        kw = {"time_feature": feature, "random_state": seed}
        for pooled, sq in ((False, sq_own), (True, sq_pooled)):
            est = round_estimates(*args(d), pool_contexts=pooled, **kw)
            err = np.bincount(block, weights=est.values) / np.bincount(block) - truth
            sq.append((err**2).mean())
        err_pooled.append(err.mean())
    diff = np.array(sq_pooled) - np.array(sq_own)
    z = diff.mean() / (diff.std(ddof=1) / np.sqrt(diff.size))
    assert z < -2, (np.mean(sq_pooled), np.mean(sq_own), z)
    bias = np.array(err_pooled)
    assert abs(bias.mean()) < 3 * bias.std(ddof=1) / np.sqrt(bias.size)


def test_snis_normalises_within_groups(log):
    groups = (log["times"] // 30).astype(int)
    est = round_estimates(*args(log), estimator="snis", groups=groups)
    w = est.weights
    for g in np.unique(groups):
        sel = groups == g
        assert est.values[sel].mean() == pytest.approx(
            (w[sel] * log["reward"][sel]).sum() / w[sel].sum()
        )


def test_a_callable_policy_gives_the_same_estimates(log):
    a = round_estimates(*args(log), estimator="dr", random_state=1)
    b = round_estimates(
        *args(log, action_dist=GEN.evaluation), estimator="dr", n_actions=10, random_state=1
    )
    np.testing.assert_array_equal(a.values, b.values)


def test_dates_are_days_since_the_epoch(log):
    dates = as_datetime64(log["times"])
    a = round_estimates(*args(log), estimator="dr", time_feature=DayOfWeek(), random_state=2)
    b = round_estimates(
        *args(log, times=dates), estimator="dr", time_feature=DayOfWeek(), random_state=2
    )
    np.testing.assert_allclose(a.times, b.times, atol=1e-9)
    np.testing.assert_allclose(a.values, b.values, atol=1e-9)


def test_time_features():
    assert DayOfWeek().labels(np.array([0.0, 4.0, 10.5])).tolist() == [3, 0, 6]
    blocks = PeriodBlocks(365.25, 8)
    t = np.array([0.0, 45.6, 45.7, 365.24, 365.25, -1.0])
    assert blocks.labels(t).tolist() == [0, 0, 1, 7, 0, 7]
    crossed = Crossed(blocks, DayOfWeek())
    assert crossed.n_levels == 56
    assert crossed.labels(np.array([46.0])).tolist() == [1 * 7 + 0]  # 16 Feb 1970: Monday
    with pytest.raises(ValueError, match="n_blocks must be an integer >= 1"):
        PeriodBlocks(365.25, 0)
    with pytest.raises(ValueError, match="period must be a finite number > 0"):
        PeriodBlocks(-7, 7)


# --- cross-fitting and the reward model ---------------------------------------------------


class Memoriser:
    """Predicts the reward of a row it was fit on, exactly; 0 for a row it never saw."""

    def fit(self, X, y):
        self.table = {row.tobytes(): v for row, v in zip(np.asarray(X), np.asarray(y), strict=True)}
        return self

    def predict(self, X):
        return np.array([self.table.get(row.tobytes(), 0.0) for row in np.asarray(X)])


@pytest.mark.parametrize("folds", ["random", "blocked"])
def test_no_round_is_predicted_by_a_model_that_saw_it(log, folds):
    est = round_estimates(
        *args(log), estimator="dr", reward_model=Memoriser(), folds=folds, random_state=0
    )
    assert np.all(est.q_hat == 0.0)  # the memoriser never saw any round it predicted
    # without cross-fitting it would have returned the logged reward: check it can
    rows = np.arange(len(log["reward"]))
    X = np.column_stack([log["context"], np.eye(10)[log["action"]]])
    assert np.array_equal(Memoriser().fit(X, log["reward"]).predict(X), log["reward"])
    assert np.array_equal(est.fold, est.fold[rows])  # every round has a fold
    assert np.bincount(est.fold).tolist() == [120] * 5


def test_blocked_folds_are_contiguous_in_time():
    times = np.random.default_rng(0).permutation(100).astype(float)
    fold = fold_ids(times, 4, "blocked", np.random.default_rng(0))
    assert np.all(np.diff(fold[np.argsort(times)]) >= 0)
    assert np.bincount(fold).tolist() == [25] * 4


def dense_design(zs: np.ndarray, a: np.ndarray, A: int) -> np.ndarray:
    """[onehot(a), zs, zs ⊗ onehot(a)] (action-major), written out row by row."""
    n, k = zs.shape
    D = np.zeros((n, A + k + A * k))
    for i in range(n):
        D[i, a[i]] = 1.0
        D[i, A : A + k] = zs[i]
        D[i, A + k + a[i] * k : A + k + (a[i] + 1) * k] = zs[i]
    return D


def test_ridge_gcv_matches_the_brute_force_hat_matrix():
    rng = np.random.default_rng(0)
    n, k, A = 80, 3, 3
    z, a = rng.normal(size=(n, k)), rng.integers(0, A, n)
    y = z[:, 0] * (a == 1) - a + rng.normal(size=n)
    X = np.column_stack([z, np.eye(A)[a]])
    alphas = np.logspace(-3, 3, 13)
    model = ActionRidge(A, alphas=alphas).fit(X, y)
    zs = (z - z.mean(0)) / z.std(0)
    D = dense_design(zs, a, A)
    Dc, yc = D - D.mean(0), y - y.mean()
    scores = []
    for lam in alphas:
        H = Dc @ np.linalg.solve(Dc.T @ Dc + lam * np.eye(D.shape[1]), Dc.T)
        df = 1 + np.trace(H)
        rss = ((yc - H @ yc) ** 2).sum()
        scores.append(n * rss / (n - df) ** 2)
    best = int(np.argmin(scores))
    assert model.alpha_ == alphas[best]
    assert model.gcv_ == pytest.approx(scores[best], rel=1e-8)
    beta = np.linalg.solve(Dc.T @ Dc + alphas[best] * np.eye(D.shape[1]), Dc.T @ yc)
    np.testing.assert_allclose(model.predict(X), y.mean() + Dc @ beta, atol=1e-9)
    np.testing.assert_allclose(model.predict_all(z)[np.arange(n), a], model.predict(X))


def test_ridge_fold_fits_are_the_fits_on_each_training_set():
    # fit_folds takes each fold's moments once and subtracts them from the total: the
    # same models as K separate fits, on features far from 0 and with a constant column,
    # and when one fold holds every round of an action
    rng = np.random.default_rng(3)
    n, k, A = 600, 6, 4
    z = rng.normal(size=(n, k)) * [1, 10, 0.1, 1, 1, 1] + [0, 2e4, -5, 0, 0, 0]
    z[:, 3] = 7.0
    a = rng.integers(0, A, n)
    fold = rng.integers(0, 3, n)
    a[a == 3] = 2
    a[(fold == 1) & (rng.random(n) < 0.3)] = 3  # action 3 only in fold 1
    y = z[:, 0] * (a == 1) + 1e-3 * z[:, 1] + rng.normal(size=n)
    X = np.column_stack([z, np.eye(A)[a]])
    fits = ActionRidge(A).fit_folds(X, y, fold, 3)
    probe = z[:20] + rng.normal(size=(20, k))
    for f, model in enumerate(fits):
        alone = ActionRidge(A).fit(X[fold != f], y[fold != f])
        assert model.alpha_ == pytest.approx(alone.alpha_, rel=1e-9)
        np.testing.assert_allclose(model.predict_all(probe), alone.predict_all(probe),
                                   rtol=1e-9, atol=1e-9)  # fmt: skip
    assert np.ptp(z[fold != 0, 3]) == 0 and np.isfinite(fits[0].predict_all(probe)).all()


def test_ridge_moments_are_the_sums_they_name():
    rng = np.random.default_rng(0)
    z, a, y = rng.normal(size=(50, 2)), rng.integers(0, 3, 50), rng.normal(size=50)
    g = rng.integers(0, 2, 50)
    m = action_moments(z, a, y, 3, g, 2)
    u = np.column_stack([np.ones(50), z, y])
    for gi in range(2):
        for ai in range(3):
            rows = u[(g == gi) & (a == ai)]
            np.testing.assert_allclose(m[gi, ai], rows.T @ rows, atol=1e-12)


def test_any_regressor_with_fit_and_predict_works(log):
    class Mean:
        def fit(self, X, y):
            self.m = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.m)

    est = round_estimates(*args(log), estimator="dm", reward_model=Mean(), random_state=0)
    assert np.ptp(est.q_hat) < 0.3  # one constant per fold


def test_scikit_learn_regressors_work_when_installed(log):
    linear_model = pytest.importorskip("sklearn.linear_model")
    est = round_estimates(
        *args(log), estimator="dr", reward_model=linear_model.Ridge(), random_state=0
    )
    assert np.isfinite(est.values).all()


def test_opfv_with_one_block_is_stationary_dr(log):
    dr = round_estimates(*args(log), estimator="dr", random_state=4)
    one = opfv(
        *args(log)[:5], GEN.evaluation, 500.0, time_feature=PeriodBlocks(365.25, 1),
        n_actions=10, random_state=4,
    )  # fmt: skip
    assert one.n_matched[0] == 600
    np.testing.assert_allclose(one.terms[0], dr.values, atol=1e-8)


def test_opfv_at_several_targets_and_dates(log):
    targets = np.array([380.0, 470.0])
    res = opfv(
        *args(log)[:5], GEN.evaluation, targets, time_feature=PeriodBlocks(365.25, 8),
        n_actions=10, random_state=0,
    )  # fmt: skip
    dates = opfv(
        *args(log, times=as_datetime64(log["times"]))[:5], GEN.evaluation,
        as_datetime64(targets), time_feature=PeriodBlocks(365.25, 8), n_actions=10,
        random_state=0,
    )  # fmt: skip
    np.testing.assert_allclose(res.value, dates.value, atol=1e-9)
    assert res.value.shape == res.se.shape == (2,) and res.terms.shape == (2, 600)
    matched = PeriodBlocks(365.25, 8).labels(log["times"])
    assert res.n_matched.tolist() == [(matched == 0).sum(), (matched == 2).sum()]


def test_opfv_select_finds_the_blocks_of_a_strong_seasonal_truth():
    gen = YearOfRounds("blocks", amplitude=4.0, noise=0.5)
    d = gen.sample(3000, np.random.default_rng(0))
    res = opfv_select(
        d["context"], d["times"], d["action"], d["reward"], d["pscore"], gen.evaluation,
        [365.25 + 160, 365.25 + 200], n_actions=10, random_state=0,
    )  # fmt: skip
    assert all(f.n_blocks >= 8 for f in res.time_feature)
    assert np.all(np.abs(res.value - gen.value(res.at)) < 4 * res.se)


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"context": "nan"}, r"context must be finite; got nan at row 5, column 2"),
        ({"pscore": 0.0}, r"pscore must be a probability in \(0, 1\].*got 0.0 at row 5"),
        ({"pscore": 1.5}, r"pscore must be a probability in \(0, 1\].*got 1.5 at row 5"),
        ({"action_dist": "rowsum"}, r"action_dist: each row must sum to 1.*row 5 sums to 1.1"),
        ({"action_dist": "negative"}, r"action_dist must hold probabilities in \[0, 1\]"),
        ({"reward": "short"}, r"times must have one entry per round \(599\); got 600"),
        ({"action": "short"}, r"action must have one entry per round \(600\); got 599"),
        ({"action": 10}, r"action must be an integer in \[0, 10\); got 10 at row 5"),
        ({"times": "nat"}, r"times must not hold missing dates \(NaT\); got NaT at row 5"),
        ({"reward": "inf"}, r"reward must be finite; got inf at row 5"),
    ],
)
def test_bad_input_names_the_argument(log, change, match):
    d = {k: np.array(v, copy=True) for k, v in log.items()}
    ((key, how),) = change.items()
    if how == "nan":
        d[key][5, 2] = np.nan
    elif how == "rowsum":
        d[key][5, 0] += 0.1
    elif how == "negative":
        d[key][5, 0] = -0.1
    elif how == "short":
        d[key] = d[key][:-1]
    elif how == "nat":
        d[key] = as_datetime64(d[key])
        d[key][5] = np.datetime64("NaT")
    elif how == "inf":
        d[key][5] = np.inf
    else:
        d[key][5] = how
    with pytest.raises(ValueError, match=match):
        round_estimates(*args(d), estimator="dr")


class Failing:
    def fit(self, X, y):
        raise RuntimeError("singular matrix")

    def predict(self, X):
        return np.zeros(len(X))


class NaNModel(Failing):
    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.full(len(X), np.nan)


def test_a_failing_reward_model_is_named(log):
    failed = r"reward_model Failing: fit raised RuntimeError on fold 1 of 5 \(480 rounds\)"
    with pytest.raises(ValueError, match=failed):
        round_estimates(*args(log), reward_model=Failing())
    with pytest.raises(ValueError, match=r"reward_model NaNModel \(fold 1 of 5\): predicted nan"):
        round_estimates(*args(log), reward_model=NaNModel())
    with pytest.raises(ValueError, match="reward_model must have fit"):
        round_estimates(*args(log), reward_model=object())
    with pytest.raises(ValueError, match=r"reward_model NaNModel \(fold 1 of 5\)"):
        opfv(
            *args(log)[:5], GEN.evaluation, 400.0, time_feature=PeriodBlocks(365.25, 8),
            n_actions=10, reward_model=NaNModel(),
        )  # fmt: skip


def test_bad_options_are_named(log):
    with pytest.raises(ValueError, match="estimator must be one of"):
        round_estimates(*args(log), estimator="magic")
    with pytest.raises(ValueError, match="n_folds must be an integer >= 2"):
        round_estimates(*args(log), n_folds=1)
    with pytest.raises(ValueError, match="folds must be one of"):
        round_estimates(*args(log), folds="shuffled")
    with pytest.raises(ValueError, match="n_actions is required"):
        round_estimates(*args(log, action_dist=GEN.evaluation))
    with pytest.raises(ValueError, match="time_feature must be a time feature"):
        round_estimates(*args(log), time_feature=8)
    with pytest.raises(ValueError, match="pool_contexts must be True or False"):
        round_estimates(*args(log), pool_contexts="yes")

    class Mean:
        def fit(self, X, y):
            self.m = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.m)

    with pytest.raises(ValueError, match="pool_contexts=True needs a reward model affine"):
        round_estimates(*args(log), pool_contexts=True, reward_model=Mean())
    with pytest.raises(ValueError, match="policy must be a callable"):
        opfv(*args(log)[:5], log["action_dist"], 400.0, time_feature=DayOfWeek(), n_actions=10)
    with pytest.raises(ValueError, match=r"policy\(context, times\): each row must sum to 1"):
        opfv(
            *args(log)[:5], lambda x, t: np.full((len(t), 10), 0.2), 400.0,
            time_feature=DayOfWeek(), n_actions=10,
        )  # fmt: skip
    early = np.array(log["times"]) % 100.0  # every round in the first 100 days of a year
    with pytest.raises(ValueError, match="no logged round has the level 7 of the target"):
        opfv(
            *args(log, times=early)[:5], GEN.evaluation, 360.0,
            time_feature=PeriodBlocks(365.25, 8), n_actions=10,
        )  # fmt: skip


@pytest.mark.parametrize("resolution", ["distinct", "days"])
def test_canonical_order_sorts_ties_by_every_field(resolution):
    # sorted by time; only tied rows are ordered by the other fields (a shuffled log and
    # its original give the same rows in the same order), as a full lexsort would
    from pyprog.logs.rounds import check_rounds

    rng = np.random.default_rng(1)
    n = 300
    t = rng.uniform(0, 30, n) if resolution == "distinct" else rng.integers(0, 30, n) * 1.0
    ctx = rng.integers(0, 2, (n, 3)) * 1.0
    a, r = rng.integers(0, 3, n), rng.integers(0, 2, n) * 1.0
    log = check_rounds(ctx, t, a, r, np.full(n, 0.5), 3)
    keys = [ctx[:, 2], ctx[:, 1], ctx[:, 0], log.pscore, r, a, t]
    assert log.canonical_order().tolist() == np.lexsort(keys).tolist()
    shuffled = rng.permutation(n)
    again = check_rounds(ctx[shuffled], t[shuffled], a[shuffled], r[shuffled],
                         np.full(n, 0.5), 3)  # fmt: skip
    first, second = log.take(log.canonical_order()), again.take(again.canonical_order())
    np.testing.assert_array_equal(first.context, second.context)
    np.testing.assert_array_equal(first.reward, second.reward)
