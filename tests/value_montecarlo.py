"""Monte Carlo of ``pyprog.forecast_value`` against OPFV on timestamped contextual logs.

Each shape of :mod:`contextual_year` (seasonal blocks, day of week, both, a yearly
sinusoid, a trend, a step at 0.6 of the year, a step at half the year, stationary) gives
``L`` logs of ``n`` rounds over one year, each with 8 targets drawn uniformly 1-360 days
after the log's last round. On every log:

* pyprog: ``forecast_value`` with its defaults (90 % intervals);
* OPFV with φ chosen from the data (:func:`pyprog.offpolicy.opfv_select`, blocks of the
  year 1, 2, 4, ..., 64, Lepski's rule);
* OPFV with the true φ, for the block-shaped truths (8 blocks of the year, the day of the
  week, or their product);
* stationary DR: the mean of the per-round DR estimates (the paper's "stationary DR").

Per shape it reports each method's MSE over (log, target), the paired comparison of
pyprog's per-log mean squared error with OPFV's (mean difference, its s.e. over logs and
z; a one-sided z-test), pyprog's coverage and median width, and refusals.

Run ``python tests/value_montecarlo.py L n seed [out.json]``; the slow test
``tests/test_value_mc.py`` runs it and checks the claims.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from contextual_year import YEAR, YearOfRounds

from pyprog.offpolicy import opfv, opfv_select, round_estimates
from pyprog.timeseries import Crossed, DayOfWeek, PeriodBlocks
from pyprog.timeseries.errors import ForecastError
from pyprog.value.forecast import forecast_value

SHAPES = (
    ("blocks", {}),
    ("weekday", {}),
    ("blocks_weekday", {}),
    ("sinusoid", {}),
    ("trend", {}),
    ("step", {"step_at": 0.6}),
    ("step", {"step_at": 0.5}),
    ("stationary", {}),
)
TRUE_PHI = {
    "blocks": PeriodBlocks(YEAR, 8),
    "weekday": DayOfWeek(),
    "blocks_weekday": Crossed(PeriodBlocks(YEAR, 8), DayOfWeek()),
}
N_TARGETS = 8


def shape_key(shape: str, kw: dict) -> str:
    return f"step@{kw['step_at']:g}" if shape == "step" else shape


def log_of(gen: YearOfRounds, n: int, seed: int, horizons=None) -> tuple[dict, dict, np.ndarray]:
    """One seeded log: the generator's draw, its rounds as ``forecast_value``'s columns, and
    the targets ``horizons`` days after its last round (default 8 drawn in 1-360)."""
    rng = np.random.default_rng(seed)
    d = gen.sample(n, rng)
    ahead = rng.uniform(1.0, 360.0, N_TARGETS) if horizons is None else np.asarray(horizons)
    frame = {"time": d["times"], "action": d["action"], "reward": d["reward"],
             "pscore": d["pscore"]}  # fmt: skip
    for j in range(d["context"].shape[1]):
        frame[f"x{j}"] = d["context"][:, j]
    return d, frame, d["times"].max() + ahead


#: The forecasts of the cascade issue 47 replaced, on the same logs (seed 0, logs 0-9 at
#: 1,000 and 10,000 rounds): ``tests/data/cascade_mc.json``.
CASCADE = Path(__file__).parent / "data" / "cascade_mc.json"


def cascade_of(key: str, n: int, seed: int) -> dict:
    """The cascade's value, low and high on this log when they were recorded, else {}."""
    if not hasattr(cascade_of, "logs"):
        cascade_of.logs = json.loads(CASCADE.read_text())["logs"] if CASCADE.exists() else {}
    rows = cascade_of.logs.get(f"{key}|{n}|{seed}")
    if rows is None:
        return {}
    value, low, high = (list(col) for col in zip(*rows, strict=True))
    return {"cascade": value, "cascade_low": low, "cascade_high": high}


def one_log(
    gen: YearOfRounds, shape: str, n: int, seed: int, horizons=None, baselines: bool = True
) -> dict:
    """One log and its targets: ``horizons`` days after its last round (default 8 drawn
    uniformly in 1-360); ``baselines=False`` skips OPFV and DR (pyprog's forecasts only).
    The cascade's recorded forecasts are attached when the log has them."""
    d, frame, targets = log_of(gen, n, seed, horizons)
    out = {"truth": gen.value(targets).tolist()}
    if horizons is None:
        out.update(cascade_of(shape_key(shape, {"step_at": gen.step_at}), n, seed))
    try:
        res = forecast_value(frame, d["action_dist"], at=list(targets), random_state=seed)
        out["value"] = [r.value for r in res]
        out["low"] = [r.low for r in res]
        out["high"] = [r.high for r in res]
        out["model"] = [r.model for r in res]
        out["estimator"] = res[0].estimator
    except ForecastError as exc:
        out["refused"] = str(exc)
    if baselines:
        out.update(baselines_of(gen, shape, d, targets, seed))
    return out


def baselines_of(gen: YearOfRounds, shape: str, d: dict, targets, seed: int) -> dict:
    """OPFV with φ from the data, OPFV with the true φ (block-shaped truths), and
    stationary DR (the mean of the per-round estimates, at every target) on one log."""
    args = [d[k] for k in ("context", "times", "action", "reward", "pscore")]
    sel = opfv_select(*args, gen.evaluation, targets, n_actions=gen.n_actions, random_state=seed)
    out = {"opfv": sel.value.tolist()}
    if shape in TRUE_PHI:
        true = opfv(*args, gen.evaluation, targets, time_feature=TRUE_PHI[shape],
                    n_actions=gen.n_actions, random_state=seed)  # fmt: skip
        out["opfv_true"] = true.value.tolist()
    dr = round_estimates(*args, d["action_dist"], estimator="dr", random_state=seed)
    out["dr"] = [dr.value] * len(targets)
    return out


def per_log_mse(logs: list[dict], name: str) -> np.ndarray:
    """Each log's mean squared error of method ``name`` over its targets: shape (logs,)."""
    truth = np.array([g["truth"] for g in logs])
    return ((np.array([g[name] for g in logs]) - truth) ** 2).mean(axis=1)


def paired(mine: np.ndarray, other: np.ndarray) -> dict:
    """The paired comparison of two methods' per-log MSE: mean difference, its s.e. over
    logs, z (one-sided test; 0 when the s.e. is 0) and the ratio of the mean MSEs."""
    diff = mine - other
    se = float(diff.std(ddof=1) / np.sqrt(len(diff)))
    z = float(diff.mean() / se) if se > 0 else 0.0
    ratio = float(mine.mean() / other.mean())
    return {"diff": float(diff.mean()), "se": se, "z": z, "ratio": ratio}


def coverage_summary(kept: list[dict]) -> tuple[np.ndarray, dict]:
    """Which targets the intervals cover, (logs, targets), and the coverage, its s.e. over
    logs (independent; a log's targets are not) and the median width, of logs not refused."""
    truth = np.array([g["truth"] for g in kept])
    low, high = np.array([g["low"] for g in kept]), np.array([g["high"] for g in kept])
    covered = (low <= truth) & (truth <= high)
    return covered, {
        "coverage": float(covered.mean()),
        "coverage_se": float(covered.mean(axis=1).std(ddof=1) / np.sqrt(len(kept))),
        "median_width": float(np.median(high - low)),
    }


def check_claim(misses: set, claim: str, truth: str, ok: bool, message: str) -> None:
    """Assert a Monte Carlo claim; a (claim, truth) in ``misses`` is a strict xfail (it
    fails as XPASS once it holds), so a test's measured misses show when fixed."""
    import pytest

    if (claim, truth) in misses:
        if ok:
            pytest.fail(f"XPASS(strict): {claim} now holds for {truth}: {message}")
        pytest.xfail(f"{claim} does not hold for {truth}: {message}")
    assert ok, message


def main(run, table, argv: list[str]) -> None:
    """``script L n [seed [out.json]]``: run, print the table, write the JSON."""
    L, n = int(argv[1]), int(argv[2])
    seed = int(argv[3]) if len(argv) > 3 else 0
    res = run(L, n, seed)
    print(table(res))
    if len(argv) > 4:
        Path(argv[4]).write_text(json.dumps(res, indent=1))


def summarise(logs: list[dict]) -> dict:
    """Per-method MSE, pyprog's paired comparisons, coverage, width and refusals."""
    kept = [g for g in logs if "refused" not in g]
    L = len(kept)
    names = ("value", "opfv", "opfv_true", "dr")
    per_log = {name: per_log_mse(kept, name) for name in names if kept and name in kept[0]}
    out = {"logs": len(logs), "refused": len(logs) - L,
           "mse": {k: float(v.mean()) for k, v in per_log.items()},
           "mse_se": {k: float(v.std(ddof=1) / np.sqrt(L)) if L > 1 else float("nan")
                      for k, v in per_log.items()}}  # fmt: skip
    for other in ("opfv", "opfv_true", "dr"):
        if other in per_log and L > 1:
            out[f"vs_{other}"] = paired(per_log["value"], per_log[other])
    old = [g for g in kept if "cascade" in g]  # the logs the cascade was recorded on
    if len(old) > 1:
        mine, theirs = per_log_mse(old, "value"), per_log_mse(old, "cascade")
        out["cascade"] = {"logs": len(old), "mse": float(theirs.mean()),
                          "value_mse": float(mine.mean()), "vs": paired(mine, theirs)}  # fmt: skip
    if L:
        out.update(coverage_summary(kept)[1])
        if len(old) > 1:
            theirs = [{"truth": g["truth"], "low": g["cascade_low"], "high": g["cascade_high"]}
                      for g in old]  # fmt: skip
            out["cascade"]["coverage"] = coverage_summary(theirs)[1]["coverage"]
            out["cascade"]["value_coverage"] = coverage_summary(old)[1]["coverage"]
        models = {}
        for g in kept:
            models[g["model"][0]] = models.get(g["model"][0], 0) + 1
        out["models_first_target"] = dict(sorted(models.items(), key=lambda kv: -kv[1])[:4])
    return out


def run(L: int, n: int, seed: int = 0, shapes=SHAPES, progress: bool = True) -> dict:
    from threadpoolctl import threadpool_limits

    result = {"L": L, "n": n, "seed": seed, "shapes": {}}
    with threadpool_limits(1):
        for shape, kw in shapes:
            gen = YearOfRounds(shape, **kw)
            start = time.time()
            logs = [one_log(gen, shape, n, 100_000 * seed + 1_000 * i + 7) for i in range(L)]
            summary = summarise(logs)
            summary["seconds"] = round(time.time() - start, 1)
            result["shapes"][shape_key(shape, kw)] = summary
            if progress:
                print(shape_key(shape, kw), json.dumps(summary), flush=True)
    return result


def table(result: dict) -> str:
    """The README's table: one row per shape."""
    rows = ["| truth | pyprog MSE | OPFV (φ from data) | OPFV (true φ) | stationary DR | "
            "pyprog − OPFV, z | coverage (90 %) | refused |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for key, s in result["shapes"].items():
        m = s["mse"]
        true = f"{m['opfv_true']:.4f}" if "opfv_true" in m else "-"
        z = s["vs_opfv"]["z"]
        rows.append(
            f"| {key} | {m['value']:.4f} | {m['opfv']:.4f} | {true} | {m['dr']:.4f} | "
            f"{z:+.1f} | {s['coverage']:.2f} ± {s['coverage_se']:.2f} | {s['refused']} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    main(run, table, sys.argv)
