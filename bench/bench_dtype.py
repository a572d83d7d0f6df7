"""float32 policies against float64: whole 1000-episode runs, side by side in one run.

Run: ``taskset -c 0 pytest bench/bench_dtype.py --benchmark-columns=median,rounds``.
Target (issue 20, item 2): NS-Reacher Pro-OLS at speed 2 with the authors' settings,
``Hyper(dtype="float32")`` >= 1.6x faster than float64 on the whole run. Where the time
goes (cProfile of a float64 run, 300 episodes): the compiled update 73 % (and more at
1000 episodes, as the buffer grows), action sampling 5 %, environment steps 4 %, so the
float32 work is in the update's forward and backward passes (``_policy_real.h``).
NS-Reco Pro-WLS (a 5-action linear policy, Python-bound) is measured for reference.
"""

import pytest

from pyprog.learn.hyperparams import paper_hyper
from pyprog.runner.loop import run

pytest.importorskip("pyprog._ext._kernels", reason="compiled kernels not built")

RUNS = [("reacher", "pro-ols", 1.6), ("reco", "pro-wls", None)]
DTYPES = [("float64", "baseline"), ("float32", "candidate")]


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@pytest.mark.parametrize("dtype, role", DTYPES, ids=[d for d, _ in DTYPES])
@pytest.mark.parametrize("env, algo, target", RUNS, ids=[f"{e}-{a}" for e, a, _ in RUNS])
def bench_dtype_run(benchmark, dtype, role, env, algo, target):
    benchmark.group = f"1000-episode run: {env}, {algo}, speed 2, float32 vs float64"
    benchmark.extra_info.update(dtype=dtype, role=role)
    if role == "candidate" and target is not None:
        benchmark.extra_info["target"] = target
    hyper = paper_hyper(env, algo, 2).replace(dtype=dtype)
    kwargs = dict(speed=2, seed=0, episodes=1000, hyper=hyper)
    result = benchmark.pedantic(run, args=(env, algo), kwargs=kwargs, rounds=3, iterations=1)
    assert result.returns.shape == (1000,)
