"""``pyprog forecast``: a policy's future performance from logged episodes, with intervals.

Parses the command line and calls :func:`pyprog.forecast.logged.forecast_logs`, the
function a Python user calls; prints the NIS and NWIS forecasts and the safety test. With
``--time COL`` the log is timestamped contextual-bandit rounds instead, and the command
calls :func:`pyprog.value.forecast.forecast_value` for the value ``--at`` a date or
``--over`` a window.
"""

from __future__ import annotations

import argparse
import os

from pyprog.cli.common import check_input, refuse_overwrite

__all__ = ["OPTION_NAMES", "add_parser", "cmd"]

#: forecast_logs' parameters → this command's options (errors are printed in the latter),
#: and the function names the library's messages start with.
OPTION_NAMES = (
    {
        "candidates": "--candidates",
        "basis": "--basis",
        "d": "--d",
        "delta": "--delta",
        "gamma": "--gamma",
        "clip": "--clip",
        "alpha": "--alpha",
        "safety_alpha": "--safety-alpha",
        "n_boot": "--n-boot",
        "seed": "--seed",
        "random_state": "--seed",
        "at": "--at",
        "over": "--over",
        "max_horizon": "--max-horizon",
        "bin_width": "--bin-width",
        "compact_dates": "--compact-dates",
        "interval": "--interval",
        "estimator": "--estimator",
        "policy": "--policy",
        "context": "--context",
        "n_actions": "--n-actions",
    },
    ("forecast_logs", "nis_forecast", "nwis_forecast", "select_forecaster", "forecast_value"),
    {
        "None, an integer >= 0 or a numpy.random.Generator": "an integer >= 0",
        "width must be a finite number of days": "--bin-width must be a finite number of days",
    },
)


def _split(candidates: str | None) -> list[str] | None:
    """``--candidates "linear, window(k=50)"`` → ``["linear", "window(k=50)"]`` (and
    ``pyprog learn --baselines``)."""
    if candidates is None:
        return None
    return [name.strip() for name in candidates.split(",") if name.strip()]


def _column_names(text: str):
    """``--policy`` / ``--context``: a prefix, or a comma-separated list of names."""
    return text if "," not in text else [c.strip() for c in text.split(",")]


def _context(text: str):
    """``--context``: a prefix, a comma-separated list, or ``none`` (no context)."""
    return None if text in ("", "none") else _column_names(text)


def _check_files(args: argparse.Namespace) -> None:
    """The log can be read, and no output (--json, --plot) is the log or each other."""
    if not (getattr(args, "time", None) and os.path.isdir(args.logs)):  # a Parquet folder
        check_input("LOGS", args.logs)
    refuse_overwrite({"LOGS": args.logs}, {"--json": args.json, "--plot": args.plot})


def _check_output(option: str, path: str | None) -> None:
    """Refuse an output path that cannot be written before the work, not after it."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        why = "is a directory" if os.path.isdir(path) else f"no writable directory {folder}"
        raise ValueError(f"cannot write {option} {path}: {why}")
    if option == "--plot":  # matplotlib picks the format from the suffix: check it now
        from matplotlib.backend_bases import FigureCanvasBase

        formats = FigureCanvasBase.get_supported_filetypes()
        suffix = os.path.splitext(path)[1].lower().lstrip(".")
        if suffix not in formats:
            raise ValueError(
                f"cannot write --plot {path}: the suffix names the figure's format; use one "
                f"of {', '.join('.' + f for f in sorted(formats))} (e.g. forecast.png)"
            )


def _json_ready(value):
    """``value`` with every non-finite float as None: JSON has no NaN or Infinity."""
    import math

    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def _write_json(path: str, summary: dict) -> None:
    """``--json``: the summary with non-finite numbers as null (valid JSON)."""
    import json

    try:
        with open(path, "w") as fh:
            json.dump(_json_ready(summary), fh, indent=1, allow_nan=False)
            fh.write("\n")
    except OSError as exc:
        raise ValueError(f"cannot write --json {path}: {exc.strerror or exc}") from None


def _one_line_warnings(fn, *args, _command: str = "forecast", **kwargs):
    """``fn(*args, **kwargs)``, its warnings printed one line each on stderr, as the errors
    (``pyprog COMMAND: warning: ...``)."""
    import sys
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    for w in dict.fromkeys(str(w.message) for w in caught):
        print(f"pyprog {_command}: warning: {w}", file=sys.stderr)
    return result


def _target(text: str, compact_dates: str | None) -> float | str:
    """``--at`` / ``--over``: eight digits of a date read as ``--compact-dates`` says."""
    from pyprog.logs.times import parse_time_text

    return text if compact_dates is None else parse_time_text(text, compact_dates)


def _in_lines(message: str, path: str, lines) -> str:
    """The library's 0-based "row i" of the log as the file's line ("line 7 of LOG.csv")."""
    import re

    def line(match: re.Match) -> str:
        i = int(match.group(1))
        return f"line {lines[i]} of {path}" if i < len(lines) else match.group(0)

    return re.sub(r"\brow (\d+)\b", line, message)


def _value_cmd(args: argparse.Namespace) -> int:
    """``--time``: the value of a policy at dates (or over a window), from timestamped rounds."""
    _check_value_options(args)
    from pyprog.value.forecast import forecast_value  # after the checks: errors come at once

    columns, lines = _read_rounds(args)
    policy, n_actions = _policy(args.policy, args.n_actions, columns, args.action)
    at = None if args.at is None else [_target(t, args.compact_dates) for t in args.at]
    at = at[0] if at is not None and len(at) == 1 else at  # one target: "--at" in messages
    over = None if args.over is None else tuple(_target(t, args.compact_dates) for t in args.over)
    alpha = _default("alpha", forecast_value) if args.alpha is None else args.alpha
    try:
        results = _one_line_warnings(
            forecast_value,
            log=columns,
            policy=_column_names(policy) if isinstance(policy, str) else policy,
            n_actions=n_actions,
            at=at,
            over=over,
            time=args.time,
            context=_context(args.context),
            action=args.action,
            reward=args.reward,
            pscore=args.pscore,
            estimator=args.estimator,
            bin_width=args.bin_width,
            max_horizon=args.max_horizon,
            alpha=alpha,
            interval=args.interval,
            random_state=args.seed,
        )
    except ValueError as exc:  # ForecastError too
        raise type(exc)(_in_lines(_nth_target(str(exc), args.at), args.logs, lines)) from None
    results = results if isinstance(results, list) else [results]
    _print_values(args, results, alpha)
    if args.plot:
        from pyprog.value.plot import plot_value_forecasts

        try:
            plot_value_forecasts(results, args.plot)
        except OSError as exc:
            raise ValueError(f"cannot write --plot {args.plot}: {exc.strerror or exc}") from None
    if args.json:
        givens = args.at if args.at is not None else [args.over[0]]
        summaries = [
            _value_summary(g, r, args.compact_dates) for g, r in zip(givens, results, strict=True)
        ]
        _write_json(args.json, summaries[0] if len(summaries) == 1 else summaries)
    return 0


def _policy(text: str, n_actions: int | None, columns, action: str) -> tuple:
    """``--policy``: columns (a prefix or a list), or ``FILE.py:NAME`` / ``MODULE:NAME``, a
    callable ``policy(context, times) -> (n, A)`` (A from ``--n-actions``, or the log's
    largest action + 1)."""
    if ":" not in text or text.endswith(":"):
        if n_actions is not None:
            raise ValueError("--n-actions: only with --policy FILE.py:NAME or MODULE:NAME")
        return text, None
    fn = _load_callable(text)
    if n_actions is None:
        import numpy as np

        acts = np.asarray(columns[action]) if action in columns else np.zeros(0)
        if acts.size == 0 or acts.dtype.kind not in "biuf":
            raise ValueError(
                f"--n-actions: give it with --policy {text} (the log's {action!r} column "
                "cannot say how many actions there are)"
            )
        n_actions = int(np.max(acts)) + 1
    return fn, n_actions


def _load_callable(text: str):
    """``FILE.py:NAME`` or ``MODULE:NAME`` as the callable it names (ValueError otherwise)."""
    import importlib
    import importlib.util

    where, name = text.rsplit(":", 1)
    try:
        if where.endswith(".py"):
            spec = importlib.util.spec_from_file_location(
                f"_pyprog_policy_{abs(hash(where))}", where
            )
            if spec is None or not os.path.isfile(where):
                raise FileNotFoundError(f"no file {where}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except Exception as exc:  # the user's code: whatever it raises, say where it came from
        raise ValueError(
            f"--policy {text}: cannot load {where} ({type(exc).__name__}: {exc})"
        ) from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(
            f"--policy {text}: {where} has no callable {name!r} (a policy(context, times) "
            "-> (n, n_actions) function)"
        )
    return fn


def _nth_target(message: str, given: list | None) -> str:
    """The library's ``at[i]`` (of several targets) as the ``--at`` value it was given."""
    import re

    if not given:
        return message
    return re.sub(r"\bat\[(\d+)\]", lambda m: f"--at {given[int(m.group(1))]}", message)


def _check_value_options(args: argparse.Namespace) -> None:
    """``--time``'s options: a target, outputs that can be written, no episode option."""
    if (args.at is None) == (args.over is None):
        raise ValueError(
            "with --time, give exactly one of --at DATE [DATE ...] and --over START END"
        )
    _check_files(args)
    _check_output("--json", args.json)
    _check_output("--plot", args.plot)
    episode_only = {"--delta": args.delta != 1, "--basis": args.basis != "auto",
                    "--d": args.d is not None, "--candidates": args.candidates is not None,
                    "--gamma": args.gamma != 1.0, "--clip": args.clip != float("inf"),
                    "--n-boot": args.n_boot is not None,
                    "--safety-alpha": args.safety_alpha is not None}  # fmt: skip
    unused = [option for option, set_ in episode_only.items() if set_]
    if unused:  # not silently ignored
        raise ValueError(f"{', '.join(unused)}: for logs of episodes, not with --time (rounds)")


def _read_rounds(args: argparse.Namespace) -> tuple:
    """The log's columns and each row's line in the file (for messages); a Parquet file or
    folder as its path, which forecast_value streams (its messages name file and row)."""
    from pyprog.logs.rounds_csv import read_rounds
    from pyprog.logs.tables import is_parquet_path

    if is_parquet_path(args.logs):
        if args.compact_dates is not None:
            raise ValueError("--compact-dates: for CSV logs (Parquet keeps dates as dates)")
        return args.logs, []
    return read_rounds(args.logs, time=args.time, compact_dates=args.compact_dates)


def _print_values(args: argparse.Namespace, results: list, alpha) -> None:
    """One line on the log, one row per target, and the support's diagnostics."""
    first = results[0]
    level = f"{(1 - alpha) * 100:.12g}%"
    print(
        f"{args.logs}: {first.n_rounds} rounds in {first.n_bins} days; value of the policy "
        f"({level} {first.interval} interval; days after the log's end)"
    )
    print(f"{'target':<24} {'ahead':>7} {'forecast':>11} {'low':>11} {'high':>11}")
    targets = args.at if args.at is not None else [f"{args.over[0]} to {args.over[1]}"]
    for given, r in zip(targets, results, strict=True):
        print(f"{given:<24} {r.horizon:>7.4g} {r.value:>11.5g} {r.low:>11.5g} {r.high:>11.5g}")
    print(f"top model {first.model}, estimator {first.estimator}")
    if first.support is not None:
        print(f"support: {first.support}")


def _value_summary(given: str, result, compact_dates: str | None) -> dict:
    """``--json`` for one target: the result's dict, with the UTC instant of a date target."""
    import datetime as dt

    summary = result.as_dict()
    if _is_date(given, compact_dates):  # say which UTC instant the number is about
        stamp = lambda days: dt.datetime(1970, 1, 1) + dt.timedelta(days=days)  # noqa: E731
        summary["target_utc"] = [
            stamp(v).isoformat(timespec="minutes") + "Z" for v in result.target[1:]
        ]
    return summary


def _is_date(text: str, compact_dates: str | None) -> bool:
    """Whether a target given on the command line is a date (not a number of days)."""
    try:
        float(text)
    except ValueError:
        return True
    return compact_dates == "date" and len(text.strip()) == 8 and text.strip().isdigit()


def _default(name: str, fn) -> float:
    """The default of ``fn``'s parameter ``name``: the command's default is the function's."""
    import inspect

    return inspect.signature(fn).parameters[name].default


def _print_safety(s: dict, safety_alpha: float, notes: list) -> None:
    """The safety test's lines; its misspecification warning joins ``notes``."""
    if "error" in s:
        print(f"safety test (alpha {safety_alpha:g}): no test: {s['error']}")
    else:
        print(
            f"safety test (alpha {safety_alpha:g}): {'ACCEPT' if s['accept'] else 'REFUSE'} π; "
            f"forecast advantage over β {s['value']:.5g} ({s['model']}), one-sided lower "
            f"bound {s['low']:.5g}"
        )
        print(
            f"  stationary t-test would {'accept' if s['stationary_accept'] else 'refuse'}: "
            f"past mean advantage {s['past_mean']:.5g}, lower bound {s['stationary_low']:.5g}"
        )
        if s.get("warning"):
            notes.append(f"safety test: {s['warning']}")


def cmd(args: argparse.Namespace) -> int:
    if args.time is not None:
        return _value_cmd(args)
    if args.at is not None or args.over is not None:
        raise ValueError("--at and --over need --time COL (a log of timestamped rounds)")
    if args.d not in (None, 2) and args.basis == "linear":  # not silently unused
        raise ValueError(f"--d: the linear basis has 2 features ([x, 1]), not {args.d}; drop --d")
    _check_files(args)
    _check_output("--json", args.json)
    _check_output("--plot", args.plot)
    from pyprog.forecast.logged import forecast_logs
    from pyprog.forecast.selection import PLAUSIBLE_SE

    alpha = _default("alpha", forecast_logs) if args.alpha is None else args.alpha
    safety_alpha = args.safety_alpha
    if safety_alpha is None:
        safety_alpha = _default("safety_alpha", forecast_logs)
    result = _one_line_warnings(
        forecast_logs,
        args.logs,
        delta=args.delta,
        basis=args.basis,
        d=args.d,
        gamma=args.gamma,
        clip=args.clip,
        alpha=alpha,
        safety_alpha=safety_alpha,
        n_boot=2000 if args.n_boot is None else args.n_boot,
        random_state=args.seed,
        candidates=_split(args.candidates),
    )
    summary = result.as_dict()
    level = f"{(1 - alpha) * 100:.12g}%"
    if args.basis == "linear":
        how = "linear"
    elif args.basis != "auto":
        how = f"{args.basis}, d={summary['d']}"
    elif args.candidates is None:
        how = "forecaster chosen by backtests"
    else:
        how = f"forecaster chosen by backtests among {', '.join(summary['candidates'])}"
    print(
        f"{summary['file']}: {summary['episodes']} episodes ({summary['steps']} steps); "
        f"forecast of the mean over the next {args.delta} episode(s) ({how}), "
        f"{level} bootstrap intervals"
    )
    # explicit spaces between columns: values such as -1.234e+149 never run together
    print(f"{'':<6} {'forecast':>11} {'low':>11} {'high':>11}  model")
    notes = []
    for name in ("nis", "nwis"):
        r = summary[name]
        if r["value"] is None:
            print(f"{name.upper():<6} no forecast: {r['error']}")
            continue
        print(
            f"{name.upper():<6} {r['value']:>11.5g} {r['low']:>11.5g} {r['high']:>11.5g}  "
            f"{r['model']}"
        )
        if r.get("warning"):
            notes.append(f"{name.upper()}: {r['warning']}")
    for name in ("nis", "nwis"):  # a choice the data barely make should not look certain
        others = [c for c in summary[name].get("plausible") or () if c != summary[name]["model"]]
        if others:
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            named = ", ".join(others[:3]) + more
            print(
                f"  {name.upper()}: the backtests do not rule out {named} (within "
                f"{PLAUSIBLE_SE:g} s.e.); the interval reaches their forecasts"
            )
    _print_safety(summary["safety"], safety_alpha, notes)
    for note in notes:
        print(f"warning: misspecification: {note}")
    if args.json:
        _write_json(args.json, summary)
    if args.plot:
        try:
            result.plot(args.plot)
        except OSError as exc:
            raise ValueError(f"cannot write --plot {args.plot}: {exc.strerror or exc}") from None
    return 0


def add_round_columns(group) -> None:
    """The options naming a log of rounds' columns (``pyprog forecast --time``, ``pyprog
    learn``): ``--context``, ``--action``, ``--reward``, ``--pscore``."""
    group.add_argument(
        "--context", default="x",
        help="context columns: a prefix (default 'x': x0, x1, ...), a list, or 'none'",
    )  # fmt: skip
    group.add_argument("--action", default="action", help="logged action column (action)")
    group.add_argument("--reward", default="reward", help="reward column (reward)")
    group.add_argument("--pscore", default="pscore", help="logging propensity column (pscore)")


def add_time_options(group) -> None:
    """The options of the model in time: ``--max-horizon``, ``--bin-width``, ``--compact-dates``."""
    group.add_argument(
        "--max-horizon", type=float, default=None,
        help="furthest target in days after the log (default: the log's span)",
    )  # fmt: skip
    group.add_argument(
        "--bin-width", type=float, default=1.0,
        help="days per bin of the forecaster in time (default 1; less for patterns within "
        "a day)",
    )  # fmt: skip
    group.add_argument(
        "--compact-dates", default=None, choices=("date", "days"),
        help="how eight digits that are a date (20230101) are read, in the time column and "
        "--at/--over: as that date or as a number of days (default: refused, they could be "
        "either)",
    )  # fmt: skip


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add this command to the ``pyprog`` subcommands ``sub``."""
    fc = sub.add_parser(
        "forecast",
        help="forecast a policy's future performance from logged episodes (CSV), with intervals",
        description="Read LOGS.csv (columns episode,step,reward,log_pi,log_beta; one row per "
        "step, episodes in play order), forecast the evaluated policy's mean performance over "
        "the next --delta episodes by NIS and NWIS with bootstrap intervals, and test "
        "whether it will beat the behaviour policy (pyprog.safety_test).",
    )
    fc.add_argument("logs", help="CSV file of logged steps")
    fc.add_argument("--delta", type=int, default=1, help="forecast horizon in episodes (1)")
    fc.add_argument(
        "--basis",
        default="auto",
        choices=("auto", "fourier", "poly", "linear"),
        help="auto (default): choose the forecaster by rolling-origin backtests; or a fixed "
        "time basis",
    )
    fc.add_argument(
        "--d", type=int, default=None, help="features of a fixed --basis (default 5; not with auto)"
    )
    fc.add_argument(
        "--candidates",
        default=None,
        help="with --basis auto: the forecasters to choose among, comma-separated, e.g. "
        "'fourier(d=3),poly(d=3),window(k=50)' (default: pyprog's 13; see README)",
    )
    fc.add_argument("--gamma", type=float, default=1.0, help="discount factor (default 1)")
    fc.add_argument("--clip", type=float, default=float("inf"), help="ratio clip (default none)")
    fc.add_argument(
        "--alpha", type=float, default=None,
        help="1 - the intervals' level (default 0.1: 90%%, for episodes and with --time)",
    )  # fmt: skip
    fc.add_argument(
        "--safety-alpha", type=float, default=None,
        help="the episodes' safety test's size: the accepted risk of deploying a worse "
        "policy (default 0.05; not with --time)",
    )  # fmt: skip
    fc.add_argument(
        "--n-boot", type=int, default=None,
        help="bootstrap draws for episodes (default 2000; not with --time)",
    )  # fmt: skip
    fc.add_argument(
        "--seed", type=int, default=0,
        help="seed of the bootstrap (episodes) or of the reward model's folds (--time); "
        "default 0",
    )  # fmt: skip
    fc.add_argument("--json", default=None, help="write the numbers to this JSON file")
    fc.add_argument("--plot", default=None, help="write the figure to this PNG file")
    tv = fc.add_argument_group(
        "the value at a date (timestamped contextual-bandit rounds: pyprog.forecast_value)"
    )
    tv.add_argument(
        "--time", default=None, metavar="COL",
        help="the time column (numbers in days, or ISO-8601 dates): LOGS (a CSV file, or a "
        "Parquet file or folder, streamed) holds one row per round; forecast the policy's "
        "value --at a date or --over a window",
    )  # fmt: skip
    tv.add_argument(
        "--at", default=None, nargs="+", action="extend", metavar="DATE",
        help="target dates (e.g. 2024-03-01 2024-04-01) or day numbers: one fit, one row each",
    )  # fmt: skip
    tv.add_argument("--over", nargs=2, default=None, metavar=("START", "END"), help="window")
    tv.add_argument(
        "--policy", default="pi_",
        help="columns of the evaluation policy's action probabilities: a prefix (default "
        "'pi_': pi_0, pi_1, ...) or a comma-separated list; or FILE.py:NAME / MODULE:NAME, "
        "a function policy(context, times) -> (n, n_actions), also evaluated at the target",
    )  # fmt: skip
    add_round_columns(tv)
    tv.add_argument(
        "--n-actions", type=int, default=None,
        help="with --policy FILE.py:NAME: the number of actions (default: the log's largest "
        "action + 1)",
    )  # fmt: skip
    tv.add_argument(
        "--estimator", default="auto", choices=("auto", "dr", "is", "snis", "dm"),
        help="per-round estimates (auto: DR or IS, by cross-validation in time)",
    )  # fmt: skip
    add_time_options(tv)
    tv.add_argument(
        "--interval", default="prediction", choices=("prediction", "mean"),
        help="the interval for the value on the day (prediction, default) or for the "
        "models' mean there, without the day's own deviation (mean)",
    )  # fmt: skip
    fc.set_defaults(func=cmd, option_names=OPTION_NAMES)
