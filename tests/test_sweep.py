"""``pyprog sweep`` and ``pyprog best``: drawn settings, resume, SIGKILL, Dask, errors."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from unprivileged import run_unprivileged

from pyprog.cli.main import main
from pyprog.experiments.grid import read_results, read_runs
from pyprog.experiments.sweep import P_NO_ENTROPY, SEARCH_SPACE, best_settings, draw_settings
from pyprog.learn.hyperparams import ENVS, Hyper, paper_hyper
from pyprog.results import ResultStore, StoreError, canonical_json, run_key, setting_hash
from pyprog.runner.loop import RunResult, run

SHIPPED = Path(__file__).resolve().parents[1] / "pyprog" / "data" / "hyperparams.json"
#: The small sweep most tests run: 2 algos x 2 speeds x `settings` x `seeds`.
BASE = {
    "env": "reco",
    "algo": "pro-wls,onpg",
    "speeds": "1,3",
    "settings": "2",
    "seeds": "2",
    "episodes": "20",
    "jobs": "1",
}


def sweep_argv(store: Path, quiet: bool = True, **options: str) -> list[str]:
    """``pyprog sweep`` arguments: BASE, overridden by ``options`` (``setting_seed=...``)."""
    argv = ["sweep", "--store", str(store)]
    for name, value in {**BASE, **options}.items():
        argv += [f"--{name.replace('_', '-')}", value]
    return [*argv, "--quiet"] if quiet else argv


def expected_keys(
    algos=("pro-wls", "onpg"),
    speeds=(1, 3),
    settings=2,
    seeds=(0, 1),
    episodes=20,
    env="reco",
    setting_seed=0,
) -> set:
    """The store keys of every run of a sweep, computed independently of the sweep code."""
    return {
        run_key(env, algo, speed, hyper.to_dict(), seed, episodes)
        for hyper in draw_settings(env, settings, seed=setting_seed)
        for algo in algos
        for speed in speeds
        for seed in seeds
    }


def stored(path: Path) -> dict:
    """Every stored run of ``path`` by key (read-only)."""
    with ResultStore(path, readonly=True) as store:
        rows = store.rows()
    by_key = {r.key: r for r in rows}
    assert len(by_key) == len(rows)
    return by_key


def fingerprint(rows: dict) -> dict:
    """What must never change once a run is stored: its id, numbers and finish time."""
    return {
        k: (r.id, r.returns.tobytes(), r.regret, r.mean_return, r.finished) for k, r in rows.items()
    }


def one_error_line(capsys, command: str = "sweep") -> str:
    """The captured stderr, asserted to be a single ``pyprog COMMAND: error: ...`` line."""
    err = capsys.readouterr().err
    assert err.startswith(f"pyprog {command}: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- drawn settings


class TestDrawSettings:
    @pytest.mark.parametrize("env", ENVS)
    def test_same_arguments_same_settings_and_prefix(self, env):
        """The same (env, n, seed) draws the same settings; a larger n extends a smaller one."""
        settings = draw_settings(env, 6, seed=3)
        assert settings == draw_settings(env, 6, seed=3)
        assert draw_settings(env, 2, seed=3) == settings[:2]
        assert draw_settings(env, 9, seed=3)[:6] == settings
        assert len({canonical_json(h) for h in settings}) == 6  # six distinct settings

    def test_same_settings_in_another_process(self):
        """The draw does not depend on the process (hash seeds, import order)."""
        code = (
            "import json; from pyprog.experiments.sweep import draw_settings; "
            "print(json.dumps([h.to_dict() for h in draw_settings('reacher', 4, seed=11)]))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        here = [h.to_dict() for h in draw_settings("reacher", 4, seed=11)]
        assert json.loads(done.stdout) == here

    @pytest.mark.parametrize("env", ENVS)
    def test_values_lie_in_the_paper_ranges(self, env):
        """200 draws stay inside appendix D.2's ranges and sets, and cover them."""
        assert SEARCH_SPACE["lr"] == ("log-uniform", 5e-5, 5e-2)
        assert SEARCH_SPACE["entropy_lambda"][1:] == (1e-4, 1e-2)
        settings = draw_settings(env, 200, seed=5)
        lrs = np.array([h.lr for h in settings])
        assert lrs.min() >= 5e-5 and lrs.max() <= 5e-2
        # log-uniform: every decade of the range is hit, and about as often
        decades = np.histogram(np.log10(lrs), bins=3, range=(np.log10(5e-5), np.log10(5e-2)))[0]
        assert decades.min() >= 40, decades
        entropies = [h.entropy_lambda for h in settings]
        zeros = sum(e == 0.0 for e in entropies)
        assert 0.5 * P_NO_ENTROPY * 200 <= zeros <= 2 * P_NO_ENTROPY * 200
        assert all(e == 0.0 or 1e-4 <= e <= 1e-2 for e in entropies)
        assert {h.delta for h in settings} == {1, 3, 5}
        for delta in (1, 3, 5):
            steps = {h.inner_steps for h in settings if h.delta == delta}
            assert steps == {10 * delta, 20 * delta, 30 * delta}
        assert {h.clip for h in settings} == {5.0, 10.0, 15.0}
        assert {h.d for h in settings} == {3, 5, 7}
        assert {h.gamma for h in settings} == {0.99}
        assert {h.basis for h in settings} == {"fourier"}
        hidden = {h.hidden for h in settings}
        assert hidden == ({16, 32, 64} if env == "reacher" else {None})
        stds = [h.gauss_std for h in settings]
        if env == "diabetes":
            assert min(stds) >= 0.5 and max(stds) <= 2.5 and max(stds) - min(stds) > 1.5
        else:
            assert set(stds) == {None}

    @pytest.mark.parametrize("basis", ["poly", "auto"])
    def test_basis_is_passed_through(self, basis):
        """--basis sets the forecast basis of every drawn setting, and nothing else."""
        drawn = draw_settings("reco", 4, seed=2, basis=basis)
        fourier = draw_settings("reco", 4, seed=2)
        assert [h.replace(basis="fourier") for h in drawn] == fourier
        assert {h.basis for h in drawn} == {basis}

    @pytest.mark.parametrize("env", ENVS)
    def test_another_setting_seed_draws_other_settings(self, env):
        """--setting-seed 1 shares no setting with --setting-seed 0."""
        a = {canonical_json(h) for h in draw_settings(env, 20, seed=0)}
        b = {canonical_json(h) for h in draw_settings(env, 20, seed=1)}
        assert len(a) == len(b) == 20 and not a & b

    @pytest.mark.parametrize(
        "env, n, match",
        [("atari", 3, "unknown env 'atari'"), ("reco", 0, ">= 1"), ("reco", True, ">= 1")],
    )
    def test_bad_arguments(self, env, n, match):
        """An unknown env or a count below 1 is refused."""
        with pytest.raises(ValueError, match=match):
            draw_settings(env, n)


# --------------------------------------------------------------------------- sweep command


class TestSweepCommand:
    def test_writes_every_run_once_with_the_drawn_settings(self, tmp_path, capsys):
        """One complete row per (setting, algo, speed, seed), each holding its drawn setting
        and exactly the numbers ``pyprog.run`` gives for it."""
        path = tmp_path / "sweep.sqlite"
        assert main([*sweep_argv(path), "--name", "trial"]) == 0
        assert capsys.readouterr().out.strip() == (
            f"16 runs done, 0 already in {path} (16 in the sweep)"
        )
        rows = stored(path)
        assert set(rows) == expected_keys()
        drawn = {setting_hash(h, 20): h for h in draw_settings("reco", 2, seed=0)}
        for r in rows.values():
            assert r.hyper == drawn[r.setting_hash].to_dict()
            assert r.sweep == "trial" and r.episodes == 20 and r.returns.shape == (20,)
            assert r.regret is not None and r.optimal.shape == r.expected.shape == (20,)
        one = rows[min(rows)]
        again = run(
            one.env,
            one.algo,
            speed=one.speed,
            seed=one.seed,
            episodes=one.episodes,
            hyper=one.hyper,
        )
        assert again.returns.tobytes() == one.returns.tobytes() and again.regret == one.regret

    def test_rerun_skips_stored_runs_and_extends_the_sweep(self, tmp_path, capsys):
        """The same command again runs nothing; more seeds, then more settings, run exactly
        the new runs; stored rows are never rewritten."""
        path = tmp_path / "sweep.sqlite"
        assert main(sweep_argv(path)) == 0
        first = fingerprint(stored(path))
        capsys.readouterr()

        assert main(sweep_argv(path)) == 0
        assert capsys.readouterr().out.startswith(f"0 runs done, 16 already in {path} (16 ")
        assert fingerprint(stored(path)) == first

        assert main(sweep_argv(path, seeds="3")) == 0
        assert capsys.readouterr().out.startswith("8 runs done, 16 already in")
        rows = stored(path)
        assert set(rows) == expected_keys(seeds=(0, 1, 2))
        assert {k: v for k, v in fingerprint(rows).items() if k in first} == first

        assert main(sweep_argv(path, seeds="3", settings="3")) == 0
        assert capsys.readouterr().out.startswith("12 runs done, 24 already in")
        assert set(stored(path)) == expected_keys(settings=3, seeds=(0, 1, 2))

        # a seed range runs just those seeds; seeds 0-2 are there already
        assert main(sweep_argv(path, seeds="2-3", settings="3")) == 0
        assert capsys.readouterr().out.startswith("12 runs done, 12 already in")

    def test_other_setting_seed_adds_other_settings(self, tmp_path, capsys):
        """--setting-seed 1 draws new settings: all its runs are new, none overwrite."""
        path = tmp_path / "sweep.sqlite"
        assert main(sweep_argv(path)) == 0
        first = fingerprint(stored(path))
        assert main(sweep_argv(path, setting_seed="1")) == 0
        assert capsys.readouterr().out.splitlines()[-1].startswith("16 runs done, 0 already")
        rows = stored(path)
        assert set(rows) == expected_keys() | expected_keys(setting_seed=1)
        assert len(rows) == 32
        assert {k: v for k, v in fingerprint(rows).items() if k in first} == first

    def test_progress_bar_with_eta_on_a_terminal(self, tmp_path, capsys, monkeypatch):
        """Without --quiet, a terminal on stderr gets a bar that counts the runs and shows
        the remaining time; the summary line stays on stdout."""

        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        terminal = Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        path = tmp_path / "sweep.sqlite"
        assert main(sweep_argv(path, quiet=False, algo="onpg", speeds="2", settings="2")) == 0
        bar = terminal.getvalue()
        assert "pyprog sweep" in bar and "4/4" in bar
        assert re.search(r"\d+/4 \[\d\d:\d\d<\d\d:\d\d", bar), bar  # [elapsed<remaining
        assert capsys.readouterr().out.startswith("4 runs done")

    def test_no_bar_in_a_log_file(self, tmp_path, capsys):
        """Without --quiet but with stderr not a terminal (a log file): progress lines, no
        bar (issue 19: a long sweep printed nothing until it ended)."""
        path = tmp_path / "sweep.sqlite"
        assert main(sweep_argv(path, quiet=False, algo="onpg", speeds="2")) == 0
        captured = capsys.readouterr()
        assert captured.out.startswith("4 runs done")
        lines = captured.err.splitlines()
        assert lines[0].startswith("pyprog sweep: 0/4 runs") and "\r" not in captured.err
        assert lines[-1].startswith("pyprog sweep: 4/4 runs (100%)")


# --------------------------------------------------------------------------- SIGKILL


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX process groups")
def test_sigkill_mid_sweep_loses_nothing_and_resumes(tmp_path):
    """SIGKILL of the sweep and its workers leaves whole, unique rows; the same command then
    runs exactly the missing runs and leaves the earlier rows as they were."""
    path = tmp_path / "sweep.sqlite"
    options = {"algo": "pro-ols,pro-wls", "speeds": "0-4", "episodes": "150", "jobs": "2"}
    cmd = [sys.executable, "-m", "pyprog", *sweep_argv(path, **options)]
    want = expected_keys(algos=("pro-ols", "pro-wls"), speeds=range(5), episodes=150)
    assert len(want) == 40
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 2 and proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(StoreError, sqlite3.Error):
                with ResultStore(path, readonly=True) as reader:
                    seen = len(reader)
            time.sleep(0.005)
        running = proc.poll() is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the coordinator and its workers
        _, err = proc.communicate(timeout=30)
    assert running and seen >= 2, f"sweep ended before it was killed: {err}"
    assert proc.returncode == -signal.SIGKILL

    with ResultStore(path, readonly=True) as store:
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        count, distinct = store.conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT env || algo || speed || setting_hash || seed) "
            "FROM runs"
        ).fetchone()
    assert count == distinct
    before = stored(path)  # decodes every array: a half-written one would raise here
    assert 2 <= len(before) < 40 and set(before) <= want
    for r in before.values():
        assert r.episodes == 150 and r.returns.shape == r.optimal.shape == (150,)

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{40 - len(before)} runs done, {len(before)} already in")
    after = stored(path)
    assert set(after) == want
    assert {k: v for k, v in fingerprint(after).items() if k in before} == fingerprint(before)


# --------------------------------------------------------------------------- Dask


@pytest.fixture
def dask_cluster():
    """Two single-threaded worker processes and a scheduler on loopback."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    try:
        yield cluster
    finally:
        cluster.close()


def test_dask_cluster_stores_the_same_rows_as_local_cores(dask_cluster, tmp_path, capsys):
    """--scheduler runs the sweep on the cluster; its rows equal the joblib ones exactly, and
    rerunning it on the cluster resumes (runs nothing)."""
    on_dask, local = tmp_path / "dask.sqlite", tmp_path / "local.sqlite"
    address = dask_cluster.scheduler_address
    assert address.startswith("tcp://127.0.0.1:")
    assert main([*sweep_argv(on_dask, jobs="2"), "--scheduler", address]) == 0
    assert main(sweep_argv(local, jobs="2")) == 0
    assert capsys.readouterr().out.count("16 runs done, 0 already") == 2
    a, b = stored(on_dask), stored(local)
    assert set(a) == set(b) == expected_keys()
    for key in a:
        assert a[key].returns.tobytes() == b[key].returns.tobytes(), key
        assert a[key].regret == b[key].regret and a[key].mean_return == b[key].mean_return
        assert a[key].hyper == b[key].hyper and a[key].updates == b[key].updates

    assert main([*sweep_argv(on_dask), "--scheduler", address]) == 0
    assert capsys.readouterr().out.startswith("0 runs done, 16 already in")


# --------------------------------------------------------------------------- best


def best_table_lines(out: str) -> list[str]:
    """The table lines ``ENV ALGO speed S: METRIC mean ± se (...)`` of ``pyprog best``."""
    return [line for line in out.splitlines() if re.match(r"^\w+ +[\w-]+ +speed \d", line)]


def mean_by_setting(rows, value) -> dict:
    """``{(algo, speed): {setting_hash: mean over seeds of value(row)}}``."""
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[(r.algo, r.speed)][r.setting_hash].append(value(r))
    return {k: {h: float(np.mean(v)) for h, v in g.items()} for k, g in groups.items()}


def onpg_run(env: str, speed: float, seed: int, hyper: dict, returns) -> RunResult:
    """A hand-made ONPG run without a known optimum (surrogate regret), for the store."""
    return RunResult(
        env=env,
        algo="onpg",
        speed=speed,
        seed=seed,
        hyper=hyper,
        returns=np.asarray(returns, dtype=np.float64),
        regret=None,
        optimal=None,
        expected=None,
        seconds=0.1,
        updates=1,
        skipped_updates=0,
        skipped_steps=0,
    )


class TestBest:
    def test_lowest_mean_regret_per_algo_and_speed(self, tmp_path, capsys):
        """NS-Reco: one table line per (env, algo, speed), and --json holds, in the shipped
        format, the setting of lowest mean regret over seeds."""
        path, out = tmp_path / "sweep.sqlite", tmp_path / "best.json"
        assert main(sweep_argv(path, settings="3", episodes="30", jobs="2")) == 0
        capsys.readouterr()
        assert main(["best", "--store", str(path), "--json", str(out)]) == 0
        captured = capsys.readouterr()
        assert f"best settings written to {out}" in captured.err
        printed = captured.out
        lines = best_table_lines(printed)
        assert len(lines) == 4 and printed.splitlines()[::2] == lines  # the table, each line
        assert all(ln.startswith("  won: setting ") for ln in printed.splitlines()[1::2])
        with ResultStore(path, readonly=True) as store:
            rows = store.rows()
        means = mean_by_setting(rows, lambda r: r.regret)
        hyper_of = {r.setting_hash: r.hyper for r in rows}
        table = json.loads(out.read_text())
        shipped = json.loads(SHIPPED.read_text())
        assert set(table) == {"reco"} and set(table["reco"]) == {"pro-wls", "onpg"}
        # (a small learning rate may not change any action in 30 episodes: ties happen)
        assert any(len(set(m.values())) == 3 for m in means.values())  # the choice matters
        for (algo, speed), by_hash in means.items():
            low = min(by_hash.values())
            chosen = table["reco"][algo][f"{speed:g}"]
            assert chosen in [hyper_of[h] for h, m in by_hash.items() if m == low]
            assert Hyper.from_dict(chosen).to_dict() == chosen
            assert f"{speed:g}" in shipped["reco"][algo]  # same speed keys as shipped
            (line,) = [ln for ln in lines if re.match(rf"reco +{algo} +speed {speed:g}:", ln)]
            assert f": regret {low:.4g} ± " in line
            assert line.endswith("(2 seeds × 30 episodes, best of 3 settings)")
        # the shipped file and --json read the same way
        assert set(table["reco"]["onpg"]) == {"1", "3"}
        assert Hyper.from_dict(shipped["reco"]["onpg"]["1"]) == paper_hyper("reco", "onpg", 1)

        # without --json: the table alone; with --json -: the JSON alone (the table to stderr)
        assert main(["best", "--store", str(path)]) == 0
        assert capsys.readouterr().out == printed
        assert main(["best", "--store", str(path), "--json", "-"]) == 0
        captured = capsys.readouterr()
        assert json.loads(captured.out) == table
        assert best_table_lines(captured.err) == lines

    @pytest.mark.parametrize("flag", ["--name", "--sweep"])
    def test_sweep_tag_selects_runs(self, tmp_path, capsys, flag):
        """--name NAME (the word sweep writes it with; --sweep is its old spelling) compares
        only the runs stored by that sweep."""
        path = tmp_path / "sweep.sqlite"
        assert main([*sweep_argv(path, algo="onpg", speeds="2"), "--name", "a"]) == 0
        argv = [*sweep_argv(path, algo="onpg", speeds="2", setting_seed="1"), "--name", "b"]
        assert main(argv) == 0
        capsys.readouterr()
        for name, seed in (("a", 0), ("b", 1)):
            out = tmp_path / f"{name}.json"
            assert main(["best", "--store", str(path), flag, name, "--json", str(out)]) == 0
            chosen = json.loads(out.read_text())["reco"]["onpg"]["2"]
            assert chosen in [h.to_dict() for h in draw_settings("reco", 2, seed=seed)]
        assert "best of 2 settings" in capsys.readouterr().out

    def test_reacher_sweep_picks_the_highest_mean_return(self, tmp_path, capsys):
        """NS-Reacher has no exact regret: the table says surrogate regret, and each algo's
        chosen setting is the one with the highest mean return over seeds.

        (NS-Reacher's returns are mostly negative — -0.5 per step, +100 at the goal — and
        at this size the best mean curve sums to a negative number.)"""
        path, out = tmp_path / "reacher.sqlite", tmp_path / "best.json"
        options = {"env": "reacher", "algo": "onpg,ftrl-pg", "speeds": "2", "episodes": "15"}
        assert main(sweep_argv(path, **options, jobs="2")) == 0
        capsys.readouterr()
        assert main(["best", "--store", str(path), "--json", str(out)]) == 0
        lines = best_table_lines(capsys.readouterr().out)
        assert len(lines) == 2 and all(": surrogate regret " in ln for ln in lines)
        with ResultStore(path, readonly=True) as store:
            rows = store.rows()
        assert all(r.regret is None for r in rows)
        means = mean_by_setting(rows, lambda r: r.mean_return)
        assert any(len(set(m.values())) > 1 for m in means.values())  # the choice matters
        table = json.loads(out.read_text())["reacher"]
        for (algo, _), by_hash in means.items():
            top = max(by_hash.values())
            winners = [r.hyper for r in rows if by_hash[r.setting_hash] == top]
            assert table[algo]["2"] in winners, (algo, by_hash)
            assert Hyper.from_dict(table[algo]["2"]).hidden in (16, 32, 64)

    def test_settings_with_other_seeds_are_left_out_and_counted(self, tmp_path, capsys):
        """An interrupted sweep: setting C has one lucky seed and the highest mean return,
        but A and B ran seeds 0 and 1; best compares A and B only, and says 1 was left out."""
        path, out = tmp_path / "runs.sqlite", tmp_path / "best.json"
        a, b, c = (Hyper(lr=lr, hidden=16).to_dict() for lr in (1e-2, 1e-3, 1e-4))
        with ResultStore(path) as store:
            for hyper, level, seeds in ((a, 5.0, (0, 1)), (b, 4.0, (0, 1)), (c, 9.0, (0,))):
                for seed in seeds:
                    assert store.add(onpg_run("reacher", 2.0, seed, hyper, [level, level]))
        assert main(["best", "--store", str(path), "--json", str(out)]) == 0
        (line,) = best_table_lines(capsys.readouterr().out)
        assert line.endswith(
            "(2 seeds × 2 episodes, best of 2 settings; 1 left out: other seeds or episodes)"
        )
        assert json.loads(out.read_text()) == {"reacher": {"onpg": {"2": a}}}

    def test_round_trip_best_json_into_run(self, tmp_path, capsys):
        """sweep → best --json F → ``pyprog run --hyper F`` and ``pyprog.run(hyper=F)`` run
        with F's entry for their (env, algo, speed); a missing entry is a clear error."""
        path, best = tmp_path / "sweep.sqlite", tmp_path / "best.json"
        assert main(sweep_argv(path, algo="onpg", speeds="1,3")) == 0
        assert main(["best", "--store", str(path), "--json", str(best)]) == 0
        table = json.loads(best.read_text())
        for speed in (1, 3):
            chosen = table["reco"]["onpg"][str(speed)]
            for hyper in (best, str(best), table):
                result = run("reco", "onpg", speed=speed, seed=0, episodes=5, hyper=hyper)
                assert result.hyper == chosen
        out = tmp_path / "grid"
        argv = ["run", "--algo", "onpg", "--speeds", "1,3", "--seeds", "1", "--episodes", "5"]
        assert main([*argv, "--hyper", str(best), "--out", str(out), "--quiet"]) == 0
        direct = {s: run("reco", "onpg", speed=s, seed=0, episodes=5, hyper=best) for s in (1, 3)}
        assert len(read_results(out)) == 2
        for stored_run in read_runs(out):
            expected = direct[int(stored_run.speed)].returns
            np.testing.assert_array_equal(stored_run.returns, expected)
        capsys.readouterr()

        with pytest.raises(
            ValueError, match="no reco/onpg setting for speed 2; it has speeds 1, 3"
        ):
            run("reco", "onpg", speed=2, seed=0, episodes=5, hyper=best)
        with pytest.raises(ValueError, match="no reco/pro-wls settings; it has reco/onpg"):
            run("reco", "pro-wls", speed=1, seed=0, episodes=5, hyper=best)
        argv = ["run", "--algo", "onpg", "--speed", "2", "--hyper", str(best)]
        assert main([*argv, "--out", str(tmp_path / "other"), "--quiet"]) == 2
        assert "no reco/onpg setting for speed 2" in one_error_line(capsys, "run")
        assert not (tmp_path / "other").exists()

    @pytest.mark.parametrize("offset", [100.0, 0.0], ids=["positive-returns", "negative-returns"])
    def test_surrogate_regret_ranks_by_mean_return_whatever_the_sign(
        self, tmp_path, capsys, offset
    ):
        """Two settings of one algo, with hand-made returns: the one with the higher mean
        return is chosen, whether the returns are positive or negative."""
        path, out = tmp_path / "runs.sqlite", tmp_path / "best.json"
        worse = Hyper(lr=1e-3, hidden=16).to_dict()
        better = Hyper(lr=1e-2, hidden=16).to_dict()
        curves = {
            (0, 0): [-8.0, -8.0, -8.0, -8.0],
            (0, 1): [-8.0, -8.0, -8.0, -8.0],
            (1, 0): [-8.0, -3.0, -8.0, -8.0],
            (1, 1): [-8.0, -8.0, -8.0, -3.0],
        }
        with ResultStore(path) as store:
            for (setting, seed), returns in curves.items():
                hyper = (worse, better)[setting]
                assert store.add(onpg_run("reacher", 2.0, seed, hyper, np.array(returns) + offset))
        assert main(["best", "--store", str(path), "--json", str(out)]) == 0
        (line,) = best_table_lines(capsys.readouterr().out)
        assert line.startswith("reacher   onpg     speed 2: surrogate regret 0 ± 0 ")
        assert json.loads(out.read_text()) == {"reacher": {"onpg": {"2": better}}}

    def test_reads_one_env_and_speed_at_a_time_and_ties_pick_the_longer_runs(
        self, tmp_path, monkeypatch
    ):
        """Stored returns are loaded per (env, speed), never all at once; with as many runs
        of 20 as of 7 episodes, the 20-episode runs are compared."""
        path = tmp_path / "runs.sqlite"
        rng = np.random.default_rng(0)
        with ResultStore(path) as store:
            for env, speed, episodes, seed in [
                ("reacher", 1.0, 7, 0),
                ("reacher", 1.0, 7, 1),
                ("reacher", 1.0, 20, 0),
                ("reacher", 1.0, 20, 1),
                ("reacher", 3.0, 20, 0),
                ("diabetes", 1.0, 20, 0),
            ]:
                hyper = Hyper(lr=1e-3).to_dict()
                assert store.add(onpg_run(env, speed, seed, hyper, rng.normal(size=episodes)))
        calls = []
        rows = ResultStore.rows

        def recording_rows(self, *args, **kwargs):
            calls.append(kwargs)
            return rows(self, *args, **kwargs)

        monkeypatch.setattr(ResultStore, "rows", recording_rows)
        table, summary = best_settings(str(path))
        assert calls == [
            {"env": "diabetes", "speed": 1.0, "sweep": None},
            {"env": "reacher", "speed": 1.0, "sweep": None},
            {"env": "reacher", "speed": 3.0, "sweep": None},
        ]
        assert [(r["env"], r["speed"], r["episodes"], r["seeds"]) for r in summary] == [
            ("diabetes", 1.0, 20, 1),
            ("reacher", 1.0, 20, 2),
            ("reacher", 3.0, 20, 1),
        ]
        assert set(table) == {"diabetes", "reacher"}


# --------------------------------------------------------------------------- bad input


def _main_without_root(argv: list[str]) -> dict:
    """``main(argv)`` where file permissions bind: in a forked child as user nobody when root
    (as tests/test_store.py does). Returns ``{"rc": exit code, "err": stderr}``."""

    def call() -> dict:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(argv)
        return {"rc": rc, "err": err.getvalue()}

    return run_unprivileged(
        call, lambda exc: {"rc": None, "err": f"in child: {type(exc).__name__}: {exc}"}
    )


class TestBadSweepInput:
    @pytest.mark.parametrize(
        "extra, message",
        [
            (["--env", "atari"], "unknown env 'atari': not a built-in (reco, reacher, diabetes)"),
            (
                ["--env", "reco,atari"],
                "unknown env 'atari': not a built-in (reco, reacher, diabetes)",
            ),
            (["--env", ""], "--env is empty"),
            (
                ["--algo", "pro-ols,dqn"],
                "unknown algo 'dqn'; valid: pro-ols, pro-wls, onpg, ftrl-pg",
            ),
            (["--speeds", ""], "--speeds is empty; give e.g. 0-4"),
            (
                ["--speeds", "3-1"],
                "--speeds must be integers or ranges like 0-4 or 0,2,4; got '3-1'",
            ),
            (["--speeds", "fast"], "--speeds must be integers"),
            (["--seeds", "0"], "--seeds must be a count >= 1"),
            (["--seeds", "4-2"], "--seeds must be integers or ranges"),
            (["--settings", "0"], "--settings must be >= 1; got 0"),
            (["--settings", "-3"], "--settings must be >= 1; got -3"),
            (["--episodes", "0"], "--episodes must be >= 1; got 0"),
            (["--jobs", "0"], "--jobs must be >= 1; got 0"),
            (["--setting-seed", "-1"], "--setting-seed must be >= 0"),
        ],
    )
    def test_bad_arguments_exit_2_with_one_line_and_no_store(
        self, tmp_path, capsys, extra, message
    ):
        """Each bad argument is named on one stderr line (exit 2) before any file is made."""
        assert main([*sweep_argv(tmp_path / "sweep.sqlite"), *extra]) == 2
        assert message in one_error_line(capsys)
        assert list(tmp_path.iterdir()) == []

    def test_unreachable_scheduler_fails_fast_and_writes_nothing(self, tmp_path, capsys):
        """A scheduler nobody listens on: a clear error within seconds, and no store file."""
        pytest.importorskip("distributed")
        path = tmp_path / "sweep.sqlite"
        start = time.monotonic()
        assert main([*sweep_argv(path), "--scheduler", "tcp://127.0.0.1:1"]) == 2
        assert time.monotonic() - start < 15
        err = one_error_line(capsys)
        assert "cannot reach the Dask scheduler at 'tcp://127.0.0.1:1'" in err
        assert not path.exists() and list(tmp_path.iterdir()) == []

    def test_store_in_a_missing_directory_creates_it(self, tmp_path, capsys):
        """A store whose folders do not exist: they are created, as every output's are."""
        path = tmp_path / "missing" / "deeper" / "sweep.sqlite"
        assert main(sweep_argv(path, algo="onpg", speeds="1")) == 0
        with ResultStore(path, readonly=True) as store:
            assert len(store) == 4

    def test_store_under_a_regular_file(self, tmp_path, capsys):
        """A store path whose parent is a regular file: exit 2, the file untouched."""
        parent = tmp_path / "notes.txt"
        parent.write_text("not a folder\n")
        assert main(sweep_argv(parent / "sweep.sqlite")) == 2
        assert f"cannot create the store {parent / 'sweep.sqlite'}" in one_error_line(capsys)
        assert parent.read_text() == "not a folder\n" and list(tmp_path.iterdir()) == [parent]

    def test_store_that_is_a_directory(self, tmp_path, capsys):
        """A directory given as --store: exit 2, nothing written into it."""
        (tmp_path / "sweep.sqlite").mkdir()
        assert main(sweep_argv(tmp_path / "sweep.sqlite")) == 2
        assert "is not a regular file" in one_error_line(capsys)
        assert list((tmp_path / "sweep.sqlite").iterdir()) == []

    def test_store_that_is_another_file_is_left_untouched(self, tmp_path, capsys):
        """A file that is not a store: refused before any run, byte for byte unchanged."""
        path = tmp_path / "sweep.sqlite"
        path.write_bytes(b"PNG\x00 some image, not a store" * 10)
        before = path.read_bytes()
        assert main(sweep_argv(path)) == 2
        assert "is not a pyprog result store" in one_error_line(capsys)
        assert path.read_bytes() == before and list(tmp_path.iterdir()) == [path]

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX permissions and fork")
    def test_store_in_a_read_only_directory(self):
        """A directory the user cannot write (as root: in a forked child as user nobody, for
        whom chmod binds): exit 2 naming the directory, nothing created."""
        shared = Path(tempfile.mkdtemp(prefix="pyprog-sweep-"))  # tmp_path is private to root
        try:
            shared.chmod(0o755)
            locked = shared / "locked"
            locked.mkdir()
            locked.chmod(0o555)
            answer = _main_without_root(sweep_argv(locked / "sweep.sqlite"))
            assert answer["rc"] == 2, answer
            err = answer["err"]
            assert err.startswith("pyprog sweep: error: cannot write the store"), err
            assert "not writable" in err and str(locked) in err
            assert err.count("\n") == 1 and "Traceback" not in err
            assert list(locked.iterdir()) == []
        finally:
            for p in [shared, *shared.rglob("*")]:
                if p.is_dir():
                    p.chmod(0o755)
            shutil.rmtree(shared)


class TestBadBestInput:
    def test_store_without_runs(self, tmp_path, capsys):
        """A store with no runs: a clear error, the file unchanged."""
        path = tmp_path / "empty.sqlite"
        ResultStore(path).close()
        before = path.read_bytes()
        assert main(["best", "--store", str(path)]) == 2
        assert f"the store {path} has no runs" in one_error_line(capsys, "best")
        assert path.read_bytes() == before

    def test_not_a_store(self, tmp_path, capsys):
        """A file that is not a store: a clear error, the file unchanged, no JSON written."""
        path = tmp_path / "results.csv"
        path.write_text("env,algo,speed\nreco,onpg,1\n")
        assert main(["best", "--store", str(path), "--json", str(tmp_path / "b.json")]) == 2
        assert "is not a pyprog result store" in one_error_line(capsys, "best")
        assert path.read_text() == "env,algo,speed\nreco,onpg,1\n"
        assert list(tmp_path.iterdir()) == [path]

    def test_missing_store_is_not_created(self, tmp_path, capsys):
        """A missing store: a clear error, and best does not create it."""
        path = tmp_path / "missing.sqlite"
        assert main(["best", "--store", str(path)]) == 2
        assert "does not exist" in one_error_line(capsys, "best")
        assert list(tmp_path.iterdir()) == []

    def test_unknown_sweep_tag(self, tmp_path, capsys):
        """--sweep naming no stored sweep: a clear error naming the tag."""
        path = tmp_path / "sweep.sqlite"
        assert main([*sweep_argv(path, algo="onpg", speeds="1"), "--name", "a"]) == 0
        capsys.readouterr()
        assert main(["best", "--store", str(path), "--sweep", "b"]) == 2
        assert "has no runs of sweep 'b'" in one_error_line(capsys, "best")

    def test_json_in_a_missing_directory_creates_it(self, tmp_path, capsys):
        """--json's missing folders are created, as every output's are."""
        path = tmp_path / "sweep.sqlite"
        assert main(sweep_argv(path, algo="onpg", speeds="1")) == 0
        target = tmp_path / "missing" / "best.json"
        assert main(["best", "--store", str(path), "--json", str(target)]) == 0
        assert set(json.loads(target.read_text())["reco"]) == {"onpg"}

    def test_unwritable_json(self, tmp_path, capsys):
        """An unwritable --json path is bad input too: one line, exit 2, no traceback."""
        path = tmp_path / "sweep.sqlite"
        assert main(sweep_argv(path, algo="onpg", speeds="1")) == 0
        capsys.readouterr()
        (tmp_path / "notes.txt").write_text("a file\n")
        target = tmp_path / "notes.txt" / "best.json"
        assert main(["best", "--store", str(path), "--json", str(target)]) == 2
        assert str(target) in one_error_line(capsys, "best")
        assert (tmp_path / "notes.txt").read_text() == "a file\n"
