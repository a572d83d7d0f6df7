"""Run one learner on one environment: ``pyprog.run(env, algo, speed, seed)``.

A run is reproducible from its seed alone (whatever the number of workers): the seed
is split, with :class:`numpy.random.SeedSequence`, into independent streams for the
environment, the policy's initial weights and the actions.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pyprog.agents import LEARNERS, Learner
from pyprog.hyperparams import Hyper, check_algo, check_env, paper_hyper
from pyprog.policies import GaussianPolicy, Policy, SoftmaxLinear, SoftmaxMLP

__all__ = [
    "RunResult",
    "compare",
    "make_env",
    "make_learner",
    "mean_se",
    "run",
    "surrogate_regret",
]


@dataclasses.dataclass
class RunResult:
    """What one run produced.

    Attributes
    ----------
    env, algo : str
    speed : float
    seed : int
    hyper : dict
        The hyper-parameters used.
    returns : ndarray, shape (episodes,)
        The return (sum of rewards) of every episode.
    regret : float or None
        Exact regret ``Σ_k (J*_k − μ_{A_k}(k))`` where the environment knows J*
        (NS-Reco); None elsewhere (use :func:`surrogate_regret` across algorithms).
    optimal : ndarray, shape (episodes,), or None
        ``J*_k``, the best expected reward of every episode, where known.
    expected : ndarray, shape (episodes,), or None
        The expected reward ``μ_{A_k}(k)`` of the action taken, where known.
    seconds : float
        Wall time of the run.
    updates, skipped_updates, skipped_steps : int
        See :class:`pyprog.agents.Learner`.
    """

    env: str
    algo: str
    speed: float
    seed: int
    hyper: dict[str, Any]
    returns: np.ndarray
    regret: float | None
    optimal: np.ndarray | None
    expected: np.ndarray | None
    seconds: float
    updates: int
    skipped_updates: int
    skipped_steps: int

    @property
    def mean_return(self) -> float:
        """Mean return over the run's episodes."""
        return float(np.mean(self.returns))


def make_env(env: str, speed: float, /, **kwargs: Any):
    """The environment ``env`` at ``speed`` (extra keyword arguments go to its class).

    The class itself, not ``gymnasium.make``: runs need no wrappers in their hot loop.
    """
    check_env(env)
    if env == "reco":
        from pyprog.envs.reco import NSReco as cls
    elif env == "reacher":
        from pyprog.envs.reacher import NSReacher as cls
    else:
        from pyprog.envs.diabetes import NSDiabetes as cls
    _check_env_kwargs(env, cls, kwargs)
    return cls(speed=speed, **kwargs)


def _check_env_kwargs(env: str, cls: type, kwargs: Mapping[str, Any]) -> None:
    """Every keyword is an argument of the environment's class (``speed`` is given apart)."""
    import inspect

    accepted = [p for p in inspect.signature(cls).parameters if p not in ("self", "speed")]
    for name in kwargs:
        if name not in accepted:
            raise ValueError(
                f"env_kwargs: {env!r} ({cls.__name__}) has no argument {name!r}; it accepts "
                f"{', '.join(map(repr, accepted)) or 'none'} (speed is set by the run)"
            )


def make_policy(env: str, environment, hyper: Hyper, rng: np.random.Generator) -> Policy:
    """The paper's policy for ``env``: softmax-linear (Reco), softmax-MLP (Reacher), Gaussian."""
    obs_dim = environment.observation_space.shape[0]
    if env == "diabetes":
        if hyper.gauss_std is None:
            raise ValueError("the diabetes environment needs gauss_std (the Gaussian policy's std)")
        space = environment.action_space
        return GaussianPolicy(obs_dim, space.low, space.high, hyper.gauss_std)
    n_actions = int(environment.action_space.n)
    if hyper.hidden is None:
        return SoftmaxLinear(obs_dim, n_actions)
    policy = SoftmaxMLP(obs_dim, n_actions, hyper.hidden, rng)
    policy.hidden_lr = hyper.hidden_lr
    return policy


def make_learner(algo: str, policy: Policy, hyper: Hyper, horizon: int) -> Learner:
    """The learner ``algo`` around ``policy``."""
    return LEARNERS[check_algo(algo)](policy, hyper, horizon)


def _resolve_hyper(env: str, algo: str, speed: float, hyper: str | Mapping | Hyper) -> Hyper:
    if isinstance(hyper, Hyper):
        return hyper
    if isinstance(hyper, str):
        if hyper != "paper":
            raise ValueError(f"hyper must be 'paper', a dict or a Hyper; got {hyper!r}")
        if float(speed) not in (0, 1, 2, 3, 4):
            raise ValueError(f"hyper='paper' covers speeds 0-4 only; got speed {speed!r}")
        return paper_hyper(env, algo, int(speed))
    if isinstance(hyper, Mapping):
        return Hyper.from_dict(dict(hyper))
    raise ValueError(f"hyper must be 'paper', a dict or a Hyper; got {type(hyper).__name__}")


def run(
    env: str,
    algo: str,
    speed: float,
    seed: int,
    episodes: int = 1000,
    hyper: str | Mapping | Hyper = "paper",
    env_kwargs: Mapping[str, Any] | None = None,
    callback: Callable[[int, float], None] | None = None,
) -> RunResult:
    """Train ``algo`` on ``env`` for ``episodes`` episodes and report its returns and regret.

    Parameters
    ----------
    env : {"reco", "reacher", "diabetes"}
    algo : {"pro-ols", "pro-wls", "onpg", "ftrl-pg"}
    speed : float >= 0
        Speed of non-stationarity (0 = stationary; the paper uses 0–4).
    seed : int >= 0
        Seeds everything (environment noise, initial weights, actions).
    episodes : int >= 1
    hyper : "paper", dict or Hyper
        ``"paper"`` takes the authors' tuned setting for (env, algo, speed).
    env_kwargs : dict, optional
        Extra arguments of the environment (e.g. ``{"horizon": 13}`` for NS-Reacher).
    callback : callable, optional
        Called as ``callback(episode, return)`` after every episode (progress bars).

    Returns
    -------
    RunResult

    Examples
    --------
    >>> result = run("reco", "pro-wls", speed=2, seed=0, episodes=200)
    >>> result.returns.shape, result.regret > 0
    ((200,), True)
    """
    check_env(env)
    check_algo(algo)
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an integer >= 1; got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}")
    h = _resolve_hyper(env, algo, speed, hyper)
    environment = make_env(env, speed, **dict(env_kwargs or {}))

    env_seq, init_seq, act_seq = np.random.SeedSequence(int(seed)).spawn(3)
    policy = make_policy(env, environment, h, np.random.default_rng(init_seq))
    horizon = getattr(environment, "horizon", 1)
    learner = make_learner(algo, policy, h, horizon)
    rng = np.random.default_rng(act_seq)

    returns = np.empty(episodes)
    knows_optimum = env == "reco"
    optimal = np.empty(episodes) if knows_optimum else None
    expected = np.empty(episodes) if knows_optimum else None
    start = time.perf_counter()
    obs, _ = environment.reset(seed=int(env_seq.generate_state(1)[0]))
    for k in range(episodes):
        if k:
            obs, _ = environment.reset()
        total = 0.0
        done = False
        while not done:
            obs64 = np.asarray(obs, dtype=np.float64)
            action, log_prob = learner.act(obs64, rng)
            obs, reward, terminated, truncated, info = environment.step(action)
            learner.observe(obs64, action, log_prob, reward)
            total += reward
            done = terminated or truncated
        if knows_optimum:
            optimal[k] = info["best_expected_reward"]
            expected[k] = info["expected_reward"]
        returns[k] = total
        learner.end_episode()
        if callback is not None:
            callback(k, total)
    seconds = time.perf_counter() - start
    stats = learner.stats()
    return RunResult(
        env=env,
        algo=algo,
        speed=float(speed),
        seed=int(seed),
        hyper=h.to_dict(),
        returns=returns,
        regret=float(np.sum(optimal - expected)) if knows_optimum else None,
        optimal=optimal,
        expected=expected,
        seconds=seconds,
        updates=stats["updates"],
        skipped_updates=stats["skipped_updates"],
        skipped_steps=stats["skipped_steps"],
    )


def surrogate_regret(returns: Mapping[str, Any]) -> dict[str, Any]:
    """Surrogate regret of several algorithms' runs against each other (paper §9).

    With ``J̃*_k`` the best return any of the compared algorithms got in episode k,
    the surrogate regret of algorithm A is ``Σ_k (J̃*_k − J_k(A)) / |Σ_k J̃*_k|`` (the
    paper's definition; the absolute value keeps the order when the returns are negative).

    Parameters
    ----------
    returns : mapping of str to array_like, shape (episodes,) or (seeds, episodes)
        Per-episode returns of every algorithm. With a seeds axis, ``J̃*_k`` is the
        best of the algorithms' mean returns over seeds, and every seed gets its own
        surrogate regret against it (their mean is that of the mean curve).

    Returns
    -------
    dict of str to float, or to ndarray of shape (seeds,)

    Examples
    --------
    >>> surrogate_regret({"a": [1.0, 2.0], "b": [2.0, 1.0]})
    {'a': 0.25, 'b': 0.25}
    """
    if not returns:
        raise ValueError("returns must map at least one algorithm to its returns")
    curves = {}
    for name, value in returns.items():
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim not in (1, 2) or arr.shape[-1] == 0 or not np.isfinite(arr).all():
            raise ValueError(
                f"returns[{name!r}] must be finite, of shape (episodes,) or (seeds, episodes); "
                f"got shape {arr.shape}"
            )
        curves[name] = arr
    lengths = {c.shape[-1] for c in curves.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"every algorithm needs the same number of episodes; got {sorted(lengths)}"
        )
    best = np.max(np.stack([c if c.ndim == 1 else c.mean(axis=0) for c in curves.values()]), axis=0)
    # |Σ J̃*|: where returns are mostly negative (NS-Reacher early on), dividing by a
    # negative sum would make the worst algorithm look best
    total = abs(best.sum())
    if total == 0:
        raise ValueError("the best returns sum to 0: surrogate regret is undefined")
    out: dict[str, Any] = {}
    for name, c in curves.items():
        value = (best - c).sum(axis=-1) / total
        out[name] = float(value) if c.ndim == 1 else value
    return out


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error (``std(ddof=1) / √n``; NaN for one value) of ``values``.

    Examples
    --------
    >>> mean_se([1.0, 2.0, 3.0])
    (2.0, 0.5773502691896258)
    """
    arr = np.asarray(values, dtype=np.float64)
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else float("nan")
    return float(arr.mean()), se


def compare(runs: Mapping[str, Sequence[Any]]) -> tuple[str, dict[str, np.ndarray]]:
    """Per-seed regret of several algorithms' runs of one (env, speed).

    Exact regret where every run has one (NS-Reco), else the surrogate regret of each
    seed against the best of the algorithms' mean curves (:func:`surrogate_regret`).

    Parameters
    ----------
    runs : mapping of algo to sequence of runs
        Objects with ``regret`` (float or None) and ``returns`` (episodes,) attributes
        (:class:`RunResult`, stored runs), one per seed.

    Returns
    -------
    metric : {"regret", "surrogate regret"}
    values : dict of algo to ndarray, shape (seeds,)
    """
    if all(r.regret is not None for rs in runs.values() for r in rs):
        return "regret", {a: np.array([r.regret for r in rs]) for a, rs in runs.items()}
    curves = {a: np.stack([np.asarray(r.returns) for r in rs]) for a, rs in runs.items()}
    return "surrogate regret", {a: np.atleast_1d(v) for a, v in surrogate_regret(curves).items()}
