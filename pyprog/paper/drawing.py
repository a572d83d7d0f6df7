"""Every figure of a reproduction, drawn into its output folder.

:func:`draw_figures` takes a reproduction's runs, tables, ζ weights and NS-Diabetes
policies and draws each figure with the plotting functions of :mod:`pyprog.paper.figures`
(one figure open at a time), returning the names of the PNG files it wrote.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pyprog.envs.registry import BUILTINS
from pyprog.learn.hyperparams import ALGOS
from pyprog.paper.protocols import Plan

__all__ = ["draw_figures"]


def draw_figures(
    out: Path, plan: Plan, envs, runs, basis_of, table, ablation, zeta, policies
) -> list[str]:
    import matplotlib.pyplot as plt

    from pyprog.paper import figures as plots

    made = []

    def draw(plot, name, *args, **kwargs):
        plt.close(plot(*args, path=out / name, **kwargs))  # one figure open at a time
        made.append(name)

    titles = {name: env.title for name, env in BUILTINS.items()}
    for env in envs:
        rows = [r for r in table if r["env"] == env]
        draw(plots.plot_regret_vs_speed, f"fig3_{env}_regret_vs_speed.png", rows, title=titles[env])
        for speed in plan.speeds[env]:
            returns = {
                algo: np.stack(
                    [
                        runs[(env, algo, float(speed), basis_of[(env, algo, speed)], s)].returns
                        for s in range(plan.seeds[env])
                    ]
                )
                for algo in ALGOS
            }
            optimal = None
            if env == "reco":
                optimal = runs[
                    (env, ALGOS[0], float(speed), basis_of[(env, ALGOS[0], speed)], 0)
                ].optimal
            draw(
                plots.plot_learning_curves,
                f"curves_{env}_speed{speed}.png",
                returns,
                title=f"{titles[env]}, speed {speed}",
                window=max(5, plan.episodes[env] // 20),
                optimal=optimal,
            )
    draw(plots.plot_zeta, "fig4_zeta.png", zeta)
    if ablation:
        draw(plots.plot_basis_ablation, "ablation_basis.png", ablation)
    if "reco" in envs:
        from pyprog.envs.reco import NSReco

        k = np.arange(plan.episodes["reco"])
        curves = {s: NSReco(speed=s).expected_rewards(k) for s in plan.speeds["reco"]}
        draw(plots.plot_item_rewards, "reco_items.png", curves)
    if policies is not None:
        speed, seed = f"{policies['speed']:g}", policies["seed"]
        days = {
            algo: {
                f"day {k}: CR {policies['actions'][algo][k - 1][0]:.1f}, "
                f"CF {policies['actions'][algo][k - 1][1]:.1f}": trace.bg
                for k, trace in by_day.items()
            }
            for algo, by_day in policies["glucose"].items()
        }
        draw(
            plots.plot_glucose_days,
            f"diabetes_glucose_speed{speed}.png",
            days,
            meals=[(m, g) for m, g in policies["meals"]],
            title=f"NS-Diabetes, speed {speed}, seed {seed}: blood glucose over one day, "
            "early and late policy",
        )
        draw(
            plots.plot_policy_actions,
            f"diabetes_cr_cf_speed{speed}.png",
            policies["actions"],
            bounds=[(3.0, 30.0), (5.0, 50.0)],
            title=f"NS-Diabetes, speed {speed}, seed {seed}: the policies' mean (CR, CF)",
            context=("patient mix α_k", policies["alpha"]),
        )
    return made
