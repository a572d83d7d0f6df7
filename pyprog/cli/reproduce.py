"""``pyprog reproduce``: the paper's empirical section (:func:`pyprog.paper.reproduce.reproduce`).

Prints each claim's verdict; figures, tables and ``summary.md`` go to ``--out``.
"""

from __future__ import annotations

import argparse
import sys

from pyprog.cli.common import (
    add_dtype_argument,
    check_counts,
    progress_bar,
    refuse_overwrite,
    say_if_compiling,
)
from pyprog.envs.registry import ENVS

__all__ = ["add_parser", "cmd"]


def cmd(args: argparse.Namespace) -> int:
    import os

    from pyprog import paper
    from pyprog.experiments import grid
    from pyprog.learn.hyperparams import check_env
    from pyprog.paper.reproduce import reproduce

    # the store --store names is only read: this reproduction's runs go to OUT/runs.sqlite
    refuse_overwrite({"--store": args.store}, {"--out": os.path.join(args.out, grid.STORE_NAME)})
    envs = grid.parse_list(args.env, "--env", check_env)
    check_counts(args)
    plan = paper.QUICK if args.quick else paper.FULL
    print(
        f"pyprog reproduce ({plan.name}): {plan.runs()} runs at most; finished runs are reused "
        f"from the store, so an interrupted reproduce resumes",
        file=sys.stderr,
    )
    say_if_compiling(envs)
    result = reproduce(
        args.out,
        quick=args.quick,
        store=args.store,
        envs=envs,
        jobs=args.jobs,
        progress=None if args.quiet else progress_bar("pyprog reproduce"),
        dtype=args.dtype,
    )
    for claim in result["claims"]:
        print(f"[{claim['headline']}] {claim['id']}: {claim['claim']}")
        if claim.get("scope"):
            print(f"    ({claim['scope']})")
        if claim["test"].startswith(("not tested", "no case")):
            print(f"    ({claim['test']})")
    print("verdicts: tests across seeds, named with their p-values in summary.md and claims.json")
    print(f"figures, tables and summary.md in {args.out} ({result['seconds'] / 60:.1f} min)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    rep = sub.add_parser(
        "reproduce",
        help="the paper's empirical section: figures, tables and summary.md",
        description="Run (or reuse from the store) the experiments of the paper's §9 and "
        "appendix E and write PNG figures, CSV tables and summary.md (which states whether "
        "each claim held). --quick finishes in minutes on 2 cores; the full protocol uses the "
        "paper's seeds and 1000 episodes.",
    )
    rep.add_argument("--quick", action="store_true", help="fewer seeds/speeds/episodes")
    rep.add_argument(
        "--store",
        default=None,
        help="a sweep's result store, only read: its best settings replace the paper's and "
        "its matching runs are reused (default: the paper's settings)",
    )
    rep.add_argument(
        "--out",
        default="results",
        help="output folder, created with its parents if missing; its runs.sqlite keeps this "
        "reproduction's runs (default: results)",
    )
    rep.add_argument(
        "--env",
        default=",".join(ENVS),
        help=f"{', '.join(ENVS)}; comma-separated (default: all)",
    )
    rep.add_argument(
        "--jobs", type=int, default=None, help="worker processes, >= 1 (default: all cores)"
    )
    add_dtype_argument(rep, "NS-Reco and NS-Reacher; NS-Diabetes's Gaussian policy stays float64")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.set_defaults(func=cmd)
