"""Statistics across seeds: summaries, tables of stored runs, and verdicts on claims.

* :mod:`.summary` — mean ± standard error, exact or surrogate regret;
* :mod:`.tables` — tables of stored runs per group;
* :mod:`.verdicts` — ``held``, ``contradicted`` or ``inconclusive``, from tests across seeds.

May import :mod:`pyprog.results` and every layer below it.
"""
