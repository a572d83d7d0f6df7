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

from pyprog._ext.backend import backend
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
    from pyprog.utils.cache import numba_cache_dir

    cache = numba_cache_dir()
    rows.append(("numba cache", str(cache) if cache else "none writable: uncached"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _format_table(table: list[dict]) -> str:
    """Regret tables, one per environment: algorithms × speeds, "mean ± se"."""
    lines = []
    for env in dict.fromkeys(r["env"] for r in table):
        rows = [r for r in table if r["env"] == env]
        speeds = sorted({r["speed"] for r in rows}, key=lambda s: -1.0 if s is None else s)
        algos = list(dict.fromkeys(r["algo"] for r in rows))
        cell = {(r["algo"], r["speed"]): r for r in rows}
        metric = rows[0]["metric"]
        lines.append(f"{env}: {metric} (mean ± standard error over seeds)")
        header = f"{'algo':<10}" + "".join(f"{_speed_label(s):>22}" for s in speeds)
        lines.append(header)
        for algo in algos:
            parts = []
            for s in speeds:
                r = cell.get((algo, s))
                parts.append(f"{r['mean']:>12.4g} ± {r['se']:<7.2g}" if r else f"{'-':>22}")
            lines.append(f"{algo:<10}" + "".join(f"{p:>22}" for p in parts))
        lines.append("")
    return "\n".join(lines)


def _speed_label(speed: float | None) -> str:
    """ "speed 2" — or "its own drift" for an environment whose drift pyprog does not set."""
    return "its own drift" if speed is None else f"speed {speed:g}"


def _parse_envs(text: str) -> list[str]:
    """--env: built-in names, Gymnasium ids or module:function factories, comma-separated."""
    from pyprog.experiments import grid
    from pyprog.runner.adapter import check_env_spec

    return grid.parse_list(text, "--env", check_env_spec)


def _parse_speeds(text: str | None, flag: str) -> list[int] | None:
    """None when not given: 0-4 for built-in environments, none for the others."""
    from pyprog.experiments import grid

    return None if text is None else grid.parse_range(text, flag)


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
    """--episodes, --jobs and --settings, where a command has them (bounds: experiments.grid)."""
    from pyprog.experiments.grid import MAX_EPISODES, MAX_SETTINGS

    if getattr(args, "episodes", 1) < 1:
        raise ValueError(f"--episodes must be >= 1; got {args.episodes}")
    if getattr(args, "episodes", 1) > MAX_EPISODES:
        raise ValueError(f"--episodes must be at most {MAX_EPISODES}; got {args.episodes}")
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1; got {args.jobs}")
    if getattr(args, "settings", 1) < 1:
        raise ValueError(f"--settings must be >= 1; got {args.settings}")
    if getattr(args, "settings", 1) > MAX_SETTINGS:
        raise ValueError(f"--settings must be at most {MAX_SETTINGS}; got {args.settings}")


def _add_grid_arguments(parser: argparse.ArgumentParser, speed_flag: str) -> None:
    """The arguments that ``run`` and ``sweep`` share (``--speed`` and ``--speeds`` both)."""
    parser.add_argument(
        "--env",
        default="reco",
        help="comma-separated: reco, reacher, diabetes, a Gymnasium id (CartPole-v1) or "
        "module:function (a factory importable from the current directory or PYTHONPATH) "
        "(default: reco)",
    )
    parser.add_argument(
        "--algo",
        default="pro-ols,pro-wls,onpg,ftrl-pg",
        help="pro-ols, pro-wls, onpg, ftrl-pg; comma-separated (default: all four)",
    )
    parser.add_argument(
        "--speed",
        "--speeds",
        dest=speed_flag.lstrip("-"),
        default=None,
        help="speeds of non-stationarity of the built-in envs, integers >= 0 (0 = stationary): "
        "a range 0-4, a list 0,2,4 or both (default: 0-4); other envs drift by themselves "
        "and take none",
    )
    parser.add_argument(
        "--seeds",
        default="10",
        help="a count (10 = seeds 0..9) or a range/list of seeds (3-7, 1,5) (default: 10)",
    )
    parser.add_argument(
        "--episodes", type=int, default=1000, help="episodes per run, >= 1 (default: 1000)"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="worker processes, >= 1 (default: all cores)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


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


def _cmd_run(args: argparse.Namespace) -> int:
    from pyprog.experiments import grid
    from pyprog.learn.hyperparams import check_algo
    from pyprog.stats.tables import regret_table

    envs = _parse_envs(args.env)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = _parse_speeds(args.speed, "--speed")
    seeds = grid.parse_seeds(args.seeds)
    _check_counts(args)
    _say_if_compiling(envs)
    runs = grid.run_grid(
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
    table = regret_table(runs)
    print(_format_table(table))
    regret_csv = grid.write_regret_table(table, args.out)
    print(
        f"results: {args.out}/results.csv ({len(runs)} runs; returns in {args.out}/"
        f"{grid.STORE_NAME}), table: {regret_csv}"
    )
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from pyprog.experiments import grid, sweep
    from pyprog.learn.hyperparams import check_algo

    envs = _parse_envs(args.env)
    algos = grid.parse_list(args.algo, "--algo", check_algo)
    speeds = _parse_speeds(args.speeds, "--speeds")
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
    from pathlib import Path

    from pyprog.experiments import sweep

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
            f"{r['env']:<9} {r['algo']:<8} {_speed_label(r['speed'])}: {r['metric']} "
            f"{r['mean']:.4g} ± {r['se']:.2g} ({r['seeds']} seeds × {r['episodes']} episodes, "
            f"best of {r['settings']} settings{left_out})",
            file=table_to,
        )
    if args.json == "-":
        sys.stdout.write(text)
    elif args.json is not None:
        print(f"best settings written to {args.json}", file=sys.stderr)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from pyprog.experiments import grid
    from pyprog.learn.hyperparams import check_env
    from pyprog.paper import reproduce

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
        if claim.get("scope"):
            print(f"    ({claim['scope']})")
        if claim["test"].startswith(("not tested", "no case")):
            print(f"    ({claim['test']})")
    print("verdicts: tests across seeds, named with their p-values in summary.md and claims.json")
    print(f"figures, tables and summary.md in {args.out} ({result['seconds'] / 60:.1f} min)")
    return 0


def _cmd_forecast(args: argparse.Namespace) -> int:
    import json

    from pyprog.forecast.logged import forecast_logs

    result = forecast_logs(
        args.logs,
        delta=args.delta,
        basis=args.basis,
        d=args.d,
        gamma=args.gamma,
        clip=args.clip,
        alpha=args.alpha,
        n_boot=args.n_boot,
        seed=args.seed,
    )
    summary = result.as_dict()
    level = f"{1 - args.alpha:.0%}"
    print(
        f"{summary['file']}: {summary['episodes']} episodes ({summary['steps']} steps); "
        f"forecast of the mean over the next {args.delta} episode(s), {args.basis} basis, "
        f"d={args.d}, {level} wild-bootstrap intervals"
    )
    print(f"{'':<6}{'forecast':>10}{'low':>10}{'high':>10}")
    for name in ("nis", "nwis"):
        r = summary[name]
        if r["value"] is None:
            print(f"{name.upper():<6}  no forecast: {r['error']}")
        else:
            print(f"{name.upper():<6}{r['value']:>10.4g}{r['low']:>10.4g}{r['high']:>10.4g}")
    s = summary["safety"]
    print(
        f"safety test (alpha {args.alpha:g}): {'ACCEPT' if s['accept'] else 'REFUSE'} π; "
        f"forecast advantage over β {s['value']:.4g}, one-sided lower bound {s['low']:.4g}"
    )
    print(
        f"  stationary t-test would {'accept' if s['stationary_accept'] else 'refuse'}: "
        f"past mean advantage {s['past_mean']:.4g}, lower bound {s['stationary_low']:.4g}"
    )
    if args.json:
        try:
            with open(args.json, "w") as fh:
                json.dump(summary, fh, indent=1)
                fh.write("\n")
        except OSError as exc:
            raise ValueError(f"cannot write --json {args.json}: {exc.strerror or exc}") from None
    if args.plot:
        try:
            result.plot(args.plot)
        except OSError as exc:
            raise ValueError(f"cannot write --plot {args.plot}: {exc.strerror or exc}") from None
    return 0


def _say_if_compiling(envs) -> None:
    """numba compiles the patient model on first use (then caches it): say so once."""
    if "diabetes" not in envs:
        return
    from pyprog.envs.diabetes import env as diabetes

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
        "on all cores. Finished runs are committed to the result store OUT/runs.sqlite as they "
        "end, and OUT/results.csv and OUT/regret.csv are exported from it; re-running the same "
        "command resumes (only the runs not in the store are computed).",
    )
    _add_grid_arguments(run, "--speed")
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
    sw.add_argument("--settings", type=int, default=20, help="settings to draw, >= 1 (default: 20)")
    sw.add_argument(
        "--basis",
        default="fourier",
        choices=("fourier", "poly", "linear"),
        help="time basis of the forecasts: fourier, poly, linear (default: fourier)",
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
    sw.set_defaults(func=_cmd_sweep)

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
        default="reco,reacher,diabetes",
        help="reco, reacher, diabetes; comma-separated (default: all three)",
    )
    rep.add_argument(
        "--jobs", type=int, default=None, help="worker processes, >= 1 (default: all cores)"
    )
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.set_defaults(func=_cmd_reproduce)

    fc = sub.add_parser(
        "forecast",
        help="forecast a policy's future performance from logged episodes (CSV), with intervals",
        description="Read LOGS.csv (columns episode,step,reward,log_pi,log_beta; one row per "
        "step, episodes in play order), forecast the evaluated policy's mean performance over "
        "the next --delta episodes by NIS and NWIS with wild-bootstrap intervals, and test "
        "whether it will beat the behaviour policy (pyprog.safety_test).",
    )
    fc.add_argument("logs", help="CSV file of logged steps")
    fc.add_argument("--delta", type=int, default=1, help="forecast horizon in episodes (1)")
    fc.add_argument("--basis", default="fourier", choices=("fourier", "poly", "linear"))
    fc.add_argument("--d", type=int, default=5, help="basis features (default 5)")
    fc.add_argument("--gamma", type=float, default=1.0, help="discount factor (default 1)")
    fc.add_argument("--clip", type=float, default=float("inf"), help="ratio clip (default none)")
    fc.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (0.05)")
    fc.add_argument("--n-boot", type=int, default=2000, help="bootstrap draws (default 2000)")
    fc.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    fc.add_argument("--json", default=None, help="write the numbers to this JSON file")
    fc.add_argument("--plot", default=None, help="write the figure to this PNG file")
    fc.set_defaults(func=_cmd_forecast)
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
