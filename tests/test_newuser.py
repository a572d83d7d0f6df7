"""Issue 19, "tried as a new user would": progress in batch logs, what the store records."""

import io
import json

from pyprog.cli.common import progress_lines
from pyprog.cli.main import main
from pyprog.learn.hyperparams import default_hyper
from pyprog.results import ResultStore


def test_progress_lines_come_every_tenth_and_every_30_seconds():
    out, now = io.StringIO(), iter([0.0, 1.0, 2.0, 3.0, 35.0, 36.0, 36.5])
    progress = progress_lines("pyprog sweep", out, clock=lambda: next(now))
    for done in (0, 3, 5, 10, 11, 12, 100):  # of 100: 10% at 10, 30 s at 11, the end
        progress(done, 100)
    lines = out.getvalue().splitlines()
    assert [line.split(": ")[1].split(" runs")[0] for line in lines] == [
        "0/100",
        "10/100",
        "11/100",
        "100/100",
    ]
    assert lines[-1] == "pyprog sweep: 100/100 runs (100%), 0.6 min"


def test_a_sweep_logged_to_a_file_prints_progress_lines(tmp_path, capsys):
    """stderr is not a terminal under pytest: lines, not a tqdm bar (nor nothing)."""
    args = ["sweep", "--env", "CartPole-v1", "--algo", "onpg", "--settings", "2"]
    args += ["--seeds", "1", "--episodes", "3", "--jobs", "1", "--store", str(tmp_path / "s.db")]
    assert main(args) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("pyprog sweep: 0/2 runs (0%)")
    assert err[-1].startswith("pyprog sweep: 2/2 runs (100%)")


def test_a_non_builtin_run_records_the_setting_it_used_not_paper(tmp_path):
    """Issue 19: grid.json recorded "hyper": "paper" for CartPole-v1."""
    args = ["run", "--env", "CartPole-v1", "--algo", "onpg", "--seeds", "1", "--episodes", "2"]
    assert main([*args, "--quiet", "--jobs", "1", "--out", str(tmp_path)]) == 0
    with ResultStore(tmp_path / "runs.sqlite", readonly=True) as store:
        (record,) = store.records()
    assert json.loads(record["hyper"]) == default_hyper("onpg").to_dict()
