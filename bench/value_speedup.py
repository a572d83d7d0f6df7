"""``forecast_value`` against the cascade it replaced (issue 47), in one run, one core.

Run ``taskset -c 0 python bench/value_speedup.py OLD_PYTHON [repeats]``, OLD_PYTHON being
the interpreter of an install of the code before issue 47 (e.g. a worktree of commit
dc93616 with its own virtual environment). Each side runs in its own process, in
alternation (old, new, old, new, ...), on the same log: 1,000 rounds of
``tests/contextual_year.py`` (8 blocks of the year, 10 actions, 10 context features), a
callable policy, one target 30 days after the log, a 90 % interval, the defaults, BLAS on
one thread. A process times ``repeats`` calls after one untimed warm-up and prints their
median; the script prints each side's medians and the ratio of their medians.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_SIDE = r"""
import json, sys, time
sys.path.insert(0, {tests!r})
import numpy as np
from threadpoolctl import threadpool_limits
from contextual_year import YEAR, YearOfRounds
from pyprog.forecast.value import forecast_value

gen = YearOfRounds("blocks")
d = gen.sample(1000, np.random.default_rng(0))
frame = {{"time": d["times"], "action": d["action"], "reward": d["reward"],
          "pscore": d["pscore"]}}
frame.update({{f"x{{j}}": d["context"][:, j] for j in range(d["context"].shape[1])}})
times = []
with threadpool_limits(1):
    for i in range({repeats} + 1):
        start = time.perf_counter()
        f = forecast_value(frame, gen.evaluation, n_actions=gen.n_actions, at=YEAR + 30.0)
        if i:
            times.append(time.perf_counter() - start)
print(json.dumps({{"median": float(np.median(times)), "value": f.value,
                  "low": f.low, "high": f.high}}))
"""


def side(python: str, repeats: int) -> dict:
    script = ONE_SIDE.format(tests=str(ROOT / "tests"), repeats=repeats)
    out = subprocess.run(  # not from the checkout: each side imports its own install
        [python, "-c", script], check=True, capture_output=True, text=True, cwd="/"
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    old_python, repeats = argv[1], int(argv[2]) if len(argv) > 2 else 5
    old, new = [], []
    for _ in range(3):
        old.append(side(old_python, repeats))
        new.append(side(sys.executable, repeats))
    o = sorted(r["median"] for r in old)[1]
    n = sorted(r["median"] for r in new)[1]
    print(
        json.dumps(
            {
                "cascade_s": [r["median"] for r in old],
                "model_average_s": [r["median"] for r in new],
                "speedup": o / n,
                "cascade": old[0],
                "model_average": new[0],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main(sys.argv)
