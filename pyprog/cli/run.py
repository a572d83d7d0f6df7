"""``pyprog run``: learners on environments over speeds and seeds, and the regret table.

Every (env, algo, speed, seed) runs with the paper's settings or ``--hyper`` (a JSON file,
read by :func:`load_hyper`); finished runs are committed to the result store
``OUT/runs.sqlite`` as they end, and ``OUT/results.csv`` and ``OUT/regret.csv`` are exported
from it.
"""

from __future__ import annotations

import argparse

from pyprog.cli.common import (
    add_dtype_argument,
    add_grid_arguments,
    check_counts,
    format_table,
    parse_envs,
    parse_speeds,
    progress_bar,
    say_if_compiling,
)

__all__ = ["add_parser", "cmd"]


def load_hyper(text: str | None):
    """--hyper: None, "paper", or the contents of a JSON file (a ValueError naming it)."""
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
    from pyprog.stats.tables import regret_table

    if args.horizon is not None and args.horizon < 1:
        raise ValueError(f"--horizon must be >= 1 (most steps per episode); got {args.horizon}")
    envs = parse_envs(args.env, args.horizon)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = parse_speeds(args.speed, "--speed")
    seeds = grid.parse_seeds(args.seeds)
    check_counts(args)
    say_if_compiling(envs)
    runs = grid.run_grid(
        envs,
        algos,
        speeds,
        seeds,
        args.out,
        episodes=args.episodes,
        hyper=load_hyper(args.hyper),
        jobs=args.jobs,
        progress=None if args.quiet else progress_bar("pyprog run"),
        horizon=args.horizon,
        dtype=args.dtype,
    )
    table = regret_table(runs)
    print(format_table(table))
    regret_csv = grid.write_regret_table(table, args.out)
    print(
        f"results: {args.out}/results.csv ({len(runs)} runs; returns in {args.out}/"
        f"{grid.STORE_NAME}), table: {regret_csv}"
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    run = sub.add_parser(
        "run",
        help="run learners on environments over speeds and seeds; print the regret table",
        description="Run every (env, algo, speed, seed) with the paper's settings (or --hyper), "
        "on all cores. Finished runs are committed to the result store OUT/runs.sqlite as they "
        "end, and OUT/results.csv and OUT/regret.csv are exported from it; re-running the same "
        "command resumes (only the runs not in the store are computed).",
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
        "--horizon",
        type=int,
        default=None,
        help="most steps per episode, for environments that declare no episode length (no "
        "max_episode_steps, TimeLimit or horizon attribute); part of each run's store key "
        "(default: the environment's own length)",
    )
    add_dtype_argument(
        run, "softmax policies only, faster on NS-Reacher; part of each run's store key"
    )
    run.add_argument(
        "--out", required=True, help="output folder (created with its parents if missing)"
    )
    run.set_defaults(func=cmd)
