"""Issue 34, item 4: papercuts a new user met. One test (at least) per papercut."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import pyprog
from pyprog._ext.backend import missing_kernels_message, shadowed_install, source_tree
from pyprog.cli.main import main
from pyprog.runner.adapter import observation_encoder

ROOT = Path(__file__).resolve().parents[1]


# --- importing pyprog from inside its source folder after a non-editable install ---------------


def test_the_missing_kernels_message_says_the_source_folder_shadows_the_install(tmp_path):
    message = missing_kernels_message(
        "No module named 'pyprog._ext._kernels'",
        source=tmp_path / "src",
        installed=tmp_path / "site" / "pyprog",
    )
    assert "shadows the installed pyprog" in message
    assert str(tmp_path / "site") in message
    assert "another folder" in message and "pip install -e ." in message
    assert "Reinstall with a C compiler" not in message


def _source_tree_without_kernels(root: Path) -> Path:
    src = root / "src"
    shutil.copytree(
        ROOT / "pyprog",
        src / "pyprog",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.c", "*.html"),
    )
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy(ROOT / name, src / name)
    return src


def test_source_and_shadowed_install_are_found(tmp_path):
    src = _source_tree_without_kernels(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "pyprog").symlink_to(ROOT / "pyprog")  # the worktree's package has the kernels
    assert source_tree(src / "pyprog") == src
    assert source_tree(site / "pyprog") is None
    if not list((ROOT / "pyprog" / "_ext").glob("_kernels.*.so")):
        pytest.skip("the kernels are not built in this checkout")
    assert shadowed_install(src / "pyprog", [str(src), str(site)]) == site / "pyprog"
    assert shadowed_install(src / "pyprog", [str(src)]) is None


def test_importing_from_the_source_folder_says_what_happened_and_what_to_do(tmp_path):
    """Simulated: a source tree without the built kernels ahead of an installed copy."""
    if not list((ROOT / "pyprog" / "_ext").glob("_kernels.*.so")):
        pytest.skip("the kernels are not built in this checkout")
    src = _source_tree_without_kernels(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "pyprog").symlink_to(ROOT / "pyprog")
    env = {**os.environ, "PYTHONPATH": str(site), "PYPROG_PURE_PYTHON": ""}
    code = "import warnings; warnings.simplefilter('always'); import pyprog; print(pyprog.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=src
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(src))
    assert "shadows the installed pyprog" in done.stderr
    assert "pip install -e ." in done.stderr
    assert "Reinstall with a C compiler" not in done.stderr


# --- a Tuple observation space suggests FlattenObservation --------------------------------------


class TupleObs(gym.Env):
    """A two-step environment whose observations are a Tuple (Discrete, Box)."""

    observation_space = spaces.Tuple(
        (spaces.Discrete(3), spaces.Box(-1.0, 1.0, (2,), dtype=np.float64))
    )
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return (0, np.zeros(2)), {}

    def step(self, action):
        self.t += 1
        return (self.t % 3, np.full(2, 0.5)), float(action), self.t >= 2, False, {}


def test_a_tuple_observation_space_suggests_flatten_observation():
    env = TupleObs()
    with pytest.raises(ValueError, match=r"gymnasium\.wrappers\.FlattenObservation"):
        observation_encoder(env.observation_space)
    # and the suggestion works
    result = pyprog.run(gym.wrappers.FlattenObservation(env), "onpg", seed=0, episodes=3, horizon=2)
    assert result.returns.shape == (3,)


# --- pyprog info reports NS-Gym and MuJoCo -------------------------------------------------------


def test_info_reports_ns_gym_and_mujoco(capsys, monkeypatch):
    from pyprog.cli import info

    assert main(["info"]) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert {"ns-gym", "mujoco"} <= rows.keys()
    monkeypatch.setattr(info, "_package_version", lambda name, module=None: "9.9")
    assert main(["info"]) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert rows["ns-gym"] == "9.9" and rows["mujoco"] == "9.9"


# --- a run that fails before any run finished leaves no files ------------------------------------

STRING_REWARD_ENV = """
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class StrReward(gym.Env):
    observation_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float64)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), "1.0", True, False, {}


def make():
    return gym.wrappers.TimeLimit(StrReward(), 3)
"""


def test_a_run_whose_every_run_fails_leaves_no_files(tmp_path, monkeypatch, capsys):
    """Issue 34: a string reward left results.csv and an empty runs.sqlite."""
    (tmp_path / "str_reward_env.py").write_text(STRING_REWARD_ENV)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out" / "nested"
    args = ["run", "--env", "str_reward_env:make", "--algo", "onpg", "--seeds", "2"]
    assert main([*args, "--episodes", "2", "--jobs", "1", "--quiet", "--out", str(out)]) == 2
    assert "the reward must be a real number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- CLI: errors in the options' names; one algorithm's table ------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--d", "7"],
            "(got --d 7; for a fixed basis name it, e.g. --basis fourier, --d 7; or "
            "name the candidates with --candidates)",
        ),
        (
            ["--basis", "poly", "--candidates", "linear"],
            "--candidates is only used with --basis auto",
        ),
        (["--seed", "-1"], "--seed must be an integer >= 0; got -1"),
        (["--candidates", "window(k=x)"], "named like 'fourier(d=9)'"),
    ],
)
def test_forecast_errors_name_the_options_not_the_parameters(tmp_path, capsys, args, message):
    from forecast_montecarlo import safety_episodes
    from test_logs import write_logs

    episodes = safety_episodes(np.random.default_rng(0), 60, future_diff=0.2)
    path = write_logs(tmp_path / "logs.csv", *episodes)
    assert main(["forecast", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "candidates=[" not in err and "basis='" not in err and "numpy.random" not in err


def test_one_algorithm_without_regret_shows_mean_returns_not_regret_against_itself(
    tmp_path, capsys
):
    """Issue 34: `-2.22e-17 ± 0.29`, a surrogate regret of ONPG against ONPG."""
    args = ["run", "--env", "CartPole-v1", "--algo", "onpg", "--seeds", "2", "--episodes", "3"]
    assert main([*args, "--jobs", "1", "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "CartPole-v1: mean return" in out and "surrogate regret" not in out
    row = next(csv.DictReader(open(tmp_path / "regret.csv")))
    assert row["metric"] == "mean return" and float(row["mean"]) > 0  # CartPole pays 1 per step


def _run(tmp_path, *extra, algo="pro-wls", seeds="2"):
    args = ["run", "--env", "reco", "--algo", algo, "--speed", "1", "--seeds", seeds]
    return main(
        [*args, "--episodes", "8", "--jobs", "1", "--quiet", "--out", str(tmp_path), *extra]
    )


def test_hyper_takes_inline_json(tmp_path):
    assert _run(tmp_path, "--hyper", '{"lr": 0.02, "delta": 2, "inner_steps": 4}') == 0
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert {json.loads(r["hyper"])["lr"] for r in rows} == {0.02}


@pytest.mark.parametrize(
    "algo, hyper, message",
    [
        ("pro-wls", '{"lr": 0.01, "basis": "auto", "d": 5}', '"d" sets the features of a fixed'),
        ("onpg", '{"lr": 0.01, "basis": "poly"}', "onpg do(es) not forecast"),
        ("pro-wls,onpg", '{"lr": 0.01, "d": 4}', "--algo pro-ols,pro-wls"),
    ],
)
def test_settings_keys_that_would_be_unused_are_errors(tmp_path, capsys, algo, hyper, message):
    assert _run(tmp_path, "--hyper", hyper, algo=algo) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyprog run: error: --hyper: ") and message in err
    assert not tmp_path.joinpath("runs.sqlite").exists()


def test_sweep_basis_for_onpg_alone_is_an_error(tmp_path, capsys):
    args = ["sweep", "--env", "reco", "--algo", "onpg", "--speeds", "1", "--basis", "auto"]
    assert main([*args, "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "--basis would be unused" in capsys.readouterr().err


def test_results_note_says_which_runs_results_csv_holds_and_explains_skipped(tmp_path, capsys):
    assert _run(tmp_path, algo="pro-ols", seeds="1") == 0
    capsys.readouterr()
    assert _run(tmp_path, "--hyper", '{"lr": 0.01, "d": 7}', algo="pro-ols") == 0
    out = capsys.readouterr().out
    assert "results.csv holds the 2 run(s) of this command" in out
    assert "the store holds 1 other run(s) too" in out
    assert "skipped_updates / skipped_steps (results.csv)" in out  # d = 7 > 8 episodes: skips
    assert "for want of a forecast" in out
    assert len(list(csv.DictReader(open(tmp_path / "results.csv")))) == 2


def test_best_says_which_setting_won(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    args = ["sweep", "--env", "reco", "--algo", "onpg", "--speeds", "1", "--settings", "2"]
    args += ["--seeds", "2", "--episodes", "6", "--jobs", "1", "--quiet", "--store", str(store)]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["best", "--store", str(store), "--json", str(tmp_path / "b.json")]) == 0
    won = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  won: setting ")]
    chosen = json.loads((tmp_path / "b.json").read_text())["reco"]["onpg"]["1"]
    assert len(won) == 1 and f"lr={chosen['lr']:.4g}, delta={chosen['delta']}," in won[0]


# --- docs: every name of pyprog.__all__ has an entry in the API reference -----------------------


def test_every_public_name_is_in_the_api_reference():
    """Issue 34: forecast_logs, LogForecast, select_forecaster, ... had no entry."""
    import re

    documented = set()
    for page in (ROOT / "docs" / "api").glob("*.rst"):
        text = page.read_text()
        if ".. currentmodule:: pyprog\n" in text:
            documented |= set(re.findall(r"^\.\. auto\w+:: (\w+)$", text, flags=re.M))
    missing = sorted(set(pyprog.__all__) - documented - {"__version__"})
    assert missing == []


def test_guides_have_a_section_sidebar_and_code_blocks_that_wrap():
    """Each guide was a top-level section of its own, so the PyData theme's section sidebar
    was empty; code blocks cut long lines off out of sight at 1280 px."""
    index = (ROOT / "docs" / "guides" / "index.md").read_text()
    toc = index.split("```{toctree}", 1)[1].split("```", 1)[0].split()
    guides = {p.stem for p in (ROOT / "docs" / "guides").glob("*.md")} - {"index"}
    assert guides <= set(toc)
    assert "guides/index" in (ROOT / "docs" / "index.rst").read_text()
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'html_css_files = ["pyprog.css"]' in conf and "_link_api_names" in conf
    assert "white-space: pre-wrap" in (ROOT / "docs" / "_static" / "pyprog.css").read_text()


# --- README: one install line with every extra; timings as ranges, quiet and loaded -------------


def test_readme_has_one_install_line_with_every_extra_and_timings_quiet_and_loaded():
    import tomllib

    readme = (ROOT / "README.md").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (dev,) = extras["dev"]  # "pyprog[test,docs,lint]"
    covered = {"dev", *dev.split("[")[1].rstrip("]").split(",")}
    (line,) = [ln for ln in readme.splitlines() if ln.startswith('pip install -e ".[dev')]
    given = set(line.split('".[')[1].split("]")[0].split(","))
    covered |= given | {x for e in given for x in ("diabetes", "dask") if e == "all"}
    assert set(extras) - covered <= {"all", "diabetes"}  # all = diabetes (empty) + dask
    assert "simglucose==0.2.11" in line
    for command in ("pyprog reproduce --quick", "&& pytest"):
        comment = readme.split(command)[0].rsplit("\n# ", 1)[1]
        assert "quiet" in comment and "loaded" in comment, comment


# --- figures: the legend and its "bands: ±1 s.e." note cover no curve ---------------------------


def test_learning_curves_legend_is_outside_the_axes():
    from pyprog.paper.figures import plot_learning_curves

    rng = np.random.default_rng(0)
    returns = {a: rng.normal(size=(3, 200)) for a in ("pro-ols", "pro-wls", "onpg", "ftrl-pg")}
    fig = plot_learning_curves(returns, "NS-Diabetes, speed 4", optimal=np.ones(200))
    fig.canvas.draw()
    ax, legend = fig.axes[0], fig.axes[0].get_legend()
    axes_box, legend_box = ax.get_window_extent(), legend.get_window_extent()
    assert legend_box.x0 >= axes_box.x1  # to the right of the axes: over no curve
    assert fig.get_window_extent().x1 >= legend_box.x1  # and inside the figure
    assert legend.get_title().get_text().startswith("bands: ± 1 standard error")
