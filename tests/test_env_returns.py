"""Issue 19 items 2-4: what an environment returns is checked where it arrives, and a run
that fails on its own is reported while the others finish."""

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyprog
from pyprog._ext import _exact
from pyprog.cli.main import main
from pyprog.experiments.runs import RunsFailedError, RunTask, run_tasks
from pyprog.learn.hyperparams import default_hyper
from pyprog.results import ResultStore
from pyprog.runner.adapter import default_gauss_std, observation_encoder, resolve_env
from pyprog.runner.checks import EnvironmentReturnError


class Scripted(gym.Env):
    """Episodes of 3 steps whose returns are replaced, at (episode, step), by ``bad``."""

    def __init__(self, bad=None, at=(1, 1), obs_space=None, info=None):
        self.observation_space = obs_space or spaces.Box(-1.0, 1.0, shape=(2,))
        self.action_space = spaces.Discrete(2)
        self.horizon = 3
        self.bad, self.at, self.info = bad, at, info
        self.k, self.t = -1, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k, self.t = self.k + 1, 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        result = (self.observation_space.sample(), 1.0, self.t >= 3, False, dict(self.info or {}))
        if (self.k, self.t - 1) == self.at and self.bad is not None:
            return self.bad(result)
        return result


def replace(i, value):
    return lambda r: tuple(value if j == i else x for j, x in enumerate(r))


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda r: r[:4], r"step 1: step\(\) returned 4 values; .* old gym"),
        (lambda r: (*r, None), r"step 1: step\(\) returned 6 values"),
        (replace(1, None), r"step 1: the reward must be a real number; got NoneType None"),
        (replace(1, "1.0"), r"step 1: the reward must be a real number; got str '1.0'"),
        (replace(0, np.zeros(3)), r"step 2: the observation .* has 3 values; .* has 2"),
        (replace(0, np.array([0.0, np.nan])), r"step 2: the observation .* not finite"),
        (replace(1, math.inf), r"step 1: the reward is inf; rewards must be finite"),
    ],
)
def test_a_bad_step_result_is_named_with_env_episode_and_step(bad, match):
    with pytest.raises(
        EnvironmentReturnError, match=r"env 'instance:Scripted', episode 1, .*" + match
    ):
        pyprog.run(Scripted(bad), "pro-ols", episodes=4)


@pytest.mark.parametrize("obs, what", [(-1, "-1"), (3, "3"), (1.5, "1.5")])
def test_a_discrete_observation_outside_the_space_is_refused_not_wrapped(obs, what):
    """Issue 19 item 4: -1 used to one-hot silently as the last category."""
    env = Scripted(replace(0, obs), obs_space=spaces.Discrete(3))
    with pytest.raises(EnvironmentReturnError, match=rf"step 2: the observation {what} .*outside"):
        pyprog.run(env, "onpg", episodes=3)


def test_a_nan_expected_reward_is_refused_at_its_episode():
    """Issue 19 item 3: regret=nan and a `nan ± nan` table with exit 0 before."""
    info = {"best_expected_reward": 1.0, "expected_reward": 0.5}
    env = Scripted(lambda r: (*r[:4], {**r[4], "expected_reward": np.nan}), at=(2, 2), info=info)
    with pytest.raises(
        EnvironmentReturnError, match=r"episode 2: info\['expected_reward'\] is nan"
    ):
        pyprog.run(env, "pro-wls", episodes=5)
    fine = pyprog.run(Scripted(info=info), "pro-wls", episodes=5)
    assert fine.regret == pytest.approx(2.5)


def test_empty_boxes_are_refused_before_any_episode():
    with pytest.raises(ValueError, match=r"observation space .* has no elements"):
        observation_encoder(spaces.Box(0.0, 1.0, shape=(0,)))
    env = Scripted(obs_space=spaces.Box(0.0, 1.0, shape=(0,)))
    with pytest.raises(ValueError, match="no elements"):
        pyprog.run(env, "onpg", episodes=1)
    assert env.k == -1  # never reset


@pytest.mark.parametrize(
    "low, high, match",
    [(-1e308, 1e308, "width overflows float64"), (1.0, 1.0, "low == high")],
)
def test_a_degenerate_action_box_is_named_not_gauss_std(low, high, match):
    box = spaces.Box(low, high, shape=(1,), dtype=np.float64)
    with pytest.raises(ValueError, match=rf"action space .*{match}"):
        default_gauss_std(box)
    env = Scripted()
    env.action_space = box
    with pytest.raises(ValueError, match=match):
        pyprog.run(env, "onpg", episodes=1)


def make_with_kwarg(size=2):
    return Scripted(obs_space=spaces.Box(-1.0, 1.0, shape=(size,)))


@pytest.mark.parametrize("env", ["CartPole-v1", make_with_kwarg])
def test_a_wrong_env_kwargs_key_is_a_value_error_naming_it(env):
    with pytest.raises(ValueError, match=r"env_kwargs: env .* has no argument 'colour'"):
        resolve_env(env, env_kwargs={"colour": "red"})


def test_the_exact_path_does_not_advise_a_finite_clip_when_clip_is_finite():
    """Issue 19 item 2: "pass a finite clip" was said even with clip=10."""
    zeros = [0.0, 0.0]
    with pytest.raises(ValueError, match="rescale the rewards") as info:
        _exact.pdis_row_exact(0, zeros, zeros, [1e308, 1e308], [1.0, 1.0], 1.0, 10.0)
    assert "finite clip" not in str(info.value)
    with pytest.raises(ValueError, match="pass a finite clip"):
        _exact.episode_ratio_exact(0, [800.0] * 2, [0.0] * 2, [1.0, 1.0], math.inf)


# ------------------------------------------------------------------ hypothesis: random spaces


boxes = st.builds(
    lambda shape, low: spaces.Box(low, low + 2.0, shape=shape, dtype=np.float64),
    st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
    st.floats(-5, 5),
)
discretes = st.builds(spaces.Discrete, st.integers(1, 5), start=st.integers(-3, 3))
junk = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10, 10),
    st.lists(st.floats(allow_nan=True), max_size=4).map(np.array),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    space=st.one_of(boxes, discretes), obs=junk, reward=junk, arity=st.sampled_from([3, 4, 5, 6])
)
def test_random_step_results_either_run_or_raise_one_named_value_error(space, obs, reward, arity):
    """Random observation spaces and random step results: a run either finishes with finite
    returns or raises an EnvironmentReturnError naming env, episode and step, never anything
    else (IndexError, matmul errors, a silent one-hot)."""

    def bad(result):
        full = (obs, reward, result[2], False, {}, None)
        return full[:arity]

    env = Scripted(bad, at=(0, 0), obs_space=space)
    try:
        result = pyprog.run(env, "onpg", episodes=2)
    except EnvironmentReturnError as exc:
        assert str(exc).startswith("env 'instance:Scripted', episode ")
        assert "\n" not in str(exc)
    else:  # everything was valid: what ran is finite, and the bad step was a good one
        assert arity == 5 and np.isfinite(result.returns).all()
        assert isinstance(reward, int) or math.isfinite(reward)
        assert valid_observation(space, obs)


def valid_observation(space, obs):
    if isinstance(space, spaces.Discrete):
        return isinstance(obs, (int, float)) and obs == int(obs) and obs in space
    arr = np.asarray(obs, dtype=float)
    return arr.size == int(np.prod(space.shape)) and bool(np.isfinite(arr).all())


# ------------------------------------------------------------------ failed runs (item 2)


ENVS_PY = """
import numpy as np
from gymnasium import spaces
import gymnasium as gym
from pyprog.runner.loop import env_seed


class Bandit(gym.Env):
    def __init__(self):
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(1,))
        self.action_space = spaces.Discrete(2)
        self.horizon = 1
        self.broken = False

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.broken = seed == env_seed(1)  # the run with seed 1 breaks
        return np.zeros(1), {}

    def step(self, action):
        info = {"best_expected_reward": 1.0, "expected_reward": float(action)}
        if self.broken:
            info["expected_reward"] = float("nan")
        return np.zeros(1), float(action), True, False, info


def make():
    return Bandit()
"""


def test_a_failing_run_is_reported_and_the_others_finish_and_are_stored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "fail_envs.py").write_text(ENVS_PY)
    hyper = default_hyper("onpg")
    tasks = [RunTask("fail_envs:make", "onpg", None, 0, hyper, seed, 4) for seed in range(3)]
    with pytest.raises(RunsFailedError) as info:
        run_tasks(tasks, tmp_path / "runs.sqlite", jobs=1)
    (failure,) = info.value.failures
    assert failure.seed == 1 and failure.hyper == hyper.to_dict()
    assert "episode 0: info['expected_reward'] is nan" in failure.error
    assert info.value.report == {"total": 3, "already_stored": 0, "ran": 2, "failed": 1}
    with ResultStore(tmp_path / "runs.sqlite", readonly=True) as store:
        assert len(store.keys()) == 2  # the failure is not stored: a resume runs it again
    with pytest.raises(RunsFailedError, match=r"1 of 3 runs failed .* 0 others finished"):
        run_tasks(tasks, tmp_path / "runs.sqlite", jobs=1)


def test_a_sum_beyond_float64_fails_its_run_not_the_grid(monkeypatch):
    """The exact PDIS path's overflow error is a FloatingPointError too: one failed run."""
    import pyprog.experiments.runs as runs_module
    from pyprog._ext._exact import BeyondFloat64Error, pdis_row_exact

    row = np.array([np.log(10.0)]), np.zeros(1), np.array([1e308]), np.ones(1)
    with pytest.raises(BeyondFloat64Error, match="beyond float64") as info:
        pdis_row_exact(0, *row, gamma=1.0, clip=10.0)
    assert isinstance(info.value, ValueError) and isinstance(info.value, FloatingPointError)

    def overflowing_run(*args, **kwargs):
        raise info.value

    monkeypatch.setattr(runs_module, "run", overflowing_run)
    task = RunTask("reco", "ftrl-pg", 0.0, 0, default_hyper("ftrl-pg"), 0, 4)
    failure = runs_module.run_task(task)
    assert failure.seed == 0 and "BeyondFloat64Error" in failure.error


def test_the_cli_exits_2_with_one_line_per_failed_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "fail_envs.py").write_text(ENVS_PY)
    out = tmp_path / "out"
    args = ["run", "--env", "fail_envs:make", "--algo", "onpg,pro-ols", "--seeds", "3"]
    assert main([*args, "--episodes", "4", "--jobs", "1", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    failed = [line for line in err.splitlines() if line.startswith("  failed: ")]
    assert len(failed) == 2 and all("seed=1" in line for line in failed)
    assert "Traceback" not in err and "2 of 6 runs failed" in err
    assert len((out / "results.csv").read_text().splitlines()) == 1 + 4  # the others


def test_an_lr_of_1e308_is_refused_before_any_run(tmp_path, capsys):
    hyper = tmp_path / "h.json"
    hyper.write_text(json.dumps({"lr": 1e308}))
    args = ["run", "--env", "CartPole-v1", "--algo", "onpg", "--hyper", str(hyper)]
    assert main([*args, "--episodes", "2", "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "lr must be a number > 0 and <= 10; got 1e+308" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
