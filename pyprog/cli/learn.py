"""``pyprog learn``: the policy to run at a future date, learned from timestamped rounds.

Parses the command line and calls :func:`pyprog.value.learning.learn_for_future`, the
function a Python user calls; prints the learned policy's forecast value at the target with
its interval, the baselines' forecasts and the safety verdict, and writes the policy to
``--out`` (JSON: :meth:`pyprog.FuturePolicy.load` reads it).
"""

from __future__ import annotations

import argparse
import os

from pyprog.cli.common import check_input, refuse_overwrite
from pyprog.cli.forecast import (
    _check_output,
    _context,
    _in_lines,
    _one_line_warnings,
    _read_rounds,
    _split,
    _target,
    _write_json,
    add_round_columns,
    add_time_options,
)

__all__ = ["OPTION_NAMES", "add_parser", "cmd"]

#: learn_for_future's parameters → this command's options (errors name the latter).
OPTION_NAMES = (
    {
        "at": "--at",
        "over": "--over",
        "learner": "--learner",
        "baselines": "--baselines",
        "alpha": "--alpha",
        "test_alpha": "--test-alpha",
        "entropy": "--entropy",
        "hidden": "--hidden",
        "random_state": "--seed",
        "max_horizon": "--max-horizon",
        "bin_width": "--bin-width",
        "n_actions": "--n-actions",
        "context": "--context",
    },
    ("learn_for_future", "forecast_value"),
    {
        "None, an integer >= 0 or a numpy.random.Generator": "an integer >= 0",
        "width must be a finite number of days": "--bin-width must be a finite number of days",
    },
)


def _baselines(text: str | None) -> tuple[str, ...]:
    """``--baselines regression,dr-pg`` (or ``none``) as names; None: the library's default."""
    if text is None:
        from pyprog.value.learning import DEFAULT_BASELINES

        return DEFAULT_BASELINES
    return () if text.strip().lower() == "none" else tuple(_split(text))


def _check(args: argparse.Namespace) -> None:
    if (args.at is None) == (args.over is None):
        raise ValueError("give exactly one of --at DATE and --over START END")
    if not os.path.isdir(args.logs):  # a Parquet folder is read as one log
        check_input("LOGS", args.logs)
    refuse_overwrite({"LOGS": args.logs}, {"--out": args.out, "--json": args.json})
    _check_output("--out", args.out)
    _check_output("--json", args.json)


def cmd(args: argparse.Namespace) -> int:
    _check(args)
    from pyprog.value.learning import learn_for_future  # after the checks: errors at once

    columns, lines = _read_rounds(args)
    at = None if args.at is None else _target(args.at, args.compact_dates)
    over = None if args.over is None else tuple(_target(t, args.compact_dates) for t in args.over)
    try:
        result = _one_line_warnings(
            learn_for_future, columns, _command="learn", at=at, over=over, time=args.time,
            context=_context(args.context),
            action=args.action, reward=args.reward, pscore=args.pscore,
            n_actions=args.n_actions, learner=args.learner, baselines=_baselines(args.baselines),
            hidden=args.hidden, entropy=args.entropy, alpha=args.alpha,
            test_alpha=args.test_alpha,
            bin_width=args.bin_width, max_horizon=args.max_horizon, random_state=args.seed,
        )  # fmt: skip
    except ValueError as exc:  # ForecastError too
        raise type(exc)(_in_lines(str(exc), args.logs, lines)) from None
    f = result.forecast
    target = args.at or " to ".join(args.over)
    print(f"{args.logs}: {f.n_rounds} rounds in {f.n_bins} days; the policy for {target} "
          f"({f.horizon:.4g} days after the log's end)")  # fmt: skip
    print(result)
    if args.out:
        try:
            result.policy.save(args.out)
        except OSError as exc:
            raise ValueError(f"cannot write --out {args.out}: {exc.strerror or exc}") from None
        caution = "" if result.deploy else " (the verdict is to keep the logging policy)"
        print(f"policy ({result.learner}) written to {args.out}{caution}")
    if args.json:
        _write_json(args.json, _summary(result))
    return 0


def _summary(result) -> dict:
    """``--json``: every learner's forecast, the advantage and the verdict."""
    adv = result.advantage
    return {
        "learner": result.learner,
        "forecast": result.forecast.as_dict(),
        "advantage": {"value": adv.value, "low": adv.low, "alpha": adv.alpha},
        "deploy": result.deploy,
        "verdict": result.verdict,
        "baselines": {name: f.as_dict() for name, (_, f) in result.baselines.items()},
    }


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    p = sub.add_parser(
        "learn",
        help="learn the policy to run at a future date from timestamped rounds, and test it",
        description="Read LOGS (a CSV file, or a Parquet file or folder; one row per round: "
        "time, context x0, x1, ..., action, reward, pscore), learn the policy whose forecast "
        "value --at a date (or --over a window) is highest (pyprog.learn_for_future), "
        "forecast it on rounds it was not learned on, compare the baselines, and say "
        "whether to deploy it (the advantage's lower bound above 0) or keep the logging "
        "policy.",
    )
    p.add_argument("logs", help="CSV file, or Parquet file or folder, of logged rounds")
    p.add_argument("--time", required=True, metavar="COL", help="the time column")
    p.add_argument("--at", default=None, metavar="DATE", help="the target date (or day number)")
    p.add_argument("--over", nargs=2, default=None, metavar=("START", "END"), help="window")
    p.add_argument("--out", default=None, help="write the learned policy to this JSON file")
    p.add_argument("--json", default=None, help="write the numbers to this JSON file")
    p.add_argument(
        "--learner", default="prognosticator",
        help="the learner (default prognosticator; also regression, ips-pg, dr-pg, opfv-pg, "
        "opfv-pg-select)",
    )  # fmt: skip
    p.add_argument(
        "--baselines", default=None,
        help="comma-separated learners to compare, or none (default "
        "regression,ips-pg,dr-pg,opfv-pg,opfv-pg-select)",
    )  # fmt: skip
    add_round_columns(p)
    p.add_argument(
        "--n-actions", type=int, default=None, help="actions (default: the largest logged + 1)"
    )
    p.add_argument(
        "--entropy", type=float, default=0.01,
        help="entropy bonus, in units of the rewards' sd (default 0.01)",
    )  # fmt: skip
    p.add_argument(
        "--hidden", type=int, default=0, metavar="UNITS",
        help="hidden tanh units of the learned policy (default 0: a linear softmax)",
    )  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.1, help="1 - the intervals' level (0.1)")
    p.add_argument(
        "--test-alpha", type=float, default=0.05, help="the safety test's size (default 0.05)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the folds (default 0)")
    add_time_options(p)
    p.set_defaults(func=cmd, option_names=OPTION_NAMES)
