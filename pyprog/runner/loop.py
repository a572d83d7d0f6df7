"""Run one learner on one environment: ``pyprog.run(env, algo, speed=..., seed=...)``.

A run is reproducible from its seed alone (whatever the number of workers): the seed
is split, with :class:`numpy.random.SeedSequence`, into independent streams for the
environment, the policy's initial weights and the actions.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from math import isfinite
from typing import Any

import numpy as np

from pyprog.learn.hyperparams import (
    ENVS,
    Hyper,
    check_algo,
    check_env,
    default_hyper,
    hyper_from_table,
    paper_hyper,
)
from pyprog.learn.learners import LEARNERS, Learner
from pyprog.learn.policies import Policy
from pyprog.runner.adapter import (
    ResolvedEnv,
    action_adapter,
    default_gauss_std,
    episode_horizon,
    is_builtin,
    make_policy,
    observation_encoder,
    resolve_env,
)
from pyprog.runner.checks import (
    UpdateError,
    bad_observation,
    check_expected_rewards,
    check_return,
    reward_error,
    step_arity_error,
)
from pyprog.utils.validation import check_speed

__all__ = [
    "MAX_BUFFER_BYTES",
    "MAX_RUN_EPISODES",
    "RunResult",
    "RunSetup",
    "check_buffer_memory",
    "check_episodes_and_seed",
    "env_seed",
    "make_env",
    "make_learner",
    "prepare",
    "resolve_hyper",
    "run",
    "train",
]

#: Most episodes of one run (its returns, optima and expectations: 240 MB at the most).
MAX_RUN_EPISODES = 10**7
#: Most memory the learner's episode buffer may take (2 GiB); see :func:`check_buffer_memory`.
MAX_BUFFER_BYTES = 2 * 2**30


@dataclasses.dataclass
class RunResult:
    """What one run produced.

    Attributes
    ----------
    env : str
        The built-in name, Gymnasium id or ``"module:function"`` the run was given; for an
        environment object, ``"instance:<id or class>"`` or ``"callable:<name>"``.
    algo : str
    speed : float or None
        The drift speed of a built-in environment; None elsewhere (pyprog does not set it).
    seed : int
    hyper : dict
        The hyper-parameters used.
    returns : ndarray, shape (episodes,)
        The return (sum of rewards) of every episode.
    regret : float or None
        Exact regret ``Σ_k (J*_k − J_k)`` where the final ``info`` of every episode carries
        ``best_expected_reward`` (J*_k) and ``expected_reward`` (J_k: of the action taken,
        or the episode's expected return), as NS-Reco's does; None otherwise (use
        :func:`surrogate_regret` across algorithms).
    optimal : ndarray, shape (episodes,), or None
        ``J*_k``, the best expected reward of every episode, where known.
    expected : ndarray, shape (episodes,), or None
        The expected reward ``J_k`` of what was done, where known.
    seconds : float
        Wall time of the run.
    updates, skipped_updates, skipped_steps : int
        See :class:`pyprog.learn.learners.Learner`.
    horizon : int or None
        The ``horizon=`` the run was given (None: the environment's own episode length); a
        stored run is keyed by it too.
    truncated : int
        Episodes that pyprog cut at the horizon (the environment had not ended them).
    """

    env: str
    algo: str
    speed: float | None
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
    truncated: int = 0
    horizon: int | None = None

    @property
    def mean_return(self) -> float:
        """Mean return over the run's episodes."""
        return float(np.mean(self.returns))


def make_env(env: str, speed: float, /, **kwargs: Any):
    """The built-in environment ``env`` at ``speed`` (extra keyword arguments go to its class).

    The class itself, not ``gymnasium.make``: runs need no wrappers in their hot loop.
    """
    check_env(env)
    return resolve_env(env, speed, kwargs).environment


def make_learner(algo: str, policy: Policy, hyper: Hyper, horizon: int) -> Learner:
    """The learner ``algo`` around ``policy``."""
    return LEARNERS[check_algo(algo)](policy, hyper, horizon)


def resolve_hyper(env: str, algo: str, speed: float, hyper: str | Mapping | Hyper) -> Hyper:
    """The setting of a built-in environment: ``"paper"``, a full dict, a Hyper, or a
    settings table (or its JSON file) with an entry for (env, algo, speed)."""
    given = hyper is not None
    if hyper is None:
        hyper = "paper"
    hyper = hyper_from_table(hyper, env, algo, speed)  # a best-settings table or JSON file
    if isinstance(hyper, Hyper):
        return hyper
    if isinstance(hyper, str):
        if hyper != "paper":
            raise ValueError(f"hyper must be 'paper', a dict or a Hyper; got {hyper!r}")
        if speed is None or float(speed) not in (0, 1, 2, 3, 4):
            if not given:  # the user chose the speed, not the settings: say where they come from
                raise ValueError(
                    f"{env} at speed {speed!r}: without hyper, a built-in environment runs with "
                    "the paper's tuned settings, which exist for speeds 0-4 only; pass hyper= "
                    "a dict of hyper-parameters (or a Hyper) to run other speeds"
                )
            raise ValueError(f"hyper='paper' covers speeds 0-4 only; got speed {speed!r}")
        return paper_hyper(env, algo, int(speed))
    if isinstance(hyper, Mapping):
        return Hyper.from_dict(dict(hyper))
    raise ValueError(f"hyper must be 'paper', a dict or a Hyper; got {type(hyper).__name__}")


def _resolve_default_hyper(
    name: str, algo: str, hyper: str | Mapping | Hyper | None, action_space: Any
) -> Hyper:
    """The setting on a non-built-in environment: pyprog's default, a dict of changes to it,
    or a Hyper."""
    if isinstance(hyper, Hyper):
        return hyper
    base = default_hyper(algo, default_gauss_std(action_space))
    if hyper is None:
        return base
    if isinstance(hyper, str):
        raise ValueError(
            f"hyper={hyper!r}: the paper's settings exist only for the built-in environments "
            f"({', '.join(ENVS)}); on {name} pass None (pyprog's default setting), a dict of "
            "changes to it, or a Hyper"
        )
    if isinstance(hyper, Mapping):
        fields = sorted(f.name for f in dataclasses.fields(Hyper))
        unknown = sorted(set(hyper) - set(fields))
        if unknown:
            raise ValueError(
                f"unknown hyper-parameter(s) {', '.join(map(str, unknown))}; "
                f"valid: {', '.join(fields)}"
            )
        return base.replace(**hyper)
    raise ValueError(f"hyper must be None, a dict or a Hyper; got {type(hyper).__name__}")


@dataclasses.dataclass
class RunSetup:
    """Everything a run needs, made and checked before its first episode."""

    resolved: ResolvedEnv
    hyper: Hyper
    obs_dim: int
    encode: Callable[[Any], np.ndarray] | None
    to_env: Callable[[Any], Any] | None
    horizon: int


def prepare(
    env: Any,
    algo: str,
    speed: float | None,
    hyper: str | Mapping | Hyper | None,
    horizon: int | None,
    env_kwargs: Mapping[str, Any] | None,
) -> RunSetup:
    """Resolve the environment and setting, check the spaces and horizon: every bad input
    is a ValueError here, before any episode. The caller closes ``resolved.environment``
    when ``resolved.owned``."""
    check_algo(algo)
    if speed is not None and not is_builtin(env):
        resolve_env(env, speed)  # raises: speed is for built-in environments only
    if is_builtin(env):
        if speed is None:
            raise ValueError(f"env {env!r} needs speed (how fast it drifts; the paper: 0-4)")
        check_speed(speed)  # before the settings: a bad speed is named as such
        h = resolve_hyper(env, algo, speed, hyper)
        resolved = resolve_env(env, speed, env_kwargs)
    else:
        if isinstance(hyper, str) and not hyper.endswith(".json"):  # before building anything
            _resolve_default_hyper(str(env), algo, hyper, None)
        resolved = resolve_env(env, None, env_kwargs)
    environment = resolved.environment
    try:
        obs_dim, encode = observation_encoder(environment.observation_space)
        if not resolved.builtin:
            # a settings table's entry for this environment (speed "-": its own drift)
            hyper = hyper_from_table(hyper, resolved.name, algo, None)
            h = _resolve_default_hyper(resolved.name, algo, hyper, environment.action_space)
        # the policy is made here once to check the setting against the spaces
        policy = make_policy(environment.action_space, obs_dim, h, np.random.default_rng(0))
        to_env = action_adapter(environment.action_space, resolved.builtin)
        steps = episode_horizon(environment, horizon)
        cells = int(np.prod(policy.action_shape, dtype=np.int64))
        check_buffer_memory(steps, obs_dim, cells, max(h.buffer_size, h.delta))
    except BaseException:
        if resolved.owned:
            environment.close()
        raise
    return RunSetup(resolved, h, obs_dim, encode, to_env, steps)


def check_buffer_memory(horizon: int, obs_dim: int, action_cells: int, capacity: int) -> int:
    """Bytes of a learner's episode buffer, or a ValueError beyond :data:`MAX_BUFFER_BYTES`.

    The buffer holds ``2 · capacity`` padded episodes of ``horizon`` steps, each step an
    observation (``obs_dim``), an action (``action_cells``), log β, reward and mask, in
    float64.

    Examples
    --------
    >>> check_buffer_memory(500, 4, 1, 1000) / 2**20  # CartPole, buffer_size 1000
    61.03515625
    """
    step = 2 * (obs_dim + action_cells + 3) * 8  # bytes per step of one buffered episode
    size = step * capacity * horizon
    if size > MAX_BUFFER_BYTES:
        fits = [
            f"with {other} {value} at most {name}={most}"
            for name, other, value, most in (
                ("horizon", "buffer_size", capacity, MAX_BUFFER_BYTES // (step * capacity)),
                ("buffer_size", "horizon", horizon, MAX_BUFFER_BYTES // (step * horizon)),
            )
            if most >= 1
        ]
        raise ValueError(
            f"horizon, buffer_size: a buffer of {capacity} episodes of {horizon} steps "
            f"(observations of {obs_dim}) needs {size / 2**30:.3g} GiB, more than the "
            f"{MAX_BUFFER_BYTES / 2**30:g} GiB allowed (pyprog.runner.loop.MAX_BUFFER_BYTES): "
            + ", ".join(fits)
        )
    return size


def check_episodes_and_seed(episodes: Any, seed: Any) -> None:
    """``episodes`` an integer in [1, :data:`MAX_RUN_EPISODES`] and ``seed`` an integer >= 0,
    else a ValueError naming it."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an integer >= 1; got {episodes!r}")
    if episodes > MAX_RUN_EPISODES:
        raise ValueError(
            f"episodes must be at most {MAX_RUN_EPISODES} (pyprog.runner.loop.MAX_RUN_EPISODES); "
            f"got {episodes}, whose per-episode results alone would need "
            f"{3 * 8 * episodes / 2**30:.3g} GiB"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}")


def run(
    env: Any,
    algo: str,
    *,
    speed: float | None = None,
    seed: int = 0,
    episodes: int = 1000,
    hyper: str | Mapping | Hyper | None = None,
    horizon: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    callback: Callable[[int, float], None] | None = None,
) -> RunResult:
    """Train ``algo`` on ``env`` for ``episodes`` episodes and report its returns and regret.

    Parameters
    ----------
    env : str, gymnasium.Env or callable
        A built-in name (``"reco"``, ``"reacher"``, ``"diabetes"``), a registered
        Gymnasium id (``"CartPole-v1"``, ``"pyprog/NSReco-v0"``), ``"module:function"``
        (a factory importable from the current directory or PYTHONPATH), an environment,
        or a callable returning one. See :mod:`pyprog.runner.adapter` for the spaces supported.
    algo : {"pro-ols", "pro-wls", "onpg", "ftrl-pg"}
    speed : float >= 0
        Speed of non-stationarity of a built-in environment (required there; 0 =
        stationary, the paper uses 0–4). Any other environment drifts by itself: passing
        ``speed`` is an error.
    seed : int >= 0
        Seeds everything (environment, initial weights, actions). The environment is
        reset with ``reset(seed=...)`` once, then ``reset()``: pyprog never resets its drift.
    episodes : int >= 1
    hyper : None, "paper", dict, Hyper, settings table or JSON file
        Built-in environments: None or ``"paper"`` is the authors' tuned setting for
        (env, algo, speed); a dict is a full setting. Other environments: None is pyprog's
        default setting (:func:`pyprog.learn.hyperparams.default_hyper`), and a dict changes some
        of its keys. A settings table ``{env: {algo: {speed: setting}}}`` (what ``pyprog
        best --json`` writes; speed ``"-"`` for environments that drift by themselves) or
        the path of its JSON file gives its entry for (env, algo, speed).
    horizon : int, optional
        Most steps per episode (default: the environment's ``max_episode_steps``, its
        ``TimeLimit`` or its ``horizon`` attribute). pyprog cuts longer episodes, and counts
        them in :attr:`RunResult.truncated`.
    env_kwargs : dict, optional
        Arguments of the environment (e.g. ``{"horizon": 13}`` for NS-Reacher).
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
    >>> cartpole = run("CartPole-v1", "pro-ols", seed=0, episodes=5)
    >>> cartpole.speed is None, cartpole.regret is None, cartpole.hyper["lr"]
    (True, True, 0.003)
    """
    check_algo(algo)
    check_episodes_and_seed(episodes, seed)
    setup = prepare(env, algo, speed, hyper, horizon, env_kwargs)
    environment = setup.resolved.environment
    try:
        result = train(setup, algo, speed, int(seed), episodes, callback)
        return dataclasses.replace(result, horizon=None if horizon is None else setup.horizon)
    finally:
        if setup.resolved.owned:
            environment.close()


#: Reward types accepted without a further look (the rest go through ``reward_error``).
_FAST_REWARD_TYPES = frozenset({float, int, np.float64, np.float32, np.int64})


def _streams(seed: int) -> list[np.random.SeedSequence]:
    """A run's independent random streams: environment, initial weights, actions."""
    return np.random.SeedSequence(int(seed)).spawn(3)


def env_seed(seed: int) -> int:
    """The seed a run with ``seed`` passes to its environment's first ``reset``.

    Examples
    --------
    >>> env_seed(0) == env_seed(0) != env_seed(1)
    True
    """
    return int(_streams(seed)[0].generate_state(1)[0])


def train(  # noqa: PLR0915  (reviewed: docs/guides/development.md)
    setup: RunSetup,
    algo: str,
    speed: float | None,
    seed: int,
    episodes: int,
    callback: Callable[[int, float], None] | None,
    probe: Callable[[int, Policy], None] | None = None,
) -> RunResult:
    """The run loop; ``probe(k, policy)``, if given, sees the policy before episode k
    (:func:`pyprog.runner.replay.replay` records what a stored run's policy chose through it)."""
    environment, h, horizon = setup.resolved.environment, setup.hyper, setup.horizon
    encode, to_env = setup.encode, setup.to_env
    _, init_seq, act_seq = _streams(seed)
    rng_init = np.random.default_rng(init_seq)
    policy = make_policy(environment.action_space, setup.obs_dim, h, rng_init)
    learner = make_learner(algo, policy, h, horizon)
    rng = np.random.default_rng(act_seq)

    returns = np.empty(episodes)
    optimal = np.empty(episodes)
    expected = np.empty(episodes)
    knows_optimum = True
    truncated_by_pyprog = 0
    name, dim = setup.resolved.name, setup.obs_dim
    shape = (dim,)
    numbers_ok = _FAST_REWARD_TYPES
    start = time.perf_counter()
    obs, _ = environment.reset(seed=env_seed(seed))
    for k in range(episodes):
        if k:
            obs, _ = environment.reset()
        if probe is not None:
            probe(k, policy)
        total = 0.0
        done = False
        t = 0
        while not done:
            # what the environment returned is checked here, where it arrives (checks.py)
            try:
                obs64 = np.asarray(obs, dtype=np.float64) if encode is None else encode(obs)
            except (TypeError, ValueError, IndexError, KeyError) as exc:
                raise bad_observation(name, k, t, obs, dim, f"cannot be read: {exc}") from None
            # x @ x is finite iff x is (or overflows: then the exact test below decides);
            # one dot product is the cheapest whole-vector test (~2 µs against ~4 µs)
            if obs64.shape != shape or not isfinite(obs64 @ obs64):
                if obs64.shape != shape or not np.isfinite(obs64).all():
                    raise bad_observation(name, k, t, obs, dim)
            action, log_prob = learner.act(obs64, rng)
            result = environment.step(action if to_env is None else to_env(action))
            try:
                obs, reward, terminated, truncated, info = result
            except (TypeError, ValueError):
                raise step_arity_error(name, k, t, result) from None
            if type(reward) not in numbers_ok or not isfinite(reward):
                bad = reward_error(name, k, t, reward)
                if bad is not None:
                    raise bad
            learner.observe(obs64, action, log_prob, reward)
            total += reward
            t += 1
            done = terminated or truncated
            if not done and t == horizon:
                truncated_by_pyprog += 1
                done = True
        check_return(name, k, total)
        if knows_optimum:
            try:
                optimal[k] = info["best_expected_reward"]
                expected[k] = info["expected_reward"]
            except (KeyError, TypeError):
                knows_optimum = False
            else:
                check_expected_rewards(name, k, optimal[k], expected[k])
        returns[k] = total
        try:
            learner.end_episode()
        except FloatingPointError:
            raise  # a diverged learner says so itself
        except Exception as exc:  # any other failure of the update: this run's (issue 35)
            raise UpdateError(
                f"env {name!r}, episode {k}: the update failed: {type(exc).__name__}: {exc}"
            ) from exc
        if callback is not None:
            callback(k, total)
    seconds = time.perf_counter() - start
    stats = learner.stats()
    return RunResult(
        env=setup.resolved.name,
        algo=algo,
        speed=None if speed is None else float(speed),
        seed=seed,
        hyper=h.to_dict(),
        returns=returns,
        regret=float(np.sum(optimal - expected)) if knows_optimum else None,
        optimal=optimal if knows_optimum else None,
        expected=expected if knows_optimum else None,
        seconds=seconds,
        updates=stats["updates"],
        skipped_updates=stats["skipped_updates"],
        skipped_steps=stats["skipped_steps"],
        truncated=truncated_by_pyprog,
    )
