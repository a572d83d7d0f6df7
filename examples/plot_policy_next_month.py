"""
The policy to run next month, from a year of logged rounds
==========================================================

A shop logged a year of recommendations (2023) under its softmax policy π₀: for each
visit, the visitor's features, the time, the item shown, its probability and the reward.
How much each item pays moves with the time of year, and each item moves its own way: what
suited visitors in the summer is not what will suit them in February.

:func:`pyprog.learn_for_future` learns the policy to run over February 2024 by following
the gradient of its forecast value there (Prognosticator's idea, on rounds), forecasts it
with an interval on rounds it was not learned on, tests it against the logging policy, and
learns the baselines the same way on the same log: greedy on a reward model at the target
time, IPS-PG and DR-PG (the stationary objectives) and OPFV-PG (Shimizu et al., KDD 2025),
with its time feature known (the months) and chosen from the data.
The simulator knows every policy's true value in February, so we can look.
"""

import matplotlib.pyplot as plt
import numpy as np

import pyprog

# %%
# A year of rounds
# ----------------

rng = np.random.default_rng(1)
n, dim, n_items = 8000, 5, 6
suits = rng.normal(0, 1 / np.sqrt(dim), (dim, n_items))  # how items suit visitors
phase = rng.uniform(0, 2 * np.pi, n_items)  # when in the year each item is in season


def mean_reward(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """q(x, t, ·): the items' fit to the visitor, plus each item's own yearly season."""
    season = np.sin(2 * np.pi * t[:, None] / 365.25 + phase[None, :])
    return x @ suits + 0.8 * season


t = np.sort(rng.uniform(0, 365, n)) + 19358.0  # days since 1970: 2023-01-01 on
x = rng.normal(size=(n, dim))
logits = x @ suits
p0 = np.exp(logits - logits.max(1, keepdims=True))
p0 /= p0.sum(1, keepdims=True)
item = (rng.random(n)[:, None] > np.cumsum(p0, axis=1)).sum(axis=1).clip(max=n_items - 1)
rows = np.arange(n)
reward = mean_reward(x, t)[rows, item] + rng.normal(0, 1, n)
stamps = np.datetime64("1970-01-01") + (t * 86_400).astype("timedelta64[s]")
log = {"time": stamps, "action": item, "reward": reward, "pscore": p0[rows, item]}
log.update({f"x{j}": x[:, j] for j in range(dim)})

# %%
# Learn the policy for February 2024
# ----------------------------------

res = pyprog.learn_for_future(log, over=("2024-02-01", "2024-03-01"))
print(res)

# %%
# Every policy's true value over February
# ---------------------------------------
# By Monte Carlo over 50,000 fresh visitors and every day of the month; 0 is the logging
# policy's value there and 1 the best policy's (each visitor their best item).

feb = np.arange(19754.5, 19783.5)  # the days of February 2024, at noon
xs = np.random.default_rng(2).normal(size=(50_000, dim))
q_feb = np.mean([mean_reward(xs, np.full(len(xs), day)) for day in feb], axis=0)
logging = (np.exp(xs @ suits) / np.exp(xs @ suits).sum(1, keepdims=True) * q_feb).sum(1).mean()
best = q_feb.max(axis=1).mean()
policies = {res.learner: (res.policy, res.forecast)} | res.baselines
names = list(policies)
true = np.array([(p.probabilities(xs) * q_feb).sum(1).mean() for p, _ in policies.values()])
fc = np.array([f.value for _, f in policies.values()])
low = np.array([f.low for _, f in policies.values()])
high = np.array([f.high for _, f in policies.values()])
for name, v in zip(names, true, strict=True):
    print(f"{name:>15}: true value {v:.3f} ({(v - logging) / (best - logging):.0%} of the way "
          f"from the logging policy to the best)")  # fmt: skip

# %%
# Plot
# ----
# Each learner's forecast with its 90 % prediction interval (from rounds its policy was
# not learned on), and the truth.

fig, ax = plt.subplots(figsize=(7.5, 3.6))
pos = np.arange(len(names))
ax.errorbar(pos, fc, yerr=[fc - low, high - fc], fmt="o", capsize=4, label="forecast, 90 %")
ax.plot(pos, true, "k_", ms=22, mew=2, label="true value")
ax.axhline(logging, color="tab:red", ls=":", label="logging policy")
ax.axhline(best, color="tab:green", ls="--", label="best policy")
ax.set_xticks(pos, names)
ax.set_ylabel("value over February 2024")
ax.set_title(f"safety test: {res.verdict.split(':')[0]}", fontsize=10)
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
plt.show()
