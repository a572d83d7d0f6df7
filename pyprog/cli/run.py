"""``pyprog run``: learners on environments over speeds and seeds, and the regret table.

Every (env, algo, speed, seed) runs with the paper's settings or ``--hyper`` (inline JSON
or a JSON file, read by :func:`load_hyper`); finished runs are committed to the result store
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


def load_hyper(text: str | None, algos: list[str] | None = None):
    """--hyper: None, "paper", inline JSON (``'{"lr": 0.01}'``) or the contents of a JSON
    file (a ValueError naming it). A one-setting JSON is checked for keys that would be
    unused by ``algos`` (:func:`~pyprog.learn.hyperparams.check_written_setting`)."""
    if text is None or text == "paper":
        return text
    import json

    from pyprog.learn.hyperparams import check_written_setting, is_settings_table

    inline = text.lstrip().startswith("{")
    try:
        if inline:
            hyper = json.loads(text)
        else:
            with open(text) as fh:
                hyper = json.load(fh)
    except OSError as exc:
        raise ValueError(
            f"--hyper must be 'paper' or a JSON file (or inline JSON, '{{\"lr\": 0.01}}'): {exc}"
        ) from None
    except json.JSONDecodeError as exc:
        what = "inline JSON" if inline else repr(text)
        raise ValueError(f"--hyper {what} is not valid JSON: {exc}") from None
    if not isinstance(hyper, dict):
        raise ValueError(f"--hyper must hold a JSON object; got {type(hyper).__name__}")
    if not is_settings_table(
        hyper
    ):  # one setting, as the user wrote it (a table is pyprog's output)
        check_written_setting(hyper, algos or [], "--hyper")
    return hyper


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
        hyper=load_hyper(args.hyper, algos),
        jobs=args.jobs,
        progress=None if args.quiet else progress_bar("pyprog run"),
        horizon=args.horizon,
        dtype=args.dtype,
    )
    table = regret_table(runs)
    print(format_table(table))
    regret_csv = grid.write_regret_table(table, args.out)
    print(results_note(runs, args.out, grid.STORE_NAME, regret_csv))
    return 0


def results_note(runs, out, store_name: str, regret_csv) -> str:
    """What ``results.csv`` holds (this command's runs, not the whole store), where the
    returns are, and what its ``skipped_updates`` / ``skipped_steps`` columns count."""
    from pyprog.results import ResultStore

    with ResultStore(f"{out}/{store_name}", readonly=True) as store:
        stored = len(store)
    others = stored - len(runs)
    rest = f"; the store holds {others} other run(s) too" if others > 0 else ""
    lines = [
        f"results: {out}/results.csv holds the {len(runs)} run(s) of this command (returns in "
        f"{out}/{store_name}{rest}), table: {regret_csv}"
    ]
    skipping = sum(1 for r in runs if r.skipped_updates)
    if skipping:
        lines.append(
            f"skipped_updates / skipped_steps (results.csv): {skipping} of {len(runs)} run(s) "
            "skipped updates (and their inner steps) for want of a forecast: too few episodes "
            "yet for the basis, or a rank-deficient weighted fit. Normal early in a run; many "
            "mean the learner hardly learned"
        )
    return "\n".join(lines)


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
        help='inline JSON (\'{"lr": 0.01, "basis": "auto"}\') or a JSON file: one '
        "setting, or a table {env: {algo: {speed: setting}}} as `pyprog best --json` writes; "
        "'paper' for the authors' settings (built-in envs, speeds 0-4). Default: the paper's "
        "settings on built-in envs, pyprog's default setting elsewhere, of which one setting "
        'may change single keys. "d" with "basis": "auto", or a forecast key (basis, d, '
        "select_every) for onpg or ftrl-pg, is an error: it would be unused",
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
