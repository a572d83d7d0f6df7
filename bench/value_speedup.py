"""``forecast_value`` against the cascade it replaced (issue 47), in one run, one core.

Run ``taskset -c 0 python bench/value_speedup.py OLD_PYTHON [repeats [shape ...]]``,
OLD_PYTHON being the interpreter of an install of the code before issue 47 (e.g. a
worktree of commit dc93616 with its own virtual environment). For each truth ``shape`` of
``tests/contextual_year.py`` (default: all of ``SHAPES``; the names of ``MISSPEC_TRUTHS``
too, e.g. ``interactions``, the kind of log issue 47 timed; the cascade's cost depends on
what the log shows, the model average's hardly) each side runs in its own process, in alternation
(old, new, old, new, ...), on the same log: 1,000 rounds (10 actions, 10 context
features), a callable policy, one target 30 days after the log, a 90 % interval, the
defaults, BLAS on one thread. A process times ``repeats`` calls after one untimed warm-up
and prints their median; the script prints, per truth, each side's medians and the ratio
of the middle ones.
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
from contextual_year import MISSPEC_TRUTHS, YEAR, MisspecifiedYear, YearOfRounds
from pyprog.value.forecast import forecast_value

shape = {shape!r}
gen = MisspecifiedYear(truth=shape) if shape in MISSPEC_TRUTHS else YearOfRounds(shape)
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


def side(python: str, repeats: int, shape: str) -> dict:
    script = ONE_SIDE.format(tests=str(ROOT / "tests"), repeats=repeats, shape=shape)
    out = subprocess.run(  # not from the checkout: each side imports its own install
        [python, "-c", script], check=True, capture_output=True, text=True, cwd="/"
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from contextual_year import SHAPES

    old_python, repeats = argv[1], int(argv[2]) if len(argv) > 2 else 5
    shapes = argv[3:] or list(SHAPES)
    out = {}
    for shape in shapes:
        old, new = [], []
        for _ in range(3):
            old.append(side(old_python, repeats, shape))
            new.append(side(sys.executable, repeats, shape))
        o = sorted(r["median"] for r in old)[1]
        n = sorted(r["median"] for r in new)[1]
        out[shape] = {
            "cascade_s": [r["median"] for r in old],
            "model_average_s": [r["median"] for r in new],
            "speedup": o / n,
            "cascade": old[0],
            "model_average": new[0],
        }
        print(shape, json.dumps(out[shape]), flush=True)
    print("| truth | cascade (s) | model average (s) | speed-up |")
    print("|---|---|---|---|")
    for shape, r in out.items():
        o, n = sorted(r["cascade_s"])[1], sorted(r["model_average_s"])[1]
        print(f"| {shape} | {o:.2f} | {n:.2f} | {r['speedup']:.1f}x |")


if __name__ == "__main__":
    main(sys.argv)
