"""
A day of the NS-Diabetes patient
================================

NS-Diabetes plays one day of an in-silico type-1 diabetic per episode. Its patient is the
13-state UVa/Padova model of simglucose, integrated in numba. :func:`pyprog.simulate_patient`
runs it on its own: here adult#001 eats three meals of 60 g on its own basal insulin, and then
the same day with a meal bolus (a dose of insulin at each meal).
"""

import matplotlib.pyplot as plt
import numpy as np

import pyprog

# %%
# Inputs, one value per minute: announced carbohydrates (g/min) and insulin (U/min).
# :func:`pyprog.basal_rate` is the rate that holds this fasting patient at its steady state.
# The first call compiles the model (a few seconds, cached on disk afterwards).

cho = np.zeros(1440)
meals = [480, 720, 1080]  # breakfast, lunch, dinner
cho[meals] = 60.0
basal = np.full(1440, pyprog.basal_rate("adult#001"))
bolus = basal.copy()
bolus[meals] += 60.0 / 10.0  # 1 U per 10 g of carbohydrate, given with the meal

traces = {
    "basal only": pyprog.simulate_patient("adult#001", cho, basal),
    "basal + meal bolus": pyprog.simulate_patient("adult#001", cho, bolus),
}
for name, trace in traces.items():
    in_range = np.mean((trace.bg >= 70) & (trace.bg <= 180))
    print(
        f"{name:20s} BG {trace.bg.min():5.1f}–{trace.bg.max():5.1f} mg/dL, "
        f"{in_range:.0%} of the day in 70–180"
    )

# %%
# Blood glucose over the day, with the usual target range.

fig, ax = plt.subplots(figsize=(7, 4))
ax.axhspan(70, 180, color="0.92", label="70–180 mg/dL")
for name, trace in traces.items():
    ax.plot(np.arange(trace.bg.size) / 60, trace.bg, label=name)  # bg: before minute 0, after each
for meal in meals:
    ax.axvline(meal / 60, color="0.6", lw=0.8, ls=":")
ax.set_xlabel("hour of the day")
ax.set_ylabel("blood glucose (mg/dL)")
ax.set_xticks(range(0, 25, 4))
ax.legend()
fig.tight_layout()
plt.show()
