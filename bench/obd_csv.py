"""An Open-Bandit-Dataset-shaped CSV file of a given size, for the reader's memory benchmark.

The layout of ``{random,bts}/all/all.csv`` (Saito et al., 2021): the unnamed row-number
column, ``timestamp`` (ISO 8601, microseconds, ``+00:00``), ``item_id`` (0 .. 79),
``position`` (1, 2, 3), ``click`` (about 0.4 % ones), ``propensity_score``, four hashed
``user_feature_*`` columns (32 hex digits) and 80 ``user-item_affinity_*`` columns (mostly
``0.0``): about 520 bytes a row, as in the real files. Nothing is committed: the file is
written where the caller says.

Run: ``python bench/obd_csv.py PATH [MiB]`` (default 50 MiB).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

N_ITEMS, N_FEATURES = 80, 4
START = np.datetime64("2019-11-24T00:00:00", "us")


def header() -> str:
    return ",".join(
        ["", "timestamp", "item_id", "position", "click", "propensity_score"]
        + [f"user_feature_{k}" for k in range(N_FEATURES)]
        + [f"user-item_affinity_{k}" for k in range(N_ITEMS)]
    )


def rows(n: int, first: int, rng: np.random.Generator) -> list[str]:
    """``n`` data lines, the row numbers from ``first``, a week of times in play order."""
    gaps = rng.exponential(0.3, n).cumsum() * 1e6
    times = START + (first * 300_000 + gaps).astype("timedelta64[us]")
    stamps = np.datetime_as_string(times, unit="us")
    items = rng.integers(N_ITEMS, size=n)
    positions = rng.integers(1, 4, size=n)
    clicks = rng.binomial(1, 0.004, size=n)
    pscores = rng.uniform(0.0005, 0.5, size=n).round(6)
    features = rng.integers(0, 16, size=(n, N_FEATURES, 32))
    affinity = rng.binomial(2, 0.02, size=(n, N_ITEMS)).astype(float)
    hexdigits = np.array(list("0123456789abcdef"))
    out = []
    for i in range(n):
        feats = ["".join(hexdigits[features[i, k]]) for k in range(N_FEATURES)]
        out.append(
            f"{first + i},{stamps[i].replace('T', ' ')}+00:00,{items[i]},{positions[i]},"
            f"{clicks[i]},{pscores[i]},{','.join(feats)},{','.join(map(str, affinity[i]))}"
        )
    return out


def write_obd_csv(path: str | Path, mib: float = 50.0, seed: int = 0) -> int:
    """Write an OBD-shaped CSV of about ``mib`` MiB at ``path``; return its number of rows."""
    rng = np.random.default_rng(seed)
    target, written, n = mib * 2**20, 0, 0
    with open(path, "w", newline="") as fh:
        fh.write(header() + "\n")
        while written < target:
            block = "\n".join(rows(5_000, n, rng)) + "\n"
            fh.write(block)
            written += len(block)
            n += 5_000
    return n


if __name__ == "__main__":
    size = float(sys.argv[2]) if len(sys.argv) > 2 else 50.0
    print(write_obd_csv(sys.argv[1], size), "rows")
