"""What the ``pyprog`` commands share: argument parsing, checks, progress bars, tables.

The arguments ``run`` and ``sweep`` both take (:func:`add_grid_arguments`) and their
parsing and bounds (:func:`parse_envs`, :func:`parse_speeds`, :func:`check_counts`); a tqdm
progress bar driven by ``progress(done, total)`` (:func:`progress_bar`); the regret table as
text (:func:`format_table`, :func:`speed_label`); the one-line notice before numba
compiles the patient model (:func:`say_if_compiling`); library errors reworded with the
command's option names (:func:`cli_message`); and the checks of a command's files before any
work (:func:`check_input`, :func:`refuse_overwrite`).

This module is imported by every command's parser: it imports only the standard library
and what the parsers need, so that ``pyprog`` answers a usage error at once.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from collections.abc import Callable
from typing import TextIO

from pyprog.learn.hyperparams import DTYPES

__all__ = [
    "add_grid_arguments",
    "check_counts",
    "check_input",
    "cli_message",
    "format_table",
    "parse_envs",
    "parse_speeds",
    "plain_numbers",
    "progress_bar",
    "progress_lines",
    "refuse_overwrite",
    "say_if_compiling",
    "speed_label",
]


def cli_message(
    message: str,
    options: dict[str, str],
    prefixes: tuple[str, ...] = (),
    phrases: dict[str, str] | None = None,
) -> str:
    """A library error as a command-line user reads it: parameter names become the
    command's option names (``candidates=[...]`` → ``--candidates``, ``basis='auto'`` →
    ``--basis auto``, ``n_boot must`` → ``--n-boot must``).

    Parameters
    ----------
    message : str
        The library's message (e.g. of a ValueError).
    options : dict of str to str
        Parameter name → option, e.g. ``{"n_boot": "--n-boot"}``.
    prefixes : tuple of str
        Function names the library puts in front (``"forecast_logs: "``), dropped.
    phrases : dict of str to str, optional
        Text that only a Python caller can use, replaced as is (e.g. ``"None, an integer
        >= 0 or a numpy.random.Generator"`` → ``"an integer >= 0"``).

    Examples
    --------
    >>> opts = {"candidates": "--candidates", "basis": "--basis", "d": "--d"}
    >>> cli_message("nis_forecast: candidates is only used with basis='auto'; got "
    ...             "basis='poly'", opts, ("nis_forecast",))
    '--candidates is only used with --basis auto; got --basis poly'
    >>> cli_message("d sets the features (got d=7; name them with candidates=[...])", opts)
    '--d sets the features (got --d 7; name them with --candidates)'
    >>> cli_message("Pass max_horizon= to forecast anyway", {"max_horizon": "--max-horizon"})
    'Pass --max-horizon to forecast anyway'
    """
    for prefix in prefixes:
        if message.startswith(f"{prefix}: "):
            message = message[len(prefix) + 2 :]
    for phrase, replacement in (phrases or {}).items():
        message = message.replace(phrase, replacement)
    for name, option in options.items():
        n = re.escape(name)
        message = re.sub(rf"\b{n}=\[\.\.\.\]", option, message)
        message = re.sub(rf"\b{n}='([^']*)'", rf"{option} \1", message)
        message = re.sub(rf"(?<![\w(-]){n}=([^\s;,)]+)", rf"{option} \1", message)
        message = re.sub(rf"(^|; ){n}(?=[ :])", rf"\1{option}", message)
        message = re.sub(rf"(?<![\w(-]){n}=(?=\s|$)", option, message)  # "pass max_horizon="
    return plain_numbers(message)


def plain_numbers(message: str) -> str:
    """Numbers in a message as a reader wants them: ``np.int64(0)`` as ``0``, and a run of
    more than 15 digits (a 300-digit integer) shortened to 4 significant digits.

    Examples
    --------
    >>> plain_numbers("got np.int64(0) and np.float64(1.5); seed " + "9" * 30)
    'got 0 and 1.5; seed 1e+30'
    """
    message = re.sub(r"\bnp\.(?:u?int|float|complex|bool_?)\d*\(([^()]*)\)", r"\1", message)
    return re.sub(r"(?<![\w.])\d{16,}(?![\w.])", lambda m: f"{float(m.group(0)):.4g}", message)


def check_input(option: str, path: str) -> None:
    """Refuse an input file that cannot be read (missing, a folder, not readable), before
    the libraries it would be read with are even imported.

    Examples
    --------
    >>> check_input("LOGS", "/")
    Traceback (most recent call last):
    ...
    ValueError: LOGS '/' is a directory; give a file
    """
    if os.path.isdir(path):
        raise ValueError(f"{option} {path!r} is a directory; give a file")
    if not os.path.exists(path):
        raise ValueError(f"{option}: no such file {path!r}")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{option} {path!r}: permission denied (not readable)")


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same inode once both exist (through symlinks,
    hard links, ``./`` or relative paths), else the same resolved path."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def refuse_overwrite(inputs: dict[str, str | None], outputs: dict[str, str | None]) -> None:
    """Refuse an output path that is an input's file (or another output's): it would be
    overwritten. Called before anything is read or written.

    Parameters
    ----------
    inputs, outputs : dict of str to str or None
        Option (``"LOGS"``, ``"--json"``) → its path; None (not given) is skipped.

    Examples
    --------
    >>> refuse_overwrite({"LOGS": "log.csv"}, {"--json": "./log.csv", "--plot": None})
    Traceback (most recent call last):
    ...
    ValueError: --json ./log.csv would overwrite LOGS log.csv (the same file); write it elsewhere
    """
    given_in = [(o, p) for o, p in inputs.items() if p is not None]
    given_out = [(o, p) for o, p in outputs.items() if p is not None]
    for i, (option, path) in enumerate(given_out):
        for other, source in given_in + given_out[:i]:
            if _same_file(path, source):
                raise ValueError(
                    f"{option} {path} would overwrite {other} {source} (the same file); "
                    f"write it elsewhere"
                )


def format_table(table: list[dict]) -> str:
    """Regret tables, one per environment: algorithms × speeds, "mean ± se"."""
    lines = []
    for env in dict.fromkeys(r["env"] for r in table):
        rows = [r for r in table if r["env"] == env]
        speeds = sorted({r["speed"] for r in rows}, key=lambda s: -1.0 if s is None else s)
        algos = list(dict.fromkeys(r["algo"] for r in rows))
        cell = {(r["algo"], r["speed"]): r for r in rows}
        metric = rows[0]["metric"]
        lines.append(f"{env}: {metric} (mean ± standard error over seeds)")
        header = f"{'algo':<10}" + "".join(f"{speed_label(s):>22}" for s in speeds)
        lines.append(header)
        one_seed = False
        for algo in algos:
            parts = []
            for s in speeds:
                r = cell.get((algo, s))
                if r is None:
                    parts.append(f"{'-':>22}")
                elif math.isfinite(r["se"]):
                    parts.append(f"{r['mean']:>12.4g} ± {r['se']:<7.2g}")
                else:  # one seed: no standard error (and not NaN, which reads as a failure)
                    one_seed = True
                    parts.append(f"{r['mean']:>12.4g} ± {'n/a':<7}")
            lines.append(f"{algo:<10}" + "".join(f"{p:>22}" for p in parts))
        if one_seed:
            lines.append("n/a: one seed has no standard error; run --seeds 2 or more")
        lines.append("")
    return "\n".join(lines)


def speed_label(speed: float | None) -> str:
    """ "speed 2" — or "its own drift" for an environment whose drift pyprog does not set."""
    return "its own drift" if speed is None else f"speed {speed:g}"


def parse_envs(text: str, horizon: int | None = None) -> list[str]:
    """--env: built-in names, Gymnasium ids or module:function factories, comma-separated
    (each built once and checked, with ``--horizon`` where the command has it)."""
    from pyprog.experiments import grid
    from pyprog.runner.adapter import check_env_spec

    return grid.parse_list(text, "--env", lambda env: check_env_spec(env, horizon))


def parse_speeds(text: str | None, flag: str) -> list[int] | None:
    """None when not given: 0-4 for built-in environments, none for the others."""
    from pyprog.experiments import grid

    return None if text is None else grid.parse_range(text, flag)


def progress_bar(desc: str):
    """Progress driven by ``progress(done, total)`` calls, on stderr: a tqdm bar on a
    terminal; elsewhere (a batch job's log) a line now and then (:func:`progress_lines`)."""
    if not sys.stderr.isatty():
        return progress_lines(desc, sys.stderr)
    from tqdm.auto import tqdm

    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True)
        bar.n = done
        bar.refresh()
        if done == total:
            bar.close()

    return progress


def progress_lines(
    desc: str,
    stream: TextIO,
    seconds: float = 30.0,
    fraction: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
):
    """``progress(done, total)`` writing one line to ``stream`` at the start, whenever
    another ``fraction`` of the runs is done or ``seconds`` have passed since the last
    line, and at the end: what a log file of a long ``sweep`` or ``reproduce`` shows.

    Examples
    --------
    >>> import io
    >>> out, now = io.StringIO(), iter([0.0, 5.0, 40.0, 41.0])
    >>> progress = progress_lines("pyprog sweep", out, clock=lambda: next(now))
    >>> for done in (0, 1, 2, 20):
    ...     progress(done, 20)
    >>> print(out.getvalue(), end="")
    pyprog sweep: 0/20 runs (0%), 0.0 min
    pyprog sweep: 2/20 runs (10%), 0.7 min
    pyprog sweep: 20/20 runs (100%), 0.7 min
    """
    start = last_time = None
    last_done = 0

    def progress(done: int, total: int) -> None:
        nonlocal start, last_time, last_done
        now = clock()
        if start is None:
            start = now
        elif not (
            done == total
            or now - last_time >= seconds
            or done - last_done >= max(1.0, fraction * total)
        ):
            return
        last_time, last_done = now, done
        percent = 100 * done // total if total else 100
        stream.write(f"{desc}: {done}/{total} runs ({percent}%), {(now - start) / 60:.1f} min\n")
        stream.flush()

    return progress


def check_counts(args: argparse.Namespace) -> None:
    """--episodes, --jobs and --settings, where a command has them (bounds: experiments.grid)."""
    from pyprog.experiments.grid import MAX_EPISODES, MAX_SETTINGS

    if getattr(args, "episodes", 1) < 1:
        raise ValueError(f"--episodes must be >= 1; got {args.episodes}")
    if getattr(args, "episodes", 1) > MAX_EPISODES:
        raise ValueError(f"--episodes must be at most {MAX_EPISODES}; got {args.episodes}")
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1; got {args.jobs}")
    if getattr(args, "jobs", None) is not None and getattr(args, "scheduler", None) is None:
        from pyprog.runner.parallel import default_jobs

        cores = default_jobs()
        if args.jobs > cores:
            print(f"note: --jobs {args.jobs} capped at the {cores} cores", file=sys.stderr)
            args.jobs = cores
    if getattr(args, "settings", 1) < 1:
        raise ValueError(f"--settings must be >= 1; got {args.settings}")
    if getattr(args, "settings", 1) > MAX_SETTINGS:
        raise ValueError(f"--settings must be at most {MAX_SETTINGS}; got {args.settings}")


def add_grid_arguments(parser: argparse.ArgumentParser, speed_flag: str) -> None:
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


def add_dtype_argument(parser: argparse.ArgumentParser, note: str) -> None:
    """``--dtype`` (``Hyper.dtype`` for every run; None keeps each setting's own)."""
    parser.add_argument(
        "--dtype",
        default=None,
        choices=DTYPES,
        help="precision of the softmax policies' forward and backward passes: float64 "
        f"(default; the paper's protocol) or float32 ({note})",
    )


def say_if_compiling(envs) -> None:
    """numba compiles the patient model on first use (then caches it): say so once."""
    if "diabetes" not in envs:
        return
    from pyprog.envs.diabetes import env as diabetes

    if not diabetes.is_compiled() and not diabetes.is_cached():
        print("compiling the patient model (once; cached on disk) ...", file=sys.stderr, flush=True)
    diabetes.compile_kernels()
