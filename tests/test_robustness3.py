"""Robustness, third round (issue 35): one class per item of the issue.

Each test failed on main before the fix it names; the kernels' tests run on both backends
(the ``backend`` fixture of ``conftest.py``, or both twins side by side).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pyprog
from pyprog._ext import fallback
from pyprog.forecast import forecasters, intervals, selected_intervals
from pyprog.offpolicy import episodes
from pyprog.timeseries.errors import ForecastError

try:
    from pyprog._ext import _kernels as compiled
except ImportError:  # pragma: no cover - no compiler at install time
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels not built")
# the learners' compiled update is used only with the compiled backend active
cython_backend = pytest.mark.skipif(
    pyprog.backend() != "cython", reason="needs the compiled backend (PYPROG_PURE_PYTHON unset)"
)


@contextlib.contextmanager
def kernels_of(module):
    """Every forecasting module's ``kernels`` set to ``module`` (compiled or NumPy)."""
    mods = (episodes, forecasters, intervals, selected_intervals)
    saved = [m.kernels for m in mods]
    try:
        for m in mods:
            m.kernels = module
        yield
    finally:
        for m, k in zip(mods, saved, strict=True):
            m.kernels = k


def outcome(fn, *args, **kwargs):
    try:
        f = fn(*args, **kwargs)
    except ForecastError as exc:
        return ("ForecastError", str(exc))
    return (f.value, f.low, f.high)


class TestItem1OneResidualDof:
    """Item 1/2: fewer than 2 residual degrees of freedom is a ForecastError naming the
    count needed; where both backends return, their intervals agree."""

    def test_nis_linear_three_episodes(self, backend):
        with pytest.raises(ForecastError, match=r"needs at least 4 episodes .* got 3"):
            pyprog.nis_forecast([0.0, 1.0, 0.5], basis="linear", alpha=0.1, random_state=0)

    def test_nwis_two_nonzero_ratios(self, backend):
        G, lam = np.arange(10.0), np.zeros(10)
        lam[[3, 7]] = [1.0, 2.0]
        with pytest.raises(ForecastError, match=r"needs at least 3 episodes .* got 2"):
            pyprog.nwis_forecast(G, lam, basis="fourier", d=1, alpha=0.05)

    @pytest.mark.parametrize("candidates", [None, ["window(k=50)"]])
    @pytest.mark.parametrize("where", [5, 40, 60])
    def test_auto_one_nonzero_ratio(self, backend, candidates, where):
        G, lam = np.random.default_rng(0).normal(size=100), np.zeros(100)
        lam[where] = 1.0
        with pytest.raises(ForecastError, match=r"needs at least 3 episodes|could be"):
            pyprog.nwis_forecast(G, lam, basis="auto", alpha=0.05, candidates=candidates)

    def test_auto_window_two_nonzero_in_window(self, backend):
        G, lam = np.random.default_rng(1).normal(size=100), np.ones(100)
        lam[50:] = 0.0
        lam[[80, 90]] = 1.0
        with pytest.raises(ForecastError, match=r"needs at least 3 episodes .* got 2"):
            pyprog.nwis_forecast(G, lam, basis="auto", alpha=0.05, candidates=["window(k=50)"])

    def test_two_dof_is_enough(self, backend):
        f = pyprog.nis_forecast([0.0, 1.0, 0.5, 0.7], basis="linear", alpha=0.1, random_state=0)
        assert f.low <= f.value <= f.high

    @needs_compiled
    @settings(max_examples=300, deadline=None)
    @given(
        basis=st.sampled_from(["linear", "fourier", "poly"]),
        d=st.integers(1, 4),
        extra=st.integers(0, 4),
        nwis=st.booleans(),
        seed=st.integers(0, 2**32 - 1),
    )
    @example(basis="poly", d=4, extra=4, nwis=True, seed=0)  # 1.1e-9 apart before
    def test_backends_agree_on_small_cases(self, basis, d, extra, nwis, seed):
        rng = np.random.default_rng(seed)
        k = 2 if basis == "linear" else d
        n = k + 1 + extra
        y = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
        lam = rng.exponential(size=n) * (rng.random(n) < 0.8) if nwis else None
        got = []
        for K in (compiled, fallback):
            with kernels_of(K):
                if nwis:
                    got.append(
                        outcome(
                            pyprog.nwis_forecast, y, lam, 1, basis, d, alpha=0.1, random_state=3
                        )
                    )
                else:
                    got.append(
                        outcome(pyprog.nis_forecast, y, 1, basis, d, alpha=0.1, random_state=3)
                    )
        a, b = got
        assert (a[0] == "ForecastError") == (b[0] == "ForecastError"), (a, b)
        if a[0] != "ForecastError":
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-300)
            used = n if lam is None else np.count_nonzero(lam)
            assert used - k >= 2


class TestItem5ConstantSeries:
    """Item 5: on a constant (or nearly constant) series every candidate fits to rounding;
    the choice must not depend on it: ties go to the least noisy candidate."""

    @staticmethod
    def case(which):
        """Case ``which`` of a fuzzing run (constant series of random level, length,
        horizon; some with noise at 1e-15 of the level; NIS and NWIS)."""
        rng = np.random.default_rng(1)
        for it in range(which + 1):
            n, delta = int(rng.integers(8, 300)), int(rng.integers(1, 4))
            level = float(rng.normal() * 10.0 ** rng.integers(-5, 6))
            y = np.full(n, level)
            if it % 3 == 0:
                y = y + rng.normal(size=n) * abs(level) * 1e-15
        lam = None if which % 4 < 2 else np.full(n, 0.5)
        return y, delta, lam

    # on main these chose differently on the two backends (e.g. linear / ewma(halflife=5))
    @needs_compiled
    @pytest.mark.parametrize("which", [117, 132, 141, 153, 173, 201, 7, 20])
    def test_same_choice_on_both_backends(self, which):
        from pyprog.forecast.selection import (
            DEFAULT_CANDIDATES,
            noise_order,
            parse_candidates,
            select_forecaster,
        )

        y, delta, lam = self.case(which)
        cands = DEFAULT_CANDIDATES[1:] if which % 2 else DEFAULT_CANDIDATES
        got = []
        for K in (fallback, compiled):
            with kernels_of(K):
                got.append(select_forecaster(y, delta, lam, candidates=cands).model)
        assert got[0] == got[1]
        if lam is None:  # a tie: the least noisy candidate that can be fitted
            parsed = parse_candidates(cands)
            first = [str(parsed[i]) for i in noise_order(parsed, len(y), delta)]
            assert got[0] in first[:3]

    def test_ties_in_the_kernels(self):
        from pyprog._ext.fallback_bootstrap import LOSS_RTOL, one_se_choice

        rng = np.random.default_rng(0)
        F = np.full((4, 3, 20), 0.75, dtype=np.float32)
        F[:, 1:] *= np.float32(1 + 1e-7) ** rng.integers(-2, 3, size=(4, 2, 20))
        S1 = np.full((4, 20), 0.75, dtype=np.float32)
        args = (F, S1, np.ones(20), np.ones(3, dtype=bool), 1, 1.0)
        assert one_se_choice(*args).tolist() == [0, 0, 0, 0]
        if compiled is not None:
            assert compiled.one_se_choice(*args).tolist() == [0, 0, 0, 0]
        assert LOSS_RTOL == 1e-6


class TestItem17DuplicateCandidates:
    def test_plausible_names_each_once(self, backend):
        y = np.random.default_rng(0).normal(size=120)
        f = pyprog.nis_forecast(
            y,
            basis="auto",
            candidates=["linear", "linear", "window(k=20)", "window(k=20)"],
            alpha=0.1,
            random_state=0,
        )
        assert len(set(f.plausible)) == len(f.plausible)
        assert list(f.scores) == ["linear", "window(k=20)"]


def small_log(path, n=60, reward=None, seed=0):
    """A one-step-per-episode CSV log of n episodes."""
    rng = np.random.default_rng(seed)
    lines = ["episode,step,reward,log_pi,log_beta\n"]
    for i in range(n):
        r = np.sin(i / 9) + rng.normal() if reward is None else reward(i)
        lines.append(f"{i},0,{float(r)!r},{-0.69 - rng.random() * 0.05:.4f},-0.69\n")
    path.write_text("".join(lines))
    return path


class TestItem6HugeValues:
    def test_power_of_two_at_the_top_of_float64(self):
        from pyprog.forecast.intervals import power_of_two

        assert power_of_two(2.0**1023) == 2.0**1023
        assert power_of_two(np.finfo(np.float64).max) == 2.0**1023
        assert power_of_two(3.0) == 4.0

    @pytest.mark.parametrize("basis", ["fourier", "auto"])
    def test_forecast_of_values_near_1e308(self, backend, basis):
        y = np.random.default_rng(0).normal(size=40) * 1e307 + 1e308
        for f in (
            pyprog.nis_forecast(y, basis=basis, alpha=0.1, random_state=0),
            pyprog.nwis_forecast(y, np.full(40, 1e308), basis=basis, alpha=0.1, random_state=0),
        ):
            assert f.low <= f.value <= f.high < np.inf

    def test_cli_on_a_csv_with_1e308(self, tmp_path, capsys):
        from pyprog.cli.main import main

        path = small_log(tmp_path / "l.csv", 40, reward=lambda i: 1.5e308 if i % 2 else 1.7e308)
        assert main(["forecast", str(path)]) == 0
        assert "NIS" in capsys.readouterr().out


class TestItem7And9And14CandidateBounds:
    @pytest.mark.parametrize(
        "name, message",
        [
            ("ewma(halflife=1e300)", "halflife must be a number > 0 and <= 1000000000"),
            ("window(k=100000000000000000000)", "k must be at most 1000000000"),
            ("fourier(d=100000000)", "d must be at most 1000"),
            ("poly(d=3000000)", "d must be at most 1000"),
        ],
    )
    def test_refused_before_any_work(self, name, message):
        import time

        y = np.random.default_rng(0).normal(size=50)
        start = time.perf_counter()
        with pytest.raises(ValueError, match=f"candidates: {message}"):
            pyprog.nis_forecast(y, basis="auto", candidates=[name, "linear"], alpha=0.1)
        assert time.perf_counter() - start < 1.0

    def test_a_basis_beyond_what_n_supports_builds_no_design(self):
        from pyprog.forecast.forecasters import BasisForecaster

        with pytest.raises(ForecastError, match=r"needs at least 900 episodes; got 50"):
            BasisForecaster("poly", 900).weights(50)
        with pytest.raises(ValueError, match="MAX_DESIGN_CELLS"):
            pyprog.forecast_design(10**6, 1, "fourier", 1000)

    @pytest.mark.parametrize("h", [1e-5, 1e-3, 0.001, 10, 10.123456789, 0.1 + 0.2, 1e9])
    def test_ewma_names_round_trip(self, h):
        from pyprog.forecast.forecasters import EWMAForecaster, parse_forecaster

        f = EWMAForecaster(h)
        assert parse_forecaster(str(f)) == f
        assert str(EWMAForecaster(10)) == "ewma(halflife=10)"

    def test_ewma_exponent_notation(self):
        from pyprog.forecast.forecasters import parse_forecaster

        assert parse_forecaster("ewma(halflife=1e-3)").halflife == 0.001
        assert parse_forecaster("ewma(halflife=2.5E+1)").halflife == 25.0
        with pytest.raises(ValueError, match="a forecaster is named like"):
            parse_forecaster("ewma(halflife=-1)")


class TestItem13TinyAlpha:
    @pytest.mark.parametrize("alpha", [1e-16, 1e-17, 1e-300])
    def test_refused_with_the_minimum(self, alpha):
        y = np.random.default_rng(0).normal(size=60)
        for basis in ("fourier", "auto"):
            with pytest.raises(ValueError, match="alpha must be at least 1e-12"):
                pyprog.nis_forecast(y, basis=basis, alpha=alpha)

    def test_cli_says_so_without_numpy_warnings(self, tmp_path, capsys):
        from pyprog.cli.main import main

        path = small_log(tmp_path / "l.csv", 80)
        assert main(["forecast", str(path), "--alpha", "1e-16"]) == 2
        err = capsys.readouterr().err
        assert "alpha must be at least 1e-12" in err and err.count("\n") == 1

    def test_small_alpha_level_is_printed_exactly(self, tmp_path, capsys):
        from pyprog.cli.main import main

        path = small_log(tmp_path / "l.csv", 80)
        assert main(["forecast", str(path), "--basis", "linear", "--alpha", "1e-5"]) == 0
        assert "99.999% bootstrap intervals" in capsys.readouterr().out


class TestCLIForecastItems:
    def test_item16_json_has_no_infinity(self, tmp_path):
        import json

        from pyprog.cli.main import main

        path = small_log(tmp_path / "l.csv", 40, reward=lambda i: 1.5e308 if i % 2 else 1.7e308)
        out = tmp_path / "f.json"
        assert main(["forecast", str(path), "--json", str(out)]) == 0
        text = out.read_text()
        assert "Infinity" not in text and "NaN" not in text
        json.loads(text, parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c}"))

    def test_item18_linear_with_d_is_refused(self, tmp_path, capsys):
        from pyprog.cli.main import main

        path = small_log(tmp_path / "l.csv")
        assert main(["forecast", str(path), "--basis", "linear", "--d", "7"]) == 2
        assert "--d: the linear basis has 2 features ([x, 1]), not 7" in capsys.readouterr().err
        assert main(["forecast", str(path), "--basis", "linear"]) == 0
        out = capsys.readouterr().out
        assert "(linear)" in out and "d=" not in out.splitlines()[0]

    def test_item21_plot_suffix_refused_before_computing(self, tmp_path, capsys, monkeypatch):
        from pyprog.cli.main import main
        from pyprog.forecast import logged

        path = small_log(tmp_path / "l.csv")
        monkeypatch.setattr(logged, "forecast_logs", lambda *a, **k: pytest.fail("computed"))
        assert main(["forecast", str(path), "--plot", str(tmp_path / "x.txt")]) == 2
        err = capsys.readouterr().err
        assert "cannot write --plot" in err and ".png" in err
        assert not (tmp_path / "x.txt").exists()


class TestItem20PlainFloats:
    @pytest.mark.parametrize("basis", ["fourier", "linear", "auto"])
    def test_low_high_value_are_float(self, backend, basis):
        y = np.random.default_rng(0).normal(size=80)
        for f in (
            pyprog.nis_forecast(y, basis=basis, alpha=0.1, random_state=0),
            pyprog.nwis_forecast(y, np.ones(80), basis=basis, alpha=0.1, random_state=0),
        ):
            assert type(f.value) is float and type(f.low) is float and type(f.high) is float


class TestItem11HugeDelta:
    def test_min_episodes_auto_is_closed_form(self):
        from pyprog.forecast.selection import min_episodes_auto
        from pyprog.timeseries.splits import RollingOrigin

        for delta in (1, 2, 5, 17, 1000, 4321):
            n = min_episodes_auto(delta)
            assert (
                RollingOrigin(delta).get_n_splits(n) >= 3 > RollingOrigin(delta).get_n_splits(n - 1)
            )
        # a search over n would take ~10^7 steps here
        assert min_episodes_auto(10**7) == 2 * 10**7 + 3

    @pytest.mark.parametrize("delta", [10**8, 10**23])
    def test_huge_delta_is_an_immediate_error(self, tmp_path, capsys, delta):
        import time

        from pyprog.cli.main import main

        path = small_log(tmp_path / "l.csv", 80)
        start = time.perf_counter()
        assert main(["forecast", str(path), "--delta", str(delta)]) == 2
        assert time.perf_counter() - start < 5.0
        assert "delta must be at most 10000000 (MAX_DELTA)" in capsys.readouterr().err


HEADER = "episode,step,reward,log_pi,log_beta"


class TestCSVReader:
    """Items 3, 8, 9 (memory) and issue 34's CSV papercuts: pyprog/logs/episodes_csv.py."""

    def read(self, tmp_path, text, binary=False):
        from pyprog.logs.episodes_csv import read_logs

        path = tmp_path / "l.csv"
        if binary:
            path.write_bytes(text)
        else:
            path.write_text(text)
        return read_logs(path)

    def test_item3_more_fields_than_the_header(self, tmp_path):
        from pyprog.logs.episodes import LogFormatError

        text = f"{HEADER}\n8,0,1,-0.5,-0.7\n7,0,1,-0.5,-0,7\n"
        with pytest.raises(LogFormatError, match="line 3: 6 fields where the header has 5"):
            self.read(tmp_path, text)
        quoted = f'{HEADER}\n8,0,1,-0.5,-0.7\n7,0,"1",-0.5,-0,7\n'  # the quoted path
        with pytest.raises(LogFormatError, match="line 3: 6 fields"):
            self.read(tmp_path, quoted)

    def test_blank_lines_and_crlf_still_read(self, tmp_path):
        logs = self.read(tmp_path, f"{HEADER}\r\n7,0,1,-0.5,-0.7\r\n\r\n   \n8,0,1,-0.5,-0.7")
        assert logs.rows == 2

    def test_item8_cr_only_line_endings(self, tmp_path):
        from pyprog.logs.episodes import LogFormatError

        with pytest.raises(LogFormatError, match="lone carriage return"):
            self.read(tmp_path, f"{HEADER}\r7,0,1,-0.5,-0.7\r8,0,1,-0.5,-0.7\r")

    def test_item9_sparse_gigabyte_refused_fast(self, tmp_path):
        import resource
        import time

        from pyprog.logs.episodes import LogFormatError
        from pyprog.logs.episodes_csv import read_logs

        path = tmp_path / "sparse.csv"
        path.write_text(f"{HEADER}\n1,0,1,-0.5,-0.7\n")
        with open(path, "r+b") as fh:
            fh.truncate(1 << 30)  # a hole: 1 GiB of NUL bytes, no disk used
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        with pytest.raises(LogFormatError, match="line 3: a line of more than 1048576 bytes"):
            read_logs(path)
        assert time.perf_counter() - start < 2.0
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
        assert grown < 200 * 1024

    @pytest.mark.parametrize("sep, called", [(";", "semicolons"), ("\t", "tabs")])
    def test_papercut_delimiter_hint(self, tmp_path, sep, called):
        from pyprog.logs.episodes import LogFormatError

        text = HEADER.replace(",", sep) + "\n" + sep.join("70 1 -0.5 -0.7".split()) + "\n"
        with pytest.raises(LogFormatError, match=f"separated by {called}"):
            self.read(tmp_path, text)

    def test_papercut_probabilities_hint(self, tmp_path):
        from pyprog.logs.episodes import LogFormatError

        with pytest.raises(LogFormatError, match=r"probabilities\? .*log_pi = log p"):
            self.read(tmp_path, f"{HEADER}\n7,0,1,0.5,-0.7\n8,0,1,0.25,-0.7\n")
        with pytest.raises(LogFormatError, match="> 0") as err:  # a real log-prob > 0: no hint
            self.read(tmp_path, f"{HEADER}\n7,0,1,0.5,-0.7\n8,0,1,-2.5,-0.7\n")
        assert "probabilities?" not in str(err.value)

    def test_papercut_duplicated_column(self, tmp_path):
        from pyprog.logs.episodes import LogFormatError

        with pytest.raises(LogFormatError, match=r"'log_pi': the column appears 2 times"):
            self.read(tmp_path, f"{HEADER},log_pi\n7,0,1,-0.5,-0.7,-0.1\n")

    def test_papercut_window_longer_than_the_log(self, tmp_path):
        path = small_log(tmp_path / "l.csv", 200)
        with pytest.warns(UserWarning, match=r"window\(k=500\) is longer than the log \(200"):
            pyprog.forecast_logs(path, candidates=["window(k=500)", "linear"], n_boot=200)

    def test_memory_follows_the_rows(self, tmp_path):
        """The check pass reads blocks of 4 MiB: it adds no memory proportional to the file."""
        from pyprog.logs import episodes_csv as logs_module

        path = small_log(tmp_path / "l.csv", 200)
        logs_module._scan(path, 5)  # one block, no error
        assert logs_module._BLOCK == 1 << 22


HUGE_OBS_ENVS_PY = """
import numpy as np
from gymnasium import spaces
import gymnasium as gym
from pyprog.runner.loop import env_seed


class Bandit(gym.Env):
    def __init__(self):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
        self.action_space = spaces.Discrete(3)
        self.horizon = 1
        self.scale = 1.0

    def reset(self, *, seed=None, options=None):
        if seed is not None:  # the run with seed 1 observes 1e39: inf in float32
            self.scale = 1e39 if seed == env_seed(1) else 1.0
        return np.full(1, self.scale), {}

    def step(self, action):
        info = {"best_expected_reward": 1.0, "expected_reward": float(action == 0)}
        return np.full(1, self.scale), float(action == 0), True, False, info


def make():
    return Bandit()
"""


class TestItem10AFailingUpdate:
    def test_nan_log_pi_in_a_float32_update_fails_its_run_only(self, tmp_path, monkeypatch, capsys):
        from pyprog.cli.main import main

        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        (tmp_path / "huge_obs_envs.py").write_text(HUGE_OBS_ENVS_PY)
        out = tmp_path / "out"
        args = ["run", "--env", "huge_obs_envs:make", "--algo", "pro-ols", "--seeds", "3"]
        args += ["--episodes", "12", "--jobs", "1", "--quiet", "--dtype", "float32"]
        assert main([*args, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        (line,) = [x for x in err.splitlines() if x.startswith("  failed: ")]
        assert line.startswith("  failed: huge_obs_envs:make pro-ols speed=- seed=1 ")
        assert "ValueError: log_pi must be finite" in line and "Traceback" not in err
        assert len((out / "results.csv").read_text().splitlines()) == 1 + 2  # the others

    def test_any_exception_of_an_update_is_its_runs_failure(self, monkeypatch):
        import pyprog.experiments.runs as runs_module
        from pyprog.learn.hyperparams import default_hyper
        from pyprog.learn.learners import Learner

        def broken_update(self):
            raise RuntimeError("something inside the update")

        monkeypatch.setattr(Learner, "update", broken_update)
        task = runs_module.RunTask("reco", "pro-ols", 1.0, 0, default_hyper("pro-ols"), 7, 6)
        failure = runs_module.run_task(task)
        assert failure.seed == 7 and failure.algo == "pro-ols" and failure.env == "reco"
        assert failure.error.startswith("UpdateError: env 'reco")
        assert "the update failed: RuntimeError: something inside the update" in failure.error


class TestItem12FullDisk:
    def test_a_full_disk_says_so_and_the_store_is_intact(self, tmp_path):
        import sys

        sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
        from test_store import make_result

        from pyprog.results.store import ResultStore, StoreError

        path = tmp_path / "runs.sqlite"
        with ResultStore(path) as store:
            store.add(make_result(0))
            # the file may not grow by a page: SQLite's SQLITE_FULL, as on a full disk
            pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
            store.conn.execute(f"PRAGMA max_page_count = {pages}")
            with pytest.raises(StoreError, match=r"is full .* the store is intact") as err:
                for seed in range(1, 50):
                    store.add(make_result(seed, episodes=2000))
            assert "damaged" not in str(err.value)
        with ResultStore(path, readonly=True) as store:
            assert len(store) >= 1  # what was committed is there

    def test_enospc_is_a_full_disk(self):
        import errno
        from pathlib import Path

        from pyprog.results.schema import damaged

        msg = str(damaged(Path("x.sqlite"), OSError(errno.ENOSPC, "No space left on device")))
        assert "is full" in msg and "intact" in msg
        msg = str(damaged(Path("x.sqlite"), ValueError("bad row")))
        assert "damaged" in msg


class TestItem15SweepNames:
    def test_second_name_over_the_same_settings(self, tmp_path, capsys):
        from pyprog.cli.main import main

        store = str(tmp_path / "s.sqlite")
        args = ["sweep", "--env", "reco", "--algo", "onpg", "--settings", "2", "--seeds", "1"]
        args += ["--episodes", "10", "--speed", "1", "--store", store, "--quiet", "--jobs", "1"]
        assert main([*args, "--name", "A"]) == 0
        capsys.readouterr()
        assert main([*args, "--name", "B"]) == 0
        out = capsys.readouterr().out
        assert "the 2 already stored keep the tag they were stored with" in out
        assert main(["best", "--store", store, "--name", "B"]) == 2
        err = capsys.readouterr().err
        assert "no runs of sweep 'B'; it holds 'A' (2 runs)" in err
        assert main(["best", "--store", store, "--name", ""]) == 2
        assert "--name must name a sweep" in capsys.readouterr().err
        assert main([*args, "--name", " "]) == 2
        assert "--name must name the sweep" in capsys.readouterr().err
        assert main(["best", "--store", store, "--name", "A"]) == 0


class TestItem19EmptyOut:
    def test_run_out_empty(self, tmp_path, monkeypatch, capsys):
        from pyprog.cli.main import main

        monkeypatch.chdir(tmp_path)
        args = ["run", "--env", "reco", "--algo", "onpg", "--seeds", "1", "--speed", "1"]
        assert main([*args, "--episodes", "10", "--quiet", "--out", ""]) == 2
        assert "--out must name a folder" in capsys.readouterr().err
        assert list(tmp_path.iterdir()) == []


class TestItem4Float32Exp:
    """The float32 compiled exp clamped its argument at −87: an action whose logit trails by
    95 got π = 1.6e-38 (e^8 times the true e^-95) and, with observations of 1e30, a gradient
    thousands of times its NumPy twin's."""

    @staticmethod
    def theta_after_update(compiled_, scale):
        from pyprog.learn.hyperparams import Hyper
        from pyprog.learn.learners import LEARNERS
        from pyprog.learn.policies import SoftmaxLinear

        policy = SoftmaxLinear(1, 5)
        policy.b[:] = -95.0
        policy.b[1] = 0.0
        hyper = Hyper(lr=1.0, delta=2, inner_steps=1, d=2, optimizer="sgd", dtype="float32")
        learner = LEARNERS["pro-ols"](policy, hyper, 1, compiled=compiled_)
        rng = np.random.default_rng(3)
        for _ in range(12):
            obs = np.full(1, scale)
            a, lp = learner.act(obs, rng)
            learner.observe(obs, a, lp, float(a == 1) + rng.normal())
            learner.buffer.end_episode()
            learner.buffer.start_episode()
            learner.episodes += 1
        assert learner.update() is True
        return policy.theta.copy()

    @cython_backend
    def test_trailing_logit_gets_no_inflated_gradient(self):
        fast = self.theta_after_update(True, 1e30)
        slow = self.theta_after_update(False, 1e30)
        assert np.abs(fast - slow).max() < 1e-9  # 5.7e-8 with the clamp

    @cython_backend
    def test_exp_f32_in_the_subnormal_range_is_not_clamped(self):
        # through the softmax's log π: log π of the trailing actions is z − lse exactly,
        # and π itself is 0 (flushed) or the subnormal, never e^-87
        fast = self.theta_after_update(True, 1.0)
        slow = self.theta_after_update(False, 1.0)
        assert np.abs(fast - slow).max() < 1e-30  # 5.7e-38 with the clamp
