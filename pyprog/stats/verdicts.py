"""Verdicts on a claim from tests across seeds: ``held``, ``contradicted``, ``inconclusive``
(tested, undecided) or ``untested`` (no case of it ran).

A claim bundles cases, each a comparison of two groups of per-seed values (e.g. the regret
of Pro-OLS and of ONPG at speed 3), given by their mean, standard error and number of seeds.
Each case is tested with Welch's t-test (unequal variances, unpaired); the p-values of one
claim's cases are corrected together with Holm's step-down method, so that the chance of
*any* false ``held`` case (and, separately, of any false ``contradicted`` case) is at most
``alpha``.

* :func:`verdict_lower` — the claim "a < b in every case": a case is ``held`` when the
  one-sided test of ``mean_a − mean_b < 0`` is significant after correction,
  ``contradicted`` when the one-sided test of the opposite direction is.
* :func:`verdict_equivalent` — the claim "``|a − b| < margin`` in every case", with the margin
  stated up front: two one-sided tests (TOST) for ``held``; for ``contradicted``, the test
  that ``|mean_a − mean_b|`` exceeds the margin (the one-sided p-value on the observed side,
  doubled).

The claim is ``held`` when every case is, ``contradicted`` when any case is, and
``inconclusive`` otherwise (also when it has no case, or a group has fewer than 2 seeds).
A claim that was not tested at all — no case of it ran — is ``untested``, a word of its own
(set by :func:`pyprog.paper.claims.claims`), so that it never reads as "tested, undecided".

Welch's test is the natural one for the paper's metrics: surrogate regret is taken against
the best *mean* curve of the compared algorithms, so the seeds of different algorithms are
not paired.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from pyprog.timeseries.interval_results import TEST_ALPHA
from pyprog.utils.validation import check_alpha

__all__ = [
    "ALPHA",
    "VERDICTS",
    "holm",
    "verdict_equivalent",
    "verdict_lower",
    "welch",
    "welch_p",
]

#: Significance level of every test.
ALPHA = TEST_ALPHA
#: The verdicts a claim can get (a case: the first three; ``untested``: nothing ran).
VERDICTS = ("held", "contradicted", "inconclusive", "untested")

Group = Mapping[str, Any]  # "mean", "se" (standard error of the mean) and "seeds"
Case = tuple[str, Group, Group]  # (label, a, b)


def welch(a: Group, b: Group) -> tuple[float, float, float]:
    """Difference of means, its standard error and Welch–Satterthwaite degrees of freedom.

    ``d = mean_a − mean_b``, ``se² = se_a² + se_b²``,
    ``df = se⁴ / (se_a⁴ / (n_a − 1) + se_b⁴ / (n_b − 1))``; NaN standard error and degrees
    of freedom when a group has fewer than 2 seeds.

    Examples
    --------
    >>> welch({"mean": 3.0, "se": 0.3, "seeds": 10}, {"mean": 1.0, "se": 0.4, "seeds": 10})
    (2.0, 0.5, 16.69...)
    """
    d = float(a["mean"]) - float(b["mean"])
    na, nb = int(a["seeds"]), int(b["seeds"])
    sa, sb = float(a["se"]), float(b["se"])
    if na < 2 or nb < 2 or not (math.isfinite(sa) and math.isfinite(sb)):
        return d, math.nan, math.nan
    var = sa**2 + sb**2
    if var == 0:
        return d, 0.0, float(na + nb - 2)
    df = var**2 / (sa**4 / (na - 1) + sb**4 / (nb - 1))
    return d, math.sqrt(var), df


def welch_p(a: Group, b: Group, c: float = 0.0, alternative: str = "less") -> float:
    """One-sided p-value of Welch's test of ``mean_a − mean_b < c`` (or ``> c``).

    With ``t = (d − c) / se``: ``p = F_t(t; df)`` for ``alternative="less"``, ``1 − F_t(t; df)``
    for ``"greater"``. 1 (no evidence) when the test cannot be made (a group has fewer than 2
    seeds); 0 or 1 when both groups are constant.

    Examples
    --------
    >>> a, b = {"mean": 1.0, "se": 0.2, "seeds": 30}, {"mean": 2.0, "se": 0.2, "seeds": 30}
    >>> round(welch_p(a, b), 6), round(welch_p(a, b, alternative="greater"), 6)
    (0.000404, 0.999596)
    """
    if alternative not in ("less", "greater"):
        raise ValueError(f"alternative must be 'less' or 'greater'; got {alternative!r}")
    d, se, df = welch(a, b)
    if math.isnan(se):
        return 1.0
    if se == 0:
        return 0.0 if (d < c if alternative == "less" else d > c) else 1.0
    t = (d - c) / se
    return float(stats.t.cdf(t, df) if alternative == "less" else stats.t.sf(t, df))


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate control).

    With the m p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of ``p_(j)`` is
    ``max_{i <= j} min(1, (m − i + 1) p_(i))``; a hypothesis is rejected at level alpha when
    its adjusted p-value is below alpha. NaN counts as 1.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    arr = np.nan_to_num(np.asarray(p, dtype=np.float64), nan=1.0)
    m = arr.size
    order = np.argsort(arr, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * arr[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(scaled)
    return out


def _check(cases: Sequence[Case], alpha: float) -> None:
    check_alpha(alpha)
    for case in cases:
        if len(case) != 3:
            raise ValueError(f"each case must be (label, a, b); got {case!r}")
        for group in case[1:]:
            missing = {"mean", "se", "seeds"} - set(group)
            if missing:
                raise ValueError(
                    f"case {case[0]!r}: each group needs mean, se and seeds; "
                    f"missing {', '.join(sorted(missing))}"
                )


def _decide(cases: Sequence[Case], p_held, p_against, alpha: float, extra) -> dict:
    """Holm-correct both families, label each case and the claim."""
    held_adj, against_adj = holm(p_held), holm(p_against)
    rows = []
    for k, (label, a, b) in enumerate(cases):
        d, se, df = welch(a, b)
        verdict = (
            "held"
            if held_adj[k] < alpha
            else "contradicted"
            if against_adj[k] < alpha
            else "inconclusive"
        )
        rows.append(
            {
                "case": label,
                "mean_a": float(a["mean"]),
                "se_a": float(a["se"]),
                "seeds_a": int(a["seeds"]),
                "mean_b": float(b["mean"]),
                "se_b": float(b["se"]),
                "seeds_b": int(b["seeds"]),
                "difference": d,
                "se": se,
                "df": df,
                "p": float(p_held[k]),
                "p_holm": float(held_adj[k]),
                "p_against": float(p_against[k]),
                "p_against_holm": float(against_adj[k]),
                **extra(k),
                "verdict": verdict,
            }
        )
    verdicts = {r["verdict"] for r in rows}
    if not rows:
        verdict = "inconclusive"
    elif "contradicted" in verdicts:
        verdict = "contradicted"
    elif verdicts == {"held"}:
        verdict = "held"
    else:
        verdict = "inconclusive"
    return {"verdict": verdict, "cases": rows}


def verdict_lower(cases: Sequence[Case], alpha: float = ALPHA) -> dict[str, Any]:
    """Verdict on "``a`` has a lower mean than ``b`` in every case".

    Parameters
    ----------
    cases : sequence of (label, a, b)
        ``a`` and ``b`` are mappings with ``mean``, ``se`` (standard error of the mean) and
        ``seeds`` (the number of values), e.g. rows of :func:`pyprog.paper.claims.regret_tables`.
    alpha : float in (0, 1)

    Returns
    -------
    dict
        ``verdict`` (one of :data:`VERDICTS`), ``test`` (what was tested, in words) and
        ``cases``: per case the two groups, the difference ``mean_a − mean_b`` with its
        standard error and degrees of freedom, ``p`` (one-sided, claimed direction) and
        ``p_against`` (the opposite direction), each also Holm-adjusted, and the verdict.

    Examples
    --------
    >>> lo, hi = {"mean": 10, "se": 1, "seeds": 5}, {"mean": 50, "se": 2, "seeds": 5}
    >>> verdict_lower([("x < y", lo, hi)])["verdict"], verdict_lower([("y < x", hi, lo)])["verdict"]
    ('held', 'contradicted')
    """
    _check(cases, alpha)
    p_held = [welch_p(a, b, 0.0, "less") for _, a, b in cases]
    p_against = [welch_p(a, b, 0.0, "greater") for _, a, b in cases]
    out = _decide(cases, p_held, p_against, alpha, lambda k: {})
    n = len(cases)
    out["test"] = (
        f"one-sided Welch t-test per case (a < b), across seeds, Holm's correction over the "
        f"{n} case{'s' if n != 1 else ''}, alpha = {alpha:g}; held if every case is "
        f"significant, contradicted if any case is significant the other way"
    )
    return out


def verdict_equivalent(
    cases: Sequence[Case], margin: float, alpha: float = ALPHA
) -> dict[str, Any]:
    """Verdict on "``|mean_a − mean_b| < margin`` in every case" (equivalence, TOST).

    A case is ``held`` when both one-sided tests, ``mean_a − mean_b > −margin`` and
    ``mean_a − mean_b < margin``, are significant (its p-value is the larger of the two),
    ``contradicted`` when ``|mean_a − mean_b| > margin`` is (the one-sided p-value on the
    observed side, doubled), each after Holm's correction over the cases.

    Parameters
    ----------
    cases : sequence of (label, a, b)
        As in :func:`verdict_lower`.
    margin : float > 0
        The equivalence margin, in the units of the means; to be fixed before the data.
    alpha : float in (0, 1)

    Returns
    -------
    dict
        As :func:`verdict_lower`, each case also with ``margin``.

    Examples
    --------
    >>> a, b = {"mean": 10, "se": 1, "seeds": 30}, {"mean": 11, "se": 1, "seeds": 30}
    >>> verdict_equivalent([("a ~ b", a, b)], margin=5)["verdict"]
    'held'
    >>> verdict_equivalent([("a ~ b", a, b)], margin=0.5)["verdict"]
    'inconclusive'
    """
    _check(cases, alpha)
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin > 0:
        raise ValueError(f"margin must be a number > 0; got {margin!r}")
    p_held, p_against = [], []
    for _, a, b in cases:
        # TOST: both d > −margin and d < margin must be significant
        above = welch_p(a, b, -margin, "greater")
        below = welch_p(a, b, margin, "less")
        p_held.append(max(above, below))
        # |d| > margin: the one-sided test on the observed side, doubled (the side is chosen
        # after seeing d, so either could have been tested)
        d, _, _ = welch(a, b)
        far = welch_p(a, b, margin, "greater") if d >= 0 else welch_p(a, b, -margin, "less")
        p_against.append(min(1.0, 2.0 * far))
    out = _decide(cases, p_held, p_against, alpha, lambda k: {"margin": float(margin)})
    n = len(cases)
    out["test"] = (
        f"equivalence within ±{margin:.4g}: two one-sided Welch t-tests (TOST) per case, "
        f"across seeds, Holm's correction over the {n} case{'s' if n != 1 else ''}, "
        f"alpha = {alpha:g}; held if every case is equivalent, contradicted if any case "
        f"differs by more than the margin"
    )
    return out
