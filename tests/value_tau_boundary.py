"""How well any interval can cover the value on a day when the log cannot resolve τ.

A log of m day bins with noise variances σ̄² shows the day's own deviation τ² only
through the REML estimate v̂ = τ̂², approximately normal with sd
se(τ²) = (σ̄² + τ²) √(2/m) (its Fisher information, Σ_j ½ (σ_j² + τ²)⁻², at equal σ_j²)
and unconstrained (v̂ < 0 is the boundary). The forecast's error on a day is
N(0, V(τ²)), V(τ²) = g (1 + τ²/σ̄²) + τ², g the variance of the model's mean at the
target (it grows with τ² as the bins' weights 1/(σ_j² + τ²) fall). An interval rule maps
v̂ to a predictive distribution; its coverage at a fixed τ² is an integral over v̂
(Gauss-Hermite, 80 points), exact given these normal approximations. The rules:

* ``plug-in``: N(0, V(max(v̂, 0))).
* ``posterior β``: the mixture of N(0, V(v)) over v's posterior under the approximate
  likelihood and a prior p(v) ∝ v^(β − 1) near 0: β = ½ is flat in τ (the half-Cauchy
  prior of scale sd(ȳ) that ``forecast_value`` uses, since τ ≪ sd(ȳ)), β = 1 flat in τ²,
  β < ½ more mass at 0.
* ``confidence``: the mixture of N(0, V(v)) over τ²'s confidence distribution
  H(v) = Φ((v − v̂)/se(v)) (Xie & Singh 2013), its mass H(0) at v = 0: the rule
  ``forecast_value`` uses (:meth:`pyprog.value.reml.MixedModel.tau_distribution`).
* ``scaled plug-in k``: N(0, V(k·max(v̂, 0))), the best k for the 0.85-0.95 band.

m, σ̄² and g are those measured on logs of 8 blocks of the year
(``contextual_year.YearOfRounds("blocks")``, the top candidate ``const+blocks(365.25D/8)``
of three logs each; the script that measured them is in the guide): at 10,000 rounds
m = 366, σ̄² = 0.102, g = 0.0021; at 1,000 rounds m = 340, σ̄² = 1.7, g = 0.023. So
se(0)/g = 3.6 and 5.7: the log cannot tell τ² = 0 from a deviation of several times the
forecast's own variance (se(0) and g both scale with the noise; their ratio with the
number of bins and the model's size).

Run ``python tests/value_tau_boundary.py`` (a second or two; no log is drawn).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.special

#: (label, m, σ̄², g) of the measured logs.
LOGS = (("10,000 rounds", 366, 0.102, 0.0021), ("1,000 rounds", 340, 1.7, 0.023))
#: Fixed truths, τ² in units of se(0).
TRUTHS = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0])
Z90 = float(scipy.special.ndtri(0.95))
NODES, QUAD = np.polynomial.hermite_e.hermegauss(80)
QUAD = QUAD / QUAD.sum()


class Log:
    """The normal approximations of one log: se(τ²) and V(τ²)."""

    def __init__(self, m: int, noise: float, g: float) -> None:
        self.m, self.noise, self.g = m, noise, g
        self.se0 = noise * np.sqrt(2.0 / m)

    def se(self, v):
        return (self.noise + v) * np.sqrt(2.0 / self.m)

    def V(self, v):
        return self.g * (1.0 + v / self.noise) + v


def coverage(log: Log, half_width) -> np.ndarray:
    """Coverage at each truth of TRUTHS of the interval ± half_width(v̂): shape (truths,)."""
    out = []
    for t2 in TRUTHS * log.se0:
        vhat = t2 + log.se(t2) * NODES
        h = np.array([half_width(v) for v in vhat])
        out.append(QUAD @ (2.0 * scipy.special.ndtr(h / np.sqrt(log.V(t2))) - 1.0))
    return np.array(out)


def plug_in(log: Log, k: float = 1.0):
    return lambda v: Z90 * np.sqrt(log.V(k * max(v, 0.0)))


#: The grid over τ² in units of se(0), on which the mixtures are summed.
GRID = np.concatenate([np.logspace(-8, 0, 200)[:-1], np.linspace(1, 60, 400)])


def mixture_half_width(p: np.ndarray, sd: np.ndarray) -> float:
    """The half-width h of the 90 % interval of the mixture Σ p_i N(0, sd_i²)."""
    return scipy.optimize.brentq(
        lambda h: p @ (2.0 * scipy.special.ndtr(h / sd) - 1.0) - 0.90, 1e-6, 100 * sd.max()
    )


def posterior(log: Log, beta: float):
    """The half-width of the 90 % interval of v's posterior mixture, given v̂."""
    grid = log.se0 * GRID
    rule = np.gradient(grid)  # the grid's spacing: ∫ ≈ Σ rule · f
    log_prior = (beta - 1.0) * np.log(grid)
    sd = np.sqrt(log.V(grid))

    def half_width(vhat: float) -> float:
        s = log.se(grid)
        log_p = np.log(rule) + log_prior - 0.5 * ((vhat - grid) / s) ** 2 - np.log(s)
        p = np.exp(log_p - log_p.max())
        return mixture_half_width(p / p.sum(), sd)

    return half_width


def confidence(log: Log):
    """The half-width of the 90 % interval of the mixture over τ²'s confidence distribution."""
    grid = log.se0 * np.concatenate([[0.0], GRID])
    sd = np.sqrt(log.V(grid))

    def half_width(vhat: float) -> float:
        cdf = scipy.special.ndtr((grid - vhat) / log.se(grid))
        p = np.diff(cdf, prepend=0.0)  # p[0] = H(0), the mass at τ² = 0
        return mixture_half_width(p / p.sum(), sd)

    return half_width


def best_scale(log: Log) -> tuple[float, np.ndarray]:
    """The k of the scaled plug-in whose coverage is furthest inside [0.85, 0.95]."""
    ks = np.linspace(0.5, 3.0, 51)
    curves = [coverage(log, plug_in(log, k)) for k in ks]
    margin = [min(c.min() - 0.85, 0.95 - c.max()) for c in curves]
    i = int(np.argmax(margin))
    return float(ks[i]), curves[i]


def main() -> None:
    header = " ".join(f"{t:>5g}" for t in TRUTHS)
    for label, m, noise, g in LOGS:
        log = Log(m, noise, g)
        print(f"\n{label}: m={m}, noise={noise}, g={g}, se(0)/g={log.se0 / g:.2f}")
        print(f"{'tau^2 / se(0)':>22} {header}   min    max")
        rows = [("plug-in", coverage(log, plug_in(log)))]
        for beta in (1.0, 0.5, 0.25, 0.1):
            rows.append((f"posterior beta={beta:g}", coverage(log, posterior(log, beta))))
        rows.append(("confidence", coverage(log, confidence(log))))
        k, curve = best_scale(log)
        rows.append((f"scaled plug-in k={k:.2f}", curve))
        for name, c in rows:
            cells = " ".join(f"{x:5.3f}" for x in c)
            print(f"{name:>22} {cells}  {c.min():.3f}  {c.max():.3f}")


if __name__ == "__main__":
    main()
