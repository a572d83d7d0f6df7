"""The test suite's own set-up: one BLAS thread (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys

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
