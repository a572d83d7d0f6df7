"""A replay is the run it replays, with what the policy chose recorded."""

import numpy as np
import pytest

from pyprog import run
from pyprog.learn.hyperparams import paper_hyper
from pyprog.runner.replay import replay


@pytest.mark.parametrize(
    ("env", "algo", "episodes"), [("reco", "pro-ols", 40), ("diabetes", "onpg", 6)]
)
def test_replay_returns_equal_the_runs(env, algo, episodes):
    hyper = paper_hyper(env, algo, 3).replace(delta=1, inner_steps=2)  # updates from episode 2
    ran = run(env, algo, speed=3, seed=5, episodes=episodes, hyper=hyper)
    again = replay(env, algo, speed=3, seed=5, episodes=episodes, hyper=hyper)
    np.testing.assert_array_equal(again.returns, ran.returns)
    assert again.probes.shape == (episodes, 0) and again.hyper == hyper


def test_probe_sees_the_policy_before_each_episode():
    hyper = paper_hyper("diabetes", "pro-wls", 2).replace(delta=1, inner_steps=3, lr=0.05)
    r = replay(
        "diabetes",
        "pro-wls",
        speed=2,
        seed=0,
        episodes=6,  # d = 4: the first update that moves the mean is the fifth episode's
        hyper=hyper,
        probe=lambda policy: policy.mean(np.ones(1)),
    )
    assert r.probes.shape == (6, 2)
    np.testing.assert_allclose(r.probes[0], [16.5, 27.5])  # theta = 0: the box's centre
    assert not np.array_equal(r.probes[-1], r.probes[0])  # the updates moved the mean
    assert ((r.probes >= [3, 5]) & (r.probes <= [30, 50])).all()
    assert 0 <= r.env_seed < 2**32


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="episodes"):
        replay("reco", "onpg", speed=1, seed=0, episodes=0)
    with pytest.raises(ValueError, match="seed"):
        replay("reco", "onpg", speed=1, seed=-1)
    with pytest.raises(ValueError, match="unknown env"):
        replay("cartpole", "onpg", speed=1, seed=0)
    with pytest.raises(TypeError):
        replay("reco", "onpg", 1, 0)  # keyword-only, as pyprog.run
