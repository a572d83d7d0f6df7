"""The ``pyprog`` command: one module per subcommand, :func:`main` the entry point.

Note that ``pyprog.cli.main`` is therefore the function; the module of the same name
(``build_parser``, ``main``) is ``sys.modules["pyprog.cli.main"]``.
"""

from pyprog.cli.main import main

__all__ = ["main"]
