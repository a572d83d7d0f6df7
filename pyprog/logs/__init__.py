"""What a log is, and every way in: episodes and rounds, their times, and their readers.

The floor beneath everything that estimates or forecasts from logged data. Two kinds of log:

* **episodes** (the paper's setting): :class:`Logs`, flat steps in play order with ``log π``,
  ``log β`` and rewards (:mod:`.episodes`), read from a CSV file (:func:`read_logs`,
  :mod:`.episodes_csv`), from arrays or DataFrames (:meth:`Logs.from_arrays`,
  :meth:`Logs.from_frame`), or from the field's formats (:mod:`.readers`: OBP, the Open
  Bandit Dataset, SCOPE-RL, Minari);
* **rounds** (timestamped contextual-bandit rounds): :class:`Rounds`, checked once by
  :func:`check_rounds` (:mod:`.rounds`), read from a CSV file (:func:`read_rounds_csv`,
  :mod:`.rounds_csv`), from Parquet files (:func:`read_rounds_table`) or pyarrow and
  Polars tables (:mod:`.tables`), from the columns of a DataFrame or a dict
  (:mod:`.columns`), or from OBP and the Open Bandit Dataset (:func:`rounds_from_obp`,
  :func:`read_obd_rounds`). The rounds path reads a log as chunks (:mod:`.chunks`: a
  :class:`~pyprog.logs.chunks.RoundSource` in memory), and a log larger than memory
  streamed (:mod:`.streams`: a Parquet folder in batches, a Dask DataFrame by partition).

Times, for both: :mod:`.times` (numbers of days, dates, ISO-8601 text; :func:`as_days`).

May import :mod:`pyprog.utils` and :mod:`pyprog._ext` only. Every check raises a
``ValueError`` (a :class:`LogFormatError` for a file) that names the argument, the file's
line or the row, and what is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyprog.utils.lazy import lazy_names

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from pyprog.logs.episodes import EpisodeIdWarning, LogFormatError, Logs
    from pyprog.logs.episodes_csv import read_logs
    from pyprog.logs.readers import (
        from_minari,
        from_obp,
        from_scope_rl,
        read_obd_csv,
        read_obd_rounds,
        rounds_from_obp,
    )
    from pyprog.logs.rounds import Rounds, check_rounds
    from pyprog.logs.rounds_csv import read_rounds_csv
    from pyprog.logs.tables import read_rounds_table
    from pyprog.logs.times import as_days, parse_utc

#: The module that defines each public name, imported on first use: a path that reads
#: rounds does not load the episode readers.
_SOURCES = {
    "pyprog.logs.episodes": ("EpisodeIdWarning", "LogFormatError", "Logs"),
    "pyprog.logs.episodes_csv": ("read_logs",),
    "pyprog.logs.readers": (
        "from_minari",
        "from_obp",
        "from_scope_rl",
        "read_obd_csv",
        "read_obd_rounds",
        "rounds_from_obp",
    ),
    "pyprog.logs.rounds": ("Rounds", "check_rounds"),
    "pyprog.logs.rounds_csv": ("read_rounds_csv",),
    "pyprog.logs.tables": ("read_rounds_table",),
    "pyprog.logs.times": ("as_days", "parse_utc"),
}
__getattr__, __dir__ = lazy_names(__name__, _SOURCES)

__all__ = [
    "EpisodeIdWarning",
    "LogFormatError",
    "Logs",
    "Rounds",
    "as_days",
    "check_rounds",
    "from_minari",
    "from_obp",
    "from_scope_rl",
    "parse_utc",
    "read_logs",
    "read_obd_csv",
    "read_obd_rounds",
    "read_rounds_csv",
    "read_rounds_table",
    "rounds_from_obp",
]
