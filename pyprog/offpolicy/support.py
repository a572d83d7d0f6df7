"""How well a log of rounds supports an evaluation policy: the importance weights' diagnostics.

Every estimate of π_e's value from rounds logged under π₀ leans on the importance weights
w_i = π_e(a_i|x_i, t_i) / π₀(a_i|x_i, t_i). When a few rounds carry most of the weight, or
π_e acts where π₀ almost never does, the estimates (and a forecast built on them) rest on a
handful of rounds, whatever their interval says. :func:`support_diagnostics` measures it:

* the effective sample size (Kish), ESS = (Σ w_i)² / Σ w_i², and its share of the rounds;
* the largest weight's share of the total, max w_i / Σ w_i;
* π_e's mass on actions π₀ takes with probability below :data:`RARE_PSCORE`, estimated by
  importance sampling: E_π₀[w 1{π₀(a|x) < c}] = E_x Σ_a π_e(a|x) 1{0 < π₀(a|x) < c}, with
  the actions that carry it (an action π₀ never took is refused before, by
  :func:`pyprog.logs.rounds.check_support`: no estimator has its rewards);
* the rounds per time bin (fewest, median, most).

:meth:`Support.problems` says in words what is poor and what to do; :func:`pyprog.forecast_value`
warns with them (:class:`SupportWarning`) and keeps the diagnostics in its result.

May import :mod:`pyprog.logs` (the checked rounds) and :mod:`pyprog.utils`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from pyprog.logs.rounds import Rounds

__all__ = [
    "MAX_WEIGHT_SHARE",
    "MIN_ESS_SHARE",
    "RARE_MASS",
    "RARE_PSCORE",
    "Support",
    "SupportWarning",
    "WeightSums",
    "support_diagnostics",
    "warn_support",
]

#: π₀'s probability below which an action counts as one the logging policy almost never takes.
RARE_PSCORE = 1e-3
#: π_e's estimated mass on such actions above which the support is poor (1 %).
RARE_MASS = 0.01
#: The effective sample size's share of the rounds below which the support is poor: fewer
#: than 1 round in 100 counts (a deterministic π_e against a uniform π₀ over 10 actions
#: keeps 1 in 10).
MIN_ESS_SHARE = 0.01
#: The largest weight's share of the total above which one round carries the estimate.
MAX_WEIGHT_SHARE = 0.05


class SupportWarning(UserWarning):
    """The log supports the evaluation policy poorly: its estimates rest on few rounds."""


@dataclass(frozen=True)
class Support:
    """The importance weights' diagnostics of one evaluation policy on one log.

    Attributes
    ----------
    n_rounds : int
    ess : float
        Kish's effective sample size (Σ w)² / Σ w² (0 when every weight is 0).
    max_weight_share : float
        max w_i / Σ w_i (0 when every weight is 0).
    rare_mass : float
        π_e's mass on actions π₀ takes with probability below :data:`RARE_PSCORE`,
        estimated by importance sampling (mean of w_i over such rounds, times their share).
    rare_actions : dict
        Each action that carries part of ``rare_mass``: its part, largest first.
    rounds_per_bin : tuple of float
        The fewest, median and most rounds in a time bin.
    """

    n_rounds: int
    ess: float
    max_weight_share: float
    rare_mass: float
    rare_actions: dict
    rounds_per_bin: tuple

    @property
    def ess_share(self) -> float:
        """ESS / n."""
        return self.ess / self.n_rounds

    def problems(self) -> list[str]:
        """What is poor about the support, each with what to do (empty when nothing is)."""
        out = []
        if self.rare_mass > RARE_MASS:
            named = ", ".join(f"{a} ({m:.2g})" for a, m in list(self.rare_actions.items())[:3])
            out.append(
                f"π_e puts an estimated {self.rare_mass:.2g} of its mass on actions the "
                f"logging policy takes with probability below {RARE_PSCORE:g}: action {named}; "
                "their value rests on a few rounds with weights above "
                f"{1 / RARE_PSCORE:g}. Evaluate a policy that plays them less, or log them "
                "more often"
            )
        if self.ess_share < MIN_ESS_SHARE:
            out.append(
                f"the effective sample size of the importance weights is {self.ess:.4g} of "
                f"{self.n_rounds} rounds ({self.ess_share:.2%}): π_e is far from the logging "
                "policy. Prefer estimator='dr' (its reward model carries what the weights "
                "cannot), or evaluate a policy closer to the logging policy"
            )
        if self.max_weight_share > MAX_WEIGHT_SHARE:
            out.append(
                f"one round carries {self.max_weight_share:.2%} of the total importance weight: "
                "the estimates move with that round. Check its pscore, or clip the policy's "
                "rare actions"
            )
        return out

    def as_dict(self) -> dict:
        """A JSON-ready summary (actions as strings, as JSON keys are)."""
        return {
            "n_rounds": self.n_rounds,
            "ess": self.ess,
            "ess_share": self.ess_share,
            "max_weight_share": self.max_weight_share,
            "rare_mass": self.rare_mass,
            "rare_actions": {str(a): m for a, m in self.rare_actions.items()},
            "rounds_per_bin": list(self.rounds_per_bin),
        }

    def __str__(self) -> str:
        few, median, most = self.rounds_per_bin
        return (
            f"ESS {self.ess:.4g} of {self.n_rounds} rounds ({self.ess_share:.1%}), largest "
            f"weight {self.max_weight_share:.2%} of the total, π_e's mass where π₀ < "
            f"{RARE_PSCORE:g}: {self.rare_mass:.2g}; rounds per bin {few:g}-{most:g} "
            f"(median {median:g})"
        )


@dataclass(frozen=True)
class WeightSums:
    """The importance weights' sums that :class:`Support` is read from; they merge over
    chunks of a log (:meth:`merge`).

    Attributes
    ----------
    n : int
    total, squares, largest : float
        Σ w, Σ w² and max w.
    rare : numpy.ndarray, shape (A,)
        Σ w over the rounds with π₀ below :data:`RARE_PSCORE`, by logged action.
    """

    n: int
    total: float
    squares: float
    largest: float
    rare: np.ndarray

    @classmethod
    def of(cls, w: np.ndarray, rounds: Rounds) -> WeightSums:
        """The sums of weights ``w`` (n,) at ``rounds``."""
        rare = rounds.pscore < RARE_PSCORE
        by_action = np.bincount(rounds.action[rare], weights=w[rare], minlength=rounds.n_actions)
        return cls(rounds.n, float(w.sum()), float(w @ w), float(w.max()), by_action)

    def merge(self, other: WeightSums) -> WeightSums:
        return WeightSums(
            self.n + other.n, self.total + other.total, self.squares + other.squares,
            max(self.largest, other.largest), self.rare + other.rare,
        )  # fmt: skip

    def support(self, per_bin: np.ndarray) -> Support:
        """The diagnostics, with ``per_bin`` (m,) the rounds in each time bin."""
        ess = self.total**2 / self.squares if self.squares > 0 else 0.0
        share = self.largest / self.total if self.total > 0 else 0.0
        by_action = self.rare / self.n
        order = np.argsort(-by_action, kind="stable")
        carried = {int(a): float(by_action[a]) for a in order if by_action[a] > 0}
        counts = np.asarray(per_bin, dtype=np.float64)
        bins = (float(counts.min()), float(np.median(counts)), float(counts.max()))
        return Support(self.n, ess, share, float(by_action.sum()), carried, bins)


def support_diagnostics(dist: np.ndarray, rounds: Rounds, bin_width: float = 1.0) -> Support:
    """The importance weights' diagnostics of π_e on a log of rounds.

    Parameters
    ----------
    dist : numpy.ndarray, shape (n, A)
        π_e(· | x_i, t_i) at the logged rounds (checked: rows are probabilities).
    rounds : Rounds
        The checked log (:func:`pyprog.logs.rounds.check_rounds`).
    bin_width : float
        Days per time bin, for the rounds per bin.

    Returns
    -------
    Support

    Examples
    --------
    >>> from pyprog.logs.rounds import check_rounds
    >>> r = check_rounds(None, [0.0, 0.5, 1.0, 1.5], [0, 1, 0, 1], [1.0] * 4, [0.5] * 4, 2)
    >>> s = support_diagnostics(np.tile([1.0, 0.0], (4, 1)), r)
    >>> s.ess, s.max_weight_share, s.rare_mass, s.rounds_per_bin
    (2.0, 0.5, 0.0, (2.0, 2.0, 2.0))
    """
    w = dist[np.arange(rounds.n), rounds.action] / rounds.pscore
    _, counts = np.unique(np.floor(rounds.times / bin_width), return_counts=True)
    return WeightSums.of(w, rounds).support(counts)


def warn_support(support: Support, stacklevel: int = 2) -> None:
    """One :class:`SupportWarning` per problem :meth:`Support.problems` finds."""
    for problem in support.problems():
        warnings.warn(f"poor support: {problem}", SupportWarning, stacklevel=stacklevel + 1)
