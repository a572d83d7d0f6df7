"""Where the float32 tanh of the compiled policies comes from (``pyprog_tanh_f32``).

``tanh(x) ≈ x P(x²) / Q(x²)`` on [0, 9], P of degree 4 and Q of degree 4 in x² (so 9 and 8
in x), Q(0) = 1, fitted for the least maximum relative error by Lawson's iteration: weighted
least squares of the linearised residual ``(x P − t Q) / (t Q)``, each weight multiplied by
its point's error until the errors level out (Lawson 1961; the usual way to a minimax fit
without a Remez exchange). Above 9, tanh rounds to 1 in float32.

Run: ``python bench/fit_tanh_f32.py`` (about a second). It prints the coefficients as they
are written in ``pyprog/_ext/_policy.h``, the fit's relative error in exact arithmetic, and
the error of the float32 evaluation (NumPy, one rounding per operation, no fused
multiply-adds) in ulp over a million float32 numbers in [0, 20].
"""

from __future__ import annotations

import numpy as np

DEG_P, DEG_Q, TOP = 5, 4, 9.0  # P: 5 terms (x, x³, …, x⁹); Q: 1 + 4 terms (x², …, x⁸)


def fit(deg_p: int = DEG_P, deg_q: int = DEG_Q, top: float = TOP, iters: int = 300):
    """Coefficients ``p`` (lowest first, of x·z^k) and ``q`` (q[0] = 1) and the max relative
    error on a Chebyshev grid of [0, top] (plus a fine grid near 0)."""
    x = (np.cos(np.linspace(0, np.pi, 20001)) + 1) / 2 * top
    x = np.concatenate([x[x > 1e-4], np.linspace(1e-4, 0.05, 2000)])
    t, z = np.tanh(x), x * x
    design = (
        np.concatenate(
            [
                np.stack([x * z**k for k in range(deg_p)], 1),
                np.stack([-t * z**k for k in range(1, deg_q + 1)], 1),
            ],
            axis=1,
        )
        / t[:, None]
    )
    weight, q_prev = np.full_like(x, 1 / x.size), np.ones_like(x)
    for _ in range(iters):
        scale = np.sqrt(weight) / np.abs(q_prev)
        c, *_ = np.linalg.lstsq(design * scale[:, None], scale, rcond=None)
        p, q = c[:deg_p], np.concatenate([[1.0], c[deg_p:]])
        q_prev = np.polyval(q[::-1], z)
        err = np.abs(x * np.polyval(p[::-1], z) / q_prev / t - 1)
        weight = weight * err
        weight /= weight.sum()
    return p, q, err.max()


def tanh_f32(x: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The C function's operations in float32 (Horner, clamp of |x| at 9, result clamped to 1)."""
    f = np.float32
    ax = np.minimum(np.abs(x.astype(f)), f(TOP))
    z = ax * ax
    num, den = f(p[-1]), f(q[-1])
    for c in p[-2::-1]:
        num = num * z + f(c)
    for c in q[-2::-1]:
        den = den * z + f(c)
    return np.copysign(np.minimum(ax * num / den, f(1)), x).astype(f)


def main() -> None:
    p, q, err = fit()
    print("P:", ", ".join(f"{c:.8e}f" for c in p[::-1]), "(highest first)")
    print("Q:", ", ".join(f"{c:.8e}f" for c in q[::-1]))
    print(f"max relative error in exact arithmetic: {err:.2e}")
    x = np.random.default_rng(0).uniform(0, 20, 1_000_000).astype(np.float32)
    ref = np.tanh(x.astype(np.float64))
    ulp = np.spacing(ref.astype(np.float32)).astype(np.float64)
    ulps = np.abs(tanh_f32(x, p, q) - ref) / ulp
    print(f"float32 evaluation: max {ulps.max():.2f} ulp, mean {ulps.mean():.3f} ulp")


if __name__ == "__main__":
    main()
