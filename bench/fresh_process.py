"""Time a fresh Python process that first touches numba-compiled code (cold or cached cache)."""

import json
import os
import shutil
import subprocess
import sys


def first_call_timings(benchmark, cache_dir, script: str, numba_cache: str) -> dict:
    """Benchmark ``python -c script`` once; return the JSON timings it prints.

    ``numba_cache="cold"`` empties ``cache_dir`` (``NUMBA_CACHE_DIR``) before the timed run,
    so numba compiles; ``"cached"`` first runs the script once untimed to fill it.
    """
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    if numba_cache == "cached":  # populate the cache (a no-op if the cold run already did)
        subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)

    def fresh_process():
        if numba_cache == "cold":
            shutil.rmtree(cache_dir, ignore_errors=True)
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True
        )
        return json.loads(out.stdout)

    timings = benchmark.pedantic(fresh_process, rounds=1, iterations=1)
    benchmark.extra_info.update(timings)
    return timings
