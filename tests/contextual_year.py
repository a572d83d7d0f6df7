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

    def contexts(self, times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The contexts of rounds at ``times``, (n, d): N(0, I_d) at every time."""
        return rng.standard_normal((times.size, self.dim))

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
        x = self.contexts(times, rng)
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


# -- truths the candidate time models cannot represent, and terms together --------------

MISSPEC_TRUTHS = (
    "interactions",
    "greedy_today",
    "holidays",
    "weekly_contexts",
    "weekly_contexts_blocks",
    "weekly_season_trend",
    "blocks_trend",
)
#: The shape of :class:`YearOfRounds` each truth starts from (its drift, or the part of
#: it the parent computes): the two terms-together truths replace it.
BASE_SHAPE = {
    "interactions": "blocks_weekday",
    "greedy_today": "blocks_weekday",
    "holidays": "blocks_weekday",
    "weekly_contexts": "stationary",
    "weekly_contexts_blocks": "blocks",
    "weekly_season_trend": "trend",
    "blocks_trend": "trend",
}
#: The holidays' calendar days (month, day), UTC, repeating every year, and their shocks
#: to the drift s(t) (the value moves by c₁ times these on the day).
HOLIDAYS = ((1, 1), (2, 14), (4, 1), (5, 27), (7, 4), (9, 2), (11, 28), (12, 25))
HOLIDAY_SHOCKS = np.array([1.2, -1.0, 1.5, -1.3, 1.0, -1.5, 1.4, -1.1])


def calendar_day(t) -> tuple[np.ndarray, np.ndarray]:
    """(month 1-12, day of the month 1-31) of the UTC day floor(t), t in days since 1970."""
    day = np.floor(np.asarray(t, dtype=np.float64)).astype(np.int64).astype("datetime64[D]")
    month = day.astype("datetime64[M]")
    return month.astype(np.int64) % 12 + 1, (day - month).astype(np.int64) + 1


def holiday_shock(t) -> np.ndarray:
    """The holidays' shock to the drift at each time (0 on other days), shape (n,)."""
    month, day = calendar_day(np.atleast_1d(t))
    out = np.zeros(month.shape)
    for (m, d), shock in zip(HOLIDAYS, HOLIDAY_SHOCKS, strict=True):
        out[(month == m) & (day == d)] = shock
    return out


def holiday_days(t0: float, t1: float) -> np.ndarray:
    """The holidays' day numbers (days since 1970-01-01, integers) in [t0, t1)."""
    days = np.arange(np.ceil(t0), np.ceil(t1))
    return days[holiday_shock(days) != 0]


@dataclass
class MisspecifiedYear(YearOfRounds):
    """Truths of V_t(π_e) that no candidate time model of ``forecast_value`` represents
    exactly, and truths whose terms are all candidates but only together.

    Give ``truth=`` (a keyword); ``shape`` is set from it (:data:`BASE_SHAPE`). θ_a, γ_a,
    the noise, π₀ and (but for ``greedy_today``) π_e are those of :class:`YearOfRounds`
    with the same ``seed`` (its draws come first and are the same), and the extra draws
    (δ, μ) come from ``default_rng([seed, 1])``. b(t) is the block of 8 of the year
    (:func:`block_of_year`), w(t) the day of the week (:func:`weekday`),
    s_bw(t) = BLOCK_LEVELS[b(t)] + WEEKDAY_LEVELS[w(t)] (the ``"blocks_weekday"`` drift),
    and trend(t) = 2 (t − start)/year − 1; all times ``amplitude`` = 1 by default.

    * ``"interactions"``: q(x, t, a) = xᵀθ_a + γ_a s_bw(t) + δ[a, b(t), w(t)], δ an
      (A, 8, 7) array of N(0, ``delta_sd``²) (0.4); V_t = c₀ + c₁ s_bw(t) + p̄ᵀδ[:, b, w]
      with p̄ = E_x π_e(·|x): a block × weekday interaction of the value, which differs
      by action in the rewards. ``value_se`` is the largest Monte Carlo s.e. of the
      interaction's 56 cells (10⁶ contexts).
    * ``"greedy_today"``: rewards as ``"blocks_weekday"``; π_e at time t is ε-greedy on
      q(x, t, ·) (the day's mean rewards), so it changes with t. The log's
      ``action_dist`` is π_e at each round's own time; :meth:`evaluation` is the callable
      ``policy(x, t)`` (with ``t=None`` it is ε-greedy on xᵀθ, the parent's, only used
      for c₀ and c₁). V_t = E_x[(1 − ε) max_a q(x, t, a) + ε/A Σ_a q(x, t, a)] depends on
      t through (b, w) only: the 56 cells by Monte Carlo over the same 10⁶ contexts
      (``value_se``: the largest cell's s.e.).
    * ``"holidays"``: drift s_bw(t) + h(t), h the shocks :data:`HOLIDAY_SHOCKS` (±1-1.5) on
      the 8 calendar days :data:`HOLIDAYS` (UTC, every year) and 0 elsewhere;
      V_t = c₀ + c₁ (s_bw(t) + h(t)).
    * ``"weekly_contexts"``: contexts x ~ N(μ_{w(t)}, I) with μ_0..μ_6 fixed vectors of
      norm ``context_shift`` (0.7), directions uniform; rewards as ``"stationary"``
      (no drift), so V_t = c₀[w(t)] changes only through the contexts.
      ``"weekly_contexts_blocks"``: the same contexts, rewards as ``"blocks"``:
      V_t = c₀[w(t)] + c₁[w(t)] BLOCK_LEVELS[b(t)] (a block × weekday interaction).
      c₀[w], c₁[w] by Monte Carlo over 10⁶ contexts N(μ_w, I) each (``value_se``: the
      largest s.e. of c₀[w] + c₁[w] s over the truth's levels s).
    * ``"weekly_season_trend"``: drift WEEKDAY_LEVELS[w(t)] + sin(2πt/year) + trend(t);
      V_t = c₀ + c₁ s(t). True design: const, trend, sin, cos, 6 weekday indicators.
    * ``"blocks_trend"``: drift BLOCK_LEVELS[b(t)] + trend(t); V_t = c₀ + c₁ s(t). True
      design: const, trend, 7 block indicators.

    For ``holidays`` and the terms-together truths V_t is exact given c₀, c₁ (whose
    s.e. the parent states: about 10⁻³ and 10⁻⁴).
    """

    truth: str = "interactions"
    delta_sd: float = 0.4
    context_shift: float = 0.7
    n_mc: int = 1_000_000
    delta: np.ndarray = field(init=False, repr=False)
    mu: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.truth not in MISSPEC_TRUTHS:
            raise ValueError(f"truth must be one of {MISSPEC_TRUTHS}; got {self.truth!r}")
        self.shape = BASE_SHAPE[self.truth]
        super().__post_init__()  # θ, γ, c₀, c₁ as YearOfRounds(shape, seed=seed)
        extra = np.random.default_rng([self.seed, 1])
        self.delta = extra.normal(0.0, self.delta_sd, (self.n_actions, 8, 7))
        direction = extra.standard_normal((7, self.dim))
        self.mu = self.context_shift * direction / np.linalg.norm(direction, axis=1)[:, None]
        self.value_se = 0.0
        if self.truth == "interactions":
            self._cells = self._interaction_cells(np.random.default_rng(12346))
        elif self.truth == "greedy_today":
            self._cells = self._greedy_cells(np.random.default_rng(12346))
        elif self.truth.startswith("weekly_contexts"):
            self._weekly = self._weekly_constants(np.random.default_rng(12346))

    # the truth's parts
    def _shape(self, t: np.ndarray) -> np.ndarray:
        if self.truth == "holidays":
            return super()._shape(t) + holiday_shock(t)
        if self.truth == "weekly_season_trend":
            return WEEKDAY_LEVELS[weekday(t)] + np.sin(2 * np.pi * t / YEAR) + super()._shape(t)
        if self.truth == "blocks_trend":
            return BLOCK_LEVELS[block_of_year(t)] + super()._shape(t)
        return super()._shape(t)

    def q(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        out = super().q(x, t)
        if self.truth == "interactions":
            t = np.asarray(t, dtype=np.float64)
            out = out + self.amplitude * self.delta[:, block_of_year(t), weekday(t)].T
        return out

    def contexts(self, times: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = super().contexts(times, rng)
        if self.truth.startswith("weekly_contexts"):
            x = x + self.mu[weekday(times)]
        return x

    def evaluation(self, x: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """π_e(·|x, t): ε-greedy on q(x, t, ·) for ``greedy_today`` (t given), else on xᵀθ."""
        if self.truth != "greedy_today" or t is None:
            return super().evaluation(x)
        t = np.broadcast_to(np.asarray(t, dtype=np.float64), (x.shape[0],))
        best = np.argmax(self.q(x, t), axis=1)
        out = np.full((x.shape[0], self.n_actions), self.epsilon / self.n_actions)
        out[np.arange(x.shape[0]), best] += 1.0 - self.epsilon
        return out

    def value(self, t) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        if self.truth in ("interactions", "greedy_today"):
            return self._cells[block_of_year(t), weekday(t)]
        if self.truth.startswith("weekly_contexts"):
            base, slope = self._weekly
            w = weekday(t)
            return base[w] + slope[w] * self.drift(t)
        return super().value(t)

    # Monte Carlo of the value's cells (one pass over n_mc contexts, in chunks)
    def _chunks(self, rng, chunk=200_000):
        for _ in range(self.n_mc // chunk):
            yield rng.standard_normal((chunk, self.dim))

    @staticmethod
    def _mean_se(total, total_sq, n):
        mean = total / n
        return mean, np.sqrt(np.maximum(total_sq / n - mean**2, 0.0) / n)

    def _interaction_cells(self, rng) -> np.ndarray:
        """(8, 7): c₀ + c₁ s_bw + E_x π_e(·|x)ᵀ δ[:, b, w]."""
        flat = self.amplitude * self.delta.reshape(self.n_actions, 56)
        total, total_sq = np.zeros(56), np.zeros(56)
        for x in self._chunks(rng):
            y = super().evaluation(x) @ flat
            total += y.sum(axis=0)
            total_sq += (y**2).sum(axis=0)
        mean, se = self._mean_se(total, total_sq, self.n_mc)
        self.value_se = float(se.max())
        s_bw = BLOCK_LEVELS[:, None] + WEEKDAY_LEVELS[None, :]
        return self.c0 + self.c1 * self.amplitude * s_bw + mean.reshape(8, 7)

    def _greedy_cells(self, rng) -> np.ndarray:
        """(8, 7): E_x[(1 − ε) max_a q + ε/A Σ_a q] at each cell's drift."""
        s = (self.amplitude * (BLOCK_LEVELS[:, None] + WEEKDAY_LEVELS[None, :])).ravel()
        total, total_sq = np.zeros(56), np.zeros(56)
        eps, A = self.epsilon, self.n_actions
        for x in self._chunks(rng):
            base = x @ self.theta
            y = np.empty((x.shape[0], 56))
            for j, sj in enumerate(s):
                qj = base + sj * self.gamma
                y[:, j] = (1 - eps) * qj.max(axis=1) + eps / A * qj.sum(axis=1)
            total += y.sum(axis=0)
            total_sq += (y**2).sum(axis=0)
        mean, se = self._mean_se(total, total_sq, self.n_mc)
        self.value_se = float(se.max())
        return mean.reshape(8, 7)

    def _weekly_constants(self, rng) -> tuple[np.ndarray, np.ndarray]:
        """c₀[w] = E Σ_a π_e xᵀθ_a and c₁[w] = E Σ_a π_e γ_a over x ~ N(μ_w, I)."""
        levels = self.amplitude * (BLOCK_LEVELS if self.truth.endswith("blocks") else np.zeros(1))
        stats = np.zeros((7, 2))  # sums of base and slope
        y_tot = np.zeros((7, len(levels)))  # sums of base + s slope and its square, each s
        y_sq = np.zeros((7, len(levels)))
        for z in self._chunks(rng):
            for w in range(7):
                x = z + self.mu[w]
                pi = super().evaluation(x)
                base, slope = (pi * (x @ self.theta)).sum(axis=1), pi @ self.gamma
                stats[w, 0] += base.sum()
                stats[w, 1] += slope.sum()
                y = base[:, None] + slope[:, None] * levels[None, :]
                y_tot[w] += y.sum(axis=0)
                y_sq[w] += (y**2).sum(axis=0)
        self.value_se = float(self._mean_se(y_tot, y_sq, self.n_mc)[1].max())
        return stats[:, 0] / self.n_mc, stats[:, 1] / self.n_mc
