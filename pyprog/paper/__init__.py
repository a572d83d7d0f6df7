"""The paper's empirical section: protocols, claims, figures, report and ``reproduce``.

:func:`reproduce` runs (or reuses) a protocol's experiments and writes figures, tables,
``summary.md`` and ``claims.json``; the names below are the ones users and the ``pyprog``
command use. Note that ``pyprog.paper.reproduce`` is therefore the function; the module of
the same name is ``sys.modules["pyprog.paper.reproduce"]``.
"""

from pyprog.paper.claims import ablation_table, claims, regret_tables, zeta_weights
from pyprog.paper.diabetes import diabetes_policies
from pyprog.paper.protocols import (
    BASELINES,
    CLAIM_SPEEDS,
    CLAIMS,
    EQUIVALENCE_FRACTION,
    FULL,
    PRO,
    QUICK,
    Plan,
    plan_tasks,
    stationary_margin,
)
from pyprog.paper.reproduce import reproduce

__all__ = [
    "BASELINES",
    "CLAIMS",
    "CLAIM_SPEEDS",
    "EQUIVALENCE_FRACTION",
    "FULL",
    "PRO",
    "QUICK",
    "Plan",
    "ablation_table",
    "claims",
    "diabetes_policies",
    "plan_tasks",
    "regret_tables",
    "reproduce",
    "stationary_margin",
    "zeta_weights",
]
