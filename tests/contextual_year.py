"""A year of timestamped contextual-bandit rounds whose value at any time is known.

Written for the tests and benchmarks of :mod:`pyprog.offpolicy` (issue 33); it shares no
code with pyprog. One problem instance (:class:`YearOfRounds`) fixes everything but the
draws:

* contexts x ~ N(0, I_d), d = 10, the same distribution at every time;
* A = 10 actions; mean reward q(x, t, a) = xᵀθ_a + s(t) γ_a, θ_a ~ N(0, I/d),
  γ_a ~ U(−0.5, 1.5) (so the drift moves actions differently), reward = q + N(0, noise²);
* the drift s(t), times ``amplitude`` (default 1), t in days (a year is 365.25 days;
  times start at ``start``, default day 0 = 1970-01-01, so the same times read as dates
  give the same seasons):
  ``"blocks"`` (a level for each of 8 equal blocks of the year), ``"weekday"`` (a level for
  each day of the week, Monday = 0), ``"blocks_weekday"`` (their sum), ``"sinusoid"``
  (sin 2πt/year), ``"trend"`` (linear, −1 at the log's start to +1 a year later, then on),
  ``"step"`` (−0.5, then +0.5 from ``step_at`` years after the start, default 0.5),
  ``"stationary"`` (0);
* logging policy π₀: softmax(β xᵀθ), β = 1 (known propensities, the same at every time);
* evaluation policy π_e: ε-greedy on xᵀθ, ε = 0.2 (the same at every time).

The value V_t(π_e) = c₀ + c₁ s(t), with c₀ = E_x Σ_a π_e(a|x) xᵀθ_a and
c₁ = E_x Σ_a π_e(a|x) γ_a computed once by Monte Carlo over 10⁶ contexts (their standard
errors ``c0_se``, ``c1_se`` are about 10⁻³ and 10⁻⁴).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

YEAR = 365.25
SHAPES = ("blocks", "weekday", "blocks_weekday", "sinusoid", "trend", "step", "stationary")
BLOCK_LEVELS = np.array([0.0, 0.8, -0.6, 1.0, -1.0, 0.4, -0.3, 0.7])
WEEKDAY_LEVELS = np.array([0.3, 0.2, 0.1, 0.0, -0.1, -0.6, 0.1])


def block_of_year(t: np.ndarray) -> np.ndarray:
    """Which of 8 equal blocks of the year (from day 0) each time is in."""
    return np.minimum((np.mod(t, YEAR) / YEAR * 8).astype(np.int64), 7)


def weekday(t: np.ndarray) -> np.ndarray:
    """Day of the week of days since 1970-01-01 (a Thursday), Monday = 0."""
    return np.mod(np.floor(t).astype(np.int64) + 3, 7)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


@dataclass
class YearOfRounds:
    """One problem instance; :meth:`sample` draws logs, :meth:`value` gives V_t(π_e)."""

    shape: str = "blocks"
    amplitude: float = 1.0
    dim: int = 10
    n_actions: int = 10
    noise: float = 1.0
    epsilon: float = 0.2
    beta: float = 1.0
    start: float = 0.0
    step_at: float = 0.5
    seed: int = 0
    theta: np.ndarray = field(init=False, repr=False)
    gamma: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"shape must be one of {SHAPES}; got {self.shape!r}")
        rng = np.random.default_rng(self.seed)
        self.theta = rng.normal(0.0, 1.0 / np.sqrt(self.dim), (self.dim, self.n_actions))
        self.gamma = rng.uniform(-0.5, 1.5, self.n_actions)
        self.c0, self.c1, self.c0_se, self.c1_se = self._constants(np.random.default_rng(12345))

    def drift(self, t) -> np.ndarray:
        """s(t), shape (n,), times ``amplitude``."""
        return self.amplitude * self._shape(np.asarray(t, dtype=np.float64))

    def _shape(self, t: np.ndarray) -> np.ndarray:
        s = self.shape
        if s == "blocks":
            return BLOCK_LEVELS[block_of_year(t)]
        if s == "weekday":
            return WEEKDAY_LEVELS[weekday(t)]
        if s == "blocks_weekday":
            return BLOCK_LEVELS[block_of_year(t)] + WEEKDAY_LEVELS[weekday(t)]
        if s == "sinusoid":
            return np.sin(2 * np.pi * t / YEAR)
        if s == "trend":
            return 2.0 * (t - self.start) / YEAR - 1.0
        if s == "step":
            return np.where(t < self.start + self.step_at * YEAR, -0.5, 0.5)
        return np.zeros_like(t)

    def q(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Mean rewards of every action, (n, A)."""
        return x @ self.theta + self.drift(t)[:, None] * self.gamma[None, :]

    def logging(self, x: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """π₀(·|x, t), (n, A)."""
        return softmax(self.beta * (x @ self.theta))

    def evaluation(self, x: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """π_e(·|x, t), (n, A): ε-greedy on xᵀθ."""
        best = np.argmax(x @ self.theta, axis=1)
        out = np.full((x.shape[0], self.n_actions), self.epsilon / self.n_actions)
        out[np.arange(x.shape[0]), best] += 1.0 - self.epsilon
        return out

    def _constants(self, rng, n=1_000_000, chunk=200_000):
        base, slope = [], []
        for _ in range(n // chunk):
            x = rng.standard_normal((chunk, self.dim))
            pi = self.evaluation(x)
            base.append((pi * (x @ self.theta)).sum(axis=1))
            slope.append(pi @ self.gamma)
        base, slope = np.concatenate(base), np.concatenate(slope)
        return (base.mean(), slope.mean(), base.std() / np.sqrt(n), slope.std() / np.sqrt(n))

    def value(self, t) -> np.ndarray:
        """V_t(π_e) at each time t, shape (m,)."""
        return self.c0 + self.c1 * self.drift(np.atleast_1d(t))

    def sample(self, n: int, rng: np.random.Generator, span: float = YEAR) -> dict:
        """A log of n rounds, sorted by time, over [start, start + span).

        Returns a dict with ``context`` (n, d), ``times`` (n,) float days, ``action``,
        ``reward``, ``pscore`` (n,), ``action_dist`` (n, A) = π_e(·|x_i, t_i) and
        ``value`` (n,) = V_{t_i}(π_e).
        """
        times = np.sort(rng.uniform(self.start, self.start + span, n))
        x = rng.standard_normal((n, self.dim))
        p0 = self.logging(x, times)
        action = (rng.random(n)[:, None] > np.cumsum(p0, axis=1)).sum(axis=1)
        action = np.minimum(action, self.n_actions - 1)
        rows = np.arange(n)
        reward = self.q(x, times)[rows, action] + self.noise * rng.standard_normal(n)
        return {
            "context": x,
            "times": times,
            "action": action,
            "reward": reward,
            "pscore": p0[rows, action],
            "action_dist": self.evaluation(x, times),
            "value": self.value(times),
        }


def as_datetime64(days: np.ndarray) -> np.ndarray:
    """Float days since 1970-01-01 as ``datetime64[ns]`` (UTC)."""
    return (np.asarray(days) * 86_400e9).astype("int64").astype("datetime64[ns]")
