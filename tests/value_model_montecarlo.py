"""Monte Carlo of the shrinkage model (:class:`pyprog.value.ValueModel`) on the year of rounds.

The same logs, targets and baselines as ``tests/value_montecarlo.py`` (seeds
``100_000 seed + 1_000 i + 7``): the per-round estimates today's ``forecast_value``
chose on the same log (its ``estimator`` label: DR or IS, the direct term pooled or
not, q̂ with or without time inputs), so that both fit the same bins; one-day bins,
:func:`pyprog.value.bin_noise`, :class:`pyprog.value.ValueModel` with its defaults, 90 %
prediction intervals at the 8 targets; and on the same logs today's ``forecast_value``
(the cascade of choice, gates and widenings) with its defaults. Per truth: the model's
MSE, the cascade's, OPFV's (φ from the data) and stationary DR's, the paired z of the
model's per-log MSE against OPFV's and the cascade's, the coverage of both (s.e. over
logs), the model's median width and the estimators the cascade chose.

Run ``python tests/value_model_montecarlo.py L n seed [truth,... | all [n_boot [form]]]``
(``n_boot``: the single model's bootstrap worlds, default 200; ``form``: "average",
the default, or "single"); the guide
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

from pyprog.forecast.value import UNTIMED, forecast_value
from pyprog.offpolicy import bin_estimates, round_estimates
from pyprog.offpolicy.time_candidates import default_reward_time_model
from pyprog.value import ModelAverage, ValueModel, bin_noise


def estimates_of(d: dict, label: str, seed: int):
    """The per-round estimates ``forecast_value`` labelled ``label`` on this log."""
    kind = label.split(" ")[0].split("-")[0]
    timed = kind in ("dr", "dm") and UNTIMED not in label
    phi = default_reward_time_model(d["times"].min(), d["times"].max()) if timed else None
    args = [d[k] for k in ("context", "times", "action", "reward", "pscore")]
    return round_estimates(
        *args, d["action_dist"], estimator=kind, time_feature=phi,
        pool_contexts="-pooled" in label, random_state=seed,
    )  # fmt: skip


def model_forecast(d: dict, targets: np.ndarray, seed: int, n_boot: int, label: str, form: str):
    """The shrinkage model's forecasts and 90 % prediction intervals at ``targets``.

    ``form``: "average" (:class:`pyprog.value.ModelAverage`) or "single"
    (:class:`pyprog.value.ValueModel`); both with the pooled direct term's sampling
    variance var(context part)/n as the error every bin shares.
    """
    est = estimates_of(d, label, seed)
    binned = bin_estimates(est.values, d["times"])
    noise = bin_noise(est.values, d["times"], binned)
    shared = 0.0 if est.context_part is None else float(np.var(est.context_part) / est.values.size)
    goals = [("at", float(t)) for t in targets]
    if form == "average":
        return ModelAverage(binned, noise, shared_var=shared).predict(goals, alpha=0.1)
    model = ValueModel(binned, noise, n_boot=n_boot, random_state=seed)
    return model.predict(goals, alpha=0.1, shared_var=shared)


def one_truth(gen: YearOfRounds, shape: str, L: int, n: int, seed: int, n_boot: int, form: str):
    mse, opfv, dr, covered, width, cascade, cascade_cov = [], [], [], [], [], [], []
    labels = []
    for i in range(L):
        s = 100_000 * seed + 1_000 * i + 7
        d, frame, targets = log_of(gen, n, s)
        truth = gen.value(targets)
        old = forecast_value(frame, d["action_dist"], at=list(targets), random_state=s)
        labels.append(old[0].estimator)
        mean, low, high = model_forecast(d, targets, s, n_boot, old[0].estimator, form)
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
        "estimators": {k: labels.count(k) for k in sorted(set(labels))},
    }  # fmt: skip


def main(argv: list[str]) -> None:
    from threadpoolctl import threadpool_limits

    L, n, seed = int(argv[1]), int(argv[2]), int(argv[3])
    only = argv[4].split(",") if len(argv) > 4 and argv[4] != "all" else None
    n_boot = int(argv[5]) if len(argv) > 5 else 200
    form = argv[6] if len(argv) > 6 else "average"
    with threadpool_limits(1):
        for shape, kw in SHAPES:
            key = shape_key(shape, kw)
            if only is not None and key not in only:
                continue
            start = time.time()
            out = one_truth(YearOfRounds(shape, **kw), shape, L, n, seed, n_boot, form)
            out["seconds"] = round(time.time() - start, 1)
            print(key, json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv)
