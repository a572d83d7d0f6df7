"""The test suite's own set-up: one BLAS thread (tests/conftest.py), and the slow-marked tests
kept out of the default suite for a newcomer's time still run in CI (.ci/run)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BLAS_THREADS_CHOSEN
from threadpoolctl import threadpool_info

CHILD = (
    "import numpy, scipy.linalg; from threadpoolctl import threadpool_info as info; "
    "print(sorted({i['num_threads'] for i in info() if i['user_api'] == 'blas'}))"
)


@pytest.mark.skipif(BLAS_THREADS_CHOSEN, reason="OPENBLAS_NUM_THREADS set by the caller")
def test_blas_runs_one_thread_here_and_in_subprocesses():
    assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {1}
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    )
    assert child.stdout.strip() == "[1]"


#: Test files whose slow-marked tests left the default suite for its time (issue 48).
MOVED_TO_CI = [
    "tests/test_offpolicy_mc.py",
]


def slow_steps(script: str) -> list[list[str]]:
    """The ``pytest ... -m slow ...`` commands of a CI script, as argument lists."""
    steps = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if "pytest" in words and "-m" in words and words[words.index("-m") + 1] == "slow":
            steps.append(words)
    return steps


def test_the_monte_carlos_out_of_the_default_suite_still_run_in_ci():
    script = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    in_ci = {word for step in slow_steps(script) for word in step}
    assert [f for f in MOVED_TO_CI if f not in in_ci] == []
    assert slow_steps("pytest -q tests/a.py\npytest -m slow \\\n    tests/b.py") == [
        ["pytest", "-m", "slow", "tests/b.py"]
    ]
