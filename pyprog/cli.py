"""The ``pyprog`` command line: ``pyprog info``, ``pyprog run``, ``pyprog sweep``, ...

Each subcommand lives in a ``_cmd_*`` function; the parser is built by
:func:`build_parser`, and :func:`main` maps errors to exit codes: 2 for bad usage or
input (with one line naming what is wrong), 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import platform
import sys
from collections.abc import Sequence

from pyprog._backend import backend
from pyprog._version import __version__

__all__ = ["build_parser", "main"]


def _package_version(name: str) -> str | None:
    """Installed version of a distribution, or None; never imports it."""
    if importlib.util.find_spec(name) is None:
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def _cmd_info(args: argparse.Namespace) -> int:
    rows = [
        ("pyprog", __version__),
        ("kernel backend", backend()),
        ("python", platform.python_version()),
        ("platform", platform.platform()),
    ]
    for name in ("numpy", "scipy", "numba", "gymnasium", "simglucose", "distributed"):
        version = _package_version(name)
        rows.append((name, version if version else "not installed"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _format_table(table: list[dict]) -> str:
    """Regret tables, one per environment: algorithms × speeds, "mean ± se"."""
    lines = []
    for env in dict.fromkeys(r["env"] for r in table):
        rows = [r for r in table if r["env"] == env]
        speeds = sorted({r["speed"] for r in rows})
        algos = list(dict.fromkeys(r["algo"] for r in rows))
        cell = {(r["algo"], r["speed"]): r for r in rows}
        metric = rows[0]["metric"]
        lines.append(f"{env}: {metric} (mean ± standard error over seeds)")
        header = f"{'algo':<10}" + "".join(f"{'speed ' + format(s, 'g'):>22}" for s in speeds)
        lines.append(header)
        for algo in algos:
            parts = []
            for s in speeds:
                r = cell.get((algo, s))
                parts.append(f"{r['mean']:>12.4g} ± {r['se']:<7.2g}" if r else f"{'-':>22}")
            lines.append(f"{algo:<10}" + "".join(f"{p:>22}" for p in parts))
        lines.append("")
    return "\n".join(lines)


def _progress_bar(desc: str):
    """A tqdm bar driven by ``progress(done, total)`` calls (on stderr)."""
    from tqdm.auto import tqdm

    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            # disable=None: a bar on a terminal, nothing in a log file
            bar = tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True, disable=None)
        bar.n = done
        bar.refresh()
        if done == total:
            bar.close()

    return progress


def _check_counts(args: argparse.Namespace) -> None:
    """--episodes and --jobs, where a command has them."""
    if getattr(args, "episodes", 1) < 1:
        raise ValueError(f"--episodes must be >= 1; got {args.episodes}")
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1; got {args.jobs}")


def _add_grid_arguments(parser: argparse.ArgumentParser, speed_flag: str) -> None:
    """The arguments that ``run`` and ``sweep`` share."""
    parser.add_argument("--env", default="reco", help="reco, reacher, diabetes (comma-separated)")
    parser.add_argument(
        "--algo", default="pro-ols,pro-wls,onpg,ftrl-pg", help="algorithms (comma-separated)"
    )
    parser.add_argument(speed_flag, default="0-4", help="speeds, e.g. 0-4 or 0,2,4 (default 0-4)")
    parser.add_argument(
        "--seeds", default="10", help="a count (10 = seeds 0..9) or a range like 3-7"
    )
    parser.add_argument(
        "--episodes", type=int, default=1000, help="episodes per run (default 1000)"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="worker processes (default: all cores)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _load_hyper(text: str):
    if text == "paper":
        return "paper"
    import json

    try:
        with open(text) as fh:
            return json.load(fh)
    except OSError as exc:
        raise ValueError(f"--hyper must be 'paper' or a JSON file: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--hyper {text!r} is not valid JSON: {exc}") from None


def _cmd_run(args: argparse.Namespace) -> int:
    from pyprog import grid
    from pyprog.hyperparams import check_algo, check_env

    envs = grid.parse_list(args.env, "--env", check_env)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = grid.parse_range(args.speed, "--speed")
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
    print(f"results: {args.out}/results.csv ({len(rows)} runs)")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from pyprog import grid, sweep
    from pyprog.hyperparams import check_algo, check_env

    envs = grid.parse_list(args.env, "--env", check_env)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = grid.parse_range(args.speeds, "--speeds")
    seeds = grid.parse_seeds(args.seeds)
    if args.settings < 1:
        raise ValueError(f"--settings must be >= 1; got {args.settings}")
    _check_counts(args)
    if args.setting_seed < 0:
        raise ValueError(f"--setting-seed must be >= 0; got {args.setting_seed}")
    tasks = sweep.sweep_tasks(
        envs, algos, speeds, args.settings, seeds, args.episodes, args.setting_seed, args.basis
    )
    _say_if_compiling(envs)
    report = sweep.run_sweep(
        tasks,
        args.store,
        name=args.name,
        jobs=args.jobs,
        scheduler=args.scheduler,
        progress=None if args.quiet else _progress_bar("pyprog sweep"),
    )
    print(
        f"{report['ran']} runs done, {report['already_stored']} already in {args.store} "
        f"({report['total']} in the sweep)"
    )
    return 0


def _cmd_best(args: argparse.Namespace) -> int:
    import json

    from pyprog import sweep

    table, rows = sweep.best_settings(args.store, sweep=args.sweep)
    for r in rows:
        print(
            f"{r['env']:<9} {r['algo']:<8} speed {r['speed']:g}: {r['metric']} "
            f"{r['mean']:.4g} ± {r['se']:.2g} "
            f"({r['seeds']} seeds, best of {r['settings']} settings)"
        )
    text = json.dumps(table, indent=1, sort_keys=True)
    if args.json:
        try:
            with open(args.json, "w") as fh:
                fh.write(text + "\n")
        except OSError as exc:
            raise ValueError(f"cannot write --json {args.json}: {exc.strerror or exc}") from None
        print(f"best settings written to {args.json}")
    else:
        print(text)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from pyprog import grid, reproduce
    from pyprog.hyperparams import check_env

    envs = grid.parse_list(args.env, "--env", check_env)
    _check_counts(args)
    plan = reproduce.QUICK if args.quick else reproduce.FULL
    print(
        f"pyprog reproduce ({plan.name}): {plan.runs()} runs at most; finished runs are reused "
        f"from the store, so an interrupted reproduce resumes",
        file=sys.stderr,
    )
    _say_if_compiling(envs)
    result = reproduce.reproduce(
        args.out,
        quick=args.quick,
        store=args.store,
        envs=envs,
        jobs=args.jobs,
        progress=None if args.quiet else _progress_bar("pyprog reproduce"),
    )
    for claim in result["claims"]:
        print(f"[{claim['verdict']}] {claim['id']}: {claim['claim']}")
        if claim["test"].startswith(("not tested", "no case")):
            print(f"    ({claim['test']})")
    print("verdicts: tests across seeds, named with their p-values in summary.md and claims.json")
    print(f"figures, tables and summary.md in {args.out} ({result['seconds'] / 60:.1f} min)")
    return 0


def _say_if_compiling(envs) -> None:
    """numba compiles the patient model on first use (then caches it): say so once."""
    if "diabetes" not in envs:
        return
    from pyprog.envs import diabetes

    if not diabetes.is_compiled() and not diabetes.is_cached():
        print("compiling the patient model (once; cached on disk) ...", file=sys.stderr, flush=True)
    diabetes.compile_kernels()


def build_parser() -> argparse.ArgumentParser:
    """The ``pyprog`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="pyprog",
        description="Prognosticator (Chandak et al., ICML 2020): optimize for the future "
        "in non-stationary MDPs.",
    )
    parser.add_argument("--version", action="version", version=f"pyprog {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="versions, kernel backend, optional dependencies")
    info.set_defaults(func=_cmd_info)

    run = sub.add_parser(
        "run",
        help="run learners on environments over speeds and seeds; print the regret table",
        description="Run every (env, algo, speed, seed) with the paper's settings (or --hyper), "
        "on all cores. Finished runs are appended to OUT/results.csv as they end; re-running "
        "the same command resumes.",
    )
    _add_grid_arguments(run, "--speed")
    run.add_argument("--hyper", default="paper", help="'paper' or a JSON file of hyper-parameters")
    run.add_argument("--out", required=True, help="output folder")
    run.set_defaults(func=_cmd_run)

    sw = sub.add_parser(
        "sweep",
        help="random search over the paper's hyper-parameter ranges into a result store",
        description="Draw --settings settings from the paper's ranges (the same command draws "
        "the same settings) and run every (env, algo, speed, setting, seed) not yet in --store, "
        "on local cores or a Dask cluster (--scheduler). Killing it loses nothing committed; "
        "re-running resumes.",
    )
    _add_grid_arguments(sw, "--speeds")
    sw.add_argument("--settings", type=int, default=20, help="settings to draw (default 20)")
    sw.add_argument("--basis", default="fourier", choices=("fourier", "poly", "linear"))
    sw.add_argument("--setting-seed", type=int, default=0, help="seed of the settings' draw")
    sw.add_argument("--store", required=True, help="SQLite result store (created if absent)")
    sw.add_argument("--name", default=None, help="tag stored with every run of this sweep")
    sw.add_argument("--scheduler", default=None, help="Dask scheduler address, tcp://host:8786")
    sw.set_defaults(func=_cmd_sweep)

    best = sub.add_parser(
        "best",
        help="the best setting per (env, algo, speed) in a store, as a table and JSON",
    )
    best.add_argument("--store", required=True, help="SQLite result store")
    best.add_argument("--sweep", default=None, help="only runs of this sweep tag")
    best.add_argument("--json", default=None, help="write the settings to this file")
    best.set_defaults(func=_cmd_best)

    rep = sub.add_parser(
        "reproduce",
        help="the paper's empirical section: figures, tables and summary.md",
        description="Run (or reuse from the store) the experiments of the paper's §9 and "
        "appendix E and write PNG figures, CSV tables and summary.md (which states whether "
        "each claim held). --quick finishes in minutes on 2 cores; the full protocol uses the "
        "paper's seeds and 1000 episodes.",
    )
    rep.add_argument("--quick", action="store_true", help="fewer seeds/speeds/episodes")
    rep.add_argument("--store", default=None, help="a sweep store: use its best settings")
    rep.add_argument("--out", default="results", help="output folder (default: results)")
    rep.add_argument("--env", default="reco,reacher,diabetes", help="environments")
    rep.add_argument("--jobs", type=int, default=None, help="worker processes")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyprog`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("pyprog: interrupted; finished runs are kept", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `pyprog info | head -1`
        sys.stderr.close()
        return 0
    except ValueError as exc:
        print(f"pyprog {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
