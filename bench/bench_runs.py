"""Whole 1000-episode runs with the paper's speed-2 settings: compiled kernels vs NumPy twins.

Run: ``pytest bench/bench_runs.py --benchmark-columns=median,rounds``. Targets (issue:
learners): NS-Reco Pro-WLS under 1 s, NS-Reacher Pro-OLS under 5 s, on a 2-core machine.
The baseline swaps every kernel for its NumPy twin (what ``PYPROG_PURE_PYTHON=1`` runs).
"""

import pytest

import pyprog.learn.learners
import pyprog.learn.policies.softmax
from pyprog._ext import fallback
from pyprog.runner.loop import run

compiled = pytest.importorskip("pyprog._ext._kernels", reason="compiled kernels not built")

RUNS = [("reco", "pro-wls", 1.0), ("reacher", "pro-ols", 5.0)]
IMPLS = [("numpy", fallback, "baseline"), ("cython", compiled, "candidate")]


@pytest.fixture(autouse=True)
def one_blas_thread():
    # the kernels use no BLAS; the NumPy twins do, and 2 threads only fight on 2 cores
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@pytest.mark.parametrize("impl, K, role", IMPLS, ids=[i[0] for i in IMPLS])
@pytest.mark.parametrize("env, algo, target", RUNS, ids=[f"{e}-{a}" for e, a, _ in RUNS])
def bench_run(benchmark, monkeypatch, impl, K, role, env, algo, target):
    benchmark.group = f"1000-episode run: {env}, {algo}, paper speed-2 setting"
    benchmark.extra_info.update(impl=impl, role=role)
    if role == "candidate":
        benchmark.extra_info["target_seconds"] = target
    monkeypatch.setattr(pyprog.learn.learners, "kernels", K)
    monkeypatch.setattr(pyprog.learn.policies.softmax, "kernels", K)
    kwargs = dict(speed=2, seed=0, episodes=1000)
    result = benchmark.pedantic(run, args=(env, algo), kwargs=kwargs, rounds=2, iterations=1)
    assert result.returns.shape == (1000,)
