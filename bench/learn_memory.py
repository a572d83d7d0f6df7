"""Peak memory of ``learn_for_future`` against the log's size: O(n) (issue 50).

``python bench/learn_memory.py [N ...]`` (default 1e5 1e6) learns the policy for 30 days
after a year of ``tests/contextual_year.py``'s rounds (seasonal blocks, 10 actions, 10
context features) in a fresh process per size, without baselines (they repeat the same
passes), and prints each run's time and peak resident memory, and the memory per round
above that of the smallest run (linear memory: the same bytes per round at every size).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, sys, time, warnings
import numpy as np
sys.path.insert(0, {tests!r})
from contextual_year import YEAR, YearOfRounds
from pyprog import learn_for_future

warnings.simplefilter("ignore")
n = int(float(sys.argv[1]))
gen = YearOfRounds("blocks")
d = gen.sample(n, np.random.default_rng(0))
log = {{"time": d["times"], "action": d["action"], "reward": d["reward"], "pscore": d["pscore"]}}
log.update({{f"x{{j}}": d["context"][:, j] for j in range(gen.dim)}})
del d
start = time.perf_counter()
res = learn_for_future(log, at=YEAR + 30, baselines=())
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"n": n, "seconds": seconds, "peak_bytes": peak, "deploy": res.deploy}}))
"""


def run(n: float) -> dict:
    code = CHILD.format(tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", code, str(n)], capture_output=True, text=True,
                         check=True, cwd=ROOT)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    sizes = [float(a) for a in argv] or [1e5, 1e6]
    rows = [run(n) for n in sizes]
    first = rows[0]
    for row in rows:
        gb = row["peak_bytes"] / 2**30
        line = f"n={row['n']:>9,}: {row['seconds']:7.1f} s, peak RSS {gb:5.2f} GB"
        if row is not first:
            per = (row["peak_bytes"] - first["peak_bytes"]) / (row["n"] - first["n"])
            line += f", {per:,.0f} bytes per round above n={first['n']:,}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
