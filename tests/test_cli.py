"""The ``pyprog`` command line: info, run (grid, CSV, resume, Ctrl-C), errors, vocabulary."""

import argparse
import csv
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pyprog import __version__
from pyprog.cli.main import build_parser, main
from pyprog.experiments.grid import CSV_COLUMNS, parse_range, parse_seeds, read_results


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pyprog {__version__}"


def test_info_reports_backend_and_optional_packages(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "kernel backend" in out and ("cython" in out or "numpy" in out)
    assert "numba" in out and "simglucose" in out
    assert "numba cache" in out


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "usage: pyprog" in capsys.readouterr().out


class TestRun:
    def test_grid_writes_rows_and_returns_and_prints_table(self, tmp_path, capsys):
        out = tmp_path / "grid"
        argv = ["run", "--env", "reco", "--algo", "pro-wls,onpg", "--speed", "0,3", "--seeds", "2"]
        argv += ["--episodes", "30", "--out", str(out), "--jobs", "1", "--quiet"]
        assert main(argv) == 0
        rows = read_results(out)
        assert len(rows) == 8
        assert {(r["algo"], r["speed"], r["seed"]) for r in rows} == {
            (a, s, k) for a in ("pro-wls", "onpg") for s in (0.0, 3.0) for k in (0, 1)
        }
        for r in rows:
            returns = np.load(out / r["returns_file"])
            assert returns.shape == (30,) and r["mean_return"] == pytest.approx(returns.mean())
        printed = capsys.readouterr().out
        assert "reco: regret (mean ± standard error over seeds)" in printed
        assert "pro-wls" in printed and "speed 3" in printed
        # the printed table, as CSV (what the README's regret.csv links show)
        with (out / "regret.csv").open() as fh:
            table = list(csv.DictReader(fh))
        assert [(r["algo"], float(r["speed"]), int(r["seeds"])) for r in table] == [
            (a, s, 2) for s in (0.0, 3.0) for a in ("pro-wls", "onpg")
        ]
        for r in table:
            assert f"{float(r['mean']):>12.4g} ± {float(r['se']):<7.2g}" in printed

    def test_rerun_resumes_without_duplicates(self, tmp_path, capsys):
        out = tmp_path / "grid"
        base = ["run", "--env", "reco", "--algo", "onpg", "--speed", "1", "--episodes", "20"]
        base += ["--out", str(out), "--jobs", "1", "--quiet"]
        assert main([*base, "--seeds", "2"]) == 0
        first = read_results(out)
        assert main([*base, "--seeds", "4"]) == 0
        rows = read_results(out)
        assert len(rows) == 4 and sorted(r["seed"] for r in rows) == [0, 1, 2, 3]
        assert rows[:2] == first  # finished runs are not redone

    def test_reacher_gets_surrogate_regret(self, tmp_path, capsys):
        argv = ["run", "--env", "reacher", "--algo", "onpg,ftrl-pg", "--speed", "2"]
        argv += ["--seeds", "2", "--episodes", "8", "--out", str(tmp_path), "--quiet"]
        assert main(argv) == 0
        assert "reacher: surrogate regret" in capsys.readouterr().out

    @pytest.mark.parametrize(
        "extra, message",
        [
            (["--env", "atari"], "unknown env 'atari': not a built-in (reco, reacher, diabetes)"),
            (["--algo", "pro-ols,dqn"], "unknown algo 'dqn'"),
            (["--speed", ""], "--speed is empty"),
            (["--speed", "3-1"], "--speed must be integers"),
            (["--seeds", "0"], "--seeds must be a count >= 1"),
            (["--episodes", "0"], "--episodes must be >= 1"),
            (["--jobs", "0"], "--jobs must be >= 1"),
            (["--hyper", "/nonexistent.json"], "--hyper must be 'paper' or a JSON file"),
        ],
    )
    def test_bad_input_is_one_clear_line_and_exit_2(self, tmp_path, capsys, extra, message):
        assert main(["run", "--out", str(tmp_path / "x"), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
        assert not (tmp_path / "x" / "results.csv").exists()

    def test_invalid_hyper_file_values(self, tmp_path, capsys):
        hyper = tmp_path / "h.json"
        hyper.write_text('{"lr": -1}')
        argv = ["run", "--out", str(tmp_path / "x"), "--hyper", str(hyper), "--speed", "1"]
        assert main(argv) == 2
        assert "lr must be a number > 0" in capsys.readouterr().err

    def test_unwritable_out(self, tmp_path, capsys):
        target = tmp_path / "file"
        target.write_text("not a folder")
        assert main(["run", "--out", str(target / "sub"), "--speed", "1", "--seeds", "1"]) == 2
        assert "cannot write to --out" in capsys.readouterr().err


def test_parse_helpers():
    assert parse_range("0-2,4", "--speed") == [0, 1, 2, 4]
    assert (
        parse_seeds("3") == [0, 1, 2]
        and parse_seeds("5-6") == [5, 6]
        and parse_seeds("1,9") == [1, 9]
    )
    with pytest.raises(ValueError, match="--speed must be"):
        parse_range("a", "--speed")


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_keeps_finished_rows_complete_and_resumes(tmp_path):
    """SIGINT mid-grid: exit 130, only whole rows, and the same command finishes the grid."""
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "pyprog", "run", "--env", "reco", "--algo", "pro-ols,ftrl-pg"]
    cmd += ["--speed", "0-4", "--seeds", "3", "--episodes", "400", "--out", str(out), "--quiet"]
    # a background job of a non-interactive shell inherits SIGINT ignored, and Python keeps
    # it so (as nohup wants); the child gets the default disposition, as at a terminal
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    results = out / "results.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results.exists() and len(results.read_text().splitlines()) >= 3:  # header + 2 runs
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    text = results.read_text()
    assert text.endswith("\n")
    with results.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(CSV_COLUMNS)
    assert all(len(r) == len(CSV_COLUMNS) for r in rows[1:])
    finished = len(rows) - 1
    assert 2 <= finished < 30
    for r in rows[1:]:  # every listed run has its returns file
        assert (out / r[-1]).exists()
    assert not list((out / "returns").glob("*.tmp.npy"))
    # resume
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    keys = [(r["algo"], r["speed"], r["seed"]) for r in read_results(out)]
    assert len(keys) == 30 and len(set(keys)) == 30


@pytest.mark.skipif(os.name != "posix", reason="console script check on POSIX")
def test_console_script_is_installed():
    done = subprocess.run(["pyprog", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and __version__ in done.stdout


def test_a_folder_holds_one_grid(tmp_path, capsys):
    base = ["run", "--env", "reco", "--algo", "onpg", "--speed", "1", "--seeds", "1"]
    base += ["--out", str(tmp_path), "--jobs", "1", "--quiet"]
    assert main([*base, "--episodes", "10"]) == 0
    assert main([*base, "--episodes", "20"]) == 2
    assert "holds a grid run with" in capsys.readouterr().err
    assert len(read_results(tmp_path)) == 1


# --------------------------------------------------------------------------- one vocabulary


@pytest.mark.parametrize("flag", ["--speed", "--speeds"])
@pytest.mark.parametrize(
    "command, required, dest",
    [("run", ["--out", "x"], "speed"), ("sweep", ["--store", "s.sqlite"], "speeds")],
)
def test_speed_and_speeds_are_the_same_flag(flag, command, required, dest):
    args = build_parser().parse_args([command, *required, flag, "0,2"])
    assert getattr(args, dest) == "0,2"


@pytest.mark.parametrize("flag", ["--name", "--sweep"])
def test_best_selects_a_sweep_by_the_word_sweep_writes_it_with(flag):
    assert build_parser().parse_args(["best", "--store", "s", flag, "a"]).name == "a"
    assert "--sweep" not in _help("best")  # the old spelling still works, unlisted


def _subparsers() -> dict:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def _help(command: str) -> str:
    return _subparsers()[command].format_help()


@pytest.mark.parametrize("command", ["run", "sweep", "best", "reproduce"])
def test_every_option_with_a_default_says_it_in_help(command):
    for action in _subparsers()[command]._actions:
        if action.help in (None, argparse.SUPPRESS) or action.required:
            continue
        if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)):
            continue
        assert "default" in action.help, (command, action.option_strings)


@pytest.mark.parametrize(
    "command, words",
    [
        ("run", ["reco, reacher, diabetes", "pro-ols, pro-wls, onpg, ftrl-pg", "0-4", "3-7"]),
        ("sweep", ["reco, reacher, diabetes", "fourier, poly, linear", "tcp://host:8786"]),
        ("reproduce", ["reco, reacher, diabetes", "results"]),
        ("best", ["--json -", "--name"]),
    ],
)
def test_help_lists_valid_values(command, words):
    text = " ".join(_help(command).split())
    for word in words:
        assert word in text, (command, word)


def test_output_folders_are_created_with_their_parents(tmp_path, capsys):
    out = tmp_path / "a" / "b" / "grid"
    argv = ["run", "--algo", "onpg", "--speed", "1", "--seeds", "1", "--episodes", "5"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    assert (out / "results.csv").exists()
