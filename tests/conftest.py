"""Shared fixtures."""

from __future__ import annotations

import os

import pytest
from threadpoolctl import threadpool_limits

from pyprog._ext import fallback
from pyprog.forecast import forecasters, intervals, selected_intervals
from pyprog.learn import learners as agents
from pyprog.learn.policies import softmax as softmax_policies
from pyprog.offpolicy import episodes

#: One BLAS thread per process, in this process and in the CLI and worker subprocesses the tests
#: start (they inherit the variable), unless OPENBLAS_NUM_THREADS is set. The tests' problems are
#: small (a few dozen columns), so a second OpenBLAS thread buys no time, and on a 2-core machine
#: shared with another job its barrier waits for a core the other job holds. Measured on 2 cores
#: (issue 48 item 0), four BLAS-heavy tests: 2 threads 91.5 s wall / 77.6 s CPU beside other
#: jobs and 26.2 s / 36.2 s alone; 1 thread 28.8 s / 27.6 s and 26.9 s / 26.9 s.
BLAS_THREADS_CHOSEN = "OPENBLAS_NUM_THREADS" in os.environ
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def one_blas_thread():
    """This process's BLAS on one thread (what the variable does for the subprocesses)."""
    if BLAS_THREADS_CHOSEN:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(params=["compiled", "numpy"])
def backend(request, monkeypatch):
    """Both kernel backends: the NumPy twins patched in wherever the learners use kernels."""
    if request.param == "numpy":
        for module in (
            agents,
            episodes,
            forecasters,
            intervals,
            selected_intervals,
            softmax_policies,
        ):
            monkeypatch.setattr(module, "kernels", fallback)
    return request.param
