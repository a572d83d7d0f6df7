"""Monte Carlo claims of pyprog.offpolicy, on logs of tests/contextual_year.py whose value
V_t(π_e) is known at every time.

Each test states its test: a Monte Carlo mean over L independent logs is compared with the
truth within 4 standard errors (the Monte Carlo s.e. of the mean, combined with the s.e.
of the truth's own Monte Carlo constants); a paired comparison is a one-sided z-test on the
per-log differences, z > 3. The numbers (with s.e.) are in the assertion messages.
"""

import numpy as np
import pytest
from contextual_year import YEAR, YearOfRounds, block_of_year
from threadpoolctl import threadpool_limits

from pyprog.offpolicy import opfv, round_estimates
from pyprog.timeseries import PeriodBlocks

#: Monte Carlos over hundreds of logs (18 s on 2 cores): out of the default suite, in .ci/run.
pytestmark = pytest.mark.slow

BLOCKS = PeriodBlocks(YEAR, 8)


def mean_se(x, axis=0):
    x = np.asarray(x)
    return x.mean(axis=axis), x.std(axis=axis, ddof=1) / np.sqrt(x.shape[axis])


def estimates(d, estimator, **kw):
    keys = ("context", "times", "action", "reward", "pscore", "action_dist")
    return round_estimates(*(d[k] for k in keys), estimator=estimator, **kw)


def test_is_and_dr_are_unbiased_and_dr_has_lower_variance_on_stationary_logs():
    """300 stationary logs of 1,000 rounds: mean of IS and of cross-fitted DR vs V (4 s.e.);
    paired squared errors (IS − V)² − (DR − V)², one-sided z > 3."""
    gen, L = YearOfRounds("stationary"), 300
    truth, truth_se = gen.c0, gen.c0_se
    is_, dr = np.empty(L), np.empty(L)
    with threadpool_limits(1):
        for s in range(L):
            d = gen.sample(1000, np.random.default_rng(1000 + s))
            is_[s] = estimates(d, "is").value
            dr[s] = estimates(d, "dr", random_state=s).value
    for name, v in (("IS", is_), ("DR", dr)):
        m, se = mean_se(v)
        tol = 4 * np.hypot(se, truth_se)
        print(f"{name}: {m:.4f} ± {se:.4f} vs V = {truth:.4f} (per-log sd {v.std():.4f})")
        assert abs(m - truth) < tol, f"{name}: {m:.4f} ± {se:.4f} vs V = {truth:.4f}"
    diff = (is_ - truth) ** 2 - (dr - truth) ** 2
    m, se = mean_se(diff)
    ratio = np.var(is_) / np.var(dr)
    print(f"MSE(IS) − MSE(DR) = {m:.5f} ± {se:.5f} (z = {m / se:.1f}); var ratio {ratio:.2f}")
    assert m / se > 3, f"MSE(IS) − MSE(DR) = {m:.5f} ± {se:.5f}; var ratio {ratio:.2f}"


def test_per_round_estimates_are_unbiased_for_the_value_at_their_own_time():
    """200 logs with 8 seasonal blocks: per block, the mean of Ŷ_i − V_{t_i} over its rounds
    and the logs is 0 within 4 s.e., for IS and DR (q̂ with the blocks as time feature)."""
    gen, L = YearOfRounds("blocks"), 200
    err = {"IS": np.empty((L, 8)), "DR": np.empty((L, 8))}
    with threadpool_limits(1):
        for s in range(L):
            d = gen.sample(1000, np.random.default_rng(2000 + s))
            block = block_of_year(d["times"])
            count = np.bincount(block, minlength=8)
            for name, est in (
                ("IS", estimates(d, "is")),
                ("DR", estimates(d, "dr", time_feature=BLOCKS, random_state=s)),
            ):
                err[name][s] = np.bincount(block, est.values - d["value"], 8) / count
    truth_se = np.hypot(gen.c0_se, gen.c1_se)
    for name, e in err.items():
        m, se = mean_se(e)
        print(f"{name}: per-block bias {np.round(m, 4)} ± {np.round(se, 4)}")
        assert np.all(np.abs(m) < 4 * np.hypot(se, truth_se)), (
            f"{name}: per-block bias {np.round(m, 4)} ± {np.round(se, 4)}"
        )


def test_opfv_with_the_true_blocks_is_roughly_unbiased_for_a_future_value():
    """200 logs of 2,000 rounds over a year with 8 seasonal blocks; targets 20, 100 and 160
    days after the log (blocks 0, 2, 3). OPFV with the true φ: |mean − V_{t'}| < 4 s.e. +
    0.02 (the 0.02 allows for the ratio bias of P̂, O(1/n)). Stationary DR misses the
    season: its error at block 3 exceeds 4 s.e."""
    gen, L = YearOfRounds("blocks"), 200
    targets = YEAR + np.array([20.0, 100.0, 160.0])
    truth = gen.value(targets)
    est, stationary = np.empty((L, 3)), np.empty(L)
    with threadpool_limits(1):
        for s in range(L):
            d = gen.sample(2000, np.random.default_rng(3000 + s))
            keys = ("context", "times", "action", "reward", "pscore")
            res = opfv(
                *(d[k] for k in keys), gen.evaluation, targets, time_feature=BLOCKS,
                n_actions=10, random_state=s,
            )  # fmt: skip
            est[s] = res.value
            stationary[s] = estimates(d, "dr", random_state=s).value
    m, se = mean_se(est)
    ms, ses = mean_se(stationary)
    mse_opfv = ((est[:, 2] - truth[2]) ** 2).mean()
    mse_stat = ((stationary - truth[2]) ** 2).mean()
    print(f"OPFV {np.round(m, 4)} ± {np.round(se, 4)} vs V {np.round(truth, 4)}")
    print(
        f"stationary DR {ms:.4f} ± {ses:.4f}; MSE at block 3: OPFV {mse_opfv:.4f}, "
        f"DR {mse_stat:.4f}"
    )
    truth_se = np.hypot(gen.c0_se, gen.c1_se)
    assert np.all(np.abs(m - truth) < 4 * np.hypot(se, truth_se) + 0.02), (
        f"OPFV {np.round(m, 4)} ± {np.round(se, 4)} vs V {np.round(truth, 4)}"
    )
    assert abs(ms - truth[2]) > 4 * ses, f"stationary DR {ms:.4f} ± {ses:.4f} vs {truth[2]:.4f}"
    assert mse_opfv < mse_stat, f"MSE at block 3: OPFV {mse_opfv:.4f}, DR {mse_stat:.4f}"
