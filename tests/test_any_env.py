"""Any environment: Gymnasium ids, instances, factories, spaces, horizons, regret, the CLI."""

from __future__ import annotations

import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import scipy.stats
from drifting_bandit import DriftingBandit
from gymnasium import spaces

import pyprog
from pyprog.cli.main import main
from pyprog.experiments.grid import read_results, run_grid
from pyprog.learn import policies
from pyprog.learn.hyperparams import Hyper, default_hyper, paper_hyper
from pyprog.results import ResultStore, export_csv
from pyprog.runner.adapter import observation_encoder, resolve_env
from pyprog.stats.tables import store_summary


class CountingEnv(gym.Env):
    """An environment that counts its resets and steps (to prove that nothing ran)."""

    resets = 0
    steps = 0

    def __init__(self, observation_space=None, action_space=None, horizon=5, ends=True):
        self.observation_space = observation_space or spaces.Box(-1.0, 1.0, shape=(2,))
        self.action_space = action_space or spaces.Discrete(2)
        if horizon is not None:
            self.horizon = horizon
        self.ends = ends
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        type(self).resets += 1
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        type(self).steps += 1
        self.t += 1
        done = self.ends and self.t >= 3
        return self.observation_space.sample(), 1.0, done, False, {}


@pytest.fixture
def counting():
    CountingEnv.resets = CountingEnv.steps = 0
    return CountingEnv


# ----------------------------------------------------------------------------- real envs


def test_cartpole_by_id_instance_and_callable_give_the_same_returns(backend):
    by_id = pyprog.run("CartPole-v1", "pro-wls", seed=3, episodes=12)
    by_instance = pyprog.run(gym.make("CartPole-v1"), "pro-wls", seed=3, episodes=12)
    by_callable = pyprog.run(lambda: gym.make("CartPole-v1"), "pro-wls", seed=3, episodes=12)
    np.testing.assert_array_equal(by_id.returns, by_instance.returns)
    np.testing.assert_array_equal(by_id.returns, by_callable.returns)
    assert by_id.env == "CartPole-v1" and by_instance.env == "instance:CartPole-v1"
    assert by_callable.env.startswith("callable:")
    assert by_id.speed is None and by_id.regret is None and by_id.truncated == 0
    assert by_id.hyper == default_hyper("pro-wls").to_dict()
    assert ((by_id.returns >= 8) & (by_id.returns <= 500)).all()  # CartPole: 1 per step
    assert by_id.updates + by_id.skipped_updates == 12 // 3
    other = pyprog.run("CartPole-v1", "pro-wls", seed=4, episodes=12)
    assert not np.array_equal(other.returns, by_id.returns)


def test_pendulum_gets_a_bounded_gaussian_policy_and_clipped_actions(backend):
    env = gym.make("Pendulum-v1")
    seen = []
    step = env.step

    def spy(action):
        seen.append(np.array(action))
        return step(action)

    env.step = spy
    result = pyprog.run(env, "pro-ols", seed=0, episodes=4, hyper={"gauss_std": 3.0})
    actions = np.concatenate(seen)
    assert result.hyper["gauss_std"] == 3.0 and result.returns.shape == (4,)
    assert len(seen) == 4 * 200  # max_episode_steps of Pendulum-v1
    assert actions.min() >= -2.0 and actions.max() <= 2.0  # clipped to the box
    assert np.isclose(np.abs(actions), 2.0).mean() > 0.2  # std 3: many draws outside
    assert np.all(np.isfinite(result.returns)) and (result.returns < 0).all()
    # the default std: a quarter of the action range
    assert pyprog.run("Pendulum-v1", "onpg", seed=0, episodes=1).hyper["gauss_std"] == 1.0


def test_discrete_observations_are_one_hot():
    result = pyprog.run("FrozenLake-v1", "ftrl-pg", seed=0, episodes=20)
    assert result.returns.shape == (20,) and set(np.unique(result.returns)) <= {0.0, 1.0}
    dim, encode = observation_encoder(spaces.Discrete(16))
    assert dim == 16 and encode(5).argmax() == 5 and encode(5).sum() == 1.0


def test_box_observations_of_any_shape_are_flattened():
    dim, encode = observation_encoder(spaces.Box(0.0, 1.0, shape=(2, 3)))
    obs = np.arange(6.0).reshape(2, 3)
    assert dim == 6
    np.testing.assert_array_equal(encode(obs), np.arange(6.0))
    dim, encode = observation_encoder(
        spaces.Dict({"state": spaces.Box(0.0, 1.0, shape=(3,)), "relative_time": spaces.Box(0, 9)})
    )
    assert dim == 3
    np.testing.assert_array_equal(encode({"state": [1, 2, 3], "relative_time": 4}), [1, 2, 3])


def test_nsreco_by_id_is_the_built_in_with_the_same_setting():
    """The built-ins are registered Gymnasium environments like any other."""
    hyper = paper_hyper("reco", "pro-wls", 2)
    builtin = pyprog.run("reco", "pro-wls", speed=2, seed=5, episodes=200)
    by_id = pyprog.run(
        "pyprog/NSReco-v0", "pro-wls", seed=5, episodes=200, hyper=hyper, env_kwargs={"speed": 2}
    )
    instance = pyprog.run(
        gym.make("pyprog/NSReco-v0", speed=2), "pro-wls", seed=5, episodes=200, hyper=hyper
    )
    np.testing.assert_array_equal(builtin.returns, by_id.returns)
    np.testing.assert_array_equal(builtin.returns, instance.returns)
    assert builtin.regret == by_id.regret == instance.regret
    assert builtin.speed == 2.0 and by_id.speed is None


# ----------------------------------------------------------------------------- regret, horizon


def test_exact_regret_from_the_info_protocol(backend):
    result = pyprog.run(DriftingBandit, "pro-wls", seed=1, episodes=60)
    env = DriftingBandit()
    env.reset(seed=0)
    best = []
    for _ in range(60):
        best.append(env.means().max())
        env.reset()
    np.testing.assert_allclose(result.optimal, best, rtol=1e-15)
    assert result.regret == pytest.approx(np.sum(result.optimal - result.expected))
    assert result.regret > 0
    # the same bandit by id and by instance: the same run
    by_id = pyprog.run("tests/DriftingBandit-v0", "pro-wls", seed=1, episodes=60)
    np.testing.assert_array_equal(by_id.returns, result.returns)


def test_no_regret_without_the_info_keys(counting):
    result = pyprog.run(counting, "onpg", seed=0, episodes=6)
    assert result.regret is None and result.optimal is None and result.expected is None


def test_pyprog_truncates_at_the_horizon_and_counts_it(counting):
    env = counting(horizon=None, ends=False)
    result = pyprog.run(env, "ftrl-pg", seed=0, episodes=5, horizon=7)
    np.testing.assert_array_equal(result.returns, np.full(5, 7.0))
    assert result.truncated == 5 and counting.steps == 35
    short = pyprog.run(counting(horizon=2), "ftrl-pg", seed=0, episodes=4)  # its own horizon
    assert short.truncated == 4 and (short.returns == 2.0).all()
    ends = pyprog.run(counting(horizon=10), "ftrl-pg", seed=0, episodes=4)
    assert ends.truncated == 0 and (ends.returns == 3.0).all()


def test_reset_with_seed_once_then_without(counting):
    calls = []

    class Spy(counting):
        def reset(self, *, seed=None, options=None):
            calls.append(seed)
            return super().reset(seed=seed, options=options)

    pyprog.run(Spy(), "onpg", seed=0, episodes=5)
    assert calls[0] is not None and calls[1:] == [None] * 4


@pytest.mark.slow
def test_prognosticator_beats_ftrl_pg_on_a_drifting_bandit():
    """The paper's claim on an environment nobody tuned for, with the default setting.

    10 seeds, 600 episodes (two periods of the drift). Stated test: one-sided Welch t-test
    of mean regret, Pro-WLS (or Pro-OLS) < FTRL-PG, at level 0.01. Prints all four learners.
    """
    regret = {}
    for algo in ("pro-ols", "pro-wls", "onpg", "ftrl-pg"):
        regret[algo] = np.array(
            [pyprog.run(DriftingBandit, algo, seed=s, episodes=600).regret for s in range(10)]
        )
        mean, se = pyprog.stats.summary.mean_se(regret[algo])
        print(f"{algo:<8} regret {mean:7.1f} ± {se:.1f}")
    p = {
        algo: scipy.stats.ttest_ind(
            regret[algo], regret["ftrl-pg"], equal_var=False, alternative="less"
        ).pvalue
        for algo in ("pro-ols", "pro-wls")
    }
    assert min(p.values()) < 0.01, p


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "observation_space, action_space, message",
    [
        (spaces.Tuple([spaces.Discrete(2)]), None, "unsupported observation space Tuple"),
        (spaces.Dict({"obs": spaces.Box(0, 1)}), None, "a Dict needs a 'state' entry"),
        (spaces.Dict({"state": spaces.MultiBinary(3)}), None, "the 'state' entry is MultiBinary"),
        (spaces.Text(5), None, "unsupported observation space Text"),
        (None, spaces.MultiDiscrete([2, 3]), "unsupported action space MultiDiscrete"),
        (None, spaces.Tuple([spaces.Discrete(2)]), "unsupported action space Tuple"),
        (None, spaces.Box(0, 5, shape=(1,), dtype=np.int64), "a Box of integers"),
    ],
)
def test_unsupported_spaces_are_named_before_any_episode(
    counting, observation_space, action_space, message
):
    env = counting(observation_space, action_space)
    with pytest.raises(ValueError, match=message) as info:
        pyprog.run(env, "pro-wls", seed=0, episodes=3)
    assert "supported:" in str(info.value)
    assert counting.resets == counting.steps == 0


def test_bad_input_is_a_value_error_before_any_work(counting, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad_factories.py").write_text("def not_an_env():\n    return 3\nX = 4\n")
    cases = [
        (dict(env="CartPol-v1"), r"unknown env 'CartPol-v1'.*did you mean CartPole-v1"),
        (dict(env="no_such_module:make"), "cannot import module 'no_such_module'"),
        (dict(env="bad_factories:missing"), "module 'bad_factories' has no 'missing'"),
        (dict(env="bad_factories:not_an_env"), "must return a gymnasium.Env; got int"),
        (dict(env="bad_factories:X"), "is not callable"),
        (dict(env=counting(), speed=2), "speed is set only for pyprog's built-in"),
        (dict(env="CartPole-v1", speed=0), "speed is set only for pyprog's built-in"),
        (dict(env="reco"), "env 'reco' needs speed"),
        (dict(env=counting(), hyper={"learning_rate": 1}), "unknown hyper-parameter.*valid:"),
        (dict(env=counting(), hyper="paper"), "paper's settings exist only for the built-in"),
        (dict(env=counting(horizon=None)), "declares no episode length.*pass horizon"),
        (dict(env=counting(), horizon=0), "horizon must be an integer >= 1"),
        (dict(env=counting(), env_kwargs={"x": 1}), "env_kwargs cannot be applied"),
        (dict(env=3), "env must be a built-in name"),
        (dict(env=spaces.Box(0, 1)), "env must be a built-in name"),
        (
            dict(env=counting(action_space=spaces.Box(-1, 1)), hyper={"hidden": 8}),
            "hidden applies to discrete actions",
        ),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            pyprog.run(algo="pro-ols", seed=0, episodes=3, **kwargs)
    assert counting.resets == counting.steps == 0


def test_a_non_numeric_reward_is_named(counting):
    class DictReward(counting):
        def step(self, action):
            obs, _, done, trunc, info = super().step(action)
            return obs, {"reward": 1.0}, done, trunc, info

    with pytest.raises(ValueError, match="reward must be a real number; got dict"):
        pyprog.run(DictReward(), "onpg", seed=0, episodes=2)


def test_hyper_dict_changes_single_keys_of_the_default(counting):
    result = pyprog.run(counting(), "pro-ols", seed=0, episodes=3, hyper={"lr": 0.5, "d": 2})
    expected = default_hyper("pro-ols").replace(lr=0.5, d=2).to_dict()
    assert result.hyper == expected
    full = Hyper(lr=0.01, delta=1)
    assert pyprog.run(counting(), "onpg", seed=0, episodes=2, hyper=full).hyper == full.to_dict()


def test_resolve_env_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_pkg_envs.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym
            gym.register(
                "my_pkg_envs/Pole-v0",
                entry_point="gymnasium.envs.classic_control:CartPoleEnv",
                max_episode_steps=50,
            )
            def make():
                return gym.make("CartPole-v1")
            """
        )
    )
    assert resolve_env("my_pkg_envs:make").name == "my_pkg_envs:make"
    # gymnasium's "module:Env-v0" form: the import registers the id
    resolved = resolve_env("my_pkg_envs:my_pkg_envs/Pole-v0")
    assert resolved.environment.spec.max_episode_steps == 50 and not resolved.builtin
    sys.modules.pop("my_pkg_envs", None)


# ----------------------------------------------------------------------------- store, CLI


def test_runs_are_stored_by_their_string_with_no_speed(tmp_path):
    result = pyprog.run("CartPole-v1", "onpg", seed=0, episodes=4)
    with ResultStore(tmp_path / "s.sqlite") as store:
        assert store.add(result)
        assert not store.add(result)  # the same key
        (row,) = store.rows(env="CartPole-v1")
        assert row.speed is None and row.key[2] is None
        assert row.to_result().speed is None
        np.testing.assert_array_equal(row.returns, result.returns)
        assert store.keys() == {row.key} and store_summary(store)[0]["speed"] is None
        assert export_csv(store, tmp_path / "runs.csv") == 1
        line = (tmp_path / "runs.csv").read_text().splitlines()[1].split(",")
        assert line[:3] == ["CartPole-v1", "onpg", ""]  # no speed
        instance = pyprog.run(gym.make("CartPole-v1"), "onpg", seed=0, episodes=4)
        with pytest.raises(ValueError, match="cannot be stored"):
            store.add(instance)


def test_a_factory_through_the_cli_run_and_sweep(tmp_path, monkeypatch, capsys):
    """``--env module:function`` from the current directory; resumable, keyed by the string."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user_envs.py").write_text(
        "from drifting_bandit import DriftingBandit\n\n"
        "def make():\n    return DriftingBandit(period=50.0)\n"
    )
    out = tmp_path / "runs"
    args = ["run", "--env", "user_envs:make", "--algo", "pro-wls,ftrl-pg", "--seeds", "2"]
    args += ["--episodes", "30", "--jobs", "1", "--quiet", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "user_envs:make: regret" in text and "its own drift" in text
    rows = read_results(out)
    assert len(rows) == 4 and {r["speed"] for r in rows} == {None}
    assert all(r["regret"] is not None for r in rows)
    assert main(args) == 0  # resumes: nothing new
    assert len(read_results(out)) == 4

    store = str(tmp_path / "sweep.sqlite")
    sweep = ["sweep", "--env", "user_envs:make", "--algo", "pro-ols", "--settings", "2"]
    sweep += ["--seeds", "2", "--episodes", "20", "--jobs", "1", "--quiet", "--store", store]
    assert main(sweep) == 0
    assert "4 runs done" in capsys.readouterr().out
    assert main(sweep) == 0
    assert "0 runs done, 4 already in" in capsys.readouterr().out
    assert main(["best", "--store", store]) == 0
    assert "user_envs:make pro-ols  its own drift: regret" in capsys.readouterr().out

    # speeds are for the built-in environments only; a factory that does not import
    assert main([*args[:3], "--speed", "0-2", *args[3:]]) == 2
    assert "speeds are set only for the built-in" in capsys.readouterr().err
    assert main(["run", "--env", "nowhere:make", "--out", str(out)]) == 2
    assert "cannot import module 'nowhere'" in capsys.readouterr().err


def test_top_level_names():
    from pyprog.envs.diabetes.patient import simulate_patient

    assert pyprog.simulate_patient is simulate_patient
    for name in ("ProOLS", "ProWLS", "FTRLPG", "ONPG", "Learner", "Hyper"):
        assert getattr(pyprog, name) is getattr(
            pyprog.learn.learners if name != "Hyper" else pyprog.learn.hyperparams, name
        )
    for name in ("SoftmaxLinear", "SoftmaxMLP", "GaussianPolicy", "Policy"):
        assert getattr(pyprog, name) is getattr(policies, name)


def test_sweep_settings_for_any_environment():
    from pyprog.experiments.sweep import draw_settings

    pendulum = draw_settings("Pendulum-v1", 4, seed=1)
    assert pendulum == draw_settings("Pendulum-v1", 4, seed=1)  # reproducible
    # std drawn from the paper's [0.5, 2.5], scaled by the default (1.0 on Pendulum) / 1.5
    assert all(0.5 / 1.5 <= h.gauss_std <= 2.5 / 1.5 and h.hidden is None for h in pendulum)
    cartpole = draw_settings("CartPole-v1", 4, seed=1)
    assert all(h.gauss_std is None and h.hidden is None for h in cartpole)
    assert [h.lr for h in cartpole] != [h.lr for h in draw_settings("reco", 4, seed=1)]
    with pytest.raises(ValueError, match=r"built-in .*; CartPole-v1 drifts by itself: drop"):
        run_grid(["CartPole-v1"], ["onpg"], [1], [0], "unused")
    with pytest.raises(ValueError, match="CartPole-v1, Pendulum-v1 drift by themselves: drop"):
        run_grid(["CartPole-v1", "Pendulum-v1"], ["onpg"], [1], [0], "unused")
