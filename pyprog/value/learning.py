"""The policy to run on a future date, learned from logged rounds, and whether to run it.

:func:`learn_for_future` is Prognosticator's "optimise the forecast" on a log of
timestamped contextual-bandit rounds: the forecast of a policy's value at the target is
linear in the per-round estimates (f = Σ_i ζ_i Ŷ_i), so its gradient is a ζ-weighted doubly
robust policy gradient (:mod:`pyprog.value.learners`). The same call learns the baselines
(regression-based greedy, IPS-PG, DR-PG, OPFV-PG with φ known and chosen from the data) so
that they are compared on the user's own log, each in the same honest way:

1. **Cross-fitting**: the log is split in two halves by a hash of each round's values
   (:class:`~pyprog.timeseries.splits.HashedFolds`: both halves span the whole log); each
   learner learns one policy on each half, and the policy returned is their mixture,
   π = s_A π_A + s_B π_B (s_A the share of rounds in half B).
2. **Its forecast**: :func:`pyprog.forecast_value` of the mixture at the target, with every
   round evaluated under the policy learned on the *other* half: the interval is computed
   on rounds not used to fit the policy it judges, and is the forecast's prediction interval
   for the value on the day (or the window's average).
3. **The safety test**: the forecast of the advantage V_{t'}(π) − V_{t'}(π₀), from the
   per-round doubly robust estimates of π minus the logged rewards (each an unbiased
   estimate of V_{t_i}(π₀)), through the same model average in time; the learned policy is
   deployed only if the advantage's one-sided lower bound at level 1 − ``test_alpha`` is
   above 0. Otherwise the verdict is to keep the logging policy.

The log is held in memory, which grows linearly with it (``bench/learn_memory.py``); it
takes every form :func:`pyprog.forecast_value` takes (a Dask DataFrame is computed).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from pyprog.logs.chunks import rounds_of
from pyprog.logs.columns import column, log_columns
from pyprog.logs.rounds import Rounds
from pyprog.logs.rounds_csv import read_rounds_csv
from pyprog.logs.streams import is_dask_frame
from pyprog.logs.times import forecast_targets, many_targets
from pyprog.offpolicy.estimates import round_estimates
from pyprog.offpolicy.support import SupportWarning
from pyprog.timeseries.features import check_time_feature
from pyprog.timeseries.interval_results import INTERVAL_ALPHA, TEST_ALPHA, IntervalResult
from pyprog.timeseries.splits import HashedFolds
from pyprog.utils.validation import check_alpha, shorten
from pyprog.value.averaging import ModelAverage
from pyprog.value.bins import bin_estimates, bin_noise
from pyprog.value.candidates import default_reward_time_model
from pyprog.value.forecast import ValueForecast, _check_horizon, _check_options, forecast_value
from pyprog.value.future_policy import FuturePolicy
from pyprog.value.learners import DEFAULT_OPFV_FEATURE, FUTURE_LEARNERS, Training

__all__ = ["Advantage", "LearnedPolicy", "learn_for_future"]

#: The baselines learned beside the learner unless ``baselines=`` says otherwise.
DEFAULT_BASELINES = ("regression", "ips-pg", "dr-pg", "opfv-pg", "opfv-pg-select")
#: The widest hidden layer taken: a small MLP, learned by full-batch L-BFGS.
MAX_HIDDEN = 256


@dataclass(frozen=True)
class Advantage(IntervalResult):
    """The forecast of V_{t'}(π) − V_{t'}(π₀) and its one-sided lower bound.

    Attributes
    ----------
    value : float
    low : float
        The lower bound at level 1 − ``alpha``.
    high : float
        ``math.inf`` (one-sided).
    alpha : float
    """

    value: float
    low: float
    high: float
    alpha: float


@dataclass(frozen=True)
class LearnedPolicy:
    """What :func:`learn_for_future` learned, its forecast, and whether to deploy it.

    Attributes
    ----------
    policy : FuturePolicy
        The learned policy (``policy.probabilities(x, t)``; ``policy.save(path)``).
    forecast : ValueForecast
        Its value at the target, each round judged by the half-policy not learned on it.
    advantage : Advantage
        Its forecast advantage over the logging policy, with a one-sided lower bound.
    deploy : bool
        Whether the advantage's lower bound is above 0: run ``policy``; otherwise keep the
        logging policy.
    learner : str
    baselines : dict
        Each baseline's name -> ``(FuturePolicy, ValueForecast)``, forecast the same way.
    """

    policy: FuturePolicy
    forecast: ValueForecast
    advantage: Advantage
    deploy: bool
    learner: str
    baselines: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """One line: deploy, or keep the logging policy, and why."""
        bound = f"{self.advantage.low:+.4g}"
        level = f"{self.advantage.level:.0%}"
        if self.deploy:
            return f"deploy: its advantage over the logging policy is >= {bound} ({level})"
        return (
            f"keep the logging policy: the learned policy's advantage is not shown to be above "
            f"0 (its {level} lower bound is {bound})"
        )

    def __str__(self) -> str:
        rows = [(self.learner, self.forecast)] + [(k, f) for k, (_, f) in self.baselines.items()]
        width = max(len(name) for name, _ in rows)
        lines = [f"{'learner':<{width}}  forecast  interval"]
        lines += [f"{name:<{width}}  {f.value:8.4g}  {f.interval_text()}" for name, f in rows]
        adv = self.advantage
        lines.append(f"advantage over logging: {adv.value:+.4g}, lower bound {adv.low:+.4g}")
        return "\n".join([*lines, self.verdict])


def learn_for_future(  # noqa: PLR0913  (reviewed: docs/guides/development.md)
    log,
    *,
    at=None,
    over=None,
    time: str = "time",
    context="x",
    action: str = "action",
    reward: str = "reward",
    pscore: str = "pscore",
    n_actions: int | None = None,
    learner: str = "prognosticator",
    baselines=DEFAULT_BASELINES,
    opfv_feature=None,
    hidden: int = 0,
    entropy: float = 0.01,
    l2: float = 0.0,
    alpha: float = INTERVAL_ALPHA,
    test_alpha: float = TEST_ALPHA,
    bin_width: float = 1.0,
    max_horizon: float | None = None,
    random_state=0,
) -> LearnedPolicy:
    """Learn the policy to run at a future time from timestamped rounds, and test it.

    Parameters
    ----------
    log : str, os.PathLike, DataFrame, table or dict of array_like
        The rounds, in any form :func:`pyprog.forecast_value` takes, with the columns
        named below.
    at : float, date or str
        The target time t' after the log.
    over : (t₁, t₂)
        A window after the log: the policy to run over it. Exactly one of ``at`` and ``over``.
    time, context, action, reward, pscore : str
        Column names, as in :func:`pyprog.forecast_value`.
    n_actions : int, optional
        A; default the largest logged action + 1. Every action must appear in the log.
    learner : str
        A registered learner (:data:`pyprog.value.learners.FUTURE_LEARNERS`); default
        ``"prognosticator"``.
    baselines : sequence of str
        Learners to compare on the same log (default: regression, IPS-PG, DR-PG, OPFV-PG
        with φ known and with φ chosen from the data); ``()`` for none.
    opfv_feature : time feature, optional
        OPFV-PG's known φ; default 12 blocks of the year (the months).
    hidden : int
        Hidden tanh units of the gradient learners' policies (one layer,
        π = softmax(W tanh(V x + c) + b)); default 0, a linear softmax. The regression
        baseline stays greedy on its linear reward model.
    entropy, l2 : float
        The entropy bonus λ_H and the weights' L2 penalty λ₂, >= 0, in units of the
        rewards' standard deviation.
    alpha : float
        1 − the forecasts' interval level (default 0.1: 90 %).
    test_alpha : float
        The safety test's size (default 0.05): deploy only if the advantage's lower bound
        at level 1 − ``test_alpha`` is above 0.
    bin_width, max_horizon, random_state
        As in :func:`pyprog.forecast_value`.

    Returns
    -------
    LearnedPolicy

    Raises
    ------
    ValueError
        Bad input, naming the argument; a target inside the log; an action the log never
        takes (its value cannot be learned).
    ForecastError
        A target further ahead than ``max_horizon``, or too few days of rounds.

    Notes
    -----
    The policy learned does not change within the target (a linear softmax over the
    context): for a policy that changes with the time, learn one for each date. Its
    context features are the log's, standardised; the two halves' policies are learned
    on about half the rounds each, so a log of n rounds learns as one of n/2 would.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = 4000
    >>> t = np.sort(rng.uniform(0, 365, n))                 # a year of rounds (days)
    >>> x = rng.normal(size=(n, 1))
    >>> a = rng.integers(0, 2, n)                           # uniform logging policy
    >>> season = np.sin(2 * np.pi * t / 365.25)
    >>> r = np.where(a == 1, season, x[:, 0]) + rng.normal(0, 0.3, n)
    >>> log = {"time": t, "x0": x[:, 0], "action": a, "reward": r, "pscore": np.full(n, 0.5)}
    >>> res = learn_for_future(log, at=365.25 + 91.3, baselines=())  # at the season's peak
    >>> res.deploy, res.policy.probabilities([[-1.0], [1.0]]).argmax(axis=1).tolist()
    (True, [1, 0])
    """
    _check_options(alpha, "prediction", bin_width, max_horizon, random_state)
    _check_learning(learner, baselines, entropy, l2, test_alpha)
    _check_hidden(hidden)
    if many_targets(at, over):
        raise ValueError("at must be one time: learn_for_future learns one policy per target")
    names = {"time": time, "context": context, "action": action, "reward": reward,
             "pscore": pscore}  # fmt: skip
    rounds = _rounds(log, time, names, n_actions)
    if hidden and rounds.context.shape[1] == 0:
        raise ValueError("hidden: a hidden layer needs context columns; the log has none")
    span = (float(rounds.times.min()), float(rounds.times.max()))
    goal = forecast_targets(at, over, span[1])[0]
    _check_horizon([goal], span, max_horizon)
    feature = DEFAULT_OPFV_FEATURE if opfv_feature is None else check_time_feature(
        "opfv_feature", opfv_feature)  # fmt: skip
    seed = HashedFolds.seed_of(random_state)
    half = HashedFolds(2, seed).fold_ids([rounds.times, rounds.reward, 1.0 * rounds.action])
    options = {"goal": goal, "span": span, "entropy": float(entropy), "l2": float(l2),
               "bin_width": float(bin_width), "random_state": seed,
               "opfv_feature": feature, "hidden": int(hidden)}  # fmt: skip
    frame = _as_frame(rounds)
    target = {goal[0]: goal[1] if goal[0] == "at" else goal[1:]}

    def learned(name: str) -> tuple[FuturePolicy, np.ndarray, ValueForecast]:
        policy, crossed = _cross_fitted(FUTURE_LEARNERS[name](), rounds, half, options, name)
        with warnings.catch_warnings():
            if name != learner:  # a baseline's support is in its forecast, not a warning
                warnings.simplefilter("ignore", SupportWarning)
            f = forecast_value(frame, crossed, **target, alpha=alpha, bin_width=bin_width,
                               max_horizon=max_horizon, random_state=random_state)  # fmt: skip
        return policy, crossed, f

    with threadpool_limits(1, user_api="blas"):  # many small solves: threads only thrash
        policy, crossed, forecast = learned(learner)
        advantage = _advantage(rounds, crossed, goal, test_alpha, bin_width, seed)
        others = {name: learned(name) for name in baselines if name != learner}
    return LearnedPolicy(
        policy=policy,
        forecast=forecast,
        advantage=advantage,
        deploy=bool(advantage.low > 0),
        learner=learner,
        baselines={name: (p, f) for name, (p, _, f) in others.items()},
    )


def _check_learning(learner, baselines, entropy, l2, test_alpha) -> None:
    known = sorted(FUTURE_LEARNERS)
    if isinstance(baselines, str) or not all(isinstance(b, str) for b in baselines):
        raise ValueError(f"baselines must be a sequence of learner names; got {shorten(baselines)}")
    for arg, name in [("learner", learner)] + [("baselines", b) for b in baselines]:
        if name not in FUTURE_LEARNERS:
            raise ValueError(f"{arg}: unknown learner {shorten(name)}; known: {known}")
    for arg, value in (("entropy", entropy), ("l2", l2)):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not (ok and math.isfinite(value) and value >= 0):
            raise ValueError(f"{arg} must be a finite number >= 0; got {shorten(value)}")
    check_alpha(test_alpha, name="test_alpha")


def _check_hidden(hidden) -> None:
    ok = isinstance(hidden, numbers.Integral) and not isinstance(hidden, bool)
    if not (ok and 0 <= hidden <= MAX_HIDDEN):
        raise ValueError(
            f"hidden must be an integer number of units in [0, {MAX_HIDDEN}] (0: a linear "
            f"softmax); got {shorten(hidden)}"
        )


def _rounds(log, time: str, columns: dict, n_actions) -> Rounds:
    """The log in memory as checked rounds, every action among them taken at least once."""
    if is_dask_frame(log):
        log = log.compute()
    frame, path = log_columns(log)
    if frame is None:
        frame = read_rounds_csv(path, time=time)
    if n_actions is None:  # the largest logged action + 1 (check_rounds checks them)
        acts = np.asarray(column(frame, columns["action"], "action"))
        numeric = acts.size and acts.dtype.kind in "iuf" and np.isfinite(acts).all()
        n_actions = int(acts.max()) + 1 if numeric and acts.max() >= 0 else 1
    rounds = rounds_of(frame, columns, _no_policy, n_actions)[0].rounds
    missing = np.flatnonzero(np.bincount(rounds.action, minlength=n_actions) == 0)
    if missing.size:
        raise ValueError(
            f"the logging policy never takes action(s) {missing.tolist()} in the log: their "
            f"value cannot be learned from it. Leave them out of the log's actions (renumber "
            f"the others), or log them with some probability"
        )
    return rounds


def _no_policy(context, times):  # the log is read without π_e: none is asked for
    raise AssertionError("not called")


def _as_frame(rounds: Rounds) -> dict:
    """The rounds as the columns :func:`pyprog.forecast_value` reads."""
    frame = {"time": rounds.times, "action": rounds.action, "reward": rounds.reward,
             "pscore": rounds.pscore}  # fmt: skip
    frame.update({f"x{j}": rounds.context[:, j] for j in range(rounds.context.shape[1])})
    return frame


def _cross_fitted(learner, rounds: Rounds, half: np.ndarray, options: dict, name: str):
    """The mixture of the two halves' policies, and π at each round by the policy learned
    on the other half: (FuturePolicy, (n, A))."""
    members, crossed = [], np.empty((rounds.n, rounds.n_actions))
    for k in (0, 1):
        member = learner.learn(Training(rounds.take(np.flatnonzero(half == k)), **options))
        if not isinstance(member, FuturePolicy):
            raise TypeError(f"learner {name!r}: learn() must return a FuturePolicy; got "
                            f"{type(member).__name__}")  # fmt: skip
        members.append(member)
        other = np.flatnonzero(half != k)
        crossed[other] = member.probabilities(rounds.context[other])
    shares = np.array([np.mean(half == 1), np.mean(half == 0)])  # π_A judged on half B
    return FuturePolicy.mixture(members, shares, name, options["goal"]), crossed


def _advantage(rounds: Rounds, pi: np.ndarray, goal: tuple, test_alpha: float, width: float,
               seed: int) -> Advantage:  # fmt: skip
    """The forecast of V(π) − V(π₀) at the goal from Ŷ_i(π) − r_i, and its lower bound."""
    span = (float(rounds.times.min()), float(rounds.times.max()))
    dr = round_estimates(rounds.context, rounds.times, rounds.action, rounds.reward,
                         rounds.pscore, pi, time_feature=default_reward_time_model(*span),
                         random_state=seed)  # fmt: skip
    values = dr.values - rounds.reward
    binned = bin_estimates(values, rounds.times, width)
    avg = ModelAverage(binned, bin_noise(values, rounds.times, binned))
    mean, low, _, _ = avg.forecast([goal], alpha=2 * test_alpha)
    return Advantage(float(mean[0]), float(low[0]), math.inf, float(test_alpha))
