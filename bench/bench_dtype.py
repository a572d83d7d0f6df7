"""float32 policies against float64: whole 1000-episode runs, side by side in one run.

Run: ``taskset -c 0 pytest bench/bench_dtype.py --benchmark-columns=median,rounds``, or
``taskset -c 0 python bench/bench_dtype.py PAIRS`` for runs in pairs (float64 then float32,
then the next pair): the host's other tenants move absolute times by up to 2x within minutes,
and pytest-benchmark's rounds of one precision all come before the other's, so a pair's
ratio, taken a few seconds apart, is the steadier measure; it prints each pair and the median.
Target (issue 20, item 2): NS-Reacher Pro-OLS at speed 2 with the authors' settings,
``Hyper(dtype="float32")`` >= 1.6x faster than float64 on the whole run. Where the time
goes (cProfile of a float64 run, 300 episodes): the compiled update 73 % (and more at
1000 episodes, as the buffer grows), action sampling 5 %, environment steps 4 %, so the
float32 work is in the update's forward and backward passes (``_policy_real.h``).
NS-Reco Pro-WLS (a 5-action linear policy, Python-bound) is measured for reference.
"""

import statistics
import sys
import time

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


def alternate(pairs: int = 5, env: str = "reacher", algo: str = "pro-ols") -> list[float]:
    """float64 / float32 time ratios of ``pairs`` back-to-back pairs of 1000-episode runs."""
    from threadpoolctl import threadpool_limits

    ratios = []
    with threadpool_limits(1):
        for i in range(pairs):
            seconds = {}
            for dtype, _ in DTYPES:
                hyper = paper_hyper(env, algo, 2).replace(dtype=dtype)
                start = time.perf_counter()
                run(env, algo, speed=2, seed=0, episodes=1000, hyper=hyper)
                seconds[dtype] = time.perf_counter() - start
            ratios.append(seconds["float64"] / seconds["float32"])
            print(
                f"pair {i + 1}: float64 {seconds['float64']:.2f} s, float32 "
                f"{seconds['float32']:.2f} s, {ratios[-1]:.2f}x",
                flush=True,
            )
    print(f"median {statistics.median(ratios):.2f}x over {pairs} pairs ({env}, {algo}, speed 2)")
    return ratios


if __name__ == "__main__":
    alternate(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
