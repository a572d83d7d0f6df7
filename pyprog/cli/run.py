"""``pyprog run``: learners on environments over speeds and seeds, and the regret table.

Every (env, algo, speed, seed) runs with the paper's settings or ``--hyper`` (a JSON file,
read by :func:`_load_hyper`); finished runs are appended to ``OUT/results.csv``.
"""

from __future__ import annotations

import argparse

from pyprog.cli.common import add_grid_arguments

# The body of cmd is kept as it was in cli/main.py's _cmd_run (other work edits it);
# the shared helpers are therefore imported under their former private names.
from pyprog.cli.common import check_counts as _check_counts
from pyprog.cli.common import format_table as _format_table
from pyprog.cli.common import parse_envs as _parse_envs
from pyprog.cli.common import parse_speeds as _parse_speeds
from pyprog.cli.common import progress_bar as _progress_bar
from pyprog.cli.common import say_if_compiling as _say_if_compiling

__all__ = ["add_parser", "cmd"]


def _load_hyper(text: str | None):
    if text is None or text == "paper":
        return text
    import json

    try:
        with open(text) as fh:
            return json.load(fh)
    except OSError as exc:
        raise ValueError(f"--hyper must be 'paper' or a JSON file: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--hyper {text!r} is not valid JSON: {exc}") from None


def cmd(args: argparse.Namespace) -> int:
    from pyprog.experiments import grid
    from pyprog.learn.hyperparams import check_algo

    envs = _parse_envs(args.env)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = _parse_speeds(args.speed, "--speed")
    seeds = grid.parse_seeds(args.seeds)
    _check_counts(args)
    _say_if_compiling(envs)
    rows = grid.run_grid(
        envs,
        algos,
        speeds,
        seeds,
        args.out,
        episodes=args.episodes,
        hyper=_load_hyper(args.hyper),
        jobs=args.jobs,
        progress=None if args.quiet else _progress_bar("pyprog run"),
    )
    table = grid.regret_table(rows, args.out)
    print(_format_table(table))
    regret_csv = grid.write_regret_table(table, args.out)
    print(f"results: {args.out}/results.csv ({len(rows)} runs), table: {regret_csv}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    run = sub.add_parser(
        "run",
        help="run learners on environments over speeds and seeds; print the regret table",
        description="Run every (env, algo, speed, seed) with the paper's settings (or --hyper), "
        "on all cores. Finished runs are appended to OUT/results.csv as they end; re-running "
        "the same command resumes.",
    )
    add_grid_arguments(run, "--speed")
    run.add_argument(
        "--hyper",
        default=None,
        help="a JSON file: one setting, or a table {env: {algo: {speed: setting}}} as "
        "`pyprog best --json` writes; 'paper' for the authors' settings (built-in envs, speeds "
        "0-4). Default: the paper's settings on built-in envs, pyprog's default setting "
        "elsewhere, of which a one-setting file may change single keys",
    )
    run.add_argument(
        "--out", required=True, help="output folder (created with its parents if missing)"
    )
    run.set_defaults(func=cmd)
