"""Logs in from the field's formats: OBP, the Open Bandit Dataset, SCOPE-RL and Minari.

Each reader checks its input at the boundary, names the key (or attribute) at fault, and
returns one :class:`~pyprog.logs.episodes.Logs`, the type :func:`pyprog.forecast_logs`
takes, with a time per episode where the format has one; the bandit readers also give
rounds, a dict of the columns :func:`pyprog.forecast_value` reads (``time``, ``x0`` ..,
``action``, ``reward``, ``pscore``, ``pi_0`` ..). None of the libraries is needed: the
readers take their data structures (dicts, CSV files, objects with the right attributes)
as they are documented.

========================  =================================================================
reader                    input
========================  =================================================================
:func:`from_obp`          Open Bandit Pipeline's ``bandit_feedback`` dict + ``action_dist``
:func:`rounds_from_obp`   the same, as rounds (with the rounds' ``times``)
:func:`read_obd_csv`      a CSV file of the Open Bandit Dataset
:func:`read_obd_rounds`   the same, as rounds (with OBP's one-hot user features)
:func:`from_scope_rl`     SCOPE-RL's ``logged_dataset`` dict + π's action probabilities
:func:`from_minari`       Minari ``EpisodeData`` objects (or a ``MinariDataset``)
========================  =================================================================

Slates (``position``). OBP and the Open Bandit Dataset log one row per item shown, at a
position of a slate. The one rule here: when the rows hold more than one position, the user
says which rows to use, ``position=k`` (the rows at position k: the value of π's choice at
that slot) or ``position="all"`` (every row is a unit, with π's probability of the logged
item *at its position*: the mean reward per slot, as OBP's IPW estimates it, which treats
the positions as separate rounds). Without it, the reader raises an error.

Continuous actions (SCOPE-RL, Minari). Log-densities may exceed 0; pyprog's logs hold
log-probabilities <= 0. The readers subtract from ``log π`` and ``log β`` of each step the
same constant, ``max(0, log π, log β)``, which leaves every importance ratio π/β, and so every
estimate and forecast, unchanged.
"""

from __future__ import annotations

from pyprog.logs.readers.bandit import (
    OBD_COLUMNS,
    from_obp,
    read_obd_csv,
    read_obd_rounds,
    rounds_from_obp,
)
from pyprog.logs.readers.episodes import from_minari, from_scope_rl

__all__ = [
    "OBD_COLUMNS",
    "from_minari",
    "from_obp",
    "from_scope_rl",
    "read_obd_csv",
    "read_obd_rounds",
    "rounds_from_obp",
]
