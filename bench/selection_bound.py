"""How well could any rule choose? The two-candidate ideal behind the RMSE bar (issue 18).

The one-SE rule's forecast misses the bar (RMSE ≤ 1.25× the best fixed candidate's on every
shape) on the long sinusoid, and the rules that meet it there miss it on the linear trend
(``bench/selection_rules.py``). This script asks how well *any* rule could do on such a pair of
shapes, in an idealised problem: easier than the real one in its noise and its candidates,
though its rule sees less than a whole log:

* two candidates only, a simple one ``a`` and a richer one ``b`` (say ``linear`` and
  ``fourier(d=3)``), and two drift shapes of ``tests/selection_montecarlo.py``, one where
  ``a`` is the best fixed candidate and one where ``b`` is;
* NIS with Gaussian noise of known variance ``s²`` (the Monte Carlo's, per shape) in place
  of the importance-weighted estimates' heavier tails;
* the rule sees the forecast difference ``D = f_b − f_a = (ζ_b − ζ_a)·Ĵ``, whose noise
  ``s‖ζ_b − ζ_a‖`` is exactly normal (the real rules estimate everything, among 13
  candidates, from heavier-tailed estimates).

Per log (a random phase of the shape) the forecasts are then jointly normal, so the risk of a
rule is an integral over D, computed here by quadrature: given D, the simple forecast's error
``e_a`` is normal with mean ``bias_a + (c/v_D)(D − E D)`` and variance ``v_a − c²/v_D``
(``c = cov(f_a, D)``), and choosing ``b`` adds ``D`` to it. The rules:

* **threshold**: ``b`` when ``|D| > t``, the best t (t = ∞ is always ``a``);
* **any choice**: ``b`` when D lies in a set A. For a prior weight w on the first shape, the
  Bayes set ``A_w = {D : w·g₁(D)/R₁ + (1 − w)·g₂(D)/R₂ < 0}`` (``g_s`` the shape's
  density-weighted excess risk of choosing ``b`` at D, ``R_s`` its best fixed candidate's
  risk) minimises ``w·r₁² + (1 − w)·r₂²`` (``r_s`` the RMSE ratios). So
  ``max_w min_A (w·r₁² + (1 − w)·r₂²)`` is a lower bound on what any rule that decides from
  D can reach on the worse shape (randomised rules included), and the best ``A_w`` comes
  close to it: both are printed. Such a rule knows the two shapes; one that sees only a log
  does not;
* **shrinkage**: ``f_a + (1 − t²/D²)₊·D`` (positive-part James–Stein), the best t: a
  forecast between the two, which the bar allows (it is on the point forecast).

Ratios are RMSE over the best fixed candidate's among all of ``DEFAULT_CANDIDATES`` on that
shape (bias² + noise, exact), as in the Monte Carlo. Run:
``python bench/selection_bound.py [REPS [SEED]]`` (400 logs per shape by default, about 20 s);
the table is in ``bench/results/selection_rules/bound.md``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from selection_montecarlo import DELTA, SHAPES, N, simulate

from pyprog.forecast.forecasters import parse_forecaster
from pyprog.forecast.selection import DEFAULT_CANDIDATES

#: (shape where a is best, shape where b is best), (a, b): a shape that a simple model fits
#: against a drifting one, each with its best fixed candidate (NIS), the pairs the rules
#: trade between.
PAIRS = (
    (("linear trend", "long sinusoid (period 600)"), ("linear", "fourier(d=3)")),
    (("linear trend", "smooth step"), ("linear", "window(k=50)")),
    (("linear trend", "sum of sinusoids"), ("linear", "ewma(halflife=5)")),
    (("stationary", "long sinusoid (period 600)"), ("fourier(d=1)", "fourier(d=3)")),
    (("stationary", "smooth step"), ("fourier(d=1)", "window(k=50)")),
    (("stationary", "sum of sinusoids"), ("fourier(d=1)", "ewma(halflife=5)")),
)
NAMES = [str(parse_forecaster(c)) for c in DEFAULT_CANDIDATES]
ZETA = np.array([parse_forecaster(c).weights(N, DELTA) for c in NAMES])  # (13, N), NIS weights
STEP = 0.005  # quadrature step of D, in units of the smaller of the two shapes' sd(D)
TAIL = 8.0  # the grid of D reaches TAIL sd(D) beyond every log's mean of D


@dataclass
class Shape:
    """One shape's logs as the ideal problem sees them.

    ``bias`` (logs, 13): each candidate's forecast bias ``ζ_c·J(t) − truth`` per log;
    ``s2``: the noise variance of the estimates Ĵ; ``best``: the least fixed risk.
    """

    name: str
    bias: np.ndarray
    s2: float

    @property
    def fixed_risk(self) -> np.ndarray:
        return np.mean(self.bias**2, axis=0) + self.s2 * np.sum(ZETA**2, axis=1)

    @property
    def best(self) -> float:
        return float(self.fixed_risk.min())


def shape_logs(name: str, reps: int = 400, seed: int = 1) -> Shape:
    """The biases of every candidate on ``reps`` logs of a Monte Carlo shape, and s²."""
    rng = np.random.default_rng(seed)
    bias, s2 = [], []
    for _ in range(reps):
        J_hat, _, _, truth, J = simulate(rng, SHAPES[name], series=True)
        bias.append(ZETA @ J[:N] - truth)
        s2.append(np.var(J_hat - J[:N]))
    return Shape(name, np.array(bias), float(np.mean(s2)))


def _mean_sd(shape: Shape, a: str, b: str) -> tuple[np.ndarray, float]:
    """Per log, E D (the bias difference), shape (logs,), and sd(D) = s‖ζ_b − ζ_a‖."""
    ia, ib = NAMES.index(a), NAMES.index(b)
    sd = float(np.sqrt(shape.s2 * np.sum((ZETA[ib] - ZETA[ia]) ** 2)))
    return shape.bias[:, ib] - shape.bias[:, ia], sd


class Pair:
    """Candidates a and b on one shape, with D on a quadrature grid ``D`` (grid,).

    ``dens`` (logs, grid): the normal density of D per log times the grid step; ``cm`` (logs,
    grid): the mean of a's forecast error given D; ``cv``: its variance given D.
    """

    def __init__(self, shape: Shape, a: str, b: str, D: np.ndarray) -> None:
        ia = NAMES.index(a)
        mean, sd = _mean_sd(shape, a, b)
        za, dz = ZETA[ia], ZETA[NAMES.index(b)] - ZETA[ia]
        va, c, vd = shape.s2 * float(za @ za), shape.s2 * float(za @ dz), sd**2
        self.D, self.best = D, shape.best
        u = (D[None, :] - mean[:, None]) / sd
        self.dens = np.exp(-0.5 * u**2) * (D[1] - D[0]) / (sd * np.sqrt(2 * np.pi))
        self.cm = shape.bias[:, ia, None] + c / vd * (D[None, :] - mean[:, None])
        self.cv = va - c**2 / vd

    def ratio(self, g: np.ndarray) -> float:
        """RMSE ratio of the forecast ``f_a + g(D)·D``, g given on the grid, shape (grid,)."""
        shift = g * self.D
        risk = np.sum(self.dens * ((self.cm + shift) ** 2 + self.cv), axis=1).mean()
        return float(np.sqrt(risk / self.best))

    def excess(self) -> np.ndarray:
        """Per grid point: the risk that choosing b there adds, density-weighted, over logs,
        in units of the best fixed risk, shape (grid,)."""
        D = self.D
        return np.mean(self.dens * (2.0 * D * self.cm + D**2), axis=0) / self.best


def bound(first: Shape, second: Shape, a: str, b: str) -> dict[str, Any]:
    """The ideal rules' RMSE ratios on two shapes (module docstring).

    Returns ``{"a": (r1, r2), "b": (r1, r2)}`` (the fixed candidates' ratios on each shape),
    ``"threshold"`` and ``"shrinkage"`` (the best rule's worse ratio of the two) and
    ``"any choice": (lower bound, reached)``.
    """
    (m1, sd1), (m2, sd2) = _mean_sd(first, a, b), _mean_sd(second, a, b)
    sd = min(sd1, sd2)
    lo = min(m1.min() - TAIL * sd1, m2.min() - TAIL * sd2)
    hi = max(m1.max() + TAIL * sd1, m2.max() + TAIL * sd2)
    D = np.arange(lo, hi + STEP * sd / 2, STEP * sd)
    p, q = Pair(first, a, b, D), Pair(second, a, b, D)

    def worst(g: np.ndarray) -> float:
        return max(p.ratio(g), q.ratio(g))

    zero, one = np.zeros_like(D), np.ones_like(D)
    res = {"a": (p.ratio(zero), q.ratio(zero)), "b": (p.ratio(one), q.ratio(one))}
    # thresholds in units of the smaller sd(D) (any scale would do: the scan is what counts)
    ts = np.arange(0.0, 4.0 + 1e-9, 0.05) * sd
    res["threshold"] = min(worst((np.abs(D) > t).astype(float)) for t in [*ts, np.inf])
    g1, g2 = p.excess(), q.excess()
    reached, lower = np.inf, 0.0
    for w in np.linspace(0.0, 1.0, 201):
        A = (w * g1 + (1.0 - w) * g2 < 0.0).astype(float)  # the Bayes choice for prior w
        r1, r2 = p.ratio(A), q.ratio(A)
        reached = min(reached, max(r1, r2))
        lower = max(lower, float(np.sqrt(w * r1**2 + (1.0 - w) * r2**2)))
    res["any choice"] = (lower, reached)
    safe = np.where(D == 0.0, 1.0, D)  # at D = 0 the shrunk step g·D is 0 whatever g is
    res["shrinkage"] = min(
        worst(np.where(D == 0.0, 0.0, np.maximum(0.0, 1.0 - t**2 / safe**2))) for t in ts
    )
    return res


def main(reps: int = 400, seed: int = 1) -> None:
    print(
        "| shapes (a best, b best) | a / b | a's ratios | b's ratios | threshold "
        "| any choice (bound – reached) | shrinkage |"
    )
    print("|---|---|---|---|---|---|---|")
    cache: dict[str, Shape] = {}
    for (s1, s2), (a, b) in PAIRS:
        for s in (s1, s2):
            if s not in cache:
                cache[s] = shape_logs(s, reps, seed)
        r = bound(cache[s1], cache[s2], a, b)
        print(
            f"| {s1.split(' (')[0]}, {s2.split(' (')[0]} | {a} / {b} "
            f"| {r['a'][0]:.2f} / {r['a'][1]:.2f} | {r['b'][0]:.2f} / {r['b'][1]:.2f} "
            f"| {r['threshold']:.3f} | {r['any choice'][0]:.3f} – {r['any choice'][1]:.3f} "
            f"| {r['shrinkage']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
