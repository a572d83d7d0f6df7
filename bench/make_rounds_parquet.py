"""Write a benchmark log of timestamped rounds as a Parquet folder partitioned by day.

``python bench/make_rounds_parquet.py OUT N [--days 365] [--seed 0]`` writes N rounds of
``tests/contextual_year.py``'s year (seasonal blocks, 10 actions, 10 context features,
softmax logging, an ε-greedy π_e) as ``OUT/date=YYYY-MM-DD/part-0.parquet``, one file a
day, each day's rounds drawn on their own (so memory stays at one day's rows, whatever
N). Columns: ``time`` (UTC timestamp), ``x0 .. x9``, ``action``, ``reward``, ``pscore``
and π_e's probabilities ``pi_0 .. pi_9``. 10⁸ rounds take about 19 GB.

The data is generated, never committed: ``bench/scale_rounds.py`` reads it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from contextual_year import YearOfRounds

START = np.datetime64("2023-01-01", "D")


def day_table(gen: YearOfRounds, day: int, n: int, seed: int):
    """One day's ``n`` rounds as a pyarrow table."""
    import pyarrow as pa

    gen.start = float((START - np.datetime64("1970-01-01", "D")).astype(int) + day)
    d = gen.sample(n, np.random.default_rng([seed, day]), span=1.0)  # this day's times
    stamps = (d["times"] * 86_400e6).astype("int64").astype("datetime64[us]")
    cols = {"time": pa.array(stamps, type=pa.timestamp("us", tz="UTC"))}
    cols.update({f"x{j}": d["context"][:, j] for j in range(d["context"].shape[1])})
    cols.update(action=d["action"], reward=d["reward"], pscore=d["pscore"])
    cols.update({f"pi_{a}": d["action_dist"][:, a] for a in range(gen.n_actions)})
    return pa.table(cols)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("n", type=float, help="rounds in all (e.g. 1e8)")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import pyarrow.parquet as pq

    gen, n = YearOfRounds("blocks"), int(args.n)
    per_day = np.full(args.days, n // args.days)
    per_day[: n % args.days] += 1
    start = time.perf_counter()
    for day, rows in enumerate(per_day):
        folder = args.out / f"date={START + np.timedelta64(day, 'D')}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(day_table(gen, day, int(rows), args.seed), folder / "part-0.parquet")
    print(f"{n} rounds in {args.days} files under {args.out} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
