"""Episode buffer: chronological order through wrap-around, no-copy views, ragged masks."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprog.learn.buffer
from pyprog.learn.buffer import EpisodeBuffer
from pyprog.learn.policies import GaussianPolicy, SoftmaxMLP

H = 4


def episode(k: int, length: int = H, obs_dim: int = 2):
    """Episode ``k`` of ``length`` steps; every entry encodes (k, t) so order is checkable."""
    t = np.arange(length)
    obs = np.stack([k + t / 10, -k - t / 10], axis=1)[:, :obs_dim]
    actions = (k + t) % 3
    log_beta = -0.01 * (k + 1) - 0.001 * t
    rewards = 100.0 * k + t
    return obs, actions, log_beta, rewards


def add_steps(buf: EpisodeBuffer, obs, actions, log_beta, rewards) -> None:
    buf.start_episode()
    for step in zip(obs, actions, log_beta, rewards, strict=True):
        buf.add(*step)
    buf.end_episode()


def assert_holds(buf: EpisodeBuffer, ks, lengths) -> None:
    """The buffer holds episodes ``ks`` (oldest first) with these lengths, zero-padded."""
    assert len(buf) == len(ks)
    view = buf.view()
    np.testing.assert_array_equal(view.lengths, lengths)
    for i, (k, n) in enumerate(zip(ks, lengths, strict=True)):
        obs, actions, log_beta, rewards = episode(k, n)
        np.testing.assert_array_equal(view.obs[i, :n], obs)
        np.testing.assert_array_equal(view.actions[i, :n], actions)
        np.testing.assert_array_equal(view.log_beta[i, :n], log_beta)
        np.testing.assert_array_equal(view.rewards[i, :n], rewards)
        np.testing.assert_array_equal(view.mask[i], np.arange(H) < n)
        for arr in (view.obs, view.actions, view.log_beta, view.rewards):
            assert not arr[i, n:].any()  # padding is 0, whatever was stored there before


@pytest.mark.parametrize("writer", ["add_episode", "add"])
def test_wrap_around_keeps_chronological_order_without_copies(writer):
    capacity = 4
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=capacity)
    lengths = {}
    for k in range(11):  # every ring position, wrapped twice
        lengths[k] = 1 + (k * 7) % H  # ragged
        data = episode(k, lengths[k])
        buf.add_episode(*data) if writer == "add_episode" else add_steps(buf, *data)
        ks = list(range(max(0, k + 1 - capacity), k + 1))
        assert_holds(buf, ks, [lengths[j] for j in ks])
        view = buf.view()
        for arr in view:
            assert arr.flags.c_contiguous and not arr.flags.writeable
            # a view into the ring storage: no copy, now or on the next call
            assert arr.base is not None and not arr.flags.owndata
        assert view.obs.dtype == view.rewards.dtype == view.mask.dtype == np.float64
        assert view.actions.dtype == np.int64 and view.lengths.dtype == np.int64
        assert buf.rewards is view.rewards and buf.obs.ctypes.data == view.obs.ctypes.data


def test_properties_match_view_and_shapes():
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=3)
    assert buf.obs.shape == (0, H, 2) and buf.mask.shape == (0, H) and len(buf) == 0
    buf.add_episode(*episode(0))
    view = buf.view()
    assert view.obs.shape == (1, H, 2) and view.actions.shape == (1, H)
    for name in ("obs", "actions", "log_beta", "rewards", "mask", "lengths"):
        assert getattr(buf, name) is getattr(view, name)
    with pytest.raises(ValueError, match="read-only"):
        buf.rewards[0, 0] = 1.0


def test_step_writer_equals_episode_writer():
    by_step = EpisodeBuffer(horizon=H, obs_dim=2, capacity=3)
    by_episode = EpisodeBuffer(horizon=H, obs_dim=2, capacity=3)
    for k, n in enumerate([4, 2, 3, 1, 4]):
        add_steps(by_step, *episode(k, n))
        by_episode.add_episode(*episode(k, n))
    for a, b in zip(by_step.view(), by_episode.view(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_flat_valid_ragged():
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=5)
    lengths = [3, 1, 4, 2]
    for k, n in enumerate(lengths):
        buf.add_episode(*episode(k, n))
    flat = buf.flat_valid()
    m = sum(lengths)
    assert flat.obs.shape == (m, 2) and flat.actions.shape == (m,) and flat.shape == (4, H)
    np.testing.assert_array_equal(flat.episode, np.repeat(np.arange(4), lengths))
    np.testing.assert_array_equal(flat.step, np.concatenate([np.arange(n) for n in lengths]))
    np.testing.assert_array_equal(flat.index, flat.episode * H + flat.step)
    np.testing.assert_array_equal(flat.obs, buf.obs[flat.episode, flat.step])
    np.testing.assert_array_equal(flat.actions, buf.actions[flat.episode, flat.step])
    assert flat.obs.flags.c_contiguous and flat.obs.dtype == np.float64
    assert flat.actions.dtype == np.int64 and flat.index.dtype == np.int64
    # scatter / gather move per-step values between the two layouts
    values = np.arange(m, dtype=float) + 1
    padded = flat.scatter(values, fill=-7.0)
    np.testing.assert_array_equal(padded[buf.mask == 1], values)
    assert (padded[buf.mask == 0] == -7.0).all()
    np.testing.assert_array_equal(flat.gather(padded), values)
    np.testing.assert_array_equal(flat.gather(buf.rewards), buf.rewards[buf.mask == 1])
    out = np.full((4, H), np.nan)
    assert flat.scatter(values, out=out) is out and (out[buf.mask == 0] == 0).all()
    with pytest.raises(ValueError, match=r"values must have shape \(10,\)"):
        flat.scatter(np.ones(3))
    with pytest.raises(ValueError, match="out must be a C-contiguous float64 array"):
        flat.scatter(values, out=np.zeros((4, H + 1)))
    with pytest.raises(ValueError, match=r"arr must have shape \(4, 4\)"):
        flat.gather(np.zeros((3, H)))


def test_flat_valid_full_length_is_a_view_and_cached():
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=3)
    for k in range(5):
        buf.add_episode(*episode(k))
    flat = buf.flat_valid()
    assert flat is buf.flat_valid()  # cached until the buffer changes
    assert np.shares_memory(flat.obs, buf.obs) and flat.obs.shape == (3 * H, 2)
    np.testing.assert_array_equal(flat.obs, buf.obs.reshape(-1, 2))
    np.testing.assert_array_equal(flat.episode, np.repeat(np.arange(3), H))
    np.testing.assert_array_equal(flat.step, np.tile(np.arange(H), 3))
    values = np.arange(3.0 * H)
    np.testing.assert_array_equal(flat.scatter(values), values.reshape(3, H))
    np.testing.assert_array_equal(flat.gather(values.reshape(3, H)), values)
    buf.add_episode(*episode(5, 2))
    changed = buf.flat_valid()
    assert changed is not flat and len(changed.index) == 2 * H + 2
    np.testing.assert_array_equal(changed.episode[-2:], [2, 2])


def test_clear():
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=3)
    for k in range(5):
        buf.add_episode(*episode(k))
    before = buf.flat_valid()
    buf.start_episode()
    buf.add(*(x[0] for x in episode(99)))
    buf.clear()  # also drops the episode in progress
    assert len(buf) == 0 and buf.obs.shape == (0, H, 2) and buf.flat_valid() is not before
    assert buf.flat_valid().obs.shape == (0, 2)
    buf.add_episode(*episode(7, 2))
    buf.add_episode(*episode(8, 3))
    assert_holds(buf, [7, 8], [2, 3])


def test_continuous_actions():
    policy = GaussianPolicy(obs_dim=1, low=[3.0, 5.0], high=[30.0, 50.0], std=2.0)
    buf = EpisodeBuffer.for_policy(policy, horizon=1, capacity=2)
    assert buf.action_shape == (2,) and buf.action_dtype == np.float64
    rng = np.random.default_rng(0)
    played = []
    for _ in range(3):
        action, log_beta = policy.sample(np.ones(1), rng)
        buf.start_episode()
        buf.add(np.ones(1), action, log_beta, reward=1.0)  # a log-density may be > 0
        buf.end_episode()
        played.append((action, log_beta))
    assert buf.actions.shape == (2, 1, 2) and buf.actions.dtype == np.float64
    np.testing.assert_array_equal(buf.actions[:, 0], [a for a, _ in played[1:]])
    np.testing.assert_array_equal(buf.log_beta[:, 0], [lb for _, lb in played[1:]])
    flat = buf.flat_valid()
    ev = policy.evaluate(flat.obs, flat.actions, check=False)
    np.testing.assert_allclose(ev.log_prob, buf.log_beta[:, 0], rtol=1e-12)
    buf.start_episode()
    with pytest.raises(ValueError, match=r"action must have shape \(2,\)"):
        buf.add(np.ones(1), 1.0, -1.0, 0.0)
    with pytest.raises(ValueError, match="action must be finite"):
        buf.add(np.ones(1), [1.0, np.nan], -1.0, 0.0)
    buf.clear()
    with pytest.raises(ValueError, match=r"actions must be finite; got .* at step 0"):
        buf.add_episode([[1.0]], [[np.inf, 1.0]], [0.3], [1.0])


def test_for_policy_discrete_round_trip():
    policy = SoftmaxMLP(obs_dim=2, n_actions=4, hidden=8, rng=np.random.default_rng(0))
    policy.theta = np.random.default_rng(1).normal(size=policy.n_params)
    buf = EpisodeBuffer.for_policy(policy, horizon=5, capacity=10)
    rng = np.random.default_rng(2)
    for n in (5, 2, 4):
        buf.start_episode()
        for _ in range(n):
            s = rng.uniform(size=2)
            a, log_beta = policy.sample(s, rng)
            buf.add(s, a, log_beta, reward=-0.5)
        buf.end_episode()
    flat = buf.flat_valid()
    ev = policy.evaluate(flat.obs, flat.actions, check=False)
    # the policy that acted gives every logged action its logged probability
    np.testing.assert_allclose(flat.scatter(ev.log_prob), buf.log_beta, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    capacity=st.integers(1, 5),
    lengths=st.lists(st.integers(1, H), min_size=0, max_size=13),
)
def test_any_sequence_of_episodes(capacity, lengths):
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=capacity)
    for k, n in enumerate(lengths):
        buf.add_episode(*episode(k, n))
    ks = list(range(len(lengths)))[-capacity:] if lengths else []
    assert_holds(buf, ks, [lengths[k] for k in ks])
    flat = buf.flat_valid()
    assert len(flat.index) == sum(lengths[k] for k in ks)
    np.testing.assert_array_equal(flat.gather(buf.rewards), buf.rewards[buf.mask == 1])


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"horizon": 0, "obs_dim": 1}, "horizon must be an integer >= 1"),
        ({"horizon": 3, "obs_dim": 0}, "obs_dim must be an integer >= 1"),
        ({"horizon": 3, "obs_dim": 1, "capacity": 0}, "capacity must be an integer >= 1"),
        ({"horizon": 3, "obs_dim": 1, "action_shape": 2}, "action_shape must be a tuple"),
        ({"horizon": 3, "obs_dim": 1, "action_shape": (0,)}, "action_shape entry must be"),
        ({"horizon": 3, "obs_dim": 1, "action_dtype": bool}, "action_dtype must be"),
    ],
)
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EpisodeBuffer(**kwargs)


def test_step_errors():
    buf = EpisodeBuffer(horizon=2, obs_dim=2, capacity=3)
    obs = np.zeros(2)
    with pytest.raises(RuntimeError, match=r"call start_episode\(\) before add\(\)"):
        buf.add(obs, 0, -1.0, 0.0)
    with pytest.raises(RuntimeError, match="no episode in progress"):
        buf.end_episode()
    buf.start_episode()
    with pytest.raises(RuntimeError, match="already in progress"):
        buf.start_episode()
    with pytest.raises(ValueError, match="at least one step"):
        buf.end_episode()
    with pytest.raises(ValueError, match="reward must be finite; got nan at step 0"):
        buf.add(obs, 0, -1.0, float("nan"))
    with pytest.raises(ValueError, match=r"log_beta must be finite .*; got -inf at step 0"):
        buf.add(obs, 0, -np.inf, 0.0)
    with pytest.raises(ValueError, match="log_beta must be <= 0 for discrete actions"):
        buf.add(obs, 0, 0.5, 0.0)
    with pytest.raises(ValueError, match=r"obs must have shape \(2,\)"):
        buf.add(np.zeros(3), 0, -1.0, 0.0)
    with pytest.raises(ValueError, match="obs must be finite"):
        buf.add([0.0, np.inf], 0, -1.0, 0.0)
    with pytest.raises(ValueError, match=r"action must be an integer; got 1\.5"):
        buf.add(obs, 1.5, -1.0, 0.0)
    buf.add(obs, np.int64(1), -1.0, 1.0)
    buf.add(obs, 2, 0.0, 2.0)
    with pytest.raises(ValueError, match="episode longer than horizon=2: cannot add step 2"):
        buf.add(obs, 0, -1.0, 0.0)
    with pytest.raises(RuntimeError, match="an episode is in progress"):
        buf.add_episode(*episode(0, 1))
    assert len(buf) == 0  # nothing half-written is visible
    buf.end_episode()
    np.testing.assert_array_equal(buf.rewards, [[1.0, 2.0]])
    np.testing.assert_array_equal(buf.actions, [[1, 2]])


@pytest.mark.parametrize(
    ("index", "value", "match"),
    [
        (0, np.zeros((H + 1, 2)), r"obs must have shape \(T, 2\) with 1 <= T <= horizon=4"),
        (0, np.zeros((0, 2)), r"obs must have shape \(T, 2\)"),
        (0, np.zeros((H, 3)), r"obs must have shape \(T, 2\)"),
        (0, [[0.0, 0.0], [0.0, np.nan], [0.0, 0.0], [0.0, 0.0]], "obs must be finite; .* step 1"),
        (1, np.zeros(H - 1, int), r"actions must have shape \(4,\)"),
        (1, np.zeros(H), "actions must be integers; got dtype float64"),
        (2, np.zeros(H - 1), r"log_beta must have shape \(4,\), like obs"),
        (2, [-1.0, -1.0, np.nan, -1.0], r"log_beta must be finite; got nan at step 2"),
        (2, [-1.0, 0.2, -1.0, -1.0], "log_beta must be <= 0 for discrete actions .* step 1"),
        (3, [0.0, 0.0, 0.0, np.inf], "rewards must be finite; got inf at step 3"),
        (3, ["a", "b", "c", "d"], "rewards must be an array of numbers"),
    ],
)
def test_add_episode_errors(index, value, match):
    buf = EpisodeBuffer(horizon=H, obs_dim=2, capacity=3)
    buf.add_episode(*episode(0))
    args = list(episode(1))
    args[index] = value
    with pytest.raises(ValueError, match=match):
        buf.add_episode(*args)
    assert_holds(buf, [0], [H])  # a rejected episode leaves no trace


def test_docstring_examples():
    result = doctest.testmod(pyprog.learn.buffer)
    assert result.attempted > 0 and result.failed == 0
