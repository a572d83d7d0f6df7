"""Write a log of NS-Reco episodes as ``pyprog forecast`` reads it (the README's example).

A recommender explores NS-Reco (speed 2) uniformly at random, β(a) = 1/5, for
``--episodes`` episodes and logs each one as a CSV row. The candidate policy π to
evaluate recommends item 2 (index 1) with probability 0.8 and each other item with
0.05. Item 2 was the best item for most of the logged period, but its mean reward
peaks around episode 220 and then falls.

Run: ``python bench/reco_logs.py reco_logs.csv`` then ``pyprog forecast reco_logs.csv``.
"""

import argparse

import gymnasium as gym
import numpy as np

import pyprog  # noqa: F401  (registers the environments)

N_ITEMS = 5
CANDIDATE = np.full(N_ITEMS, 0.05)
CANDIDATE[1] = 0.8


def reco_logs(episodes: int = 420, speed: float = 2.0, seed: int = 0):
    """Logged (episode, step, reward, log_pi, log_beta) rows and the true J_π, J_β."""
    env = gym.make("pyprog/NSReco-v0", speed=speed)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    rows, J_pi, J_beta = [], [], []
    for episode in range(episodes):
        env.reset()
        item = int(rng.integers(N_ITEMS))  # β: uniform
        _, reward, _, _, info = env.step(item)
        rows.append((episode, 0, reward, np.log(CANDIDATE[item]), np.log(1.0 / N_ITEMS)))
        J_pi.append(float(CANDIDATE @ info["expected_rewards"]))
        J_beta.append(float(np.mean(info["expected_rewards"])))
    return rows, np.array(J_pi), np.array(J_beta)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--episodes", type=int, default=420)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delta", type=int, default=10, help="episodes to report the truth of")
    args = parser.parse_args()
    # play delta more episodes than are logged: their expected rewards are the truth
    rows, J_pi, J_beta = reco_logs(args.episodes + args.delta, seed=args.seed)
    rows = rows[: args.episodes]
    with open(args.path, "w") as fh:
        fh.write("episode,step,reward,log_pi,log_beta\n")
        for episode, step, reward, log_pi, log_beta in rows:
            fh.write(f"{episode},{step},{float(reward)!r},{float(log_pi)!r},{float(log_beta)!r}\n")
    print(f"{len(rows)} episodes written to {args.path}")
    future = slice(args.episodes, args.episodes + args.delta)
    print(
        f"truth over the next {args.delta} episodes: J(π) = {J_pi[future].mean():.4f}, "
        f"J(β) = {J_beta[future].mean():.4f}, advantage of π "
        f"{(J_pi[future] - J_beta[future]).mean():.4f}; over the logged episodes: advantage "
        f"{(J_pi[: args.episodes] - J_beta[: args.episodes]).mean():.4f}"
    )


if __name__ == "__main__":
    main()
