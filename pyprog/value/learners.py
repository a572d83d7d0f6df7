"""Learners of a policy for a future date from logged rounds, one class each.

Every gradient learner maximises an estimate of the value that is linear in the policy,

    Ĵ(θ) = Σ_i Σ_a π_θ(a | x_i) ζ_i C_ia  + λ_H · mean_i H(π_θ(· | x_i)) − ½ λ₂ ‖W‖²,

and they differ only in how they weight the past (ζ) and value the actions (C):

* :class:`Prognosticator` (Chandak et al. 2020 on rounds): Ĵ is the forecast at the target
  of the policy's pooled doubly robust per-round estimates (those of
  :func:`pyprog.forecast_value`), f = Σ_i ζ_i Ŷ_i with ζ the model average's weights on the
  rounds (:meth:`pyprog.value.ModelAverage.zeta`, spread over each day's rounds); ζ may
  weigh some past rounds negatively (the paper's Fig. 4). ζ is read once, off the
  estimates of the uniform policy (every action alike), so that Ĵ is linear in the policy
  as the paper's is; the correction is shrunk toward 0 by what of it the data show beyond
  its noise (:func:`correction_shrinkage`).
* :class:`DRPolicyGradient`: the stationary doubly robust objective, ζ_i = 1/n, with q̂(x, a).
* :class:`IPSPolicyGradient`: the stationary importance-weighted objective,
  C_ia = 1{a = a_i} r_i / π₀(a_i | x_i).
* :class:`OPFVPolicyGradient` (Shimizu et al. 2025): ζ_i = 1/n and C OPFV's action values
  for the target with a time feature φ (:func:`pyprog.offpolicy.future_value.opfv_action_values`);
  :class:`OPFVSelectPolicyGradient` the same with φ chosen from the data.
* :class:`RegressionGreedy`: no gradient; argmax_a q̂(x, φ(t'), a) of a reward model with
  the time inputs of :func:`pyprog.value.candidates.default_reward_time_model`,
  extrapolated to the target.

With M_ia = ζ_i C_ia, the gradient in the logits z_ib = W_b h_i + b_b is
π_ib (M_ib − Σ_a π_ia M_ia) (and −(λ_H / n) π_ib (log π_ib + H_i) for the entropy), with
h_i = ψ_i for a linear softmax or tanh(V ψ_i + c) for one hidden layer (``hidden=``, the
gradient carried back through it); L-BFGS
ascends Ĵ on the training stretches of the log, and of its iterates the one with the
highest Ĵ on the held-out stretches (every fifth week: time-blocked, as the forecast's own
cross-validation) is kept.
A new learner is a subclass registered with :func:`register_future_learner`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.optimize

from pyprog.logs.rounds import Rounds
from pyprog.offpolicy.crossfit import cross_fit, reward_features
from pyprog.offpolicy.estimates import time_inputs
from pyprog.offpolicy.future_value import opfv_action_values, opfv_select
from pyprog.offpolicy.reward_model import ActionRidge
from pyprog.timeseries.features import PeriodBlocks
from pyprog.value.averaging import ModelAverage
from pyprog.value.bins import bin_estimates, bin_noise
from pyprog.value.candidates import default_reward_time_model
from pyprog.value.future_policy import FuturePolicy, softmax_pass

__all__ = [
    "FUTURE_LEARNERS",
    "DRPolicyGradient",
    "FutureLearner",
    "IPSPolicyGradient",
    "Layout",
    "OPFVPolicyGradient",
    "OPFVSelectPolicyGradient",
    "Prognosticator",
    "RegressionGreedy",
    "Training",
    "correction_shrinkage",
    "register_future_learner",
]

#: Every registered learner by name.
FUTURE_LEARNERS: dict[str, type[FutureLearner]] = {}
#: Held-out stretches for early stopping: weeks w with w mod HOLDOUT_EVERY == HOLDOUT_EVERY − 1.
HOLDOUT_EVERY = 5
#: L-BFGS iterations at most per fit.
MAX_ITER = 200
#: Days of a window's grid for the reward model's time inputs (their mean over the window).
WINDOW_POINTS = 64


@dataclass
class Training:
    """The rounds one learner learns from, and what the learners share of them.

    Attributes
    ----------
    rounds : Rounds
        n checked rounds.
    goal : tuple
        ``("at", t')`` or ``("over", t₁, t₂)`` in days.
    span : (float, float)
        The whole log's first and last time (the reward model's time inputs are laid on it).
    entropy, l2 : float
        λ_H and λ₂, in units of the rewards' standard deviation.
    bin_width : float
    random_state : int
    opfv_feature : time feature
        φ of :class:`OPFVPolicyGradient`.
    hidden : int
        H, the gradient learners' hidden tanh units (0: a linear softmax).
    """

    rounds: Rounds
    goal: tuple
    span: tuple
    entropy: float
    l2: float
    bin_width: float
    random_state: int
    opfv_feature: object
    hidden: int = 0

    @functools.cached_property
    def layout(self) -> Layout:
        """The gradient learners' parameters as one vector."""
        return Layout(self.rounds.n_actions, self.psi.shape[1], self.hidden)

    @functools.cached_property
    def directions(self) -> np.ndarray:
        """What the policy's logits can move with: ψ, and with a hidden layer its units
        at θ₀ too; shape (n, d) or (n, d + H)."""
        _, _, hidden = self.layout.unpack(self.layout.initial(self.random_state))
        if hidden is None:
            return self.psi
        return np.column_stack([self.psi, np.tanh(self.psi @ hidden[0].T + hidden[1])])

    @functools.cached_property
    def scale(self) -> tuple[np.ndarray, np.ndarray]:
        """The context's mean and standard deviation (1 where constant): shape (d,) each."""
        x = self.rounds.context
        sd = x.std(axis=0)
        return x.mean(axis=0), np.where(sd > 0, sd, 1.0)

    @functools.cached_property
    def psi(self) -> np.ndarray:
        """The standardised context the policy sees: shape (n, d)."""
        mean, sd = self.scale
        return (self.rounds.context - mean) / sd

    @functools.cached_property
    def held_out(self) -> np.ndarray:
        """Whether each round is in a held-out week: shape (n,) of bool."""
        week = np.floor((self.rounds.times - self.span[0]) / 7.0).astype(np.int64)
        return week % HOLDOUT_EVERY == HOLDOUT_EVERY - 1

    @functools.cached_property
    def time_model(self):
        """The reward model's time inputs: a trend, blocks of the year, the day of the week."""
        return default_reward_time_model(*self.span)

    def tau(self, times: np.ndarray) -> np.ndarray:
        """τ(t), the reward model's time inputs at ``times``: shape (m, k)."""
        return time_inputs(self.time_model, times, *self.span)

    @functools.cached_property
    def timed_fit(self):
        """The reward model with time inputs, cross-fitted: a
        :class:`~pyprog.offpolicy.crossfit.CrossFit`."""
        return self._cross_fitted(self.tau(self.rounds.times))

    @property
    def timed(self) -> np.ndarray:
        """Cross-fitted q̂(x_i, τ(t_i), ·): shape (n, A)."""
        return self.timed_fit.q_hat

    @functools.cached_property
    def untimed(self) -> np.ndarray:
        """Cross-fitted q̂(x_i, ·): shape (n, A)."""
        return self._cross_fitted(None).q_hat

    def _cross_fitted(self, tau: np.ndarray | None):
        r = self.rounds
        return cross_fit(reward_features(r.context, tau), r.times, r.action, r.reward,
                         r.n_actions, random_state=self.random_state)  # fmt: skip

    def doubly_robust(self, q_hat: np.ndarray) -> np.ndarray:
        """C_ia = q̂_ia + 1{a = a_i} (r_i − q̂_{i a_i}) / π₀(a_i|x_i): shape (n, A)."""
        r, rows = self.rounds, np.arange(self.rounds.n)
        values = q_hat.copy()
        values[rows, r.action] += (r.reward - q_hat[rows, r.action]) / r.pscore
        return values

    def target_tau(self) -> np.ndarray | None:
        """τ at the target (its mean over a window's days): shape (1, k)."""
        g = self.goal
        grid = np.array([g[1]]) if g[0] == "at" else np.linspace(g[1], g[2], WINDOW_POINTS)
        tau = self.tau(grid)
        return None if tau is None else tau.mean(axis=0, keepdims=True)

    def policy_time(self) -> float:
        g = self.goal
        return g[1] if g[0] == "at" else 0.5 * (g[1] + g[2])

    def member(self, theta: np.ndarray) -> FuturePolicy:
        """The policy of parameters θ on ψ (:attr:`layout`), as one member on the raw
        context: the first layer's weights on ψ, U and e, become U/σ and e − U μ/σ."""
        mean, sd = self.scale
        w, b, hidden = self.layout.unpack(theta)
        first = (w, b) if hidden is None else hidden
        u = first[0] / sd
        first = u, first[1] - u @ mean
        if hidden is None:
            return FuturePolicy(first[0][None], first[1][None], np.ones(1))
        return FuturePolicy(w[None], b[None], np.ones(1), hidden_weights=first[0][None],
                            hidden_bias=first[1][None])  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """θ as one vector: [W | b] (A × (F + 1)), then [V | c] (H × (d + 1)) with a hidden
    layer; F = H, or d without one.

    Examples
    --------
    >>> Layout(3, 2, 0).size, Layout(3, 2, 4).size   # 3·3; 3·5 + 4·3
    (9, 27)
    """

    n_actions: int
    d: int
    hidden: int = 0

    @property
    def width(self) -> int:
        """F, the output layer's inputs."""
        return self.hidden or self.d

    @property
    def size(self) -> int:
        return self.n_actions * (self.width + 1) + self.hidden * (self.d + 1)

    def unpack(self, theta: np.ndarray) -> tuple:
        """(W (A, F), b (A,), (V (H, d), c (H,)) or None), views of ``theta`` (size,)."""
        cut = self.n_actions * (self.width + 1)
        out = theta[:cut].reshape(self.n_actions, self.width + 1)
        if not self.hidden:
            return out[:, :-1], out[:, -1], None
        layer = theta[cut:].reshape(self.hidden, self.d + 1)
        return out[:, :-1], out[:, -1], (layer[:, :-1], layer[:, -1])

    def initial(self, seed: int) -> np.ndarray:
        """θ₀: the output layer 0 (the uniform policy), a hidden layer of N(0, 1/d)
        weights and N(0, 1) biases (so that tanh works in its curved range on the
        standardised ψ, odd and even in it)."""
        theta = np.zeros(self.size)
        if self.hidden:
            rng = np.random.default_rng(seed)
            _, _, (v, c) = self.unpack(theta)
            v[:] = rng.normal(0.0, 1.0 / np.sqrt(max(self.d, 1)), v.shape)
            c[:] = rng.normal(0.0, 1.0, c.shape)
        return theta


class FutureLearner:
    """A learner of the policy for a target; a subclass sets :attr:`name` and writes
    :meth:`learn`."""

    #: The name ``learn_for_future(learner=..., baselines=...)`` takes.
    name: ClassVar[str]

    def learn(self, data: Training) -> FuturePolicy:
        """The policy learned on ``data``: one member, on the raw context."""
        raise NotImplementedError


def register_future_learner(cls: type[FutureLearner]) -> type[FutureLearner]:
    """Make ``cls`` available by its name (a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, FutureLearner)):
        raise TypeError(f"a future learner must subclass FutureLearner; got {cls!r}")
    FUTURE_LEARNERS[cls.name] = cls
    return cls


class GradientLearner(FutureLearner):
    """Ascends Ĵ(θ) = Σ_i Σ_a π_θ(a|x_i) M_ia (+ entropy − L2) with early stopping, where
    M_ia = ζ_i C_ia are the weighted action values (:meth:`weighted`, for the fitting and
    the held-out rounds at once)."""

    def action_values(self, data: Training) -> np.ndarray:
        """C, shape (n, A)."""
        raise NotImplementedError

    def weighted(self, data: Training, C: np.ndarray, parts: tuple) -> list:
        """M over the fitting and the held-out rows (``parts``; shape (r, A) each):
        ζ_i = 1/r by default."""
        return [C[rows] / rows.size for rows in parts]

    def initial(self, data: Training, fit: Objective) -> np.ndarray:
        """θ₀ (:class:`Layout`): the uniform policy by default."""
        return data.layout.initial(data.random_state)

    def learn(self, data: Training) -> FuturePolicy:
        C = self.action_values(data)
        fit_rows, val_rows = np.flatnonzero(~data.held_out), np.flatnonzero(data.held_out)
        scale = float(np.std(data.rounds.reward)) or 1.0
        m_fit, m_val = self.weighted(data, C, (fit_rows, val_rows))
        fit = Objective(data.psi[fit_rows], m_fit, data.entropy * scale, data.l2 * scale,
                        data.hidden)  # fmt: skip
        val = Objective(data.psi[val_rows], m_val, 0.0, 0.0, data.hidden)
        return data.member(ascend(fit, val, self.initial(data, fit)))


@dataclass(frozen=True)
class Objective:
    """Ĵ(θ) on some rounds: ψ (n, d), M (n, A) = ζ ⊙ C, λ_H, λ₂ and H hidden units."""

    psi: np.ndarray
    M: np.ndarray
    entropy: float
    l2: float
    hidden: int = 0

    @functools.cached_property
    def layout(self) -> Layout:
        return Layout(self.M.shape[1], self.psi.shape[1], self.hidden)

    def features(self, theta: np.ndarray) -> np.ndarray:
        """h, the output layer's inputs at θ: ψ, or tanh(ψ Vᵀ + c); shape (n, F)."""
        hidden = self.layout.unpack(theta)[2]
        return self.psi if hidden is None else np.tanh(self.psi @ hidden[0].T + hidden[1])

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Ĵ(θ) and ∂Ĵ/∂θ, θ of shape (size,) (:class:`Layout`)."""
        w, b, hidden = self.layout.unpack(theta)
        h = self.features(theta)
        log_probs, probs, entropy = softmax_pass(h, w, b)
        v = (probs * self.M).sum(axis=1)  # Σ_a π_ia M_ia
        n = self.psi.shape[0]
        penalty = np.sum(w * w) + (0.0 if hidden is None else np.sum(hidden[0] ** 2))
        value = v.sum() + self.entropy * entropy.mean() - 0.5 * self.l2 * penalty
        dz = probs * (self.M - v[:, None])
        dz -= (self.entropy / n) * probs * (log_probs + entropy[:, None])
        grad = np.empty_like(theta)
        gw, gb, g_hidden = self.layout.unpack(grad)
        gw[:] = dz.T @ h - self.l2 * w
        gb[:] = dz.sum(axis=0)
        if hidden is not None:  # back through tanh: ∂/∂pre = (dz W) ⊙ (1 − h²)
            pre = (dz @ w) * (1.0 - h * h)
            g_hidden[0][:] = pre.T @ self.psi - self.l2 * hidden[0]
            g_hidden[1][:] = pre.sum(axis=0)
        return float(value), grad


def ascend(objective: Objective, held_out: Objective, theta0: np.ndarray) -> np.ndarray:
    """L-BFGS on ``objective`` from θ₀ (size,); of its iterates, the one best on
    ``held_out``."""

    def negative(theta):
        value, grad = objective.value_and_gradient(theta)
        return -value, -grad

    iterates = [theta0.copy()]
    scipy.optimize.minimize(negative, theta0, jac=True, method="L-BFGS-B",
                            callback=lambda xk: iterates.append(xk.copy()),
                            options={"maxiter": MAX_ITER})  # fmt: skip
    scores = [held_out.value_and_gradient(x)[0] for x in iterates]
    return iterates[int(np.argmax(scores))]


@register_future_learner
class Prognosticator(GradientLearner):
    """The forecast of the policy's value at the target, ascended (Chandak et al. 2020).

    The per-round estimates are forecast_value's pooled doubly robust ones, Ŷ_i = D̄(t_i) +
    Δ_i: the direct term over every logged context at round i's time,
    D̄(t) = 1/n Σ_j Σ_a π(a|x_j) q̂(x_j, τ(t), a), and the correction
    Δ_i = w_i (r_i − q̂(x_i, τ(t_i), a_i)). Each part is forecast to the target by the
    model average of its own daily values: ζ of the whole Ŷ for the direct term, which,
    q̂ being affine in τ, is q̂ at the forecast's time inputs τ̄ = Σ_i ζ_i τ(t_i) (every
    context at the reading of the future the log's evidence prefers, not τ(t')
    extrapolated), and ζ_Δ of the corrections' own series (uniform unless q̂ misses a
    drift), so that the correction's noise is not concentrated on a few days.

    Both are read off the uniform policy's estimates, not the policy's own: a policy
    whose value does not move with the drift (one that has learned to hedge against it)
    reads "no drift" off its own series, and every action's direct term is then valued at
    the log's average time. Read once, ζ makes Ĵ linear in π, and one ascent suffices.
    On the fitting rounds the correction is multiplied by :func:`correction_shrinkage`
    (0 where q̂ is right, and the correction only noise the ascent would fit; towards 1
    where it shows q̂'s error); on the held-out rounds it is whole, so that early stopping
    scores the unbiased forecast.
    """

    name = "prognosticator"

    def action_values(self, data: Training) -> np.ndarray:
        return data.doubly_robust(data.timed) - data.timed  # the correction alone

    def initial(self, data: Training, fit: Objective) -> np.ndarray:
        """The softmax of the objective's action values, fitted linear in the output
        layer's inputs h (ψ, or the first hidden layer), at the scale it likes best: the
        softmax reaches an argmax only as its scale grows without bound, which gradient
        steps from 0 take long to reach."""
        theta = super().initial(data, fit)
        h = fit.features(theta)
        design = np.column_stack([h, np.ones(h.shape[0])])
        out = np.linalg.lstsq(design, fit.M * h.shape[0], rcond=None)[0].T  # [W | b]
        spread = float(np.std(design @ out.T)) or 1.0
        cut = out.size

        def scaled(c: float) -> np.ndarray:
            return np.concatenate([c * out.ravel(), theta[cut:]])

        scales = np.logspace(-1, 3, 17) / spread
        best = np.argmax([fit.value_and_gradient(scaled(c))[0] for c in scales])
        return scaled(scales[best])

    def weighted(self, data: Training, C: np.ndarray, parts: tuple) -> list:
        r, model = data.rounds, data.timed_fit
        uniform = np.full((r.n, r.n_actions), 1.0 / r.n_actions)
        tau = data.tau(r.times)
        pooled = model.pooled_direct(r.context, tau.shape[1], uniform)[0]  # D̄(t_i)
        correction = C.mean(axis=1)  # Δ_i
        out = []
        for part, rows in enumerate(parts):  # each part forecast from its own days
            times = r.times[rows]
            zeta = _forecast_weights(data, (pooled + correction)[rows], times)
            zeta_c = _forecast_weights(data, correction[rows], times)
            tau_bar = np.repeat((zeta @ tau[rows])[None, :], r.n, axis=0)  # τ̄ for every round
            direct = model.predict(reward_features(r.context, tau_bar))[rows]  # q̂(x_i, τ̄, ·)
            kappa = (
                correction_shrinkage(zeta_c, C[rows], data.directions[rows]) if part == 0 else 1.0
            )
            out.append(direct / rows.size + kappa * zeta_c[:, None] * C[rows])
        return out


def correction_shrinkage(zeta: np.ndarray, C: np.ndarray, psi: np.ndarray) -> float:
    """κ in [0, 1]: the positive-part James–Stein factor of the correction's gradient.

    The correction's part of Ĵ moves the policy's logits along g_aj = Σ_i ζ_i C_ia ψ̃_ij
    (ψ̃ = [ψ, 1], ψ what the logits can move with, :attr:`Training.directions`:
    p = A (F + 1) directions), each with the variance v_aj = Σ_i ζ_i² C_ia² ψ̃_ij²
    it has where q̂ is right and C is noise of mean 0. Shrinking g to κ g with

        κ = max(0, 1 − (p − 2) / Σ_aj g_aj² / v_aj)

    has less expected squared error than g itself, in units of each direction's noise and
    whatever g's mean, when p >= 3 (James & Stein 1961, the directions taken as
    independent normals): about 0 when g is the noise its variance predicts, towards 1 as
    the correction shows what q̂ gets wrong.

    Parameters
    ----------
    zeta : numpy.ndarray, shape (n,)
    C : numpy.ndarray, shape (n, A)
        The corrections 1{a = a_i} w_i (r_i − q̂_i).
    psi : numpy.ndarray, shape (n, F)

    Returns
    -------
    float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> psi, zeta = rng.normal(size=(2000, 3)), np.full(2000, 1 / 2000)
    >>> noise = rng.normal(size=(2000, 4))
    >>> correction_shrinkage(zeta, noise, psi) < 0.3   # noise alone: shrunk away
    True
    >>> correction_shrinkage(zeta, noise + psi[:, :1], psi) > 0.9   # q̂'s error in x_0
    True
    """
    design = np.column_stack([psi, np.ones(psi.shape[0])])
    weighted = zeta[:, None] * C
    g, v = weighted.T @ design, (weighted * weighted).T @ (design * design)
    seen = v > 0
    p = int(seen.sum())
    if p < 3:
        return 1.0  # James–Stein needs three directions: keep the unbiased correction
    return max(0.0, 1.0 - (p - 2) / float(np.sum(g[seen] ** 2 / v[seen])))


def _forecast_weights(data: Training, values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """ζ of the forecast at the goal on these rounds (f = Σ_i ζ_i Ŷ_i): shape (r,)."""
    binned = bin_estimates(values, times, data.bin_width)
    avg = ModelAverage(binned, bin_noise(values, times, binned))
    per_bin = avg.zeta([data.goal])[0]
    inv = np.unique(np.floor(times / data.bin_width), return_inverse=True)[1].ravel()
    return per_bin[inv] / binned.count[inv]


@register_future_learner
class DRPolicyGradient(GradientLearner):
    """The stationary doubly robust value, ascended (ζ_i = 1/n, q̂(x, a))."""

    name = "dr-pg"

    def action_values(self, data: Training) -> np.ndarray:
        return data.doubly_robust(data.untimed)


@register_future_learner
class IPSPolicyGradient(GradientLearner):
    """The stationary importance-weighted value, ascended."""

    name = "ips-pg"

    def action_values(self, data: Training) -> np.ndarray:
        r = data.rounds
        values = np.zeros((r.n, r.n_actions))
        values[np.arange(r.n), r.action] = r.reward / r.pscore
        return values


@register_future_learner
class OPFVPolicyGradient(GradientLearner):
    """OPFV's estimate of the value at the target, ascended (Shimizu et al. 2025)."""

    name = "opfv-pg"

    def action_values(self, data: Training) -> np.ndarray:
        return opfv_action_values(data.rounds, data.policy_time(), time_feature=data.opfv_feature,
                                  random_state=data.random_state)  # fmt: skip


@register_future_learner
class OPFVSelectPolicyGradient(OPFVPolicyGradient):
    """OPFV-PG with φ chosen from the data: :func:`~pyprog.offpolicy.future_value.opfv_select`'s
    rule (the coarsest of 1, 2, 4, ..., 64 blocks of the year whose estimate agrees with
    every finer one) for the uniform policy at the target, every action alike, as
    :class:`Prognosticator` reads its ζ."""

    name = "opfv-pg-select"

    def action_values(self, data: Training) -> np.ndarray:
        r, t = data.rounds, data.policy_time()

        def uniform(context, times):
            return np.full((np.shape(times)[0], r.n_actions), 1.0 / r.n_actions)

        chosen = opfv_select(r.context, r.times, r.action, r.reward, r.pscore, uniform, [t],
                             n_actions=r.n_actions, random_state=data.random_state)  # fmt: skip
        return opfv_action_values(r, t, time_feature=chosen.time_feature[0],
                                  random_state=data.random_state)  # fmt: skip


@register_future_learner
class RegressionGreedy(FutureLearner):
    """argmax_a q̂(x, τ(t'), a): the reward model with time inputs, at the target."""

    name = "regression"

    def learn(self, data: Training) -> FuturePolicy:
        r = data.rounds
        z = reward_features(r.context, data.tau(r.times))
        model = ActionRidge(r.n_actions).fit(np.column_stack([z, np.eye(r.n_actions)[r.action]]),
                                             r.reward)  # fmt: skip
        tau, d = data.target_tau(), r.context.shape[1]
        # q̂ is affine in the context for each action: its logits are W x + b exactly
        probes = np.vstack([np.zeros((1, d)), np.eye(d)])
        q = model.predict_all(reward_features(probes, None if tau is None else
                                              np.repeat(tau, d + 1, axis=0)))  # fmt: skip
        return FuturePolicy((q[1:] - q[:1]).T[None], q[0][None], np.ones(1), greedy=True)


#: φ of :class:`OPFVPolicyGradient` unless given: the months of the year.
DEFAULT_OPFV_FEATURE = PeriodBlocks(365.25, 12)
