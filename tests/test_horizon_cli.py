"""``pyprog run --horizon``: environments without a declared episode length, keyed by it."""

import pytest

from pyprog.cli.main import main
from pyprog.experiments.grid import run_grid
from pyprog.experiments.runs import RunTask
from pyprog.learn.hyperparams import Hyper
from pyprog.results.keys import run_key
from pyprog.results.store import ResultStore

NO_LENGTH_PY = '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class NoLength(gym.Env):
    """Two steps per episode; no max_episode_steps, TimeLimit or horizon attribute."""

    def __init__(self):
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(1,))
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, dtype=np.float32), float(action), self.t >= 2, False, {}


def make():
    return NoLength()
'''


@pytest.fixture
def no_length(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "no_length.py").write_text(NO_LENGTH_PY)
    return "no_length:make"


def stored(out):
    with ResultStore(out / "runs.sqlite", readonly=True) as store:
        return len(store.keys())


def test_without_horizon_one_line_and_exit_2(no_length, tmp_path, capsys):
    args = ["run", "--env", no_length, "--algo", "onpg", "--seeds", "1", "--episodes", "4"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "declares no episode length" in err
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.parametrize("bad", ["0", "-3"])
def test_bad_horizon_one_line_and_exit_2(no_length, tmp_path, capsys, bad):
    args = ["run", "--env", no_length, "--algo", "onpg", "--seeds", "1", "--horizon", bad]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--horizon must be >= 1" in err


def test_horizon_runs_resumes_and_keys_the_store(no_length, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["run", "--env", no_length, "--algo", "onpg", "--seeds", "2", "--episodes", "4"]
    args += ["--out", str(out), "--quiet", "--jobs", "1"]  # workers started earlier lack tmp_path
    assert main([*args, "--horizon", "3"]) == 0
    assert stored(out) == 2
    assert main([*args, "--horizon", "3"]) == 0  # a resume: nothing new
    assert stored(out) == 2
    assert main([*args, "--horizon", "5"]) == 0  # another horizon: other runs
    assert stored(out) == 4
    runs = run_grid([no_length], ["onpg"], None, [0, 1], out, episodes=4, horizon=5, jobs=1)
    assert len(runs) == 2 and {r.seed for r in runs} == {0, 1}


def test_a_task_is_keyed_by_its_horizon_only_when_given():
    hyper = Hyper(lr=0.01)
    plain = RunTask("CartPole-v1", "onpg", None, 0, hyper, 0, 10)
    assert plain.key == run_key("CartPole-v1", "onpg", None, hyper.to_dict(), 0, 10)
    keyed = RunTask("CartPole-v1", "onpg", None, 0, hyper, 0, 10, horizon=50)
    assert keyed.key != plain.key
    assert keyed.key == run_key("CartPole-v1", "onpg", None, hyper.to_dict(), 0, 10, 50)
