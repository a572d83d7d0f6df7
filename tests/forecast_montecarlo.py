"""Monte Carlo checks of the forecast intervals and the safety test (issue 10).

Synthetic off-policy data whose future is known: a two-armed problem of ``H`` steps per
episode, logged by a uniform behaviour policy β = (0.5, 0.5) and evaluated for a
candidate π = (0.3, 0.7). The mean reward of arm a drifts with the normalised time x of
the episode, ``μ_a(x)``, and the noise grows with time (heteroskedastic, on top of the
importance weights' own). Then ``J_π(x) = H (0.3 μ_0 + 0.7 μ_1)`` and
``J_β(x) = H (μ_0 + μ_1) / 2`` exactly, and so is the mean over the next δ episodes that
the forecasts target.

The tests import these functions; ``python tests/forecast_montecarlo.py OUT`` runs the
README's tables (coverage and the safety test's power curve) and draws the figure.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import numpy as np

from pyprog import episode_ratios, nis_forecast, nwis_forecast, pdis, safety_test, time_index

PI1, BETA1 = 0.7, 0.5  # probability of arm 1 under π and under β
STEPS = 3
DELTA = 5


def noise_sd(x):
    """Heteroskedastic reward noise: sd 0.5 at the start, 1.5 at the end."""
    return 0.5 + 1.0 * x


def mu0_in_span(x):
    return 0.3 + 0.4 * np.cos(np.pi * x)


def mu1_in_span(x):
    return 0.5 - 0.3 * np.cos(2 * np.pi * x) + 0.2 * np.cos(3 * np.pi * x)


def mu1_outside_span(x):
    """``mu1_in_span`` plus a small cosine that no Fourier basis with d <= 5 holds."""
    return mu1_in_span(x) + 0.1 * np.cos(5 * np.pi * x)


def logged_episodes(rng, n, mu0: Callable, mu1: Callable, delta=DELTA, steps=STEPS):
    """``(log_pi, log_beta, rewards)`` of n episodes, and π's true future mean.

    Returns
    -------
    log_pi, log_beta, rewards : ndarray, shape (n, steps)
    truth : float
        ``mean_{Δ=1..δ} J_π(x_{n+Δ})``.
    """
    x, x_future = time_index(n, delta)
    arm1 = rng.random((n, steps)) < BETA1
    mean = np.where(arm1, mu1(x)[:, None], mu0(x)[:, None])
    rewards = mean + noise_sd(x)[:, None] * rng.standard_normal((n, steps))
    log_pi = np.log(np.where(arm1, PI1, 1 - PI1))
    log_beta = np.log(np.where(arm1, BETA1, 1 - BETA1))
    truth = steps * ((1 - PI1) * mu0(x_future) + PI1 * mu1(x_future)).mean()
    return log_pi, log_beta, rewards, float(truth)


def coverage(n, alphas, reps, seed=0, estimator="nis", basis="fourier", d=5, mu0=None, mu1=None):
    """Empirical coverage of the two-sided intervals of the true future mean.

    Returns
    -------
    dict
        ``{alpha: {"coverage", "mc_se", "width"}}`` (width: mean interval width).
    """
    mu0, mu1 = mu0 or mu0_in_span, mu1 or mu1_in_span
    rng = np.random.default_rng(seed)
    hits = {a: 0 for a in alphas}
    width = {a: 0.0 for a in alphas}
    for rep in range(reps):
        log_pi, log_beta, rewards, truth = logged_episodes(rng, n, mu0, mu1)
        for a in alphas:
            if estimator == "nis":
                J = pdis(log_pi, log_beta, rewards).J
                f = nis_forecast(J, DELTA, basis, d, alpha=a, n_boot=1000, random_state=rep)
            else:
                lam, _ = episode_ratios(log_pi, log_beta)
                f = nwis_forecast(
                    rewards.sum(axis=1),
                    lam,
                    DELTA,
                    basis,
                    d,
                    alpha=a,
                    n_boot=1000,
                    random_state=rep,
                )
            hits[a] += f.low <= truth <= f.high
            width[a] += f.high - f.low
    out = {}
    for a in alphas:
        c = hits[a] / reps
        out[a] = {
            "coverage": c,
            "mc_se": float(np.sqrt(c * (1 - c) / reps)),
            "width": width[a] / reps,
        }
    return out


def safety_episodes(rng, n, future_diff, drift=0.5, delta=DELTA, steps=STEPS):
    """Episodes where ``J_π − J_β = future_diff + drift (cos πx − c*)``.

    ``c*`` is the mean of ``cos πx`` over the next δ episodes, so π's true advantage over
    the next δ episodes is exactly ``future_diff``, while its past advantage is about
    ``future_diff + 1.04 drift`` (π was better in the past).
    """
    x, x_future = time_index(n, delta)
    c_star = np.cos(np.pi * x_future).mean()

    def diff(t):
        return future_diff + drift * (np.cos(np.pi * t) - c_star)

    # J_π − J_β = steps (PI1 − BETA1)(μ_1 − μ_0)
    def mu0(t):
        return 0.5 + 0.3 * np.cos(np.pi * t)

    def mu1(t):
        return mu0(t) + diff(t) / (steps * (PI1 - BETA1))

    log_pi, log_beta, rewards, _ = logged_episodes(rng, n, mu0, mu1, delta, steps)
    return log_pi, log_beta, rewards


def acceptance(n, future_diff, reps, alpha=0.05, seed=0, basis="fourier", d=3, drift=0.5):
    """Acceptance rates of the safety test and of the stationary t-test."""
    rng = np.random.default_rng(seed)
    accepted = stationary = 0
    for rep in range(reps):
        log_pi, log_beta, rewards = safety_episodes(rng, n, future_diff, drift)
        test = safety_test(
            log_pi,
            log_beta,
            rewards,
            delta=DELTA,
            basis=basis,
            d=d,
            alpha=alpha,
            n_boot=1000,
            random_state=rep,
        )
        accepted += test.accept
        stationary += test.stationary_accept
    return accepted / reps, stationary / reps


def main(out_dir: str) -> None:  # pragma: no cover - the README's numbers
    import pathlib

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reps = 2000
    results = {"reps": reps, "coverage": [], "safety": []}
    cases = [
        ("NIS, trend in span (fourier d=5)", "nis", 5, mu1_in_span),
        ("NWIS, trend in span (fourier d=5)", "nwis", 5, mu1_in_span),
        ("NIS, small part outside span (d=5, + 0.1 cos 5πx)", "nis", 5, mu1_outside_span),
        ("NIS, trend outside span (fourier d=2)", "nis", 2, mu1_in_span),
    ]
    start = time.time()
    for label, est, d, mu1 in cases:
        for n in (50, 200, 1000):
            cov = coverage(n, (0.10, 0.05), reps, seed=n, estimator=est, d=d, mu1=mu1)
            row = {"case": label, "N": n, **{f"{1 - a:.0%}": v for a, v in cov.items()}}
            results["coverage"].append(row)
            print(json.dumps(row), f"{time.time() - start:.0f}s", flush=True)
    for n in (200, 1000):
        for diff in (-0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5):
            rate, stationary = acceptance(n, diff, 1000, seed=int(1000 * (diff + 1)) + n)
            row = {"N": n, "future_diff": diff, "accept": rate, "stationary_accept": stationary}
            results["safety"].append(row)
            print(json.dumps(row), f"{time.time() - start:.0f}s", flush=True)
    (out / "montecarlo.json").write_text(json.dumps(results, indent=1))
    plot_power(results["safety"], out / "safety_power.png")


def plot_power(rows, path):  # pragma: no cover - the README's figure
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for n, color in ((200, "tab:blue"), (1000, "tab:red")):
        sel = [r for r in rows if r["N"] == n]
        diff = [r["future_diff"] for r in sel]
        ax.plot(diff, [r["accept"] for r in sel], "o-", color=color, label=f"safety_test, N={n}")
        ax.plot(
            diff,
            [r["stationary_accept"] for r in sel],
            "s:",
            color=color,
            alpha=0.6,
            label=f"stationary t-test, N={n}",
        )
    ax.axhline(0.05, color="grey", lw=0.8, ls=":")
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("true future advantage of π over β (next 5 episodes)")
    ax.set_ylabel("acceptance rate")
    ax.set_title("alpha = 0.05; in the past π was better by ≈ 0.52 more", fontsize="medium")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1] if len(sys.argv) > 1 else "montecarlo")
