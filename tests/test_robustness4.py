"""Robustness, fourth round (issue 48): the CLI's and the rounds CSV reader's items.

One class per item; each test failed on main before the fix it names. CLI behaviour goes
through ``main([...])``: exit code 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import pyprog
from pyprog.cli.main import main


def write_log(path, n=300, seed=0, days=60.0, header=None, times=None):
    """A small CSV log of rounds: time (days), x0, x1, action, reward, pscore, pi_0, pi_1."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, days, n)) if times is None else times
    x = rng.normal(size=(n, 2))
    a = rng.integers(0, 2, n)
    r = 0.5 * a + rng.normal(0, 0.3, n)
    head = header or "time,x0,x1,action,reward,pscore,pi_0,pi_1"
    rows = [f"{t[i]},{x[i, 0]:.4f},{x[i, 1]:.4f},{a[i]},{r[i]:.4f},0.5,0.2,0.8" for i in range(n)]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


def one_line_error(capsys, argv, *needles):
    """``pyprog ARGV`` exits 2 with one line on stderr holding every needle."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


class TestItem0LazyImports:
    """An argument error of ``pyprog forecast`` comes before the forecasting code is
    imported (it took 9-13 s on a loaded machine); ``import pyprog`` still offers every
    public name."""

    HEAVY = ("pyprog.forecast.value", "pyprog.offpolicy", "pyprog.forecast.estimators",
             "pyprog.learn.learners", "scipy.stats", "matplotlib", "pandas", "numba")  # fmt: skip

    @pytest.mark.parametrize(
        "argv",
        [
            ["forecast", "missing.csv", "--time", "t", "--at", "5"],
            ["forecast", "missing.csv", "--time", "t"],
            ["forecast", "missing.csv"],
        ],
    )
    def test_a_cli_error_imports_nothing_heavy(self, tmp_path, argv):
        code = (
            "import sys; from pyprog.cli.main import main; code = main(sys.argv[1:]); "
            f"print(code, [m for m in {self.HEAVY!r} if m in sys.modules])"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.stdout.split(maxsplit=1) == ["2", "[]\n"], (done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr

    def test_every_public_name_resolves_and_is_listed(self):
        for name in pyprog.__all__:
            assert getattr(pyprog, name) is not None, name
        assert set(pyprog.__all__) <= set(dir(pyprog))
        from pyprog import ValueForecast, forecast_value, run

        assert forecast_value.__module__ == "pyprog.forecast.value"
        assert ValueForecast.__name__ == "ValueForecast" and callable(run)
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            pyprog.nope  # noqa: B018


class TestItem1NoOutputOverwritesAnInput:
    """``--json`` (or ``--plot``) naming the log's file is refused before anything is read
    or written: the same file through ``./``, a relative path or a symlink."""

    @pytest.mark.parametrize("time", [True, False])
    @pytest.mark.parametrize("spell", ["same", "dot", "relative", "symlink"])
    def test_json_onto_the_log(self, tmp_path, capsys, monkeypatch, time, spell):
        log = write_log(tmp_path / "log.csv")
        before = log.read_bytes()
        monkeypatch.chdir(tmp_path)
        (tmp_path / "sub").mkdir()
        if spell == "symlink":
            (tmp_path / "link.csv").symlink_to(log)
        given = {"same": str(log), "dot": "./log.csv", "relative": "sub/../log.csv",
                 "symlink": "link.csv"}[spell]  # fmt: skip
        argv = ["forecast", str(log), "--json", given]
        if time:
            argv += ["--time", "time", "--at", "70"]
        one_line_error(capsys, argv, "would overwrite LOGS", "write it elsewhere")
        assert log.read_bytes() == before

    def test_plot_onto_the_log_and_json_onto_the_plot(self, tmp_path, capsys):
        log = tmp_path / "log.png"
        log.write_text("episode,step,reward,log_pi,log_beta\n")
        before = log.read_bytes()
        one_line_error(capsys, ["forecast", str(log), "--plot", str(log)], "--plot")
        out = str(tmp_path / "f.png")
        one_line_error(capsys, ["forecast", str(tmp_path / "log.png"), "--plot", out,
                                "--json", out], "--plot", "would overwrite --json")  # fmt: skip
        assert log.read_bytes() == before

    def test_best_and_reproduce_keep_their_store(self, tmp_path, capsys):
        store = tmp_path / "runs.sqlite"
        store.write_bytes(b"not touched")
        one_line_error(capsys, ["best", "--store", str(store), "--json", str(store)],
                       "--json", "would overwrite --store")  # fmt: skip
        one_line_error(capsys, ["reproduce", "--quick", "--store", str(store), "--out",
                                str(tmp_path)], "would overwrite --store")  # fmt: skip
        assert store.read_bytes() == b"not touched"

    def test_a_directory_as_the_log_is_named(self, tmp_path, capsys):
        one_line_error(capsys, ["forecast", str(tmp_path), "--time", "time", "--at", "5"],
                       "is a directory")  # fmt: skip
        one_line_error(capsys, ["forecast", str(tmp_path)], "is a directory")

    def test_a_result_next_to_the_log_is_still_written(self, tmp_path, capsys):
        log = write_log(tmp_path / "log.csv")
        out = tmp_path / "out.json"
        assert main(["forecast", str(log), "--time", "time", "--at", "65", "--json", str(out),
                     "--n-boot", "100"]) == 0  # fmt: skip
        assert json.loads(out.read_text())["n_rounds"] == 300
