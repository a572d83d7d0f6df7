"""Log files at the edges (issue 19 items 1 and 5): memory, encodings, CSV syntax, ids."""

import csv
import io
import re
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyprog
from pyprog.cli.main import main
from pyprog.forecast import logged
from pyprog.forecast.intervals import MAX_BOOT, check_n_boot
from pyprog.forecast.safety import difference_safety_test
from pyprog.logs.episodes import MAX_PADDED_CELLS, EpisodeIdWarning, LogFormatError
from pyprog.logs.episodes_csv import read_logs

HEADER = "episode,step,reward,log_pi,log_beta\n"


def ragged_file(path, short=5000, long=200_000):
    """``short`` one-step episodes, then one of ``long`` steps (issue 19's 3.5 MB file)."""
    rows = [f"{i},0,{i % 3},-0.5,-0.6\n" for i in range(short)]
    rows += [f"{short},{t},0.1,-0.01,-0.01\n" for t in range(long)]
    path.write_text(HEADER + "".join(rows))
    return path


class TestMemory:
    def test_ragged_episodes_cost_memory_in_proportion_to_the_steps(self, tmp_path):
        path = ragged_file(tmp_path / "ragged.csv")
        tracemalloc.start()
        try:
            logs = read_logs(path)
            result = pyprog.forecast_logs(logs, basis="linear", d=2, n_boot=200)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # 205,000 steps; a dense (5001, 200000) array alone would be 7.45 GiB
        assert logs.episodes == 5001 and logs.rows == 205_000
        assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MiB"
        assert result.episodes == 5001 and np.isfinite(result.nis.value)

    def test_padded_views_are_bounded_with_a_clear_message(self, tmp_path):
        logs = read_logs(ragged_file(tmp_path / "ragged.csv", short=400))
        assert 401 * 200_000 > MAX_PADDED_CELLS
        with pytest.raises(ValueError, match=r"401×200000 .* GiB per array.*MAX_PADDED_CELLS"):
            logs.mask  # noqa: B018
        log_pi, _, rewards, mask = logs.padded([0, 1])  # a few episodes still pad
        assert mask.shape == (2, 1) and rewards.tolist() == [[0.0], [1.0]]

    def test_blocks_give_the_padded_answer(self, tmp_path, monkeypatch):
        rng = np.random.default_rng(3)
        lengths = rng.integers(1, 30, size=150)
        rows = [HEADER]
        for i, h in enumerate(lengths):
            for t in range(h):
                rows.append(f"{i},{t},{rng.normal():.6f},{-rng.random():.6f},{-rng.random():.6f}\n")
        path = tmp_path / "l.csv"
        path.write_text("".join(rows))
        logs = read_logs(path)
        opts = dict(delta=3, basis="fourier", d=3, gamma=0.9, clip=20.0, alpha=0.1, n_boot=300)
        monkeypatch.setattr(logged, "BLOCK_CELLS", 64)  # many blocks, some of one episode
        got = pyprog.forecast_logs(logs, **opts, safety_alpha=0.1, random_state=1)
        J = pyprog.pdis(logs.log_pi, logs.log_beta, logs.rewards, logs.mask, 0.9, 20.0).J
        np.testing.assert_allclose(got.estimates, J, rtol=1e-12, atol=1e-12)
        test = pyprog.safety_test(
            logs.log_pi, logs.log_beta, logs.rewards, logs.mask, **opts, random_state=1
        )
        assert got.safety.low == pytest.approx(test.low, rel=1e-10)
        assert got.nis.value == pytest.approx(
            pyprog.nis_forecast(J, delta=3, basis="fourier", d=3).value
        )

    def test_episodes_longer_than_the_padding_bound_still_forecast(self, tmp_path, monkeypatch):
        monkeypatch.setattr("pyprog.logs.episodes.MAX_PADDED_CELLS", 4)
        monkeypatch.setattr(logged, "BLOCK_CELLS", 4)
        logs = read_logs(ragged_file(tmp_path / "r.csv", short=30, long=10))
        with pytest.raises(ValueError, match="more than the 4 allowed"):
            logs.padded([0, 30])
        result = pyprog.forecast_logs(logs, basis="linear", d=2, n_boot=100)
        assert result.estimates[-1] == pytest.approx(1.0)  # 10 steps of 0.1, ratios 1

    def test_overflow_in_a_block_names_the_file_line_and_episode_id(self, tmp_path):
        rows = [f"{10 + i},0,1,-0.1,-0.2\n" for i in range(20)]
        rows += [f"30,{t},1,0,-5\n" for t in range(300)]  # ratio e^1500
        path = tmp_path / "l.csv"
        path.write_text(HEADER + "".join(rows))
        with pytest.raises(LogFormatError, match=r"l\.csv, line \d+: .*at episode 30, step"):
            pyprog.forecast_logs(path, basis="linear", d=2, n_boot=100)

    def test_endless_header_is_refused(self):
        with pytest.raises(LogFormatError, match="/dev/zero, line 1: no end of line"):
            read_logs("/dev/zero")

    def test_n_boot_is_bounded(self):
        with pytest.raises(
            ValueError, match="n_boot must be an integer >= 100 and <= 1000000; got 1000000000"
        ):
            check_n_boot(10**9)
        assert check_n_boot(MAX_BOOT) == MAX_BOOT
        # the signs are drawn in chunks (issue 35): no cap on draws × episodes any more
        assert check_n_boot(2000, 10**6) == 2000

    def test_difference_safety_test_refuses_non_finite(self):
        with pytest.raises(ValueError, match="differences must be finite; episode 2"):
            difference_safety_test([1, 2, np.nan, 3], delta=1, basis="linear", d=2, alpha=0.1)

    @pytest.mark.parametrize(
        "argv, message",
        [
            (["--n-boot", str(10**9)], "--n-boot must be an integer >= 100 and <= 1000000"),
            ([], "no end of line in the first"),
        ],
    )
    def test_cli_one_line_exit_2(self, tmp_path, capsys, argv, message):
        path = ragged_file(tmp_path / "r.csv", short=50, long=10) if argv else "/dev/zero"
        assert main(["forecast", str(path), *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


class TestCSV:
    def read(self, tmp_path, data: bytes):
        path = tmp_path / "l.csv"
        path.write_bytes(data)
        return read_logs(path)

    def test_utf8_bom_is_read(self, tmp_path):
        logs = self.read(tmp_path, b"\xef\xbb\xbf" + HEADER.encode() + b"0,0,1,-1,-1\n")
        assert logs.rewards.tolist() == [[1.0]]

    def test_blank_lines_are_skipped_as_in_pandas(self, tmp_path):
        logs = self.read(tmp_path, (HEADER + "0,0,1,-1,-1\n  \n\n\t \r\n1,0,2,-1,-1\n").encode())
        assert logs.rewards.tolist() == [[1.0], [2.0]] and logs.line_of_row(1) == 6

    def test_quoted_numbers_are_numbers_as_in_pandas(self, tmp_path):
        logs = self.read(tmp_path, (HEADER + '"0","0","1.5",-1,"-2e-1"\n').encode())
        assert logs.rewards.tolist() == [[1.5]] and logs.log_beta.tolist() == [[-0.2]]

    @pytest.mark.parametrize(
        "data, message",
        [
            (b"0,0,1,-1,-1\n1,0,\xff,-1,-1\n", r"line 3: byte 0xff at position 5 is not UTF-8"),
            (b"0,0,1,-1,-1\n\n1,0,1_000,-1,-1\n", r"line 4, column 'reward': '1_000' is not"),
            (b"0,0,1,-1,-1\n \t\n1,0,1,-1,-1\n1,5\n", r"line 5: 2 fields where the header has 5"),
            (b"0,0,1,-1,-1\n\n\n1,0,0x10,-1,-1\n", r"line 5, column 'reward': '0x10' is not"),
            (b'0,0,1,-1,-1\n1,0,"1,5",-1,-1\n', r"line 3, column 'reward': '1,5' is not"),
            (b"0,0,1,-1,-1\n1e20,0,1,-1,-1\n", r"line 3, column 'episode': 1e\+20 is beyond"),
            (b"-1e17,0,1,-1,-1\n", r"line 2, column 'episode': -1e\+17 is beyond ±2\^53"),
            (b"0,0,1,-1,-1\n1,0,1,-1,\r-1\n", r"line 3: not a CSV row"),  # a lone CR (hypothesis)
        ],
    )
    def test_bad_rows_name_the_file_line(self, tmp_path, data, message):
        with pytest.raises(LogFormatError, match=message) as exc:
            self.read(tmp_path, HEADER.encode() + data)
        assert str(exc.value).startswith(str(tmp_path / "l.csv"))

    def test_non_utf8_header(self, tmp_path):
        with pytest.raises(LogFormatError, match=r"line 1: byte 0xe9 at position 1 is not"):
            self.read(tmp_path, b"\xe9pisode\xe9,step\n")

    @pytest.mark.parametrize(
        "ids, line, message",
        [
            ([0, 1, 3], 4, "episode 3 follows episode 1 (1 such place(s))"),
            ([5, 4, 3], 3, "episode 4 follows episode 5 (2 such place(s))"),
        ],
    )
    def test_ids_with_gaps_or_going_down_warn(self, tmp_path, ids, line, message):
        data = "".join(f"{i},0,1,-1,-1\n" for i in ids)
        with pytest.warns(
            EpisodeIdWarning, match=rf"line {line}, column 'episode': {re.escape(message)}"
        ):
            logs = self.read(tmp_path, (HEADER + data).encode())
        assert logs.episode_ids.tolist() == ids
        assert issubclass(EpisodeIdWarning, UserWarning)

    def test_cli_prints_the_warning_in_one_line(self, tmp_path, capsys):
        data = "".join(f"{i},0,{i % 2},-1,-1\n" for i in [*range(10), 12])
        (tmp_path / "l.csv").write_text(HEADER + data)
        assert main(["forecast", str(tmp_path / "l.csv"), "--basis", "linear", "--d", "2"]) == 0
        err = capsys.readouterr().err
        assert err.startswith("pyprog forecast: warning: ") and err.count("\n") == 1
        assert "line 12, column 'episode': episode 12 follows episode 9" in err

    def test_consecutive_ids_do_not_warn(self, tmp_path):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.read(tmp_path, (HEADER + "-2,0,1,-1,-1\n-1,0,1,-1,-1\n").encode())


# a field: a valid number, or something a fuzzer would throw at a CSV reader
FIELDS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["", " ", '"1"', "1_000", "0x1F", "1,5", "1e999", "-0", "\ufeff1", "\x00"]),
    st.text(max_size=6),
)


def csv_bytes(rows, encoding_noise: bytes):
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass") + encoding_noise


@st.composite
def log_files(draw):
    header = draw(st.permutations(["episode", "step", "reward", "log_pi", "log_beta", "x"]))
    header = draw(st.sampled_from([header, header[:4], [*header[:5], " step "]]))
    valid = draw(st.booleans())
    rows, ep, t = [], 0, 0
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            ep, t = ep + draw(st.integers(-1, 2)), 0
        named = {"episode": str(ep), "step": str(t), "reward": draw(FIELDS) if not valid else "1"}
        named |= {"log_pi": "-0.5", "log_beta": "-0.25", "x": draw(FIELDS)}
        row = [named.get(h.strip(), "0") for h in header]
        if not valid and draw(st.booleans()):
            row[draw(st.integers(0, len(row) - 1))] = draw(FIELDS)
        rows.append(row)
        t += 1
    noise = draw(st.sampled_from([b"", b"", b"\n", b"\xff\xfe", b"\r\n\r\n", b"1,2"]))
    bom = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
    return bom + csv_bytes([header, *rows], noise)


class TestFuzz:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=log_files())
    def test_never_a_traceback_but_the_documented_errors(self, tmp_path_factory, data):
        path = tmp_path_factory.mktemp("fuzz") / "l.csv"
        path.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EpisodeIdWarning)
            try:
                logs = read_logs(path)
            except LogFormatError as exc:
                assert str(exc).startswith(str(path) + ",") and "\n" not in str(exc)
                return
        assert logs.rows == int(logs.lengths.sum()) and logs.episodes >= 1
        assert np.isfinite(logs.steps).all() and (logs.steps[:, :2] <= 0).all()
        assert logs.mask.sum() == logs.rows
