"""``pyprog sweep``: random search over the paper's hyper-parameter ranges into a store.

Draws ``--settings`` settings (the same command draws the same ones) and runs every
(env, algo, speed, setting, seed) not yet in ``--store``, on local cores or a Dask cluster.
"""

from __future__ import annotations

import argparse

from pyprog.cli.common import (
    add_dtype_argument,
    add_grid_arguments,
    check_counts,
    parse_envs,
    parse_speeds,
    progress_bar,
    say_if_compiling,
)

__all__ = ["add_parser", "cmd"]


def cmd(args: argparse.Namespace) -> int:
    from pyprog.experiments import grid, sweep
    from pyprog.learn.hyperparams import FORECASTING, check_algo

    envs = parse_envs(args.env)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = parse_speeds(args.speeds, "--speeds")
    seeds = grid.parse_seeds(args.seeds)
    if args.basis != "fourier" and not set(algos) & set(FORECASTING):
        raise ValueError(
            f"--basis sets the forecast of {' and '.join(FORECASTING)}; {', '.join(algos)} "
            "do(es) not forecast, so --basis would be unused: drop it"
        )
    if args.settings < 1:
        raise ValueError(f"--settings must be >= 1; got {args.settings}")
    check_counts(args)
    if args.setting_seed < 0:
        raise ValueError(f"--setting-seed must be >= 0; got {args.setting_seed}")
    tasks = sweep.sweep_tasks(
        envs,
        algos,
        speeds,
        args.settings,
        seeds,
        args.episodes,
        args.setting_seed,
        args.basis,
        args.dtype,
    )
    say_if_compiling(envs)
    report = sweep.run_sweep(
        tasks,
        args.store,
        name=args.name,
        jobs=args.jobs,
        scheduler=args.scheduler,
        progress=None if args.quiet else progress_bar("pyprog sweep"),
    )
    print(
        f"{report['ran']} runs done, {report['already_stored']} already in {args.store} "
        f"({report['total']} in the sweep)"
    )
    if args.name is not None and report["already_stored"]:  # their tag is the first sweep's
        print(
            f"the {report['already_stored']} already stored keep the tag they were stored "
            f"with; `pyprog best --name {args.name}` sees only the {report['ran']} run(s) this "
            "sweep stored"
        )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    sw = sub.add_parser(
        "sweep",
        help="random search over the paper's hyper-parameter ranges into a result store",
        description="Draw --settings settings from the paper's ranges (the same command draws "
        "the same settings) and run every (env, algo, speed, setting, seed) not yet in --store, "
        "on local cores or a Dask cluster (--scheduler). Killing it loses nothing committed; "
        "re-running resumes.",
    )
    add_grid_arguments(sw, "--speeds")
    sw.add_argument("--settings", type=int, default=20, help="settings to draw, >= 1 (default: 20)")
    sw.add_argument(
        "--basis",
        default="fourier",
        choices=("fourier", "poly", "linear", "auto"),
        help="time basis of the forecasts: fourier, poly, linear, or auto (chosen by "
        "backtests at every select_every episodes; default: fourier)",
    )
    add_dtype_argument(
        sw, "softmax policies only, faster on NS-Reacher; part of each run's store key"
    )
    sw.add_argument(
        "--setting-seed", type=int, default=0, help="seed of the settings' draw (default: 0)"
    )
    sw.add_argument(
        "--store",
        required=True,
        help="SQLite result store (created, with its parent folders, if missing)",
    )
    sw.add_argument(
        "--name",
        default=None,
        help="sweep tag stored with every run; `pyprog best --name` selects by it (default: none)",
    )
    sw.add_argument(
        "--scheduler",
        default=None,
        help="Dask scheduler address, tcp://host:8786 (default: local cores)",
    )
    sw.set_defaults(func=cmd)
