"""Write ``obd_fixture.csv``: 30 rows in the exact layout of the Open Bandit Dataset's CSV
files (obp 0.5.7, ``obp/dataset/obd/bts/all/all.csv``), with made-up values.

The layout: a first, unnamed column holding the row number (the pandas index the files were
written with), then ``timestamp`` (ISO 8601 with ``+00:00``), ``item_id``, ``position`` (1, 2,
3), ``click``, ``propensity_score``, ``user_feature_0..3`` (hashed strings) and
``user-item_affinity_0..K`` (floats; a hyphen in the name). Two rows are out of time order,
as a reader must sort them. Run ``python tests/data/readers/make_obd_fixture.py`` to remake it.
"""

from pathlib import Path

import numpy as np

N_ROWS, N_ITEMS, N_AFFINITY = 30, 80, 5


def rows(rng: np.random.Generator) -> list[str]:
    header = ["", "timestamp", "item_id", "position", "click", "propensity_score"]
    header += [f"user_feature_{k}" for k in range(4)]
    header += [f"user-item_affinity_{k}" for k in range(N_AFFINITY)]
    seconds = np.sort(rng.uniform(0, 7 * 86400, N_ROWS))
    seconds[[4, 5]] = seconds[[5, 4]]  # out of order
    out = [",".join(header)]
    for i, s in enumerate(seconds):
        t = np.datetime64("2019-11-24T00:00:00", "us") + np.timedelta64(int(s * 1e6), "us")
        stamp = str(t).replace("T", " ") + "+00:00"
        users = [f"{rng.integers(16**8):08x}" for _ in range(4)]
        affinity = [f"{a:.1f}" for a in rng.integers(0, 3, N_AFFINITY)]
        fields = [str(i), stamp, str(rng.integers(N_ITEMS)), str(1 + i % 3)]
        fields += [str(int(rng.random() < 0.2)), f"{rng.uniform(0.001, 0.9):.6f}"]
        out.append(",".join(fields + users + affinity))
    return out


if __name__ == "__main__":
    path = Path(__file__).with_name("obd_fixture.csv")
    path.write_text("\n".join(rows(np.random.default_rng(34))) + "\n")
    print(f"wrote {path}")
