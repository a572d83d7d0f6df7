"""Sizes bounded before any allocation, workers capped at the cores, and a failed
``pyprog run`` that leaves nothing behind (issue 19, items 1 and 6)."""

import pytest

import pyprog
from pyprog.cli.main import main
from pyprog.experiments.grid import STORE_NAME, run_grid
from pyprog.learn.hyperparams import MAX_INNER_STEPS, Hyper
from pyprog.results import ResultStore
from pyprog.runner import parallel
from pyprog.runner.loop import MAX_BUFFER_BYTES, MAX_RUN_EPISODES, check_buffer_memory


class TestRunSizes:
    def test_huge_horizon_is_refused_with_the_memory_it_would_need(self):
        message = r"1000 episodes of 1000000000 steps .* needs 1\.19e\+05 GiB, more than the 2 GiB"
        with pytest.raises(ValueError, match=message):
            pyprog.run("CartPole-v1", "pro-ols", horizon=10**9, episodes=1)

    def test_huge_episodes_is_refused_before_the_environment_is_built(self, monkeypatch):
        def no_env(*args, **kwargs):
            raise AssertionError("prepare must not be reached")

        monkeypatch.setattr("pyprog.runner.loop.prepare", no_env)
        with pytest.raises(
            ValueError,
            match=r"episodes must be at most 10000000 .*MAX_RUN_EPISODES.*2\.24e\+04 GiB",
        ):
            pyprog.run("reco", "onpg", speed=1, episodes=10**12)
        assert MAX_RUN_EPISODES == 10**7

    def test_the_largest_buffer_allowed_and_the_next(self):
        per_step = 2 * 1000 * (4 + 1 + 3) * 8
        h = MAX_BUFFER_BYTES // per_step
        assert check_buffer_memory(h, 4, 1, 1000) <= MAX_BUFFER_BYTES
        with pytest.raises(ValueError, match=f"with buffer_size 1000 at most horizon={h}, "):
            check_buffer_memory(h + 1, 4, 1, 1000)

    def test_buffer_size_counts_too(self):
        message = "a buffer of 10000000 episodes of 500 steps .* at most buffer_size=33554$"
        with pytest.raises(ValueError, match=message):
            pyprog.run("CartPole-v1", "pro-ols", episodes=1, hyper={"buffer_size": 10**7})

    def test_cli_one_line_exit_2(self, tmp_path, capsys):
        argv = ["run", "--env", "reco", "--algo", "onpg", "--speed", "1", "--seeds", "1"]
        assert main([*argv, "--episodes", str(10**12), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "--episodes must be at most" in err and err.count("\n") == 1
        assert not (tmp_path / "o").exists()


class TestInnerSteps:
    def test_bounded(self):
        assert Hyper(lr=0.1, inner_steps=MAX_INNER_STEPS).inner_steps == MAX_INNER_STEPS
        with pytest.raises(ValueError, match="inner_steps must be at most 10000 gradient steps"):
            Hyper(lr=0.1, inner_steps=10**9)

    def test_cli_hyper_file(self, tmp_path, capsys):
        hyper = tmp_path / "h.json"
        hyper.write_text('{"inner_steps": 1000000000}')
        argv = ["run", "--env", "CartPole-v1", "--algo", "pro-ols", "--seeds", "1"]
        assert main([*argv, "--hyper", str(hyper), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "inner_steps must be at most 10000" in err and err.count("\n") == 1
        assert not (tmp_path / "o").exists()


class TestJobs:
    def test_execute_starts_no_more_workers_than_cores(self, monkeypatch):
        seen = {}

        class Parallel:
            def __init__(self, n_jobs, return_as):
                seen["n_jobs"] = n_jobs

            def __call__(self, calls):
                return (f(*args) for f, args, _ in calls)

        monkeypatch.setattr("joblib.Parallel", Parallel)
        monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
        out = sorted(r for _, r in parallel.execute(abs, [-1, -2, -3, -4, -5], jobs=10_000))
        assert out == [1, 2, 3, 4, 5] and seen["n_jobs"] == 2

    def test_cli_notes_the_cap(self, tmp_path, capsys, monkeypatch):
        monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
        argv = ["run", "--env", "reco", "--algo", "onpg", "--speed", "1", "--seeds", "1"]
        argv += ["--episodes", "20", "--quiet", "--jobs", "10000", "--out", str(tmp_path / "o")]
        assert main(argv) == 0
        assert "note: --jobs 10000 capped at the 2 cores" in capsys.readouterr().err


FAILING = """
import gymnasium as gym
import numpy as np

SEEDS = set()  # the runs so far: pyprog resets once with the run's seed


class Flaky(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)
    horizon = 3

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            SEEDS.add(seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if len(SEEDS) > OK:
            raise RuntimeError("the simulator crashed")
        return np.zeros(2, np.float32), 1.0, True, False, {}


def make():
    return Flaky()
"""


class TestFailedRun:
    def env(self, tmp_path, monkeypatch, ok):
        name = f"flaky_env_{ok}"
        (tmp_path / f"{name}.py").write_text(FAILING.replace("OK", str(ok)))
        monkeypatch.syspath_prepend(str(tmp_path))
        return f"{name}:make"

    def test_leaves_no_folder_and_no_store(self, tmp_path, monkeypatch):
        env = self.env(tmp_path, monkeypatch, ok=0)
        out = tmp_path / "new" / "out"
        with pytest.raises(RuntimeError, match="the simulator crashed"):
            run_grid([env], ["onpg"], None, range(2), out, episodes=5, jobs=1)
        assert not (tmp_path / "new").exists()

    def test_an_existing_folder_is_left_as_it_was(self, tmp_path, monkeypatch):
        env = self.env(tmp_path, monkeypatch, ok=0)
        out = tmp_path / "out"
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        with pytest.raises(RuntimeError):
            run_grid([env], ["onpg"], None, range(2), out, episodes=5, jobs=1)
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]

    def test_finished_runs_stay_to_resume_from(self, tmp_path, monkeypatch):
        env = self.env(tmp_path, monkeypatch, ok=1)  # the second run fails
        out = tmp_path / "out"
        with pytest.raises(RuntimeError):
            run_grid([env], ["onpg"], None, range(2), out, episodes=5, jobs=1)
        with ResultStore(out / STORE_NAME) as store:
            assert len(store) == 1
