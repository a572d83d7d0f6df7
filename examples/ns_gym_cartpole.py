"""
Pro-WLS, ONPG and FTRL-PG on NS-Gym's CartPole whose gravity grows episode after episode
=========================================================================================

NS-Gym (PyPI ``ns-gym``) wraps Gymnasium's CartPole; its ``DiscreteScheduler({0})`` fires at
the first step of every episode and ``IncrementUpdate`` adds ``k`` to gravity each time, and
``persistent_params=True`` keeps the change across resets: gravity goes 9.8 → 9.8 + k·episodes,
whatever the learner does. pyprog sees NS-Gym's ``{"state": ...}`` observation through its
``"state"`` entry.

Install (the training guide, docs/guides/training.md, "NS-Gym")::

    pip install ".[nsgym]" && pip install --no-deps ns-gym

Run::

    python examples/ns_gym_cartpole.py    # 5 seeds × 200 episodes, about 35 s of CPU
    python examples/ns_gym_cartpole.py --out curve.png --seeds 10 --episodes 300

This example needs ns-gym, so the documentation build does not run it; the figure is the one
committed beside it (5 seeds × 200 episodes):

.. image:: ../../examples/ns_gym_cartpole.png
   :alt: mean return per episode of Pro-WLS, ONPG and FTRL-PG on NS-Gym's CartPole
"""

# sphinx_gallery_thumbnail_path = '../examples/ns_gym_cartpole.png'

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
from ns_gym.schedulers import DiscreteScheduler
from ns_gym.update_functions import IncrementUpdate
from ns_gym.wrappers import NSClassicControlWrapper

import pyprog

ALGOS = ("pro-wls", "onpg", "ftrl-pg")
GRAVITY_STEP = 0.05  # m/s² added at the start of every episode


def heavier_world(k: float = GRAVITY_STEP) -> gym.Env:
    """CartPole-v1 whose gravity grows by ``k`` per episode (NS-Gym)."""
    tunable = {"gravity": IncrementUpdate(DiscreteScheduler({0}), k=k)}
    return NSClassicControlWrapper(gym.make("CartPole-v1"), tunable, persistent_params=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default="examples/ns_gym_cartpole.png")
    args = parser.parse_args()

    # pyprog's default setting; a buffer of the last 100 episodes keeps CartPole's long
    # episodes cheap (every inner step re-weights every stored step)
    hyper = {"buffer_size": 100}
    returns = {}
    for algo in ALGOS:
        start = time.perf_counter()
        runs = [
            pyprog.run(heavier_world, algo, seed=s, episodes=args.episodes, hyper=hyper)
            for s in range(args.seeds)
        ]
        returns[algo] = np.stack([r.returns for r in runs])
        first, last = returns[algo][:, :50].mean(axis=1), returns[algo][:, -50:].mean(axis=1)
        print(
            f"{algo:<8} mean return: first 50 episodes {first.mean():6.1f}, last 50 "
            f"{last.mean():6.1f} ± {last.std(ddof=1) / np.sqrt(args.seeds):.1f} "
            f"({args.seeds} seeds, {time.perf_counter() - start:.0f} s)"
        )
    regret = pyprog.surrogate_regret(returns)
    for algo, values in regret.items():
        mean, se = pyprog.stats.summary.mean_se(values)
        print(f"{algo:<8} surrogate regret {mean:.3f} ± {se:.3f}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    window = 10
    kernel = np.ones(window) / window
    episodes = np.arange(window, args.episodes + 1)
    for algo, curves in returns.items():
        smooth = np.convolve(curves.mean(axis=0), kernel, mode="valid")
        ax.plot(episodes, smooth, label=algo)
    ax.set_xlabel("episode")
    ax.set_ylabel(f"return (mean of {args.seeds} seeds, {window}-episode average)")
    ax.set_title(f"NS-Gym CartPole, gravity +{GRAVITY_STEP:.2f} m/s² per episode")
    top = ax.secondary_xaxis(
        "top",
        functions=(lambda k: 9.8 + GRAVITY_STEP * k, lambda g: (g - 9.8) / GRAVITY_STEP),
    )
    top.set_xlabel("gravity (m/s²)")
    ax.legend()
    fig.savefig(args.out, dpi=110)
    print(f"figure: {args.out}")


if __name__ == "__main__":
    main()
