"""Coverage when the value has a day-level deviation no term holds, and when it has none.

8 blocks of the year (``contextual_year.YearOfRounds("blocks")``) with an independent
normal shock of sd ``day_sd`` added to the value of each calendar day (one draw per day,
the same for every log): the deviation ``forecast_value``'s τ describes. At ``day_sd = 0``
the truth has none, and an interval that carries what the log cannot rule out covers more
than 90 %; where the shock is real, an interval at the point estimate τ̂ covers less. The
two are compared by giving ``forecast_value`` τ's posterior (the default) or a grid of one
point at τ̂ (``plug-in``).

Run ``python tests/value_day_shocks.py L n [sd,sd,...]`` (default 20 10000 0,0.05,0.1).
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import BLOCK_LEVELS, YearOfRounds, block_of_year
from value_montecarlo import coverage_summary, one_log

from pyprog.value.reml import MixedModel

#: Calendar days of the shocks' table (longer than any log here).
DAYS = 4000


@dataclass
class ShockedBlocks(YearOfRounds):
    """8 blocks of the year plus a daily shock of sd ``day_sd`` on the value's scale."""

    day_sd: float = 0.0

    def _shape(self, t: np.ndarray) -> np.ndarray:
        base = BLOCK_LEVELS[block_of_year(t)]
        if not self.day_sd:
            return base
        # V_t = c₀ + c₁ s(t): a shock of sd day_sd in V is one of day_sd / c₁ in s
        shock = np.random.default_rng(99).normal(0.0, self.day_sd / abs(self.c1), DAYS)
        return base + shock[np.floor(t).astype(np.int64) % DAYS]


def plug_in(self, mode, points=None):
    """τ's posterior replaced by one point at its mode (the interval before issue 47's τ grid)."""
    return np.asarray(mode.theta, dtype=np.float64)[None, :], np.ones(1)


def run(L: int, n: int, sds: list[float]) -> dict:
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(1):
        for sd in sds:
            gen = ShockedBlocks("blocks", day_sd=sd)
            for label in ("plug-in", "over tau"):
                patch = mock.patch.object(MixedModel, "tau_posterior", plug_in)
                with patch if label == "plug-in" else nullcontext():
                    logs = [one_log(gen, "blocks", n, 1000 * i + 7, baselines=False)
                            for i in range(L)]  # fmt: skip
                summary = coverage_summary([g for g in logs if "refused" not in g])[1]
                out[f"{sd:g}|{label}"] = summary
                print(f"day sd {sd:g}, {label}: {json.dumps(summary)}", flush=True)
    return out


if __name__ == "__main__":
    L = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    sds = [float(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "0,0.05,0.1").split(",")]
    run(L, n, sds)
