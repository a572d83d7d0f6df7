"""Monte Carlo of the shrinkage model (:class:`pyprog.value.ValueModel`) on the year of rounds.

The same logs, targets and baselines as ``tests/value_montecarlo.py`` (seeds
``100_000 seed + 1_000 i + 7``): per-round DR estimates (q̂(x, a), each round's own
context), one-day bins, :func:`pyprog.value.bin_noise`, :class:`pyprog.value.ValueModel`
with its defaults, 90 % prediction intervals at the 8 targets; and on the same logs
today's ``forecast_value`` (the cascade of choice, gates and widenings) with its
defaults. Per truth: the model's MSE, the cascade's, OPFV's (φ from the data) and
stationary DR's, the paired z of the model's per-log MSE against OPFV's and the
cascade's, the coverage of both (s.e. over logs) and the model's median width.

Run ``python tests/value_model_montecarlo.py L n seed [truth,truth,... [n_boot]]``
(``n_boot``: the model's bootstrap worlds, default 200); the guide
``docs/guides/value-model.md`` quotes it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import YearOfRounds
from value_montecarlo import SHAPES, baselines_of, log_of, paired, shape_key

from pyprog.forecast.value import forecast_value
from pyprog.offpolicy import bin_estimates, round_estimates
from pyprog.value import ValueModel, bin_noise


def model_forecast(d: dict, targets: np.ndarray, seed: int, n_boot: int = 200):
    """The shrinkage model's forecasts and 90 % prediction intervals at ``targets``."""
    args = [d[k] for k in ("context", "times", "action", "reward", "pscore")]
    est = round_estimates(*args, d["action_dist"], estimator="dr", random_state=seed)
    binned = bin_estimates(est.values, d["times"])
    noise = bin_noise(est.values, d["times"], binned)
    model = ValueModel(binned, noise, n_boot=n_boot, random_state=seed)
    return model.predict([("at", float(t)) for t in targets], alpha=0.1)


def one_truth(gen: YearOfRounds, shape: str, L: int, n: int, seed: int, n_boot: int) -> dict:
    mse, opfv, dr, covered, width, cascade, cascade_cov = [], [], [], [], [], [], []
    for i in range(L):
        s = 100_000 * seed + 1_000 * i + 7
        d, frame, targets = log_of(gen, n, s)
        truth = gen.value(targets)
        mean, low, high = model_forecast(d, targets, s, n_boot)
        old = forecast_value(frame, d["action_dist"], at=list(targets), random_state=s)
        old_value = np.array([f.value for f in old])
        cascade.append(float(((old_value - truth) ** 2).mean()))
        inside = [f.low <= v <= f.high for f, v in zip(old, truth, strict=True)]
        cascade_cov.append(float(np.mean(inside)))
        base = baselines_of(gen, shape, d, targets, s)
        mse.append(float(((mean - truth) ** 2).mean()))
        opfv.append(float(((np.array(base["opfv"]) - truth) ** 2).mean()))
        dr.append(float(((np.array(base["dr"]) - truth) ** 2).mean()))
        covered.append(float(((low <= truth) & (truth <= high)).mean()))
        width.append(float(np.median(high - low)))
    mse, opfv, dr, covered, cascade, cascade_cov = map(
        np.array, (mse, opfv, dr, covered, cascade, cascade_cov)
    )
    return {
        "mse": float(mse.mean()), "cascade": float(cascade.mean()),
        "opfv": float(opfv.mean()), "dr": float(dr.mean()),
        "vs_opfv": paired(mse, opfv), "vs_dr": paired(mse, dr),
        "vs_cascade": paired(mse, cascade),
        "cascade_coverage": float(cascade_cov.mean()),
        "cascade_coverage_se": float(cascade_cov.std(ddof=1) / np.sqrt(L)),
        "coverage": float(covered.mean()),
        "coverage_se": float(covered.std(ddof=1) / np.sqrt(L)),
        "median_width": float(np.median(width)),
    }  # fmt: skip


def main(argv: list[str]) -> None:
    from threadpoolctl import threadpool_limits

    L, n, seed = int(argv[1]), int(argv[2]), int(argv[3])
    only = argv[4].split(",") if len(argv) > 4 else None
    n_boot = int(argv[5]) if len(argv) > 5 else 200
    with threadpool_limits(1):
        for shape, kw in SHAPES:
            key = shape_key(shape, kw)
            if only is not None and key not in only:
                continue
            start = time.time()
            out = one_truth(YearOfRounds(shape, **kw), shape, L, n, seed, n_boot)
            out["seconds"] = round(time.time() - start, 1)
            print(key, json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv)
