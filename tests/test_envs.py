"""NS-Reco and NS-Reacher against SPEC §5 and the authors' reference dynamics."""

from __future__ import annotations

import doctest
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gym_checks import check_env
from gymnasium.utils import seeding

import pyprog  # noqa: F401  (importing pyprog registers the environments)
from pyprog.envs import ENV_IDS as IDS
from pyprog.envs import reacher as reacher_module
from pyprog.envs import reco as reco_module
from pyprog.envs.reacher import NSReacher
from pyprog.envs.reco import NSReco


def _no_warnings(fn, *args, **kwargs) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    assert [str(w.message) for w in caught] == []


# ----------------------------------------------------------------------------- both


@pytest.mark.parametrize("env_id", ["pyprog/NSReco-v0", "pyprog/NSReacher-v0"])
def test_check_env_passes_without_warnings(env_id: str) -> None:
    env = gym.make(env_id)  # has a spec, so check_env also exercises spec.make()
    _no_warnings(check_env, env.unwrapped)
    direct = NSReco(speed=0) if "Reco" in env_id else NSReacher(speed=0, horizon=1)
    _no_warnings(check_env, direct, skip_render_check=True)


def test_every_registered_env_makes() -> None:
    # NS-Diabetes has its own check_env test (its action box is not symmetric, by SPEC)
    for env_id in IDS:
        assert gym.make(env_id).unwrapped.spec.id == env_id


def test_gymnasium_make_forwards_kwargs_and_runs() -> None:
    env = gym.make("pyprog/NSReacher-v0", speed=3, horizon=13)
    assert isinstance(env.unwrapped, NSReacher)
    assert (env.unwrapped.speed, env.unwrapped.horizon) == (3.0, 13)
    obs, info = env.reset(seed=0)
    assert obs.tolist() == [0.5, 0.5] and info["episode"] == 1
    obs, reward, *_ = env.step(env.action_space.sample())
    assert obs in env.observation_space and reward in (-0.5, 99.5)

    env = gym.make("pyprog/NSReco-v0", speed=0)
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(np.int64(4))
    assert terminated and info["expected_reward"] == env.unwrapped.amplitude[4]


@pytest.mark.parametrize("module", [reco_module, reacher_module], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("cls", [NSReco, NSReacher])
@pytest.mark.parametrize("speed", [-1, -1e-9, math.nan, math.inf, "2", None, True])
def test_bad_speed_raises(cls, speed) -> None:
    with pytest.raises(ValueError, match="speed"):
        cls(speed=speed)


@pytest.mark.parametrize("cls", [NSReco, NSReacher])
def test_render_mode_other_than_none_raises(cls) -> None:
    with pytest.raises(ValueError, match="render_mode"):
        cls(render_mode="rgb_array")


ONE_PAST_THE_END = object()


@pytest.mark.parametrize(("cls", "n"), [(NSReco, 5), (NSReacher, 4)])
@pytest.mark.parametrize(
    "action", [-1, ONE_PAST_THE_END, 1.0, np.float64(1.0), np.array([1]), "1", None]
)
def test_bad_action_raises_with_valid_range(cls, n: int, action) -> None:
    env = cls()
    env.reset(seed=0)
    bad = n if action is ONE_PAST_THE_END else action
    with pytest.raises(ValueError, match=rf"action.*\[0, {n - 1}\]"):
        env.step(bad)


@pytest.mark.parametrize("cls", [NSReco, NSReacher])
def test_numpy_integer_actions_are_accepted(cls) -> None:
    for action in (np.int64(1), np.array(1), np.uint8(1)):
        env = cls()
        env.reset(seed=0)
        env.step(action)


# ----------------------------------------------------------------------------- NS-Reco


@pytest.mark.parametrize("speed", [0, 1, 2, 4.5])
def test_reco_constants_match_spec(speed: float) -> None:
    env = NSReco(speed=speed)
    np.testing.assert_array_equal(env.amplitude, np.random.RandomState(1).rand(5))
    np.testing.assert_array_equal(env.frequency, np.random.RandomState(0).rand(5) * speed * 0.005)
    np.testing.assert_array_equal(env.noise_std, np.random.RandomState(0).rand(5) * 0.01)
    assert env.action_space == gym.spaces.Discrete(5)
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    with pytest.raises(ValueError):
        env.amplitude[0] = 1.0  # constants are read-only


def test_reco_mean_is_zero_at_time_zero_when_nonstationary() -> None:
    env = NSReco(speed=2)
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs.tolist() == [1.0] and info == {"time": 0}
    obs, _, terminated, truncated, info = env.step(0)
    assert obs.tolist() == [1.0] and terminated and not truncated
    assert info["time"] == 0
    assert info["expected_rewards"].tolist() == [0.0] * 5
    assert info["best_expected_reward"] == 0.0 and info["regret"] == 0.0
    # Time 1 already differs from 0 for every item.
    _, _, _, _, info = env.step(0)
    assert np.all(info["expected_rewards"] > 0)


def test_reco_stationary_means_are_the_amplitudes_at_every_step() -> None:
    env = NSReco(speed=0)
    env.reset(seed=0, options={"time": 12345})
    amplitude = np.random.RandomState(1).rand(5)
    for action in [0, 1, 2, 3, 4, 1]:
        _, _, _, _, info = env.step(action)
        np.testing.assert_array_equal(info["expected_rewards"], amplitude)
        assert info["best_expected_reward"] == amplitude.max()
        assert info["expected_reward"] == amplitude[action]
    np.testing.assert_array_equal(env.expected_rewards([0, 7, 10**6]), np.tile(amplitude, (3, 1)))


def test_reco_time_persists_across_resets_and_can_be_set() -> None:
    env = NSReco(speed=1)
    times = []
    for i in range(6):
        # Plain resets, reseeding resets and no reset at all: none of them rewinds time.
        if i % 3 == 0:
            env.reset()
        elif i % 3 == 1:
            _, info = env.reset(seed=i)
            assert info["time"] == i
        times.append(env.step(0)[4]["time"])
    assert times == [0, 1, 2, 3, 4, 5] and env.time == 6

    _, info = env.reset(options={"time": 500})
    assert info == {"time": 500}
    _, _, _, _, info = env.step(2)
    assert info["time"] == 500
    np.testing.assert_array_equal(info["expected_rewards"], env.expected_rewards(500))
    env.reset()
    assert env.step(2)[4]["time"] == 501


@pytest.mark.parametrize("options", [{"time": -1}, {"time": 1.5}, {"time": True}, {"episode": 3}])
def test_reco_bad_reset_options_raise(options) -> None:
    with pytest.raises(ValueError, match="time"):
        NSReco().reset(options=options)


@pytest.mark.parametrize("speed", [1, 3])
def test_reco_regret_and_noise_are_exact(speed: float) -> None:
    seed, n_steps = 7, 400
    env = NSReco(speed=speed)
    env.reset(seed=seed)
    actions = np.random.default_rng(1).integers(0, 5, n_steps)

    # The SPEC's formulas, written out independently of the environment.
    amplitude = np.random.RandomState(1).rand(5)
    frequency = np.random.RandomState(0).rand(5) * speed * 0.005
    std = np.random.RandomState(0).rand(5) * 0.01
    noise_rng = seeding.np_random(seed)[0]

    regret = expected_regret = 0.0
    for k, action in enumerate(actions):
        _, reward, _, _, info = env.step(action)
        mu = amplitude * np.sin(k * frequency)
        noise = noise_rng.standard_normal(5) * std  # all 5 items drawn every step
        assert info["time"] == k
        np.testing.assert_allclose(info["expected_rewards"], mu, rtol=0, atol=1e-15)
        assert info["best_expected_reward"] == pytest.approx(mu.max(), abs=1e-15)
        assert info["expected_reward"] == pytest.approx(mu[action], abs=1e-15)
        assert reward == pytest.approx((mu + noise)[action], abs=1e-15)
        regret += info["regret"]
        expected_regret += mu.max() - mu[action]
    assert regret == pytest.approx(expected_regret, rel=1e-12)
    assert regret > 0  # random actions do lose something


def test_reco_expected_rewards_is_vectorised_and_agrees_with_step() -> None:
    env = NSReco(speed=2)
    env.reset(seed=0)
    stepped = np.array([env.step(1)[4]["expected_rewards"] for _ in range(300)])
    np.testing.assert_array_equal(env.expected_rewards(np.arange(300)), stepped)
    assert env.expected_rewards(np.zeros((2, 3))).shape == (2, 3, 5)
    assert env.expected_rewards(4).shape == (5,)


def test_reco_same_seed_same_rewards() -> None:
    def rewards(seed: int) -> list[float]:
        env = NSReco(speed=2)
        env.reset(seed=seed)
        return [env.step(a % 5)[1] for a in range(50)]

    assert rewards(11) == rewards(11)
    assert rewards(11) != rewards(12)


# ----------------------------------------------------------------------------- NS-Reacher


def _noiseless(**kwargs) -> NSReacher:
    env = NSReacher(**kwargs)
    env.slip_prob = 0.0  # every sub-move goes where the action points
    env.reset(seed=0)
    return env


def test_reacher_spaces_and_start() -> None:
    env = NSReacher()
    assert env.action_space == gym.spaces.Discrete(4)
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (2,), np.float64)
    for _ in range(3):
        obs, _ = env.reset()
        assert obs.dtype == np.float64 and obs.tolist() == [0.5, 0.5]
        env.step(2)


def test_reacher_goal_of_first_episode_and_counter() -> None:
    env = NSReacher(speed=2)
    assert env.episode == 0
    _, info = env.reset(seed=0)
    f = 2 * 0.001
    expected = [(0.9 * math.sin(f) + 1) / 2, (0.9 * math.cos(f) + 1) / 2]
    assert info["episode"] == 1
    np.testing.assert_allclose(info["goal"], expected, rtol=0, atol=1e-15)
    assert not info["goal"].flags.writeable

    assert [env.reset()[1]["episode"] for _ in range(3)] == [2, 3, 4]
    _, info = env.reset(options={"episode": 1000})
    np.testing.assert_allclose(
        info["goal"], [(0.9 * math.sin(2.0) + 1) / 2, (0.9 * math.cos(2.0) + 1) / 2], atol=1e-15
    )
    assert env.reset()[1]["episode"] == 1001

    assert NSReacher(speed=0).reset()[1]["goal"].tolist() == [0.5, 0.95]
    assert env.goal_center(np.arange(6).reshape(2, 3)).shape == (2, 3, 2)


@pytest.mark.parametrize("options", [{"episode": -1}, {"episode": 2.0}, {"time": 3}])
def test_reacher_bad_reset_options_raise(options) -> None:
    with pytest.raises(ValueError, match="episode"):
        NSReacher().reset(options=options)


def test_reacher_wall_stops_the_action() -> None:
    env = _noiseless()
    xs = []
    for _ in range(6):  # left: 3 sub-moves of 0.045 per action until the wall
        obs, reward, terminated, truncated, _ = env.step(3)
        assert reward == -0.5 and not terminated and not truncated
        assert obs[1] == 0.5
        xs.append(obs[0])
    # 0.5 -> 0.365 -> 0.23 -> 0.095 -> 0.005 (third sub-move, to -0.04, refused) -> 0.005 ...
    np.testing.assert_allclose(xs, [0.365, 0.23, 0.095, 0.005, 0.005, 0.005], atol=1e-12)
    assert xs[3] == xs[4] == xs[5]


def test_reacher_wall_check_is_inclusive() -> None:
    env = _noiseless()
    env._x = 0.91  # no public setter; 0.91 + 0.045 + 0.045 == 1.0 exactly in float64
    obs, reward, *_ = env.step(1)
    assert obs.tolist() == [1.0, 0.5] and reward == -0.5  # on the wall is inside the square
    obs, *_ = env.step(1)
    assert obs.tolist() == [1.0, 0.5]


def test_reacher_goal_gives_100_once_and_terminates() -> None:
    env = _noiseless(speed=2)  # goal of episode 1 is centred near (0.501, 0.95): straight up
    rewards, flags = [], []
    for _ in range(4):
        obs, reward, terminated, truncated, _ = env.step(0)
        rewards.append(reward)
        flags.append((terminated, truncated))
    assert rewards == [-0.5, -0.5, -0.5, 99.5]
    assert flags == [(False, False)] * 3 + [(True, False)]
    # The 4th action stops on entering the goal (y = 0.95), it does not overshoot to 1.0.
    np.testing.assert_allclose(obs, [0.5, 0.95], atol=1e-12)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)  # no second +100 from the goal
    assert env.reset()[1]["episode"] == 2


@pytest.mark.parametrize(("x", "reached"), [(0.475, True), (0.525, True), (0.5251, False)])
def test_reacher_goal_bounds_are_inclusive(x: float, reached: bool) -> None:
    env = _noiseless(speed=0)  # goal x-range is [0.5 - 0.025, 0.5 + 0.025] = [0.475, 0.525] exactly
    env._x = x  # no public setter; walk straight up along the goal's edge (or just outside it)
    results = [env.step(0)[1:3] for _ in range(4)]
    assert results[-1] == ((99.5, True) if reached else (-0.5, False))


def test_reacher_goal_on_the_last_action_is_termination_not_truncation() -> None:
    env = _noiseless(horizon=4)
    results = [env.step(0)[1:4] for _ in range(4)]
    assert results[-1] == (99.5, True, False)


@pytest.mark.parametrize("horizon", [1, 3, 15])
def test_reacher_truncates_at_horizon(horizon: int) -> None:
    env = _noiseless(horizon=horizon)
    for t in range(1, horizon + 1):
        _, reward, terminated, truncated, _ = env.step(2)  # down, away from the goal
        assert reward == -0.5 and not terminated
        assert truncated == (t == horizon)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(2)


def test_reacher_default_horizon_is_the_papers_15() -> None:
    assert NSReacher().horizon == 15


@pytest.mark.parametrize("horizon", [0, -3, 1.5, 15.0, True, "15", None])
def test_reacher_bad_horizon_raises(horizon) -> None:
    with pytest.raises(ValueError, match="horizon"):
        NSReacher(horizon=horizon)


def test_reacher_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        NSReacher().step(0)


def _reference_episodes(seed: int, actions: np.ndarray, speed: float, horizon: int):
    """The authors' NS_Reacher.step (discrete, no obstacles), step by step, with our rng."""
    rng = seeding.np_random(seed)[0]
    motions = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], dtype=float)
    step_unit, f = 0.045, speed * 0.001
    out, episode, i = [], 0, 0
    while i < len(actions):
        episode += 1
        gx, gy = (0.9 * np.sin(episode * f) + 1) / 2.0, (0.9 * np.cos(episode * f) + 1) / 2.0
        goal = (gx - 0.025, gy - 0.025, gx + 0.025, gy + 0.025)
        pos = np.array([0.5, 0.5])
        for t in range(1, horizon + 1):
            if i == len(actions):
                break
            reward, done = -0.5, False
            for _ in range(3):
                if rng.random() < 0.25:
                    delta = rng.random(2) / 1.415 * step_unit
                else:
                    delta = motions[actions[i]] * step_unit
                new = pos + delta
                if not (0 <= new[0] <= 1 and 0 <= new[1] <= 1):
                    break
                pos = new
                if goal[0] <= pos[0] <= goal[2] and goal[1] <= pos[1] <= goal[3]:
                    reward, done = reward + 100, True
                    break
            out.append((pos.tolist(), reward, done, not done and t == horizon))
            i += 1
            if done:
                break
    return out


@pytest.mark.parametrize(("seed", "speed", "horizon"), [(0, 2, 15), (5, 4, 13), (9, 0, 4)])
def test_reacher_matches_reference_draw_order(seed: int, speed: float, horizon: int) -> None:
    # Actions biased towards up/right so that goals and walls are both hit regularly.
    actions = np.random.default_rng(seed + 100).choice(4, size=3000, p=[0.4, 0.3, 0.15, 0.15])
    expected = _reference_episodes(seed, actions, speed, horizon)

    env = NSReacher(speed=speed, horizon=horizon)
    env.reset(seed=seed)
    got = []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        got.append((obs.tolist(), reward, terminated, truncated))
        if terminated or truncated:
            env.reset()
    assert got == expected
    assert sum(r > 0 for _, r, _, _ in got) > 5  # the goal was reached repeatedly
    assert sum(max(pos) > 1 - 0.045 for pos, *_ in got) > 5  # and walls were within reach


def test_reacher_same_seed_same_trajectory() -> None:
    actions = np.random.default_rng(0).integers(0, 4, 500)

    def trajectory(seed: int) -> list:
        env = NSReacher(speed=2)
        env.reset(seed=seed)
        out = []
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            out.append((obs.tolist(), reward, terminated, truncated, info["episode"]))
            if terminated or truncated:
                env.reset()
        return out

    assert trajectory(3) == trajectory(3)
    assert trajectory(3) != trajectory(4)
