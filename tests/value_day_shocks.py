"""Coverage when the value has a day-level deviation no term holds, and when it has none.

8 blocks of the year (``contextual_year.YearOfRounds("blocks")``) with an independent
normal shock of sd ``day_sd`` added to the value of each calendar day (one draw per day,
the same for every log): the deviation ``forecast_value``'s τ describes. At ``day_sd = 0``
the truth has none, and an interval that carries what the log cannot rule out covers more
than 90 %; where the shock is real, an interval at the point estimate τ̂ covers less.
Three rules for τ are compared: its confidence distribution (the default,
:meth:`MixedModel.tau_distribution`), its posterior under the half-Cauchy prior (the rule
before it) and one point at the mode (``plug-in``). tests/value_tau_boundary.py computes
the same comparison from the normal approximations, at more values of τ.

Run ``python tests/value_day_shocks.py L n [sd,sd,...]`` (default 20 10000 0,0.05,0.1);
``python tests/value_day_shocks.py --truths L n seed name,name,...`` runs the truths of
``tests/value_montecarlo.py`` (keys such as ``weekday``, ``step@0.6``) under each rule.
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
    """One point at the mode (the interval before issue 47's τ grid)."""
    return np.asarray(mode.theta, dtype=np.float64)[None, :], np.ones(1)


def posterior(self, mode, points=12):
    """τ's posterior under its half-Cauchy prior, the effects at the mode: 12 points evenly
    over the range within e⁻¹² of its top (a log-spaced probe from 0 to 10c), weighted by
    the trapezoid rule times the density (the rule of 2 Dec 2026, stop 54)."""
    theta, c = np.asarray(mode.theta, dtype=np.float64), self.prior_scale
    probe = np.sort(np.concatenate([[0.0, theta[0]], c * np.logspace(-4, 1, 16)]))
    log_f = -self._varied(theta, 0, probe)
    inside = np.flatnonzero(log_f > log_f.max() - 12.0)
    lo, hi = probe[max(inside[0] - 1, 0)], probe[min(inside[-1] + 1, probe.size - 1)]
    thetas = np.repeat(theta[None, :], points, axis=0)
    thetas[:, 0] = np.linspace(lo, hi, points)
    rule = np.zeros(points)  # the trapezoid rule's weights
    rule[:-1] += np.diff(thetas[:, 0]) / 2
    rule[1:] += np.diff(thetas[:, 0]) / 2
    log_p = np.log(rule) - self.objectives(thetas)
    weights = np.exp(log_p - log_p.max())
    return thetas, weights / weights.sum()


RULES = {"confidence": None, "posterior": posterior, "plug-in": plug_in}


def run(L: int, n: int, sds: list[float]) -> dict:
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(1):
        for sd in sds:
            gen = ShockedBlocks("blocks", day_sd=sd)
            for label, rule in RULES.items():
                patch = mock.patch.object(MixedModel, "tau_distribution", rule)
                with patch if rule is not None else nullcontext():
                    logs = [one_log(gen, "blocks", n, 1000 * i + 7, baselines=False)
                            for i in range(L)]  # fmt: skip
                summary = coverage_summary([g for g in logs if "refused" not in g])[1]
                out[f"{sd:g}|{label}"] = summary
                print(f"day sd {sd:g}, {label}: {json.dumps(summary)}", flush=True)
    return out


def run_truths(L: int, n: int, seed: int, names: list[str]) -> dict:
    """Each rule on the truths ``names`` of ``value_montecarlo.SHAPES``: coverage and MSE."""
    import value_montecarlo

    shapes = [s for s in value_montecarlo.SHAPES if value_montecarlo.shape_key(*s) in names]
    out = {}
    for label, rule in RULES.items():
        patch = mock.patch.object(MixedModel, "tau_distribution", rule)
        with patch if rule is not None else nullcontext():
            for shape in shapes:
                res = value_montecarlo.run(L, n, seed, shapes=[shape], progress=False)
                for key, s in res["shapes"].items():
                    out[f"{key}|{label}"] = s
                    print(f"{key}, {label}: coverage {s['coverage']:.3f} ± "
                          f"{s['coverage_se']:.3f}, width {s['median_width']:.3f}, "
                          f"MSE {s['mse']['value']:.4f}", flush=True)  # fmt: skip
    return out


if __name__ == "__main__" and sys.argv[1:2] == ["--truths"]:
    L, n, seed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    run_truths(L, n, seed, sys.argv[5].split(","))
elif __name__ == "__main__":
    L = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    sds = [float(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "0,0.05,0.1").split(",")]
    run(L, n, sds)
