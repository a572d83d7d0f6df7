"""bench/authors.py: the authors' options for pyprog's settings, finding their code, skipping."""

import subprocess
import sys
from pathlib import Path

import pytest
from bench_scripts import load

from pyprog.learn.hyperparams import paper_hyper

ROOT = Path(__file__).resolve().parents[1]
authors = load("bench_authors", "authors")


def options(argv):
    """{"--name": value} of an argv of option/value pairs."""
    assert len(argv) % 2 == 0
    return dict(zip(argv[::2], argv[1::2], strict=True))


def test_reco_pro_wls_maps_to_their_parser_options():
    setting = paper_hyper("reco", "pro-wls", 2).to_dict()
    got = options(authors.authors_argv("reco", "pro-wls", 2, setting, 1000, 0))
    # their Src/Reco_hyperparams.md, ProWLS speed 2
    assert got["--env_name"] == "NS_Reco" and got["--algo_name"] == "ProWLS"
    assert float(got["--actor_lr"]) == 0.007650333890460954
    assert got["--delta"] == "5" and got["--max_inner"] == "50" and got["--fourier_k"] == "3"
    assert float(got["--importance_clip"]) == 15.0
    assert float(got["--entropy_lambda"]) == 0.03134205440723196
    assert got["--extrapolator_basis"] == "Fourier" and got["--optim"] == "rmsprop"
    assert got["--raw_basis"] == "True" and "--NN_basis_dim" not in got
    assert got["--debug"] == "False" and got["--max_episodes"] == "1000"


def test_reacher_pro_ols_gets_their_mlp_options():
    setting = paper_hyper("reacher", "pro-ols", 2).to_dict()
    got = options(authors.authors_argv("reacher", "pro-ols", 2, setting, 30, 4))
    # their Src/Reacher_hyperparams.md, ProOLS speed 2 (NN_basis_dim 32, raw_basis False)
    assert got["--env_name"] == "NS_Reacher" and got["--algo_name"] == "ProOLS"
    assert got["--raw_basis"] == "False" and got["--NN_basis_dim"] == "32"
    assert float(got["--actor_lr"]) == 0.00010410478690710495
    assert got["--delta"] == "1" and got["--max_inner"] == "10" and got["--fourier_k"] == "5"
    assert float(got["--state_lr"]) == setting["hidden_lr"]
    assert got["--seed"] == "4" and got["--max_episodes"] == "30"


def test_locate_authors(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPROG_AUTHORS_CODE", raising=False)
    found, why = authors.locate_authors(None)
    assert found is None and "PYPROG_AUTHORS_CODE" in why
    found, why = authors.locate_authors(str(tmp_path))
    assert found is None and "neither Src/run_NS.py nor a bare git repository" in why
    (tmp_path / "Src").mkdir()
    (tmp_path / "Src" / "run_NS.py").write_text("")
    monkeypatch.setenv("PYPROG_AUTHORS_CODE", str(tmp_path))
    assert authors.locate_authors(None) == (tmp_path, "")


def checkout(tmp_path):
    src = tmp_path / "clone"
    (src / "Src").mkdir(parents=True)
    (src / "Src" / "run_NS.py").write_text("print('theirs')\n")
    (src / "Experiments").mkdir()  # what their code writes: not copied
    return src


def test_copy_checkout_from_a_clone(tmp_path):
    dest = authors.copy_checkout(checkout(tmp_path), tmp_path / "run")
    assert dest.name == "OptFuture" and (dest / "Src" / "run_NS.py").is_file()
    assert not (dest / "Experiments").exists()


def test_copy_checkout_from_a_bare_repository(tmp_path):
    src = checkout(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(src)]
    for cmd in (["init", "-q"], ["add", "Src"], ["commit", "-qm", "x"]):
        subprocess.run(git + cmd, check=True)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    assert authors.locate_authors(str(bare)) == (bare, "")
    (tmp_path / "run").mkdir()
    dest = authors.copy_checkout(bare, tmp_path / "run")
    assert (dest / "Src" / "run_NS.py").read_text() == "print('theirs')\n"


def test_skips_cleanly_without_the_authors_code(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPROG_AUTHORS_CODE", raising=False)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "authors.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith("skipped: ")
    assert not list(tmp_path.iterdir())  # nothing written


def test_skips_cleanly_without_torch(tmp_path):
    src = checkout(tmp_path)
    python = authors.locate_python(sys.executable)
    if python[0] is not None:
        pytest.skip("this Python has torch, matplotlib and yaml")
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "authors.py"), "--authors", str(src),
         "--authors-python", sys.executable, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0 and "cannot import torch" in done.stdout
    assert not (tmp_path / "out").exists()


def test_bad_options_exit_2(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "authors.py"), "--episodes", "0"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--episodes must be >= 1" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [(["--repeat", "0"], "--repeat must be >= 1"), (["--cases", "bandit"], "--cases must name")],
)
def test_bad_repeat_or_cases_exit_2(argv, message):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "authors.py"), *argv],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_parse_cases_keeps_the_table_order():
    assert [c[0] for c in authors.parse_cases("reacher, reco")] == ["reco", "reacher"]
    with pytest.raises(ValueError, match="reco, reacher"):
        authors.parse_cases(",")


def test_markdown_shows_repeats_and_rows_kept_from_an_earlier_run():
    row = {"case": "NS_Reco ProWLS speed 2", "episodes": 1000, "authors_s": 30.0,
           "pyprog_s": 0.25, "speedup": 120.0, "authors_runs": [30.0, 31.0, 29.0],
           "speedup_range": [110.0, 130.0], "date": "2026-11-26T22:00:00+00:00"}  # fmt: skip
    old = {"case": "NS_Reacher ProOLS speed 2", "episodes": 1000, "authors_s": 40.0,
           "pyprog_s": 10.0, "speedup": 4.0, "date": "2026-11-26T20:00:00+00:00",
           "command": "python bench/authors.py"}  # fmt: skip
    report = {"date": row["date"], "command": "python bench/authors.py --cases reco",
              "machine": {"cpu": "cpu", "cores": 2, "platform": "linux", "python": "3.11"},
              "threads": "one each", "rows": [row, old]}  # fmt: skip
    text = authors.markdown(report)
    assert (
        "| NS_Reco ProWLS speed 2 | 30.00 s | 0.25 s | 120.0x (median of 3; paired 110x–130x) |"
        in text
    )
    assert "| NS_Reacher ProOLS speed 2 | 40.00 s | 10.00 s | 4.0x |" in text
    assert "NS_Reacher ProOLS speed 2: from an earlier run, 2026-11-26T20:00:00+00:00" in text


def test_the_recorded_command_is_typed_as_a_user_would(tmp_path):
    """Issue 48 item 15: no folder of the machine that ran it, in the report or its JSON."""
    argv = ["--authors", "/home/me/src/repo", "--authors-python=/opt/v/bin/python", "--out",
            str(tmp_path), "--repeat", "3"]  # fmt: skip
    assert authors.user_command(argv) == (
        "python bench/authors.py --authors PATH/TO/OptFuture_NSMDP --authors-python "
        "PATH/TO/torch-venv/bin/python --out OUT --repeat 3"
    )
    for name in ("authors.md", "authors.json", "authors_loaded.json"):
        text = (ROOT / "bench" / "results" / name).read_text()
        assert "--authors PATH/TO/OptFuture_NSMDP" in text, name
        assert "/work/" not in text and "/tmp/" not in text, name
