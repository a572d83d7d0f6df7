"""The ``pyprog`` command: one module per subcommand.

:func:`pyprog.cli.main.main` is the entry point (the console script and ``python -m pyprog``);
each subcommand's module (``run``, ``sweep``, ``best``, ``reproduce``, ``forecast``, ``info``)
adds its parser and holds the function that carries it out.

May import every layer: it is the top one.
"""
