"""The paper's empirical section: protocols, claims, figures, report and ``reproduce``.

:func:`pyprog.paper.reproduce.reproduce` runs (or reuses) a protocol's experiments and
writes figures, tables, ``summary.md`` and ``claims.json``. The names re-exported here are the
protocols and claims that users and the ``pyprog`` command read; the function ``reproduce``
is not, so that ``pyprog.paper.reproduce`` stays the module of that name.

May import :mod:`pyprog.experiments` and every layer below it.
"""

from pyprog.paper.claims import ablation_table, claims, regret_tables, zeta_weights
from pyprog.paper.diabetes import diabetes_policies
from pyprog.paper.protocols import (
    CLAIMS,
    FULL,
    QUICK,
    Plan,
    plan_tasks,
    stationary_margin,
)

__all__ = [
    "CLAIMS",
    "FULL",
    "QUICK",
    "Plan",
    "ablation_table",
    "claims",
    "diabetes_policies",
    "plan_tasks",
    "regret_tables",
    "stationary_margin",
    "zeta_weights",
]
