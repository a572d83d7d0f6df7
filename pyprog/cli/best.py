"""``pyprog best``: the best stored setting per (env, algo, speed), as a table and JSON.

The JSON is what ``pyprog run --hyper`` and ``pyprog.run(..., hyper=...)`` accept.
"""

from __future__ import annotations

import argparse
import sys

from pyprog.cli.common import refuse_overwrite, speed_label

__all__ = ["add_parser", "cmd", "setting_text"]

#: The keys of a setting that ``pyprog sweep`` draws (then the policy's), in this order.
SHOWN = ("lr", "delta", "inner_steps", "entropy_lambda", "clip", "basis", "d", "hidden")


def setting_text(hyper: dict) -> str:
    """The keys a sweep varies, as ``lr=0.0031, delta=3, ...`` (the JSON has every key).

    Examples
    --------
    >>> setting_text({"lr": 0.003123, "delta": 3, "basis": "fourier", "d": 5, "hidden": None})
    'lr=0.003123, delta=3, basis=fourier, d=5'
    """
    shown = [(k, hyper[k]) for k in SHOWN if hyper.get(k) is not None]
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown)


def cmd(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from pyprog.experiments import sweep

    refuse_overwrite({"--store": args.store}, {"--json": None if args.json == "-" else args.json})
    table, rows = sweep.best_settings(args.store, sweep=args.name)
    text = json.dumps(table, indent=1, sort_keys=True) + "\n"
    if args.json not in (None, "-"):
        path = Path(args.json)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as exc:
            raise ValueError(f"cannot write --json {args.json}: {exc.strerror or exc}") from None
    # stdout carries one thing: the table, or the JSON with --json - (the table to stderr)
    table_to = sys.stderr if args.json == "-" else sys.stdout
    for r in rows:
        left_out = f"; {r['left_out']} left out: other seeds or episodes" if r["left_out"] else ""
        print(
            f"{r['env']:<9} {r['algo']:<8} {speed_label(r['speed'])}: {r['metric']} "
            f"{r['mean']:.4g} ± {r['se']:.2g} ({r['seeds']} seeds × {r['episodes']} episodes, "
            f"best of {r['settings']} settings{left_out})",
            file=table_to,
        )
        print(f"  won: setting {r['setting_hash'][:10]}: {setting_text(r['hyper'])}", file=table_to)
    if args.json == "-":
        sys.stdout.write(text)
    elif args.json is not None:
        print(f"best settings written to {args.json}", file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    best = sub.add_parser(
        "best",
        help="the best setting per (env, algo, speed) in a store, as a table and JSON",
        description="Compare the stored settings per (env, algo, speed) on equal footing (runs "
        "of the same length on the same seeds) and print the best one's (surrogate) regret, "
        "mean ± standard error over seeds. stdout carries one thing: the table, or, with "
        "--json -, the JSON (the table then goes to stderr). The JSON is what `pyprog run "
        "--hyper` and pyprog.run(..., hyper=...) accept.",
    )
    best.add_argument("--store", required=True, help="SQLite result store (must exist)")
    best.add_argument(
        "--name", default=None, help="only the runs of this sweep tag (default: every run)"
    )
    best.add_argument("--sweep", dest="name", default=None, help=argparse.SUPPRESS)  # old name
    best.add_argument(
        "--json",
        default=None,
        help="write the settings table to this file (parent folders created), or - for "
        "stdout (default: no JSON)",
    )
    best.set_defaults(func=cmd)
