"""The paper's protocols: what a reproduction runs and which claims it tests.

The claims of the paper's empirical section that ``summary.md`` tests (:data:`CLAIMS`) and
the speeds each is about (:data:`CLAIM_SPEEDS`); the equivalence margin of the stationary
claim (:func:`stationary_margin`); a protocol (:class:`Plan`: per environment the speeds,
seeds and episodes) with the paper's (:data:`FULL`) and a quick one (:data:`QUICK`); and the
runs a protocol asks for (:func:`plan_tasks`), with the best settings of a sweep store where
it has them and the paper's otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from pyprog.experiments.sweep import SweepTask
from pyprog.forecast.bases import BASES
from pyprog.learn.hyperparams import ALGOS, Hyper, paper_hyper

__all__ = [
    "BASELINES",
    "CLAIMS",
    "CLAIM_SPEEDS",
    "EQUIVALENCE_FRACTION",
    "FULL",
    "PRO",
    "QUICK",
    "Plan",
    "plan_tasks",
    "stationary_margin",
]

#: The learners that forecast (Prognosticator), and the baselines they are compared with.
PRO = ("pro-ols", "pro-wls")
BASELINES = ("onpg", "ftrl-pg")


#: The paper's claims that ``summary.md`` tests, by id.
CLAIMS = {
    "reco_fast": (
        "NS-Reco, speeds 3 and 4: Pro-OLS and Pro-WLS each have lower regret than ONPG "
        "and than FTRL-PG (Fig. 3)"
    ),
    "reco_stationary": (
        "NS-Reco, speed 0 (stationary): the four learners' mean regrets are equivalent, "
        "every pair within the margin"
    ),
    "reacher": (
        "NS-Reacher, speeds >= 2: Pro-OLS and Pro-WLS each have lower surrogate regret than "
        "ONPG and than FTRL-PG (Fig. 3)"
    ),
    "diabetes": (
        "NS-Diabetes, speeds >= 1: Pro-WLS has lower surrogate regret than each other "
        "learner (Fig. 3)"
    ),
    "diabetes_stationary": (
        "NS-Diabetes, speed 0: Pro-WLS has lower surrogate regret than each other learner (Fig. 3)"
    ),
    "zeta": (
        "Fig. 4: the OLS weights ζ sum to 1, and the identity and Fourier bases give "
        "some past episodes negative weight"
    ),
    "ablation": (
        "Basis ablation (appendix E): on NS-Reco at speeds >= 2, the Fourier and "
        "polynomial bases each give lower regret than the linear basis, for Pro-OLS and Pro-WLS"
    ),
}

#: The speeds each claim is about (``zeta`` involves none). A protocol that tests a claim at
#: fewer of them says so in the claim's ``scope``: its verdict covers the speeds tested.
CLAIM_SPEEDS = {
    "reco_fast": (3, 4),
    "reco_stationary": (0,),
    "reacher": (2, 3, 4),
    "diabetes": (1, 2, 3, 4),
    "diabetes_stationary": (0,),
    "zeta": (),
    "ablation": (2, 3, 4),
}

#: The equivalence margin of ``reco_stationary``, as a fraction of the regret of the
#: uniformly random policy over the same episodes (403 over 1000 episodes): learners whose
#: regrets differ by less than a tenth of what learning removes count as equally good.
EQUIVALENCE_FRACTION = 0.1


def stationary_margin(episodes: int) -> float:
    """Equivalence margin of the ``reco_stationary`` claim, in regret, for ``episodes``.

    ``EQUIVALENCE_FRACTION × Σ_k (max_a μ_a − mean_a μ_a)`` on stationary NS-Reco: a tenth
    of the regret of the policy that picks items uniformly at random.

    Examples
    --------
    >>> round(stationary_margin(1000), 2)
    40.3
    """
    from pyprog.envs.reco import NSReco

    mu = NSReco(speed=0).expected_rewards(np.arange(episodes))
    return EQUIVALENCE_FRACTION * float((mu.max(axis=1) - mu.mean(axis=1)).sum())


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a reproduction runs: per environment, the speeds, seeds and episodes.

    ``untested`` names the claims this protocol cannot test with power, each with the one
    sentence that says why (their verdict is ``inconclusive``); ``glucose_speed`` is the
    NS-Diabetes speed of the blood-glucose figures.
    """

    name: str
    speeds: dict[str, tuple[int, ...]]
    seeds: dict[str, int]
    episodes: dict[str, int]
    ablation_speeds: tuple[int, ...]
    ablation_seeds: int
    untested: dict[str, str] = dataclasses.field(default_factory=dict)
    glucose_speed: int = 4

    def __post_init__(self) -> None:
        unknown = sorted(set(self.untested) - set(CLAIMS))
        if unknown:
            raise ValueError(
                f"untested names unknown claim(s) {', '.join(unknown)}; valid: {', '.join(CLAIMS)}"
            )

    def replayed_diabetes_speed(self) -> int:
        """The NS-Diabetes speed whose seed-0 runs are replayed: ``glucose_speed`` if it runs,
        else the fastest speed that does."""
        speeds = self.speeds["diabetes"]
        return self.glucose_speed if self.glucose_speed in speeds else speeds[-1]

    def runs(self) -> int:
        main = sum(len(ALGOS) * len(self.speeds[e]) * self.seeds[e] for e in self.speeds)
        return main + len(PRO) * (len(BASES) - 1) * len(self.ablation_speeds) * self.ablation_seeds


#: The paper's protocol: 1000 episodes, speeds 0–4, 30 seeds (10 for NS-Diabetes).
FULL = Plan(
    name="full",
    speeds={"reco": (0, 1, 2, 3, 4), "reacher": (0, 1, 2, 3, 4), "diabetes": (0, 1, 2, 3, 4)},
    seeds={"reco": 30, "reacher": 30, "diabetes": 10},
    episodes={"reco": 1000, "reacher": 1000, "diabetes": 1000},
    ablation_speeds=(0, 1, 2, 3, 4),
    ablation_seeds=30,
    glucose_speed=4,
)

#: A protocol of under 3 minutes on 2 cores, chosen by measured power (README,
#: "Reproduction"): full-length runs at the speeds where the claims have the most power,
#: fewer seeds; NS-Reacher only for its figures.
QUICK = Plan(
    name="quick",
    speeds={"reco": (0, 3, 4), "reacher": (0, 4), "diabetes": (4,)},
    seeds={"reco": 5, "reacher": 2, "diabetes": 8},
    episodes={"reco": 1000, "reacher": 300, "diabetes": 1000},
    ablation_speeds=(3,),
    ablation_seeds=5,
    untested={
        "reco_stationary": (
            "equivalence within the margin needs many seeds, as NS-Reco's regrets at speed 0 "
            "are heavy-tailed (a few seeds settle on a poor item), and even the full "
            "protocol's 30 seeds leave it inconclusive"
        ),
        "reacher": (
            "the quick protocol runs NS-Reacher (about 4 s per run) with 2 seeds of 300 "
            "episodes for its figures only, as Pro-OLS's lead over ONPG at speeds 3 and 4 is "
            "within noise even with the full protocol's 30 seeds of 1000 episodes"
        ),
        "diabetes_stationary": (
            "the quick protocol runs NS-Diabetes at speed 4 only, and at speed 0 even the "
            "full protocol's 10 seeds leave Pro-WLS's lead within noise"
        ),
    },
    glucose_speed=4,
)


def _settings(env: str, speed: int, store_best: dict | None) -> dict[str, Hyper]:
    out = {}
    for algo in ALGOS:
        best = (store_best or {}).get(env, {}).get(algo, {}).get(f"{speed:g}")
        out[algo] = Hyper.from_dict(best) if best else paper_hyper(env, algo, speed)
    return out


def plan_tasks(
    plan: Plan, envs: Sequence[str], store_best: dict | None
) -> dict[str, list[SweepTask]]:
    """The runs of a plan: ``{"main": [...], "ablation": [...]}``."""
    main, ablation = [], []
    for env in envs:
        for speed in plan.speeds[env]:
            settings = _settings(env, speed, store_best)
            for algo in ALGOS:
                for seed in range(plan.seeds[env]):
                    main.append(
                        SweepTask(
                            env, algo, float(speed), 0, settings[algo], seed, plan.episodes[env]
                        )
                    )
    if "reco" in envs:
        for speed in plan.ablation_speeds:
            settings = _settings("reco", speed, store_best)
            for algo in PRO:
                for basis in BASES:
                    if basis == settings[algo].basis:
                        continue  # the main runs already hold this basis
                    hyper = settings[algo].replace(basis=basis)
                    for seed in range(plan.ablation_seeds):
                        ablation.append(
                            SweepTask(
                                "reco", algo, float(speed), 0, hyper, seed, plan.episodes["reco"]
                            )
                        )
    return {"main": main, "ablation": ablation}
