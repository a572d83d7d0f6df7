"""Logged episodes from CSV (``pyprog.logs.episodes_csv``) and ``pyprog forecast``."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from forecast_montecarlo import safety_episodes

import pyprog
from pyprog.cli.main import main
from pyprog.logs.episodes import EpisodeIdWarning, LogFormatError
from pyprog.logs.episodes_csv import read_logs

HEADER = "episode,step,reward,log_pi,log_beta\n"


def write_logs(path, log_pi, log_beta, rewards, lengths=None, ids=None):
    """One row per valid step, episodes in order (as a user's logger would write them)."""
    n, h = rewards.shape
    lengths = np.full(n, h) if lengths is None else lengths
    ids = np.arange(n) if ids is None else ids
    lines = [HEADER]
    for i in range(n):
        for t in range(lengths[i]):
            values = (float(a[i, t]) for a in (rewards, log_pi, log_beta))
            lines.append(f"{ids[i]},{t}," + ",".join(map(repr, values)) + "\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture
def episodes():
    return safety_episodes(np.random.default_rng(0), 120, future_diff=0.2)


class TestRead:
    def test_round_trip_with_ragged_episodes(self, tmp_path, episodes):
        log_pi, log_beta, rewards = episodes
        lengths = np.random.default_rng(1).integers(1, 4, size=120)
        ids = np.arange(120) * 10 + 5
        path = write_logs(tmp_path / "l.csv", log_pi, log_beta, rewards, lengths, ids)
        with pytest.warns(EpisodeIdWarning, match="episode 15 follows episode 5"):
            logs = read_logs(path)
        mask = (np.arange(3) < lengths[:, None]).astype(float)
        assert logs.episodes == 120 and logs.rows == lengths.sum()
        np.testing.assert_array_equal(logs.episode_ids, ids)
        np.testing.assert_array_equal(logs.mask, mask)
        np.testing.assert_array_equal(logs.rewards, rewards * mask)
        np.testing.assert_array_equal(logs.log_pi, log_pi * mask)
        np.testing.assert_array_equal(logs.log_beta, log_beta * mask)

    def test_column_order_extra_columns_blank_lines_and_steps_from_one(self, tmp_path):
        path = tmp_path / "l.csv"
        path.write_text(
            "note, log_beta,step,episode,reward,log_pi\n"
            "a,-0.7,1,3,1.5,-0.1\n\n"
            "b,-0.7,2,3,2.5,-0.2\r\n"
            "c,-0.6,1,4,0.5,-0.3\n"
        )
        logs = read_logs(path)
        assert logs.rewards.tolist() == [[1.5, 2.5], [0.5, 0.0]]
        assert logs.log_beta.tolist() == [[-0.7, -0.7], [-0.6, 0.0]]
        assert logs.line_of_row(-1) == 5  # the blank line counts

    @pytest.mark.parametrize(
        "text, message",
        [
            ("", "line 1: the file is empty"),
            ("episode,step,reward,log_pi\n0,0,1,-1\n", "line 1, column 'log_beta': missing column"),
            (HEADER, "line 2: no data rows"),
            (
                HEADER + "0,0,1,-1,-1\n0,1,abc,-1,-1\n",
                "line 3, column 'reward': 'abc' is not a number",
            ),
            (HEADER + "0,0,1,-1,-1\n0,1,1,-1\n", "line 3: 4 fields where the header has 5"),
            (
                HEADER + "0,0,1,-1,-1\n0,1,nan,-1,-1\n",
                "line 3, column 'reward': nan is not allowed",
            ),
            (
                HEADER + "0,0,1,-1,-1\n\n0,1,1,inf,-1\n",
                "line 4, column 'log_pi': inf is not allowed",
            ),
            (HEADER + "0,0,1,-1,0.5\n", "line 2, column 'log_beta': 0.5 is a log-probability > 0"),
            (
                HEADER + "0,0,1,-1,-1\n0,2,1,-1,-1\n",
                "line 3, column 'step': step 2 is out of order",
            ),
            (
                HEADER + "0,1,1,-1,-1\n0,0,1,-1,-1\n",
                "line 3, column 'step': step 0 is out of order",
            ),
            (HEADER + "0,0.5,1,-1,-1\n", "line 2, column 'step': 0.5 is not an integer"),
            (
                HEADER + "0,0,1,-1,-1\n1,0,1,-1,-1\n0,1,1,-1,-1\n",
                "line 4, column 'episode': episode 0 appears again after other episodes",
            ),
        ],
    )
    def test_bad_input_names_line_and_column(self, tmp_path, text, message):
        path = tmp_path / "bad.csv"
        path.write_text(text)
        with pytest.raises(LogFormatError, match=message) as exc:
            read_logs(path)
        assert str(exc.value).startswith(str(path)) and "\n" not in str(exc.value)

    def test_missing_file(self, tmp_path):
        with pytest.raises(LogFormatError, match="cannot read: No such file"):
            read_logs(tmp_path / "absent.csv")


class TestForecastCommand:
    def test_table_json_and_plot(self, tmp_path, episodes, capsys):
        path = write_logs(tmp_path / "logs.csv", *episodes)
        out_json, out_png = tmp_path / "f.json", tmp_path / "f.png"
        argv = ["forecast", str(path), "--delta", "5", "--basis", "fourier", "--d", "3"]
        argv += ["--alpha", "0.1", "--safety-alpha", "0.2", "--json", str(out_json)]
        assert main([*argv, "--plot", str(out_png)]) == 0
        printed = capsys.readouterr().out
        assert "120 episodes (360 steps)" in printed and "NIS" in printed and "NWIS" in printed
        assert "90% bootstrap intervals" in printed and "safety test (alpha 0.2)" in printed
        result = json.loads(out_json.read_text())
        log_pi, log_beta, rewards = episodes
        # the command calls the public functions a Python user calls
        J = pyprog.pdis(log_pi, log_beta, rewards).J
        nis = pyprog.nis_forecast(J, 5, "fourier", 3, alpha=0.1, random_state=0)
        assert {k: result["nis"][k] for k in ("value", "low", "high")} == pytest.approx(
            {"value": nis.value, "low": nis.low, "high": nis.high}
        )
        assert result["nis"]["model"] == "fourier(d=3)"
        lam, _ = pyprog.episode_ratios(log_pi, log_beta)
        nwis = pyprog.nwis_forecast(
            rewards.sum(axis=1), lam, 5, "fourier", 3, alpha=0.1, random_state=0
        )
        assert result["nwis"]["low"] == pytest.approx(nwis.low)
        safety = pyprog.safety_test(
            log_pi, log_beta, rewards, delta=5, basis="fourier", d=3, alpha=0.2, random_state=0
        )
        assert result["safety"] == pytest.approx(safety.as_dict())
        assert result["episodes"] == 120 and result["clip"] is None
        assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    def test_the_safety_test_keeps_its_own_size(self, tmp_path, episodes, capsys):
        """--alpha is the intervals' level; the safety test stays at 0.05 unless told."""
        path = write_logs(tmp_path / "logs.csv", *episodes)
        argv = ["forecast", str(path), "--basis", "linear", "--n-boot", "200", "--alpha", "0.3"]
        assert main(argv) == 0
        printed = capsys.readouterr().out
        assert "70% bootstrap intervals" in printed and "safety test (alpha 0.05)" in printed

    def test_candidates_restrict_the_choice(self, tmp_path, episodes, capsys):
        """--candidates: auto chooses among the named forecasters only, as the API does."""
        path = write_logs(tmp_path / "logs.csv", *episodes)
        out_json = tmp_path / "f.json"
        names = ["window(k=25)", "ewma(halflife=20)", "poly(d=3)"]
        argv = ["forecast", str(path), "--delta", "5", "--alpha", "0.1"]
        argv += ["--candidates", " window(k=25), ewma(halflife=20),poly(d=3)"]
        assert main([*argv, "--json", str(out_json)]) == 0
        printed = capsys.readouterr().out
        assert "chosen by backtests among window(k=25), ewma(halflife=20), poly(d=3)" in printed
        result = json.loads(out_json.read_text())
        assert result["candidates"] == names and result["basis"] == "auto"
        for name in ("nis", "nwis"):  # the plausible alternatives are named, or nothing is
            others = [c for c in result[name]["plausible"] if c != result[name]["model"]]
            named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if others[3:] else "")
            line = f"  {name.upper()}: the backtests do not rule out {named} ("
            assert (line in printed) == bool(others)
        for name in ("nis", "nwis"):
            assert result[name]["model"] in names
            assert set(result[name]["scores"]) == set(names)
        J = pyprog.pdis(*episodes).J
        nis = pyprog.nis_forecast(J, 5, "auto", alpha=0.1, random_state=0, candidates=names)
        assert result["nis"]["value"] == pytest.approx(nis.value)
        assert (result["nis"]["low"], result["nis"]["high"]) == pytest.approx((nis.low, nis.high))
        default = pyprog.forecast_logs(path, delta=5, alpha=0.1)
        assert default.options["candidates"] is None
        assert len(default.nis.scores) == len(pyprog.forecast.selection.DEFAULT_CANDIDATES)

    @pytest.mark.parametrize(
        "args, message",
        [
            (["--candidates", "linear,window(k=x)"], "candidates: a forecaster is named like"),
            (["--candidates", " , "], "candidates must name at least one forecaster"),
            (
                ["--basis", "poly", "--candidates", "linear"],
                "--candidates is only used with --basis auto",
            ),
        ],
    )
    def test_bad_candidates(self, tmp_path, episodes, capsys, args, message):
        path = write_logs(tmp_path / "logs.csv", *episodes)
        assert main(["forecast", str(path), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1

    @pytest.mark.parametrize("candidates", ["linear", 3, []])
    def test_candidates_must_be_a_sequence_of_names(self, tmp_path, episodes, candidates):
        path = write_logs(tmp_path / "logs.csv", *episodes)
        with pytest.raises(ValueError, match="candidates must"):
            pyprog.forecast_logs(path, candidates=candidates)

    def test_too_few_episodes_for_the_basis(self, tmp_path, episodes, capsys):
        path = write_logs(tmp_path / "logs.csv", *(a[:5] for a in episodes))
        assert main(["forecast", str(path), "--basis", "fourier", "--d", "5"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0
        assert "line 16, column 'episode': only 5 episode(s)" in err

    @pytest.mark.parametrize(
        "args, message",
        [
            (["--alpha", "1.5"], "alpha must be a number in (0, 1)"),
            (["--n-boot", "10"], "--n-boot must be an integer >= 100"),
            (["--clip", "0"], "clip must be a number > 0"),
            (["--delta", "0"], "delta must be an integer >= 1"),
        ],
    )
    def test_bad_options(self, tmp_path, episodes, capsys, args, message):
        path = write_logs(tmp_path / "logs.csv", *episodes)
        assert main(["forecast", str(path), *args]) == 2
        assert message in capsys.readouterr().err

    def test_d_is_refused_with_auto_and_written_as_null(self, tmp_path, episodes, capsys):
        """--d with the default --basis auto is an error (it would be silently unused), and
        the JSON's d is what was used: null with auto, 5 for a fixed basis without --d."""
        path = write_logs(tmp_path / "logs.csv", *episodes)
        assert main(["forecast", str(path), "--d", "7"]) == 2
        err = capsys.readouterr().err
        assert "--d sets the features of a fixed basis" in err and "got --d 7" in err
        with pytest.raises(ValueError, match="forecast_logs: d sets the features"):
            pyprog.forecast_logs(path, d=3)
        for basis, d in (("auto", None), ("poly", 5)):
            out = tmp_path / f"{basis}.json"
            assert main(["forecast", str(path), "--basis", basis, "--json", str(out)]) == 0
            assert json.loads(out.read_text())["d"] == d
        assert "(poly, d=5)" in capsys.readouterr().out

    @pytest.mark.parametrize("option", ["--json", "--plot"])
    def test_unwritable_output_is_refused_before_the_work(self, tmp_path, episodes, capsys, option):
        path = write_logs(tmp_path / "logs.csv", *episodes)
        for target, why in ((tmp_path / "absent" / "f.out", "no writable directory"),
                            (tmp_path, "is a directory")):  # fmt: skip
            assert main(["forecast", str(path), option, str(target)]) == 2
            captured = capsys.readouterr()
            assert captured.out == ""  # refused before the forecast, not after
            assert f"cannot write {option} {target}: {why}" in captured.err

    def test_bad_file_exits_2_with_one_line_and_no_traceback(self, tmp_path):
        path = tmp_path / "bad.csv"
        path.write_text(HEADER + "0,0,1,-1,-1\n0,1,x,-1,-1\n")
        proc = subprocess.run(
            [sys.executable, "-m", "pyprog", "forecast", str(path)], capture_output=True, text=True
        )
        assert proc.returncode == 2
        assert proc.stderr == (
            f"pyprog forecast: error: {path}, line 3, column 'reward': 'x' is not a number\n"
        )


def test_forecast_without_nwis_when_every_ratio_underflows(tmp_path, capsys):
    # π gives the logged actions probability e^-800: every NWIS weight is 0 in floating point
    rows = [f"{i},0,{float(np.sin(i / 9))!r},-800,-0.7\n" for i in range(30)]
    path = tmp_path / "logs.csv"
    path.write_text(HEADER + "".join(rows))
    argv = ["forecast", str(path), "--basis", "fourier", "--d", "3"]
    assert main([*argv, "--json", str(tmp_path / "f.json")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"NWIS +no forecast: nwis_forecast: the weighted least-squares system", out)
    result = json.loads((tmp_path / "f.json").read_text())
    assert result["nwis"]["value"] is None and "rank-deficient" in result["nwis"]["error"]
    assert result["nis"]["value"] == pytest.approx(0.0)


def test_plot_without_a_nis_model_draws_no_curve():
    """With basis="auto" and no NIS forecast there is no model to draw, not an error."""
    from pyprog.forecast.plot import plot_forecast

    J = np.random.default_rng(0).normal(size=60)
    nwis = pyprog.nwis_forecast(J, np.ones(60), 1, "auto", alpha=0.1, random_state=0)
    fig = plot_forecast(J, {"NWIS": nwis}, delta=1, basis="auto", d=None, alpha=0.1)
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert labels and not any(label.startswith("NIS fit") for label in labels)


def test_plot_of_a_fixed_basis_without_d_uses_the_default():
    from pyprog.forecast.plot import plot_forecast

    J = np.random.default_rng(0).normal(size=60)
    nis = pyprog.nis_forecast(J, 1, "fourier", alpha=0.1, random_state=0)
    fig = plot_forecast(J, {"NIS": nis}, delta=1, basis="fourier", d=None, alpha=0.1)
    assert "NIS fit (fourier(d=5))" in [line.get_label() for line in fig.axes[0].lines]
