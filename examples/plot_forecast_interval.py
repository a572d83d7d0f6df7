"""
Forecast a policy's future performance from logged data
=======================================================

A recommender explored NS-Reco (speed 2) at random for 480 episodes, logging each episode's
reward and the log-probability of its recommendation. A candidate policy π recommends item 2
with probability 0.8: that item was the best one for most of the logged period, but its mean
reward has been falling since about episode 220.

From the log alone we estimate how π would have done in every past episode (PDIS), forecast
its mean performance over the next 10 episodes with NIS and NWIS and their 95 % intervals, and
ask :func:`pyprog.safety_test` whether π may replace the random recommender. Because NS-Reco
reports its items' expected rewards, we can compare with the truth.
"""

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np

import pyprog

# %%
# The logged data
# ---------------
# One step per episode, so the (N, H) arrays have H = 1. ``info["expected_rewards"]`` is used
# only for the truth, never by the estimators.

N, DELTA = 480, 10
candidate = np.array([0.05, 0.8, 0.05, 0.05, 0.05])
env = gym.make("pyprog/NSReco-v0", speed=2)
env.reset(seed=0)
rng = np.random.default_rng(0)
items, rewards, truth_pi, truth_beta = [], [], [], []
for _ in range(N + DELTA):
    env.reset()
    items.append(int(rng.integers(5)))  # β: uniform over the 5 items
    _, reward, _, _, info = env.step(items[-1])
    rewards.append([reward])
    truth_pi.append(candidate @ info["expected_rewards"])
    truth_beta.append(np.mean(info["expected_rewards"]))
items, rewards = np.array(items[:N]), np.array(rewards[:N])
truth_pi, truth_beta = np.array(truth_pi), np.array(truth_beta)
log_pi = np.log(candidate[items])[:, None]  # log π(a|s) of the logged actions, (N, 1)
log_beta = np.full((N, 1), np.log(1 / 5))  # log β(a|s), (N, 1)

# %%
# Forecasts with intervals
# ------------------------
# NIS fits the per-episode PDIS estimates by ordinary least squares over time; NWIS fits the
# returns weighted by the importance ratios. ``alpha=0.05`` adds a 95 % wild-bootstrap interval.

J = pyprog.pdis(log_pi, log_beta, rewards).J
nis = pyprog.nis_forecast(J, delta=DELTA, basis="fourier", d=3, alpha=0.05, random_state=0)
lam, _ = pyprog.episode_ratios(log_pi, log_beta)
nwis = pyprog.nwis_forecast(rewards[:, 0], lam, delta=DELTA, basis="fourier", d=3, alpha=0.05)
future = truth_pi[N:].mean()
print(f"truth over the next {DELTA} episodes: {future:.3f}")
for name, f in (("NIS", nis), ("NWIS", nwis)):
    print(f"{name:4s} {f.value:.3f}, 95% interval [{f.low:.3f}, {f.high:.3f}]")

# %%
# The running mean of the PDIS estimates, the truth, and each forecast with its interval.

window = 40
running = np.convolve(J, np.ones(window) / window, mode="valid")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(np.arange(N), truth_pi[:N], color="black", lw=1, label="true J(π)")
ax.plot(np.arange(window - 1, N), running, color="C0", label=f"PDIS, mean of {window}")
ax.axvspan(N, N + DELTA, color="0.9")
for offset, name, f, color in ((-3, "NIS", nis, "C1"), (3, "NWIS", nwis, "C2")):
    ax.errorbar(
        N + DELTA / 2 + offset,
        f.value,
        yerr=[[f.value - f.low], [f.high - f.value]],
        fmt="o",
        color=color,
        capsize=3,
        label=f"{name} forecast, 95% interval",
    )
ax.plot(N + DELTA / 2, future, "k*", ms=10, label="truth, next 10 episodes")
ax.set_xlabel("episode")
ax.set_ylabel("performance of π")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()

# %%
# The safety test
# ---------------
# π did better than β over the logged period, so a stationary t-test would deploy it. The
# safety test forecasts the advantage ``D_i = Ĵ_i(π) − G_i`` instead, and accepts only if its
# one-sided lower bound is above 0.

test = pyprog.safety_test(
    log_pi, log_beta, rewards, delta=DELTA, basis="fourier", d=3, alpha=0.05, random_state=0
)
print(f"past advantage {test.past_mean:.3f}: stationary t-test accepts {test.stationary_accept}")
print(f"forecast advantage {test.value:.3f}, lower bound {test.low:.3f}: accepts {test.accept}")
print(f"true advantage over the next {DELTA} episodes: {(truth_pi - truth_beta)[N:].mean():.3f}")

fig, ax = plt.subplots(figsize=(7, 3))
D = test.differences  # D_i, (N,)
ax.plot(
    np.arange(window - 1, N),
    np.convolve(D, np.ones(window) / window, "valid"),
    label="D, mean of 40",
)
ax.plot(np.arange(N + DELTA), truth_pi - truth_beta, color="black", lw=1, label="true advantage")
ax.axhline(0, color="0.5", lw=0.8)
bound = [[test.value - test.low], [0]]
ax.errorbar(N + DELTA / 2, test.value, yerr=bound, fmt="o", color="C3", capsize=3, label="forecast")
ax.set_xlabel("episode")
ax.set_ylabel("advantage of π over β")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()
