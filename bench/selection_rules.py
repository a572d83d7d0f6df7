"""How the choice among candidates trades the drift shapes against each other (issue 18).

The Monte Carlo logs of ``tests/selection_montecarlo.py`` (N = 300, δ = 5, 200 logs per
shape), point forecasts only (no interval): the RMSE of a selection rule's forecast over the
RMSE of the best fixed candidate in hindsight, for NIS and NWIS. Rules:

* ``se=K``: the first candidate (least noisy forecast first, ``selection.noise_order``)
  within K standard errors of the best backtest loss; ``se=1`` is pyprog's rule, ``se=0``
  the argmin; ``se=K/list`` takes the first in the order of ``DEFAULT_CANDIDATES`` instead
  (pyprog's rule before the noise order);
* ``ewa=T``: no choice, a mixture ``Σ_c p_c f_c`` with ``p_c ∝ exp(−(L_c − L_min)/(T s²))``,
  ``L_c`` the candidate's summed backtest loss and ``s²`` the targets' noise variance
  (exponentially weighted aggregation, Leung & Barron 2006); still linear in the estimates;
* ``lepski=K``: Lepski's rule, the candidates ordered by the noise of their forecast ``‖ζ‖``:
  the first whose forecast is within K noise standard errors (``s‖ζ_c − ζ_j‖``, ``s²`` the
  model-free noise variance) of every noisier candidate's;
* ``stack=T``: no choice, stacking (Breiman 1996): the convex weights ``a`` (``a >= 0``,
  ``Σa = 1``) whose mixture of the candidates' backtest forecasts best fits the backtest
  targets (the same weighted squared error), with a ridge ``T s² ‖a − e‖²`` toward the
  one-SE rule's choice ``e`` (``stack=0``: plain stacking); still linear in the estimates;
* ``lof=A``: the one-SE rule among the candidates that pass a lack-of-fit test: a global basis
  is dropped when an F-test of its in-sample fit to the NIS estimates ``λG`` against the
  richest basis (``fourier(d=13)``) rejects it at level A (structure it misses); the local
  forecasters are always kept;
* ``shrink=T``: no choice, positive-part James–Stein shrinkage (James & Stein 1961) from the
  one-SE rule's candidate ``s`` toward the best backtest ``r``:
  ``f_s + (1 − T²/z²)₊ (f_r − f_s)`` with ``z`` the difference over its noise s.d.
  ``ŝ‖ζ_r − ζ_s‖`` (``ŝ²`` the model-free noise variance). In the ideal two-candidate
  problem of ``bench/selection_bound.py`` it beats every choice on four of the six pairs of
  shapes, the binding one among them;
* ``median=K``: the candidate whose forecast is nearest the median forecast of the candidates
  within K standard errors of the best backtest loss (the plausible set's centre);
* ``gp=1``: empirical Bayes with a generic prior: a Gaussian process (constant + linear +
  squared-exponential kernel, noise variance ``s²/w_i``) fitted to the log by maximum
  marginal likelihood (Rasmussen & Williams 2006, ch. 5), then the candidate nearest its
  posterior mean of the next δ values: the Bayes choice under that prior. Slow (an
  optimisation per log, about 1.4 s: an hour for the table's 2,400 logs on one core);
* ``oracle=F``: not a rule but a bound on what backtests can tell: the argmin of the
  backtest loss against the *true* values of the targets (noise-free), over the last
  ``1 − F`` of the origins (``oracle=0`` all of them). Where it misses the bar, the
  criterion itself, not the noise of its targets, is the limit.

Run: ``python bench/selection_rules.py [REPS [SEED [RULE,RULE...]]]`` (about a minute per rule
on one core); ``python bench/selection_rules.py paired RULE AGAINST [REPS [SEED,...]]`` for
two rules' squared errors on the same logs with a paired t-test (e.g. ``paired se=1
se=1/list 200 1,2,3``: the noise order against the list order); ``python
bench/selection_rules.py plot TABLE.md OUT.png`` to draw a table of rules as the trade-off
between the shapes: the worst ratio on the stationary log and the linear trend against the
worst on the drifting shapes (``bench/results/selection_rules/``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from selection_montecarlo import DELTA, SHAPES, N, simulate

from pyprog.forecast import selection
from pyprog.forecast.forecasters import BasisForecaster, parse_forecaster
from pyprog.forecast.selected_intervals import forecast_weights, noise_variance

RULES = (
    *("se=1", "se=1/list", "se=0.5", "se=0", "ewa=4", "ewa=16"),
    *("lepski=1", "lepski=2", "lepski=3", "oracle=0", "oracle=0.5"),
)


def _forecasts(cands, J, lam, G, est):
    if est == "nis":
        return np.array([c.weights(N, DELTA) @ J for c in cands])
    return np.array([c.nwis(G, lam, DELTA)[0] for c in cands])


def rule_forecast(rule: str, est: str, J, lam, G, truths=None) -> float:
    """The forecast of one rule on one log (``truths``: the true J(t), for ``oracle``)."""
    y, ratios = (J, None) if est == "nis" else (G, lam)
    kind, value = rule.split("=")
    value, _, order = value.partition("/")
    sel = selection.select_forecaster(y, DELTA, ratios)
    f = _forecasts(sel.eligible, J, lam, G, est)
    w = np.ones(N) if ratios is None else ratios
    targets = selection.target_rows(sel.origins, DELTA, N, w)
    losses = selection.origin_losses(y, sel.backtest, targets, len(sel.eligible))
    if kind == "se":
        ok = _within_se(sel, losses, float(value))
        rank = np.arange(len(ok))  # eligible is in noise order
        if order == "list":
            listed = [str(c) for c in selection.DEFAULT_CANDIDATES]
            rank = np.argsort([listed.index(str(c)) for c in sel.eligible], kind="stable")
        return float(f[rank[int(np.argmax(ok[rank]))]])
    if kind == "oracle":
        m = len(sel.origins)
        forecasts = (sel.backtest @ y).reshape(len(sel.eligible), m)
        # targets: episodes o+1..o+δ, i.e. truths[o : o+δ] (episode t is truths[t−1])
        true_means = np.array([truths[o : o + DELTA].mean() for o in sel.origins])
        keep = np.arange(m) >= int(float(value) * m)
        loss = np.square(forecasts[:, keep] - true_means[keep]).mean(axis=1)
        return float(f[int(np.argmin(loss))])
    if kind == "lepski":
        return lepski(sel.eligible, f, y, ratios, float(value))
    if kind == "shrink":
        simple = int(np.argmax(_within_se(sel, losses, 1.0)))
        rich = int(np.argmax(_within_se(sel, losses, 0.0)))
        return shrink(sel.eligible, f, y, ratios, simple, rich, float(value))
    if kind == "median":
        plausible = f[_within_se(sel, losses, float(value))]
        return float(plausible[np.argmin(np.abs(plausible - np.median(plausible)))])
    if kind == "gp":
        m = gp_forecast(y, w, noise_variance(y, ratios))
        return float(f[np.nanargmin(np.abs(f - m))])
    if kind in ("stack", "lof"):
        ok = _within_se(sel, losses, 1.0)
        if kind == "lof":
            ok &= fits_without_structure(sel.eligible, J, float(value))
            if not ok.any():  # the argmin, if no candidate passes
                ok = _within_se(sel, losses, 0.0)
            return float(f[int(np.argmax(ok))])
        weights = stacking_weights(sel, y, w, s2=noise_variance(y, ratios), ridge=float(value),
                                   toward=int(np.argmax(ok)))  # fmt: skip
        return float(weights @ f)
    total = losses[0].sum(axis=1)
    s2 = noise_variance(y, ratios) * (1.0 if ratios is None else float(np.mean(ratios)))
    logit = -(total - total.min()) / (float(value) * max(s2, 1e-300))
    p = np.exp(logit - logit.max())
    return float(p @ f / p.sum())


def lepski(cands, f, y, ratios, kappa: float) -> float:
    """Lepski's rule: candidates ordered by their forecast's noise ‖ζ‖; the first whose
    forecast is within ``kappa`` noise s.e. (``s‖ζ_c − ζ_j‖``) of every noisier one's."""
    Z, usable = forecast_weights(cands, N, DELTA, ratios)
    s = math.sqrt(noise_variance(y, ratios))
    usable &= np.isfinite(f)
    order = [i for i in np.argsort(np.linalg.norm(Z, axis=1)) if usable[i]]
    for a, i in enumerate(order):
        if all(abs(f[i] - f[j]) <= kappa * s * np.linalg.norm(Z[i] - Z[j]) for j in order[a + 1 :]):
            return float(f[i])
    return float(f[order[-1]])


def shrink(cands, f, y, ratios, simple: int, rich: int, t: float) -> float:
    """Positive-part James–Stein from the simple candidate toward the rich one:
    ``f_s + (1 − t²/z²)₊ (f_r − f_s)``, ``z = (f_r − f_s) / (s‖ζ_r − ζ_s‖)``."""
    if simple == rich:
        return float(f[simple])
    Z, _ = forecast_weights([cands[simple], cands[rich]], N, DELTA, ratios)
    sd = math.sqrt(noise_variance(y, ratios)) * float(np.linalg.norm(Z[1] - Z[0]))
    d = float(f[rich] - f[simple])
    keep = max(0.0, 1.0 - (t * sd / d) ** 2) if d != 0.0 else 0.0
    return float(f[simple] + keep * d)


def gp_forecast(y, w, s2: float) -> float:
    """Posterior mean of the mean of the next δ values under a Gaussian process prior
    ``k(t, t') = a² + b² (t − 1)(t' − 1) + c² exp(−(t − t')²/2ℓ²)`` on ``t = i/n``, with
    noise variance ``s²/w_i``; ``(a, b, c, ℓ)`` maximise the marginal likelihood (best of
    four starts in ℓ)."""
    from scipy.linalg import cho_factor, cho_solve
    from scipy.optimize import minimize

    n = len(y)
    t, future = np.arange(1, n + 1) / n, np.arange(n + 1, n + DELTA + 1) / n
    noise = s2 / np.maximum(w, 1e-12)
    mu = float(w @ y / w.sum())
    yc = y - mu

    def kernel(p, a, b):
        s0, s1, sf, ell = np.exp(p)
        sq = np.subtract.outer(a, b) ** 2
        return s0**2 + s1**2 * np.outer(a - 1, b - 1) + sf**2 * np.exp(-0.5 * sq / ell**2)

    def nll(p):  # −log marginal likelihood, up to a constant
        try:
            c = cho_factor(kernel(p, t, t) + np.diag(noise), lower=True)
        except np.linalg.LinAlgError:
            return 1e10
        return 0.5 * yc @ cho_solve(c, yc) + np.log(np.diag(c[0])).sum()

    bounds = [(-8, 3), (-8, 3), (-8, 3), (math.log(0.01), math.log(10))]
    fits = [minimize(nll, np.log([0.3, 0.3, 0.5, ell]), method="L-BFGS-B", bounds=bounds)
            for ell in (0.03, 0.1, 0.3, 1.0)]  # fmt: skip
    p = min(fits, key=lambda r: r.fun).x
    k_star = kernel(p, future, t).mean(axis=0)
    return mu + float(k_star @ np.linalg.solve(kernel(p, t, t) + np.diag(noise), yc))


def _within_se(sel, losses, k: float) -> np.ndarray:
    """Per eligible candidate: its mean backtest loss is within ``k`` standard errors of the
    best (the one-SE rule's test; ``k = 0``: the best only)."""
    spacing = max(1, int(sel.origins[1] - sel.origins[0]))
    gap, se = selection.loss_gaps(losses, math.ceil(DELTA / spacing))
    return np.isfinite(gap[0]) & ((gap[0] <= k * se[0]) | (gap[0] == 0.0))


def stacking_weights(sel, y, w, s2: float, ridge: float, toward: int) -> np.ndarray:
    """Convex weights (n_candidates,) of the candidates' backtest forecasts that best fit the
    backtest targets, ``Σ_o Σ_j w_j (y_j − Σ_c a_c f_{c,o})² + ridge s² ‖a − e_toward‖²``."""
    from scipy.optimize import nnls

    m, c = len(sel.origins), len(sel.eligible)
    forecasts = (sel.backtest @ y).reshape(c, m)  # f_{c,o}
    rows, rhs = [], []
    for k, o in enumerate(sel.origins):
        root = np.sqrt(w[o : o + DELTA])
        rows.append(root[:, None] * forecasts[:, k][None, :])
        rhs.append(root * y[o : o + DELTA])
    A, b = np.vstack(rows), np.concatenate(rhs)
    target = np.zeros(c)
    target[toward] = 1.0
    penalty = math.sqrt(ridge * s2) * np.eye(c)
    big = 1e3 * math.sqrt(np.mean(A**2))  # Σa = 1 as a heavily weighted row
    a, _ = nnls(np.vstack([A, penalty, big * np.ones((1, c))]),
                np.concatenate([b, penalty @ target, [big]]))  # fmt: skip
    return a / a.sum()


def fits_without_structure(cands, J, alpha: float) -> np.ndarray:
    """Per candidate: False for a global basis whose fit to ``J`` an F-test against the richest
    basis among ``cands`` rejects at level ``alpha``; True otherwise (local forecasters)."""
    import scipy.stats

    n = len(J)
    designs = {
        i: c.design(n, DELTA)[0] for i, c in enumerate(cands) if isinstance(c, BasisForecaster)
    }
    rich = max(designs, key=lambda i: designs[i].shape[1])

    def rss(i):
        beta, *_ = np.linalg.lstsq(designs[i], J, rcond=None)
        r = J - designs[i] @ beta
        return float(r @ r)

    k_rich, rss_rich = designs[rich].shape[1], rss(rich)
    keep = np.ones(len(cands), dtype=bool)
    for i, phi in designs.items():
        k = phi.shape[1]
        if k < k_rich:
            F = ((rss(i) - rss_rich) / (k_rich - k)) / (rss_rich / (n - k_rich))
            keep[i] = scipy.stats.f.sf(F, k_rich - k, n - k_rich) >= alpha
    return keep


def main(reps: int = 200, seed: int = 1, rules=RULES) -> None:
    cands = [parse_forecaster(c) for c in selection.DEFAULT_CANDIDATES]
    print("| rule | " + " | ".join(f"{s.split(' (')[0]} NIS / NWIS" for s in SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for rule in rules:
        cells = []
        for shape in SHAPES.values():
            rng = np.random.default_rng(seed)
            err = {"nis": [], "nwis": []}
            fixed = {"nis": [], "nwis": []}
            for _ in range(reps):
                J, lam, G, truth, truths = simulate(rng, shape, series=True)
                for est in ("nis", "nwis"):
                    err[est].append(rule_forecast(rule, est, J, lam, G, truths) - truth)
                    fixed[est].append(_forecasts(cands, J, lam, G, est) - truth)
            ratio = []
            for est in ("nis", "nwis"):
                best = np.sqrt(np.mean(np.square(fixed[est]), axis=0)).min()
                ratio.append(np.sqrt(np.mean(np.square(err[est]))) / best)
            cells.append(f"{ratio[0]:.2f} / {ratio[1]:.2f}")
        print(f"| {rule} | " + " | ".join(cells) + " |", flush=True)


def paired(rule: str, against: str, reps: int = 200, seeds=(1, 2, 3)) -> None:
    """Squared forecast errors of two rules on the same logs: MSE ratio and paired t-test.

    Per shape and estimator, ``reps`` logs of each seed; the two-sided p-value of a paired
    t-test of the per-log squared errors (``scipy.stats.ttest_rel``).
    """
    import scipy.stats

    print(f"| shape | est. | MSE {against} | MSE {rule} | ratio | paired t p |")
    print("|---|---|---|---|---|---|")
    for name, shape in SHAPES.items():
        sq = {est: ([], []) for est in ("nis", "nwis")}
        for seed in seeds:
            rng = np.random.default_rng(seed)
            for _ in range(reps):
                J, lam, G, truth, truths = simulate(rng, shape, series=True)
                for est, (a, b) in sq.items():
                    a.append((rule_forecast(rule, est, J, lam, G, truths) - truth) ** 2)
                    b.append((rule_forecast(against, est, J, lam, G, truths) - truth) ** 2)
        for est, (a, b) in sq.items():
            a, b = np.array(a), np.array(b)
            p = scipy.stats.ttest_rel(a, b).pvalue if np.any(a != b) else 1.0
            print(
                f"| {name.split(' (')[0]} | {est.upper()} | {b.mean():.4f} | {a.mean():.4f} "
                f"| {a.mean() / b.mean():.3f} | {p:.2g} |",
                flush=True,
            )


def plot(table: str, out: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Scatter of the rules of a markdown table written by :func:`main`: x the worst ratio on
    the shapes a simple model fits (linear trend, stationary), y the worst on the drifting
    ones; the box is the issue's 1.25 bar. Off-scale rules are drawn at the edge. Returns the
    rules' names and their two coordinates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names, cells = [], []
    for line in Path(table).read_text().splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) == 1 + len(SHAPES) and "/" in parts[1] and "NIS" not in parts[1]:
            names.append(parts[0])
            cells.append([float(x) for p in parts[1:] for x in p.split("/")])
    cells = np.array(cells).reshape(len(names), len(SHAPES), 2).max(axis=2)
    simple = [i for i, s in enumerate(SHAPES) if s.startswith(("linear", "stationary"))]
    drift = [i for i in range(len(SHAPES)) if i not in simple]
    x, y = cells[:, simple].max(axis=1), cells[:, drift].max(axis=1)
    top = 3.0
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.add_patch(plt.Rectangle((0.8, 0.8), 0.45, 0.45, color="tab:green", alpha=0.15))
    # label boxes (x, y, width) in data units; the points themselves are obstacles too
    placed = [(min(a, top) - 0.02, min(b, top), 0.04) for a, b in zip(x, y, strict=True)]
    for name, a, b in zip(names, x, y, strict=True):
        bound = name.startswith("oracle")
        px, py = min(a, top), min(b, top)
        ax.plot(px, py, "s" if bound else "o", color="tab:gray" if bound else "tab:blue")
        label = name + (" (off scale)" if max(a, b) > top else "")
        width = 0.03 * len(label)
        for dy in (0.02, -0.08, 0.08, -0.14, 0.14, -0.2, 0.2, -0.26):  # the first free place
            lx, ly = px + 0.03, py + dy
            free = (abs(ly - q) > 0.055 or lx > u + w or u > lx + width for u, q, w in placed)
            if all(free):
                break
        placed.append((lx, ly, width))
        ax.annotate(label, (px, py), xytext=(lx, ly), fontsize=7,
                    arrowprops=dict(arrowstyle="-", lw=0.4, color="0.6"))  # fmt: skip
    ax.set(xlim=(0.8, top + 0.2), ylim=(0.8, top + 0.2),
           xlabel="worst RMSE / best fixed: linear trend, stationary",
           ylabel="worst RMSE / best fixed: sinusoids, smooth step",
           title="Selection rules: the bar (green) needs both axes <= 1.25")  # fmt: skip
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return names, x, y


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "plot":  # plot TABLE.md OUT.png
        plot(args[1], args[2])
    elif args and args[0] == "paired":  # paired RULE AGAINST [REPS [SEED,SEED...]]
        seeds = tuple(int(s) for s in args[4].split(",")) if len(args) > 4 else (1, 2, 3)
        paired(args[1], args[2], *(int(a) for a in args[3:4]), *([seeds] if len(args) > 4 else []))
    else:
        main(*(int(a) for a in args[:2]), *([args[2].split(",")] if len(args) > 2 else []))
