"""Learners: Pro-OLS, Pro-WLS (Prognosticator) and the baselines FTRL-PG and ONPG.

One mechanism (paper Algorithm 1): act with the policy, store (s, a, β, r) of every
step, and every δ episodes take gradient steps on

    objective(θ) + λ_H · mean entropy of π_θ over the stored steps.

Every objective's gradient is a weighted sum of score functions,
``Σ_{i,t} c_{i,t} ∇θ log π(a_{i,t}|s_{i,t})``; the four learners differ only in how
they weight past episodes, i.e. in :meth:`Learner._coefficients`:

=========  ==========================================================================
learner    coefficient of ∇log π(a_{i,t}|s_{i,t})
=========  ==========================================================================
Pro-OLS    ζ_i g_{i,t}  with ζ the OLS forecast weights (cached per update) and g the
           PDIS weights (Property 1): ∇ of the NIS forecast Σ_i ζ_i Ĵ_i
Pro-WLS    (∂f/∂λ_i) λ_i [λ_i < c]: ∇ of the NWIS forecast f through the ratios λ_i
FTRL-PG    g_{i,t} / N: the mean PDIS gradient over all stored episodes
ONPG       g_{i,t} / δ over the last δ episodes only, which are then discarded
=========  ==========================================================================
"""

from __future__ import annotations

import numpy as np

from pyprog._ext.backend import kernels
from pyprog.forecast.bases import forecast_design, n_features
from pyprog.forecast.forecasters import BasisForecaster, Forecaster
from pyprog.forecast.selection import Selection, select_forecaster
from pyprog.learn.buffer import EpisodeBuffer
from pyprog.learn.hyperparams import Hyper
from pyprog.learn.optim import SGD, Adam, RMSprop, make_optimizer
from pyprog.learn.policies import Policy
from pyprog.learn.policies.base import LAYER_BOUND_MAX
from pyprog.offpolicy.episodes import discounted_returns
from pyprog.timeseries.errors import ForecastError

__all__ = [
    "FTRLPG",
    "LEARNERS",
    "ONPG",
    "LayerOverflowError",
    "Learner",
    "NonFiniteParametersError",
    "ProOLS",
    "ProWLS",
]


class NonFiniteParametersError(FloatingPointError):
    """A gradient step made the policy's parameters NaN or infinite."""


class LayerOverflowError(NonFiniteParametersError):
    """The policy's parameters and observations are too large for a pass: a sum of one of
    its layers could overflow (:meth:`~pyprog.learn.policies.Policy.layer_bound` above
    :data:`~pyprog.learn.policies.base.LAYER_BOUND_MAX`), raised before the pass by the
    compiled update and the Python loop alike."""


class Learner:
    """Policy-gradient learner over a buffer of past episodes (base of the four learners).

    Parameters
    ----------
    policy : Policy
        The policy being learnt (updated in place).
    hyper : Hyper
        Learning rate, δ, inner steps, entropy weight, basis, d, clip, γ, optimiser.
    horizon : int
        Maximum number of steps per episode (the buffer's width H).
    compiled : bool or None, default None
        Run each update's inner steps in one compiled call (``policy_update``) instead
        of the Python loop: True forces it (ValueError where it is unavailable: the NumPy
        backend, a policy other than softmax-linear, softmax-MLP and a Gaussian policy with
        finite bounds), False forces the
        Python loop, None uses the compiled loop where available. Both take the same
        steps (to rounding: 1e-12 after one update in tests; with ``hyper.dtype="float32"``
        both run the policy's passes in float32 and agree to float32 rounding).

    Attributes
    ----------
    episodes : int
        Episodes finished so far.
    updates, skipped_updates, skipped_steps : int
        Updates made; updates skipped entirely because there was no forecast (too few
        episodes for the basis, or a rank-deficient weighted system); inner steps not
        taken for those reasons.

    Examples
    --------
    >>> import numpy as np
    >>> from pyprog.learn.policies import SoftmaxLinear
    >>> learner = FTRLPG(SoftmaxLinear(1, 2), Hyper(lr=0.05, delta=2, inner_steps=5), horizon=1)
    >>> rng = np.random.default_rng(0)
    >>> for k in range(60):  # a bandit where action 1 pays 1
    ...     action, log_prob = learner.act(np.ones(1), rng)
    ...     learner.observe(np.ones(1), action, log_prob, float(action))
    ...     _ = learner.end_episode()
    >>> bool(learner.policy.b[1] > learner.policy.b[0]), learner.updates
    (True, 30)
    """

    #: Name used in results, messages and the CLI.
    name = "learner"

    #: The ``_coefficients`` that this class's ``_kernel_coefficients`` computes too.
    _kernel_twin = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "_kernel_coefficients" in vars(cls):
            cls._kernel_twin = vars(cls).get("_coefficients")

    def __init__(
        self, policy: Policy, hyper: Hyper, horizon: int, compiled: bool | None = None
    ) -> None:
        if hyper.dtype != "float64" and (policy.compiled_policy() or ("",))[0] != "softmax":
            raise ValueError(
                f"dtype={hyper.dtype!r} needs a softmax policy (SoftmaxLinear, SoftmaxMLP); "
                f"got {policy!r}: use dtype='float64'"
            )
        self.policy = policy
        self.hyper = hyper
        policy.dtype = np.dtype(hyper.dtype)  # the precision of its batched passes
        self.buffer = EpisodeBuffer.for_policy(policy, horizon, capacity=self._capacity(hyper))
        self.optimizer = make_optimizer(
            hyper.optimizer, policy.theta, policy.learning_rates(hyper.lr)
        )
        self.episodes = 0
        self.updates = 0
        self.skipped_updates = 0
        self.skipped_steps = 0
        self._grad = np.empty(policy.n_params)
        self._ev = None
        if compiled not in (None, True, False):
            raise ValueError(f"compiled must be True, False or None (automatic); got {compiled!r}")
        available = self._compiled_available()
        if compiled and not available:
            raise ValueError(
                "compiled=True needs the compiled kernels (not PYPROG_PURE_PYTHON=1) and a "
                f"softmax or bounded Gaussian policy; got {policy!r} on the "
                f"{'cython' if hasattr(kernels, 'policy_update') else 'numpy'} backend"
            )
        self.compiled = available if compiled is None else compiled
        #: basis="auto": the last :class:`~pyprog.forecast.selection.Selection`, and the
        #: ``(episode, model)`` of every selection made.
        self.selection: Selection | None = None
        self.models: list[tuple[int, str]] = []
        self.buffer.start_episode()

    # -- acting -------------------------------------------------------------------------
    def act(self, obs: np.ndarray, rng: np.random.Generator):
        """Sample an action of the current policy: ``(action, log β(action|obs))``."""
        return self.policy.sample(obs, rng)

    def observe(self, obs: np.ndarray, action, log_prob: float, reward: float) -> None:
        """Store one step of the current episode (only s, a, log β and r are kept)."""
        self.buffer.add(obs, action, log_prob, reward)

    def end_episode(self) -> bool:
        """Close the current episode; every δ episodes, update. True if it updated."""
        self.buffer.end_episode()
        self.episodes += 1
        updated = False
        if self.episodes % self.hyper.delta == 0:
            updated = self.update()
        self.buffer.start_episode()
        return updated

    # -- learning -----------------------------------------------------------------------
    def update(self) -> bool:
        """Gradient ascent on the forecast (or baseline objective) + λ_H · entropy.

        Returns True if at least one step was taken; an update without a forecast is
        skipped and counted, never a NaN step.
        """
        steps = self._n_steps()
        if not self._begin():
            self.skipped_updates += 1
            self.skipped_steps += steps
            self._finish()
            return False
        use_kernel = self.compiled and self._compiled_available()
        inputs = self._kernel_coefficients() if use_kernel else None
        if inputs is not None:
            return self._compiled_update(steps, inputs)
        for step in range(steps):
            self._check_layers(step)
            grad = self._gradient()
            if grad is None:  # no forecast at this θ: stop here, count what was not done
                self.skipped_steps += steps - step
                if step == 0:
                    self.skipped_updates += 1
                    self._finish()
                    return False
                break
            if not np.isfinite(grad).all():
                raise self._non_finite("gradient", step)
            self.optimizer.step(np.negative(grad, out=grad))  # optimisers minimise
            if not np.isfinite(self.policy.theta).all():
                raise self._non_finite("policy's parameters", step)
        self.updates += 1
        self._finish()
        return True

    def _compiled_available(self) -> bool:
        # _kernel_coefficients must describe the _coefficients in use: a subclass or a patch
        # that changes _coefficients alone runs the Python loop
        return (
            type(self)._coefficients is type(self)._kernel_twin
            and hasattr(kernels, "policy_update")
            and self.policy.compiled_policy() is not None
            and type(self.optimizer) in _OPTIMIZER_KINDS
        )

    def _compiled_update(self, steps: int, inputs: tuple) -> bool:
        """The inner steps of :meth:`update` in one call of ``kernels.policy_update``."""
        opt = self.optimizer
        kind = _OPTIMIZER_KINDS[type(opt)]
        lr = np.ascontiguousarray(np.broadcast_to(opt.lr, opt.theta.shape), dtype=np.float64)
        if kind == kernels.OPT_ADAM:
            state = (kind, lr, opt.exp_avg, opt.exp_avg_sq, opt.step_count, *opt.betas, opt.eps)
        elif kind == kernels.OPT_RMSPROP:
            state = (kind, lr, opt.square_avg, opt.square_avg, 0, opt.alpha, 0.0, opt.eps)
        else:
            scratch = np.empty_like(lr)  # SGD keeps no state
            state = (kind, lr, scratch, scratch, 0, 0.0, 0.0, 0.0)
        buf, flat, h = self.buffer, self._steps, self.hyper
        zeta, wls = inputs
        done, status, t = kernels.policy_update(
            self.policy.theta, self.policy.compiled_policy(), flat.obs, flat.actions, flat.index,
            buf.log_beta, buf.rewards, buf.mask, h.gamma, h.clip, steps,
            h.entropy_lambda / len(flat.index), zeta, wls, state, h.dtype == "float32",
        )  # fmt: skip
        if kind == kernels.OPT_ADAM:
            opt.step_count = t
        if status == kernels.UPDATE_NONFINITE_GRAD:
            raise self._non_finite("gradient", done)
        if status == kernels.UPDATE_NONFINITE_THETA:
            raise self._non_finite("policy's parameters", done)
        if status == kernels.UPDATE_LAYER_OVERFLOW:
            self._check_layers(done)  # raises, with the bound in the message
            raise self._layer_overflow(done, float("inf"))  # unreachable: the same bound
        if status == kernels.UPDATE_NO_FORECAST:
            self.skipped_steps += steps - done
            if done == 0:
                self.skipped_updates += 1
                self._finish()
                return False
        self.updates += 1
        self._finish()
        return True

    def _kernel_coefficients(self) -> tuple | None:
        """This learner's coefficients as ``policy_update`` takes them, or None.

        ``(zeta, None)``: the PDIS weights times a per-episode weight ζ (N,);
        ``(None, (phi, returns, phi_star))``: Pro-WLS's NWIS gradient. None runs the
        Python loop (a learner whose coefficients the kernel does not know).
        """
        return None

    def _check_layers(self, step: int) -> None:
        """A :class:`LayerOverflowError` if a pass at the current θ over the buffer's steps
        could overflow (as ``kernels.policy_update`` checks before each inner step)."""
        bound = self.policy.layer_bound(self._steps.obs)
        if not bound <= LAYER_BOUND_MAX[np.dtype(self.hyper.dtype)]:
            raise self._layer_overflow(step, bound)

    def _layer_overflow(self, step: int, bound: float) -> LayerOverflowError:
        top = float(np.abs(self._steps.obs).max(initial=0.0))
        return LayerOverflowError(
            f"{self.name}: a {self.hyper.dtype} pass of the policy could overflow at episode "
            f"{self.episodes} (update {self.updates + 1}, inner step {step + 1}): its layers' "
            f"sums |W x + b| (or |θ|) reach {bound:.3g}, beyond "
            f"{LAYER_BOUND_MAX[np.dtype(self.hyper.dtype)]:.3g}, with observations up to "
            f"{top:.3g}; scale the observations or lower lr"
            + ("" if self.hyper.dtype == "float64" else ", or use dtype='float64'")
            + f"; hyper-parameters: {self.hyper.to_dict()}"
        )

    def _non_finite(self, what: str, step: int) -> NonFiniteParametersError:
        return NonFiniteParametersError(
            f"{self.name}: the {what} became non-finite at episode {self.episodes} "
            f"(update {self.updates + 1}, inner step {step + 1}); "
            f"hyper-parameters: {self.hyper.to_dict()}"
        )

    def gradient(self) -> np.ndarray | None:
        """∇θ of the objective + λ_H · entropy on the buffer at the current θ, shape (P,).

        None if there is no forecast (too few episodes, or a rank-deficient system).
        """
        if not self._begin():
            return None
        self._check_layers(0)
        grad = self._gradient()
        return None if grad is None else grad.copy()

    def _begin(self) -> bool:
        """Gather the buffer for an update; False if it cannot be made."""
        buf = self.buffer
        n = len(buf)
        if n == 0 or not self._prepare(n):
            return False
        self._steps = steps = buf.flat_valid()
        self._log_pi = np.zeros_like(buf.log_beta)
        # entropy term: λ_H · mean over the valid steps of H(π(·|s))
        m = len(steps.index)
        self._entropy_coef = np.full(m, self.hyper.entropy_lambda / m)
        return True

    def _gradient(self) -> np.ndarray | None:
        """One gradient of the objective at the current θ (into a reused buffer), or None."""
        steps = self._steps
        self._ev = ev = self.policy.evaluate(steps.obs, steps.actions, check=False, out=self._ev)
        log_pi = steps.scatter(ev.log_prob, out=self._log_pi)
        coef = self._coefficients(log_pi, self.buffer.log_beta, self.buffer.mask)
        if coef is None:
            return None
        return self.policy.backward(ev, steps.gather(coef), self._entropy_coef, out=self._grad)

    def _n_steps(self) -> int:
        return self.hyper.inner_steps

    def _capacity(self, hyper: Hyper) -> int:
        return hyper.buffer_size

    def _prepare(self, n: int) -> bool:
        """Per-update work that does not depend on θ; False skips the update."""
        return True

    def _finish(self) -> None:
        """Work after an update (ONPG discards its data)."""

    def _coefficients(self, log_pi: np.ndarray, log_beta: np.ndarray, mask: np.ndarray):
        """Per-step coefficients (N, H) of ∇log π in the objective's gradient, or None."""
        raise NotImplementedError

    def _pdis(self, log_pi: np.ndarray, log_beta: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """g[i, t] = Σ_{l≥t} min(c, Π_{m≤l} π/β) γ^l r_{i,l}: PDIS gradient weights (N, H)."""
        h = self.hyper
        g, _ = kernels.pdis_weights(log_pi, log_beta, self.buffer.rewards, mask, h.gamma, h.clip)
        return g

    def stats(self) -> dict[str, int]:
        """Counters: episodes, updates, skipped updates and steps."""
        return {
            "episodes": self.episodes,
            "updates": self.updates,
            "skipped_updates": self.skipped_updates,
            "skipped_steps": self.skipped_steps,
        }


class FTRLPG(Learner):
    """FTRL-PG: maximise the mean PDIS estimate over all stored episodes (Finn et al. 2019)."""

    name = "ftrl-pg"

    def _coefficients(self, log_pi, log_beta, mask):
        g = self._pdis(log_pi, log_beta, mask)
        g *= 1.0 / log_pi.shape[0]
        return g

    def _kernel_coefficients(self):
        n = len(self.buffer)
        return np.full(n, 1.0 / n), None


class ONPG(FTRLPG):
    """ONPG: δ steps on the last δ episodes only, which are then discarded (Al-Shedivat et al.).

    FTRL-PG's objective — the mean PDIS estimate over the buffer — on a buffer that holds
    only the current batch.
    """

    name = "onpg"

    def _capacity(self, hyper: Hyper) -> int:
        return hyper.delta

    def _n_steps(self) -> int:
        return self.hyper.delta

    def _finish(self) -> None:
        self.buffer.clear()


class _Forecasting(Learner):
    """Pro-OLS and Pro-WLS: a forecaster of the buffer, fixed or chosen (``basis="auto"``)."""

    def _auto_forecaster(self, n: int) -> Forecaster | None:
        """The forecaster ``basis="auto"`` chose, re-chosen every ``select_every`` episodes.

        The backtests score candidates on the per-episode estimates at the current θ (NIS:
        the PDIS estimates Ĵ_i; NWIS: the returns G_i weighted by the ratios λ_i). None
        (skip this update) until there are enough episodes for the backtests.
        """
        last = self.models[-1][0] if self.models else None
        if last is not None and self.episodes - last < self.hyper.select_every:
            return self.selection.forecaster
        buf = self.buffer
        steps = buf.flat_valid()
        ev = self.policy.evaluate(steps.obs, steps.actions, check=False)
        log_pi = steps.scatter(ev.log_prob, out=np.zeros_like(buf.log_beta))
        try:
            last = None if self.selection is None else self.selection.forecaster
            self.selection = self._select(log_pi, n, last)
        except ForecastError:  # too few episodes, or none of non-zero weight: keep the last
            return None if self.selection is None else self.selection.forecaster
        self.models.append((self.episodes, self.selection.model))
        return self.selection.forecaster

    def _select(self, log_pi: np.ndarray, n: int, incumbent: Forecaster | None) -> Selection:
        raise NotImplementedError


class ProOLS(_Forecasting):
    """Pro-OLS: ascend the NIS forecast ``Σ_i ζ_i Ĵ_i(θ)`` of the next δ episodes' performance."""

    name = "pro-ols"

    def _prepare(self, n: int) -> bool:
        h = self.hyper
        if h.basis == "auto":
            forecaster = self._auto_forecaster(n)
            if forecaster is None:
                return False
            try:  # ζ of the chosen forecaster (cached per (forecaster, n, δ))
                self._zeta = forecaster.weights(n, h.delta)[:, None]
            except ForecastError:
                return False
            return True
        if n < n_features(h.basis, h.d):
            return False
        phi, phi_star = forecast_design(n, h.delta, h.basis, h.d)
        # ζ = ∂forecast/∂Ĵ_i: OLS weights, the same for every inner step of this update
        _, _, zeta, _, status = kernels.wls_forecast(phi, np.ones(n), np.zeros(n), phi_star)
        if status == kernels.WLS_RANK_DEFICIENT:
            return False
        self._zeta = zeta[:, None]
        return True

    def _select(self, log_pi, n, incumbent):
        g = self._pdis(log_pi, self.buffer.log_beta, self.buffer.mask)
        return select_forecaster(
            g[:, 0], self.hyper.delta, incumbent=incumbent, what=f"{self.name} basis='auto'"
        )

    def _coefficients(self, log_pi, log_beta, mask):
        g = self._pdis(log_pi, log_beta, mask)
        g *= self._zeta
        return g

    def _kernel_coefficients(self):
        return np.ascontiguousarray(self._zeta[:, 0]), None


class ProWLS(_Forecasting):
    """Pro-WLS: ascend the NWIS forecast ``φ*(ΦᵀΛΦ)⁻¹ΦᵀΛG`` through the ratios ``λ_i(θ)``."""

    name = "pro-wls"

    def _prepare(self, n: int) -> bool:
        h = self.hyper
        # discounted returns G_i = Σ_t γ^t r_{i,t}: they do not depend on θ
        self._returns = discounted_returns(self.buffer.rewards, self.buffer.mask, h.gamma)
        self._kappa = None  # the forecaster's own episode weights κ, None for a basis
        if h.basis == "auto":
            forecaster = self._auto_forecaster(n)
            if forecaster is None or n < forecaster.features:
                return False
            self._phi, self._phi_star, kappa = forecaster.design(n, h.delta)
            if not isinstance(forecaster, BasisForecaster):
                self._kappa = kappa  # window / EWMA: the WLS weights are κ_i λ_i
        else:
            if n < n_features(h.basis, h.d):
                return False
            self._phi, self._phi_star = forecast_design(n, h.delta, h.basis, h.d)
        # n episodes on n basis features: the fit interpolates them whatever the weights
        # λ_i(θ), so the forecast does not depend on θ and its gradient is exactly 0 (as
        # computed, rounding noise, which RMSprop would scale up to full steps)
        self._interpolates = self._kappa is None and n == self._phi.shape[1]
        return True

    def _select(self, log_pi, n, incumbent):
        h = self.hyper
        lam, _ = kernels.episode_ratios(log_pi, self.buffer.log_beta, self.buffer.mask, h.clip)
        return select_forecaster(
            self._returns,
            h.delta,
            ratios=lam,
            incumbent=incumbent,
            what=f"{self.name} basis='auto'",
        )

    def _coefficients(self, log_pi, log_beta, mask):
        if self._interpolates:  # ∂f/∂λ = 0: only the entropy term moves θ
            return np.zeros(mask.shape)
        lam, unclipped = kernels.episode_ratios(log_pi, log_beta, mask, self.hyper.clip)
        kappa = self._kappa
        weights = lam if kappa is None else kappa * lam
        _, _, _, dfdlam, status = kernels.wls_forecast(
            self._phi, weights, self._returns, self._phi_star
        )
        if status == kernels.WLS_RANK_DEFICIENT:
            return None
        if kappa is not None:  # ∂f/∂λ_i = κ_i ∂f/∂w_i
            dfdlam = dfdlam * kappa
        # ∇λ_i = λ_i Σ_t ∇log π(a_{i,t}|s_{i,t}) where the ratio is not clipped, else 0
        per_episode = dfdlam * lam * unclipped
        return mask * per_episode[:, None]

    def _kernel_coefficients(self):
        if self._kappa is not None:  # a window / EWMA forecaster: the Python loop
            return None
        if self._interpolates:  # the PDIS weights times ζ = 0: the entropy term alone
            return np.zeros(self._phi.shape[0]), None
        return None, (self._phi, self._returns, self._phi_star)


#: Optimiser classes the compiled update runs, and their kind in ``policy_update``.
_OPTIMIZER_KINDS = (
    {SGD: kernels.OPT_SGD, RMSprop: kernels.OPT_RMSPROP, Adam: kernels.OPT_ADAM}
    if hasattr(kernels, "OPT_SGD")
    else {}
)

#: Learner classes by algorithm name.
LEARNERS: dict[str, type[Learner]] = {c.name: c for c in (ProOLS, ProWLS, FTRLPG, ONPG)}
