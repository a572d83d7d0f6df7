"""The ``pyprog`` command line: ``pyprog info``, ``pyprog run``, ``pyprog sweep``, ...

Each subcommand lives in its own module of :mod:`pyprog.cli` (``info``, ``run``,
``sweep``, ``best``, ``reproduce``, ``forecast``, ``learn``), which adds its parser
(``add_parser``) and runs it (``cmd``); the parser is built by :func:`build_parser`, and
:func:`main` maps errors to exit codes: 2 for bad usage or input (with one line naming
what is wrong), 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pyprog._version import __version__
from pyprog.cli import best, forecast, info, learn, reproduce, run, sweep
from pyprog.cli.common import cli_message

__all__ = ["OneLineParser", "build_parser", "main"]

#: The subcommands, in the order ``pyprog --help`` lists them.
COMMANDS = (info, run, sweep, best, reproduce, forecast, learn)


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line (``pyprog forecast: error: argument
    --max-horizon: invalid float value: 'abc'; see pyprog forecast --help``), as the
    commands' own errors are, not the usage text followed by the error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``pyprog`` argument parser."""
    parser = OneLineParser(
        prog="pyprog",
        description="Prognosticator (Chandak et al., ICML 2020): optimize for the future "
        "in non-stationary MDPs.",
    )
    parser.add_argument("--version", action="version", version=f"pyprog {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
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
        # in the words of the command line: its options' names, not the library's parameters
        message = cli_message(str(exc), *getattr(args, "option_names", ({}, ())))
        print(f"pyprog {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
