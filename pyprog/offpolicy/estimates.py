"""Per-round off-policy estimates of a contextual policy's value (SPEC §2d).

For rounds (x_i, t_i, a_i, r_i, π₀(a_i|x_i, t_i)) logged by π₀ and an evaluation policy
π_e, with importance weight w_i = π_e(a_i|x_i, t_i) / π₀(a_i|x_i, t_i), each round gets a
pseudo-outcome Ŷ_i whose mean over the rounds is the usual estimator:

* ``"is"`` — inverse propensity scoring (Horvitz & Thompson 1952): Ŷ_i = w_i r_i.
  E[Ŷ_i | t_i] = V_{t_i}(π_e) exactly.
* ``"snis"`` — self-normalised (Swaminathan & Joachims 2015): Ŷ_i = w_i r_i / w̄_g, w̄_g the
  mean weight of the rounds in the same group as i (the whole log by default, or the time
  bins passed as ``groups``), so the mean of Ŷ over a group is Σ w r / Σ w. Consistent,
  not unbiased.
* ``"dm"`` — direct method: Ŷ_i = Σ_a π_e(a|x_i, t_i) q̂(x_i, φ(t_i), a). Unbiased only if
  q̂ is.
* ``"dr"`` — doubly robust (Dudík, Langford & Li 2011):
  Ŷ_i = w_i (r_i − q̂(x_i, φ(t_i), a_i)) + Σ_a π_e(a|x_i, t_i) q̂(x_i, φ(t_i), a).
  With q̂ cross-fitted (:mod:`pyprog.offpolicy.crossfit`: round i's model never saw round
  i) it is unbiased for V_{t_i}(π_e) whatever q̂, and its variance is lower than IS's when
  q̂ is close to q.

Each is a :class:`RoundEstimator` (:class:`InverseWeighting`, :class:`SelfNormalisedWeighting`,
:class:`DirectMethod`, :class:`DoublyRobust`), found by name in :data:`ROUND_ESTIMATORS`; a
new one is a subclass registered with :func:`register_round_estimator`.

**Pooled direct term** (``pool_contexts=True``, for "dm" and "dr"): the direct term of
round i averages q̂ at round i's time over *every* logged context, as OPFV's does,
D̄_i = 1/n Σ_j Σ_a π_e(a|x_j) q̂(x_j, φ(t_i), a), in place of round i's own context. Its
noise from the spread of contexts then shrinks by the ratio of all rounds to the rounds a
forecaster averages at one time (1/8 of them for a block of the year). The price: q̂'s
error at x_i no longer cancels between round i's two terms, so the mean over the whole
log (nothing to pool across) is slightly noisier (the guide ``value-model.md`` has the
measurements).
Ŷ_i stays unbiased for V_{t_i}(π_e) when the contexts' distribution does not drift in
time, OPFV's own assumption; :func:`pyprog.forecast_value` checks that with
:attr:`RoundEstimates.context_part` before it pools.

Every Ŷ_i is an estimate of the value at its own time t_i, so a forecaster linear in them
(f = Σ ζ_i Ŷ_i, :mod:`pyprog.forecast`) can use them as it uses per-episode IS estimates;
the weights w_i are returned for weighted fits. q̂ sees the context, the time feature φ(t)
(one-hot) when given, and the action (:func:`pyprog.offpolicy.crossfit.reward_features`).

References
----------
Dudík, Langford & Li (2011), "Doubly robust policy evaluation and learning", ICML.
Swaminathan & Joachims (2015), "The self-normalized estimator for counterfactual learning",
NeurIPS. Chernozhukov et al. (2018), "Double/debiased machine learning", Econometrics J.
Saito et al. (2021), Open Bandit Pipeline (``obp.ope``: the names ipw / snipw / dm / dr).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pyprog.logs.rounds import check_action_dist, check_rounds, policy_action_dist
from pyprog.offpolicy.crossfit import cross_fit, reward_features
from pyprog.timeseries.features import check_time_feature, checked_labels, one_hot
from pyprog.timeseries.splits import N_FOLDS, Folds
from pyprog.timeseries.terms import TimeModel

__all__ = [
    "ESTIMATORS",
    "ROUND_ESTIMATORS",
    "DirectMethod",
    "DoublyRobust",
    "InverseWeighting",
    "RoundEstimates",
    "RoundEstimator",
    "RoundInputs",
    "SelfNormalisedWeighting",
    "register_round_estimator",
    "round_estimates",
    "round_estimator",
    "time_inputs",
]

#: The per-round estimators by name (:func:`register_round_estimator` adds one).
ROUND_ESTIMATORS: dict[str, type[RoundEstimator]] = {}
#: Every name an estimator answers to (its own and its aliases, e.g. OBP's) -> its name.
ESTIMATORS: dict[str, str] = {}


@dataclass(frozen=True)
class RoundInputs:
    """What a per-round estimator sees of the log, each of shape (n,).

    ``q_logged`` and ``direct`` are None unless the estimator uses a reward model.
    """

    #: r_i.
    reward: np.ndarray
    #: w_i = π_e(a_i|x_i, t_i) / π₀(a_i|x_i, t_i).
    weights: np.ndarray
    #: Group labels 0..G-1 for self-normalisation (all 0 by default).
    groups: np.ndarray
    #: q̂(x_i, φ(t_i), a_i), cross-fitted.
    q_logged: np.ndarray | None = None
    #: The direct term Σ_a π_e(a|x_i, t_i) q̂(x_i, φ(t_i), a), or its pooled form D̄_i.
    direct: np.ndarray | None = None


class RoundEstimator:
    """A per-round estimator: one pseudo-outcome Ŷ_i per round, whose mean is its value.

    One class per estimator, as OBP's ``obp.ope`` has; a subclass sets :attr:`name` (and
    :attr:`aliases`), says whether it needs the cross-fitted reward model, and writes
    :meth:`pseudo_outcomes`. Registered (:func:`register_round_estimator`), it is
    available to :func:`round_estimates`, :func:`pyprog.forecast_value` and
    ``pyprog forecast --estimator``.
    """

    #: The estimator's name, as ``estimator=`` takes it.
    name: ClassVar[str]
    #: Other names it answers to.
    aliases: ClassVar[tuple[str, ...]] = ()
    #: Whether it needs q̂ (the cross-fitted reward model): ``q_logged`` and ``direct``.
    uses_reward_model: ClassVar[bool] = False
    #: Whether each Ŷ_i depends on round i alone (given q̂), so that a log read in chunks
    #: gets the pseudo-outcomes of the whole (:mod:`pyprog.offpolicy.chunked`).
    row_local: ClassVar[bool] = True

    def pseudo_outcomes(self, inputs: RoundInputs) -> np.ndarray:
        """Ŷ, shape (n,): each an estimate of the value at its own round's time."""
        raise NotImplementedError


def register_round_estimator(cls: type[RoundEstimator]) -> type[RoundEstimator]:
    """Make ``cls`` available by its name and aliases (a class decorator).

    Raises
    ------
    ValueError
        If ``cls`` is not a :class:`RoundEstimator` with a name, or a name is taken.

    Examples
    --------
    >>> @register_round_estimator
    ... class Clipped(RoundEstimator):
    ...     name = "clipped-is"
    ...     def pseudo_outcomes(self, inputs):
    ...         return np.minimum(inputs.weights, 10.0) * inputs.reward
    >>> round_estimator("clipped-is").name
    'clipped-is'
    >>> _ = ROUND_ESTIMATORS.pop("clipped-is"), ESTIMATORS.pop("clipped-is")
    """
    if not (isinstance(cls, type) and issubclass(cls, RoundEstimator)):
        raise ValueError(f"a round estimator must subclass RoundEstimator; got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or name != name.lower():
        raise ValueError(f"{cls.__name__}.name must be a lower-case string; got {name!r}")
    for alias in cls.aliases:
        if not isinstance(alias, str) or alias != alias.lower():
            raise ValueError(f"{cls.__name__}.aliases must be lower-case strings; got {alias!r}")
    for alias in (name, *cls.aliases):
        if alias in ESTIMATORS or alias == "auto":
            raise ValueError(f"the estimator name {alias!r} is taken ({cls.__name__})")
    ROUND_ESTIMATORS[name] = cls
    ESTIMATORS.update(dict.fromkeys((name, *cls.aliases), name))
    return cls


def round_estimator(name) -> RoundEstimator:
    """The estimator called ``name`` (or one of its aliases, case ignored), as an instance.

    Examples
    --------
    >>> round_estimator("IPW").name
    'is'
    """
    key = ESTIMATORS.get(name.lower()) if isinstance(name, str) else None
    if key is None:
        raise ValueError(f"estimator must be one of {sorted(ESTIMATORS)}; got {name!r}")
    return ROUND_ESTIMATORS[key]()


@register_round_estimator
class InverseWeighting(RoundEstimator):
    """Inverse propensity scoring (Horvitz & Thompson 1952): Ŷ_i = w_i r_i."""

    name = "is"
    aliases = ("ipw", "ips")

    def pseudo_outcomes(self, inputs: RoundInputs) -> np.ndarray:
        return inputs.weights * inputs.reward


@register_round_estimator
class SelfNormalisedWeighting(RoundEstimator):
    """Self-normalised IS (Swaminathan & Joachims 2015): Ŷ_i = w_i r_i / w̄_g, w̄_g the mean
    weight of round i's group."""

    name = "snis"
    aliases = ("snipw",)
    row_local = False  # w̄_g is the mean over the group's rounds

    def pseudo_outcomes(self, inputs: RoundInputs) -> np.ndarray:
        g = inputs.groups
        mean_w = np.bincount(g, weights=inputs.weights) / np.bincount(g)
        if (mean_w[g] <= 0).any():
            raise ValueError(
                "snis: every weight of a group is 0 (π_e never takes the logged actions there); "
                "self-normalisation is undefined: use 'is' or 'dr', or wider groups"
            )
        return inputs.weights * inputs.reward / mean_w[g]


@register_round_estimator
class DirectMethod(RoundEstimator):
    """The direct method: Ŷ_i = Σ_a π_e(a|x_i, t_i) q̂(x_i, φ(t_i), a)."""

    name = "dm"
    uses_reward_model = True

    def pseudo_outcomes(self, inputs: RoundInputs) -> np.ndarray:
        return inputs.direct


@register_round_estimator
class DoublyRobust(RoundEstimator):
    """Doubly robust (Dudík, Langford & Li 2011): Ŷ_i = w_i (r_i − q̂(x_i, φ(t_i), a_i)) + the
    direct term."""

    name = "dr"
    uses_reward_model = True

    def pseudo_outcomes(self, inputs: RoundInputs) -> np.ndarray:
        return inputs.weights * (inputs.reward - inputs.q_logged) + inputs.direct


@dataclass(frozen=True)
class RoundEstimates:
    """One pseudo-outcome per round; their mean is the estimator's value over the log.

    Attributes
    ----------
    values : numpy.ndarray, shape (n,)
        Ŷ_i, an estimate of V_{t_i}(π_e).
    weights : numpy.ndarray, shape (n,)
        w_i = π_e(a_i|x_i, t_i) / π₀(a_i|x_i, t_i).
    times : numpy.ndarray, shape (n,)
        t_i as float (days since 1970-01-01 UTC when given as dates).
    estimator : str
        The estimator's name: "is", "snis", "dm", "dr" or a registered one.
    q_hat : numpy.ndarray of shape (n, A), or None
        The cross-fitted q̂(x_i, φ(t_i), ·) ("dm", "dr").
    fold : numpy.ndarray of shape (n,), or None
        Each round's cross-fitting fold ("dm", "dr").
    context_part : numpy.ndarray of shape (n,), or None
        With ``pool_contexts``: Σ_a π_e(a|x_i) q̂(x_i, 0, a), the part of the direct term
        that moves with the context; a drift of its mean in time is a drift of the contexts
        that pooling does not follow.
    """

    values: np.ndarray
    weights: np.ndarray
    times: np.ndarray
    estimator: str
    q_hat: np.ndarray | None = None
    fold: np.ndarray | None = None
    context_part: np.ndarray | None = None

    @property
    def value(self) -> float:
        """The mean of the pseudo-outcomes: the stationary estimate over the whole log."""
        return float(self.values.mean())

    @property
    def se(self) -> float:
        """Standard error of :attr:`value`, std(Ŷ)/√n (rounds independent)."""
        n = self.values.shape[0]
        return float(self.values.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")


def time_inputs(time_feature, times: np.ndarray, t0: float, t1: float):
    """The reward model's time inputs at ``times``: (n, k) or None."""
    if time_feature is None:
        return None
    if isinstance(time_feature, TimeModel):  # its columns but the constant
        return time_feature.design(times, t0, t1)[:, 1:]
    labels = checked_labels("time_feature", time_feature, times)
    return one_hot(labels, time_feature.n_levels)


def _groups(groups, n: int) -> np.ndarray:
    if groups is None:
        return np.zeros(n, dtype=np.int64)
    arr = np.asarray(groups)
    if arr.shape != (n,):
        raise ValueError(f"groups must have one label per round, shape ({n},); got {arr.shape}")
    return np.unique(arr, return_inverse=True)[1].ravel()


def round_estimates(  # noqa: PLR0913  (reviewed: docs/guides/development.md)
    context,
    times,
    action,
    reward,
    pscore,
    action_dist,
    *,
    estimator: str = "dr",
    reward_model=None,
    time_feature=None,
    n_folds: int = N_FOLDS,
    folds: str | Folds = "random",
    groups=None,
    n_actions: int | None = None,
    pool_contexts: bool = False,
    random_state=None,
) -> RoundEstimates:
    """Per-round IS, self-normalised IS, direct-method or doubly robust estimates.

    Parameters
    ----------
    context : array_like, shape (n, d), or None
    times : array_like, shape (n,)
        Numbers or dates (:func:`pyprog.logs.times.as_days`).
    action : array_like of int, shape (n,)
    reward : array_like, shape (n,)
    pscore : array_like, shape (n,)
        π₀(a_i|x_i, t_i) in (0, 1].
    action_dist : array_like, shape (n, A), or callable
        π_e(· | x_i, t_i), rows summing to 1; or ``policy(context, times) -> (n, A)``.
    estimator : {"dr", "dm", "is", "snis"} or a registered name
        Also OBP's aliases "ipw" / "ips" (= "is") and "snipw" (= "snis"); case is ignored.
        :func:`register_round_estimator` adds one.
    reward_model : scikit-learn-style regressor, optional
        For "dm" and "dr"; default :class:`~pyprog.offpolicy.reward_model.ActionRidge`.
    time_feature : time feature or TimeModel, optional
        φ for the reward model's inputs, e.g. ``PeriodBlocks(365.25, 8)`` (one-hot), or a
        :class:`~pyprog.timeseries.terms.TimeModel` such as ``trend() + blocks(...)``
        (its columns but the constant); None: q̂(x, a).
    n_folds : int
        Cross-fitting folds K >= 2.
    folds : {"random", "blocked"} or Folds
        How rounds are split (:mod:`pyprog.offpolicy.crossfit` says why random is the
        default; :mod:`pyprog.timeseries.splits` holds the objects).
    groups : array_like, shape (n,), optional
        For "snis": normalise the weights within each group (e.g. day or week bins).
    n_actions : int, optional
        A; required when ``action_dist`` is a callable, else its number of columns.
    pool_contexts : bool
        For "dm" and "dr": average the direct term over every logged context at each
        round's time, as OPFV does (see the module docstring). Needs a reward model affine
        in its inputs (``affine_features = True``, as the default's). Each context enters
        with its own row of π_e, so a policy that changes within the log is averaged over
        the log's times: evaluate it at one time (as ``forecast_value`` does) to pool.
    random_state : None, int or numpy.random.Generator
        The random folds.

    Returns
    -------
    RoundEstimates
        ``values`` (n,): Ŷ_i; ``value`` their mean.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = 2000
    >>> x = rng.normal(size=(n, 2))
    >>> a = rng.integers(0, 2, n)
    >>> r = (a == 1) * 1.0 + rng.normal(0, 0.1, n)
    >>> always_1 = np.tile([0.0, 1.0], (n, 1))
    >>> est = round_estimates(x, np.arange(n), a, r, np.full(n, 0.5), always_1, random_state=0)
    >>> est.values.shape, round(est.value, 2)
    ((2000,), 1.0)
    """
    kind = round_estimator(estimator)
    if not isinstance(pool_contexts, (bool, np.bool_)):
        raise ValueError(f"pool_contexts must be True or False; got {pool_contexts!r}")
    if callable(action_dist):
        if n_actions is None:
            raise ValueError(
                "n_actions is required when action_dist is a callable policy(context, times)"
            )
    else:
        shape = np.shape(action_dist)
        if len(shape) < 2:
            raise ValueError(f"action_dist must have shape (n, n_actions); got shape {shape}")
        if n_actions is None:
            n_actions = shape[1]
    log = check_rounds(context, times, action, reward, pscore, n_actions)
    if callable(action_dist):
        pi = policy_action_dist(action_dist, log.context, log.times, n_actions)
    else:
        pi = check_action_dist("action_dist", action_dist, log.n, n_actions)
    rows = np.arange(log.n)
    w = pi[rows, log.action] / log.pscore
    inputs = RoundInputs(log.reward, w, _groups(groups, log.n))
    if not kind.uses_reward_model:
        return RoundEstimates(kind.pseudo_outcomes(inputs), w, log.times, kind.name)
    t0, t1 = float(log.times.min()), float(log.times.max())
    if time_feature is not None and not isinstance(time_feature, TimeModel):
        check_time_feature("time_feature", time_feature)
    if pool_contexts and not getattr(reward_model, "affine_features", reward_model is None):
        raise ValueError(
            f"pool_contexts=True needs a reward model affine in its inputs (one marked "
            f"affine_features = True, as the default ActionRidge); got {reward_model!r}"
        )
    tau = time_inputs(time_feature, log.times, t0, t1)
    fit = cross_fit(
        reward_features(log.context, tau),
        log.times,
        log.action,
        log.reward,
        n_actions,
        reward_model=reward_model,
        n_folds=n_folds,
        folds=folds,
        random_state=random_state,
    )
    own = None
    if pool_contexts:  # D̄(t_i): every logged context at round i's time
        dm, own = fit.pooled_direct(log.context, 0 if tau is None else tau.shape[1], pi)
    else:
        dm = (pi * fit.q_hat).sum(axis=1)  # Σ_a π_e(a|x_i, t_i) q̂(x_i, φ(t_i), a)
    inputs = RoundInputs(log.reward, w, inputs.groups, fit.q_hat[rows, log.action], dm)
    values = kind.pseudo_outcomes(inputs)
    return RoundEstimates(values, w, log.times, kind.name, fit.q_hat, fit.fold, own)
