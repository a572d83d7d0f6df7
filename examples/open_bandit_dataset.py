"""
The Open Bandit Dataset: a uniform random policy's click rate, estimated from Thompson sampling
===============================================================================================

Real logged data that nobody here wrote: ZOZOTOWN's fashion recommendations in the last week
of November 2019 (Saito et al., "Open Bandit Dataset and Pipeline: Towards Realistic and
Reproducible Off-Policy Evaluation", NeurIPS Datasets and Benchmarks 2021, arXiv:2008.07146).
Two policies ran side by side on campaign "all" (80 items, 3 positions): a uniform random
policy and Bernoulli Thompson sampling (BTS), each logging the item it showed, the click and
its probability of showing it. We estimate the random policy's click rate from the BTS log
alone, by importance sampling, day by day (UTC days), forecast the last day from the first
six with :func:`pyprog.forecast_logs`, and compare with the random policy's own log, which
measures its click rate directly (on-policy).

The data: the 10,000-row samples inside Open Bandit Pipeline's source distribution (not
shipped with pyprog). Fetch them without installing obp (its pins fail on current Python)::

    pip download --no-deps --no-binary :all: --ignore-requires-python obp==0.5.7 -d obp-sdist
    tar xzf obp-sdist/obp-0.5.7.tar.gz -C obp-sdist
    export PYPROG_OBD_PATH=$PWD/obp-sdist/obp-0.5.7/obp/dataset/obd

Run::

    python examples/open_bandit_dataset.py            # reads $PYPROG_OBD_PATH, about 10 s
    python examples/open_bandit_dataset.py PATH --out obd.png

Each row is one item shown at one of 3 positions; the random policy shows each item at each
position with probability 1/80, so π(row) = 1/80 and the importance weight of a BTS row is
(1/80) / ``propensity_score``. ``position="all"`` takes every row as a unit: the estimate is
the mean click rate per item shown (OBP's IPW does the same). The numbers and what they can
and cannot show are in the guide ``docs/guides/open-bandit-dataset.md``.

The data is not on the documentation's build machine, so the build does not run this
example; the figure is the one committed beside it (``--out``):

.. image:: ../../examples/open_bandit_dataset.png
   :alt: daily click rate of the random policy, estimated from the BTS log and measured
"""

# sphinx_gallery_thumbnail_path = '../examples/open_bandit_dataset.png'

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import pyprog
from pyprog.logs.episodes import Logs
from pyprog.logs.readers import read_obd_csv

UNIFORM = 1 / 80  # the random policy's probability of any item at any position, campaign "all"
Z = 1.959963984540054  # 95 % normal quantile


def daily(logs: Logs) -> list[dict]:
    """Per UTC day: rows, clicks, the IS estimate of π's click rate and its 95 % interval."""
    days = logs.timestamps.astype("datetime64[D]")
    weights = np.exp(logs.log_pi[:, 0] - logs.log_beta[:, 0])
    values = weights * logs.rewards[:, 0]
    out = []
    for day in np.unique(days):
        v = values[days == day]
        se = v.std(ddof=1) / np.sqrt(len(v))
        out.append(
            {
                "day": str(day),
                "rows": len(v),
                "clicks": int(logs.rewards[days == day, 0].sum()),
                "rate": v.mean(),
                "low": v.mean() - Z * se,
                "high": v.mean() + Z * se,
            }
        )
    return out


def analyse(obd: str | os.PathLike, *, n_boot: int = 2000) -> dict:
    """Read both logs, estimate day by day, forecast day 7 from days 1-6 (see the docstring)."""
    obd = Path(obd)
    bts = read_obd_csv(obd / "bts" / "all" / "all.csv", evaluation_pscore=UNIFORM, position="all")
    rnd = read_obd_csv(
        obd / "random" / "all" / "all.csv", evaluation_pscore=UNIFORM, position="all"
    )
    days = bts.timestamps.astype("datetime64[D]")
    last = days.max()
    first6 = days < last
    past = Logs.from_arrays(
        bts.rewards[first6, 0],
        bts.log_pi[first6, 0],
        bts.log_beta[first6, 0],
        timestamp=bts.timestamps[first6],
        source="BTS log, days 1-6",
    )
    delta = int((days == last).sum())  # forecast the mean over the last day's rows
    # 95 % intervals, as the daily estimates beside them (a forecast's default is 90 %)
    forecasts = {
        basis: pyprog.forecast_logs(
            past, delta=delta, basis=basis, alpha=0.05, n_boot=n_boot, random_state=0
        )
        for basis in ("auto", "linear")
    }
    return {
        "bts": daily(bts),
        "random": daily(rnd),
        "week_bts": daily_all(bts),
        "week_random": daily_all(rnd),
        "forecasts": forecasts,
        "delta": delta,
    }


def daily_all(logs: Logs) -> dict:
    """The whole week's estimate, as one 'day'."""
    whole = Logs.from_arrays(
        logs.rewards[:, 0],
        logs.log_pi[:, 0],
        logs.log_beta[:, 0],
        timestamp=np.zeros(logs.episodes, dtype="datetime64[ns]"),
    )
    row = daily(whole)[0]
    row["day"] = "week"
    return row


def report(result: dict) -> str:
    pct = 100.0
    lines = [
        "click rate of the uniform random policy, % (95 % intervals)",
        f"{'day (UTC)':<12}{'from BTS (IS)':>26}{'random, on-policy':>26}",
    ]
    rows = list(zip(result["bts"], result["random"], strict=True))
    rows.append((result["week_bts"], result["week_random"]))
    for b, r in rows:
        cell = [
            f"{pct * x['rate']:.3f} [{pct * x['low']:.3f}, {pct * x['high']:.3f}] ({x['clicks']})"
            for x in (b, r)
        ]
        lines.append(f"{b['day']:<12}{cell[0]:>26}{cell[1]:>26}")
    lines.append("(clicks in brackets)")
    for basis, f in result["forecasts"].items():
        nis = f.nis
        if isinstance(nis, Exception):
            lines.append(f"forecast of the last day, basis={basis}: none ({nis})")
        else:
            lines.append(
                f"forecast of the last day from days 1-6 (NIS, basis={basis}, model "
                f"{nis.model}): {pct * nis.value:.3f} % [{pct * nis.low:.3f}, {pct * nis.high:.3f}]"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("path", nargs="?", default=os.environ.get("PYPROG_OBD_PATH"))
    parser.add_argument("--out", help="save a figure of the daily estimates here")
    args = parser.parse_args(argv)
    if not args.path:
        sys.exit("give the obd folder (obp-0.5.7/obp/dataset/obd) or set PYPROG_OBD_PATH")
    result = analyse(args.path)
    print(report(result))
    if args.out:
        plot(result, args.out)
    return result


def plot(result: dict, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(len(result["bts"]))
    for shift, key, label in ((-0.1, "bts", "from BTS (IS)"), (0.1, "random", "random, on-policy")):
        rows = result[key]
        rate = np.array([r["rate"] for r in rows]) * 100
        err = np.array([[r["rate"] - r["low"], r["high"] - r["rate"]] for r in rows]).T * 100
        ax.errorbar(x + shift, rate, yerr=err, fmt="o", capsize=3, label=label)
    nis = result["forecasts"]["linear"].nis
    if not isinstance(nis, Exception):
        ax.errorbar(
            x[-1] + 0.3,
            nis.value * 100,
            yerr=[[100 * (nis.value - nis.low)], [100 * (nis.high - nis.value)]],
            fmt="s",
            capsize=3,
            label="forecast from days 1-6 (linear)",
        )
    ax.set_xticks(x, [r["day"][5:] for r in result["bts"]])
    ax.set_ylabel("click rate, %")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
