"""The ``pyprog`` command line: info, run (grid, store, CSV, resume, Ctrl-C, SIGKILL), errors,
vocabulary."""

import argparse
import contextlib
import csv
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from typing import ClassVar

import numpy as np
import pytest

from pyprog import __version__
from pyprog.cli.main import build_parser, main
from pyprog.experiments.grid import (
    STORE_NAME,
    grid_tasks,
    parse_range,
    parse_seeds,
    read_results,
    read_runs,
    run_grid,
)
from pyprog.results import CSV_COLUMNS, ResultStore, StoreError


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
        runs = {(r.algo, r.speed, r.seed): r for r in read_runs(out)}  # returns: in the store
        for r in rows:
            returns = runs[(r["algo"], r["speed"], r["seed"])].returns
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
        if _stored(out) >= 2:
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
    assert finished == _stored(out)  # results.csv, exported on Ctrl-C, lists every stored run
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # no temporaries
    # resume
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    keys = [(r["algo"], r["speed"], r["seed"]) for r in read_results(out)]
    assert len(keys) == 30 and len(set(keys)) == 30


@pytest.mark.skipif(os.name != "posix", reason="console script check on POSIX")
def test_console_script_is_installed():
    done = subprocess.run(["pyprog", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and __version__ in done.stdout


def _stored(out) -> int:
    """Runs in ``out``'s store so far (0 before it exists)."""
    with contextlib.suppress(StoreError, sqlite3.Error):
        with ResultStore(out / STORE_NAME, readonly=True) as store:
            return len(store)
    return 0


def test_a_folder_holds_several_grids_and_shows_the_last(tmp_path, capsys):
    """Runs are keyed by their full setting (episodes included), so grids of other lengths
    share a folder without mixing: results.csv and regret.csv show the command's own runs."""
    base = ["run", "--env", "reco", "--algo", "onpg", "--speed", "1", "--seeds", "1"]
    base += ["--out", str(tmp_path), "--jobs", "1", "--quiet"]
    assert main([*base, "--episodes", "10"]) == 0
    assert main([*base, "--episodes", "20"]) == 0
    (row,) = read_results(tmp_path)
    assert row["episodes"] == 20
    assert sorted(r.episodes for r in read_runs(tmp_path)) == [10, 20]
    assert main([*base, "--episodes", "10"]) == 0  # both stored: nothing to compute
    assert [r["episodes"] for r in read_results(tmp_path)] == [10]


# --------------------------------------------------------------------------- one store


class TestRunStore:
    """``pyprog run --out DIR`` keeps its runs in DIR/runs.sqlite, the store of sweep and
    reproduce: one writer, one resume."""

    ARGS: ClassVar[dict] = dict(
        envs=["reco"], algos=["onpg", "pro-wls"], speeds=[1], seeds=[0, 1], episodes=15
    )

    def grid(self, out, progress=None):
        return run_grid(**self.ARGS, out=out, jobs=1, progress=progress)

    def test_rerun_computes_nothing(self, tmp_path):
        calls = []
        first = self.grid(tmp_path, progress=lambda done, total: calls.append((done, total)))
        assert calls[0] == (0, 4) and calls[-1] == (4, 4)
        calls.clear()
        again = self.grid(tmp_path, progress=lambda done, total: calls.append((done, total)))
        assert calls == [(0, 0)]  # nothing to compute: every key is in the store
        assert [r.key for r in again] == [r.key for r in first]
        assert [r.finished for r in again] == [r.finished for r in first]  # the stored runs
        with ResultStore(tmp_path / STORE_NAME, readonly=True) as store:
            assert len(store) == 4 and {r.sweep for r in store.rows()} == {"run"}

    def test_results_csv_is_the_stored_runs(self, tmp_path):
        runs = self.grid(tmp_path)
        with (tmp_path / "results.csv").open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert list(rows[0]) == list(CSV_COLUMNS)
        by_key = {r.key: r for r in runs}
        assert len(rows) == len(by_key) == 4
        for row in rows:
            run = by_key[(row["env"], row["algo"], float(row["speed"]), row["setting_hash"],
                          int(row["seed"]))]  # fmt: skip
            assert float(row["regret"]) == run.regret  # exact: floats are written as repr
            assert float(row["mean_return"]) == run.mean_return == np.mean(run.returns)
            assert int(row["episodes"]) == run.episodes == 15
            assert row["sweep"] == "run" and row["version"] == run.version
        assert [t.key for t in grid_tasks(**self.ARGS)] == [r.key for r in runs]

    def test_run_and_sweep_share_a_folder(self, tmp_path, capsys):
        """A sweep into DIR/runs.sqlite and a grid in DIR coexist: the grid resumes from the
        store, its CSV lists its own runs only, and `best` sees the sweep by its name."""
        self.grid(tmp_path)
        store = str(tmp_path / STORE_NAME)
        sweep = ["sweep", "--env", "reco", "--algo", "onpg", "--speeds", "1", "--settings", "2"]
        sweep += ["--seeds", "2", "--episodes", "15", "--jobs", "1", "--quiet"]
        assert main([*sweep, "--store", store, "--name", "s"]) == 0
        assert capsys.readouterr().out.startswith("4 runs done, 0 already in")
        calls = []
        self.grid(tmp_path, progress=lambda done, total: calls.append(total))
        assert calls == [0]
        assert len(read_results(tmp_path)) == 4
        assert {r["sweep"] for r in read_results(tmp_path)} == {"run"}
        with ResultStore(store, readonly=True) as db:
            assert len(db) == 8 and len(db.keys(sweep="s")) == 4
        assert main(["best", "--store", store, "--name", "s"]) == 0
        assert "best of 2 settings" in capsys.readouterr().out


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX process groups")
def test_sigkill_mid_run_loses_nothing_and_resumes(tmp_path):
    """SIGKILL of `pyprog run` and its workers leaves whole, unique rows in the store; the
    same command then computes exactly the missing runs and exports every run."""
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "pyprog", "run", "--env", "reco", "--algo", "pro-ols,pro-wls"]
    cmd += ["--speed", "0-4", "--seeds", "2", "--episodes", "150", "--jobs", "2", "--quiet"]
    cmd += ["--out", str(out)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        seen, deadline = 0, time.monotonic() + 60
        while seen < 2 and proc.poll() is None and time.monotonic() < deadline:
            seen = _stored(out)
            time.sleep(0.005)
        running = proc.poll() is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the coordinator and its workers
        _, err = proc.communicate(timeout=30)
    assert running and seen >= 2, f"pyprog run ended before it was killed: {err}"
    with ResultStore(out / STORE_NAME, readonly=True) as store:
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        before = {r.key: r.returns for r in store.rows()}  # decodes every array
    assert 2 <= len(before) < 20
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    runs = read_runs(out)
    assert len(runs) == 20 and len({r.key for r in runs}) == 20
    assert all(np.array_equal(r.returns, before[r.key]) for r in runs if r.key in before)
    assert len(read_results(out)) == 20


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


def test_grid_runs_are_the_runs_of_pyprog_run_bit_for_bit(tmp_path, capsys):
    """The store changes no number: every stored run equals `pyprog.run` with the same seed
    bit for bit, and the regrets are those `pyprog run` wrote before it had a store (commit
    30dc165, results.csv + .npy; equal to the last bit on the machine that recorded them)."""
    import pyprog

    argv = ["run", "--env", "reco", "--algo", "pro-wls,onpg", "--speed", "2", "--seeds", "0-1"]
    assert main([*argv, "--episodes", "200", "--out", str(tmp_path), "--quiet"]) == 0
    before = {  # regret and mean return per (algo, seed), from 30dc165's results.csv
        ("pro-wls", 0): (14.495715498058054, 0.3591824749862431),
        ("pro-wls", 1): (11.213027396503044, 0.3755698702890692),
        ("onpg", 0): (12.494010821830233, 0.3696041477704703),
        ("onpg", 1): (11.403157102973406, 0.3742728410427793),
    }
    runs = read_runs(tmp_path)
    assert {(r.algo, r.seed) for r in runs} == set(before)
    for r in runs:
        direct = pyprog.run("reco", r.algo, speed=2, seed=r.seed, episodes=200)
        assert r.returns.tobytes() == direct.returns.tobytes() and r.regret == direct.regret
        regret, mean_return = before[(r.algo, r.seed)]
        assert r.regret == pytest.approx(regret, rel=1e-9, abs=0)
        assert r.mean_return == pytest.approx(mean_return, rel=1e-9, abs=0)


def test_info_names_the_cpu(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^cpu\s+\S", out, re.M), out


def test_regret_table_says_why_one_seed_has_no_standard_error():
    from pyprog.cli.common import format_table

    row = dict(env="CartPole-v1", algo="pro-wls", speed=None, metric="regret", mean=0.0)
    text = format_table([{**row, "se": float("nan")}, {**row, "algo": "onpg", "se": 0.5}])
    assert "nan" not in text and "± n/a" in text and "± 0.5" in text
    assert "one seed has no standard error" in text
    assert "one seed" not in format_table([{**row, "se": 0.5}])
