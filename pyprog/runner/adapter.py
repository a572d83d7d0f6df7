"""Any Gymnasium environment, seen the way the learners see one.

One adapter between an environment and a learner, so that no learner knows which
environment it runs on:

* :func:`resolve_env` turns what a user passes — a built-in name (``"reco"``), a
  registered Gymnasium id (``"CartPole-v1"``), a ``"module:function"`` factory string,
  a :class:`gymnasium.Env` instance or a callable returning one — into an environment and
  the string that names it in results and the store;
* :func:`observation_encoder` maps the observation space to flat float64 vectors:
  ``Box`` of any shape is flattened, ``Discrete`` is one-hot, and NS-Gym's ``Dict``
  observation is read through its ``"state"`` entry;
* :func:`make_policy` maps the action space to a policy: ``Discrete`` → softmax
  (linear, or MLP with ``hidden``), ``Box`` → Gaussian (mean bounded where the bounds are
  finite);
* :func:`episode_horizon` finds the horizon (``horizon`` argument, the id's
  ``max_episode_steps``, a ``TimeLimit`` wrapper, or the environment's own ``horizon``).

Anything else — a ``Dict`` without ``"state"``, ``Tuple``, ``MultiDiscrete``, ``Text`` ... —
is a ``ValueError`` naming the space, raised before any episode runs; for the spaces
Gymnasium can flatten (``Tuple``, ``Dict``, ``MultiDiscrete``, ``MultiBinary``) it suggests
``gymnasium.wrappers.FlattenObservation``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from pyprog.envs.registry import BUILTINS, ENVS
from pyprog.learn.hyperparams import Hyper
from pyprog.learn.policies import GaussianPolicy, Policy, SoftmaxLinear, SoftmaxMLP

__all__ = [
    "CALLABLE_PREFIX",
    "INSTANCE_PREFIX",
    "UNKEYED",
    "ResolvedEnv",
    "action_adapter",
    "check_env_spec",
    "default_gauss_std",
    "episode_horizon",
    "is_builtin",
    "make_policy",
    "observation_encoder",
    "resolve_env",
]

#: Prefix of the name of an environment passed as an object (``"instance:<id or class>"``).
INSTANCE_PREFIX = "instance:"
#: Prefix of the name of a factory that is not importable again (``"callable:<name>"``).
CALLABLE_PREFIX = "callable:"
#: Prefixes of the names of environments that cannot be rebuilt from their name (a result
#: store refuses them: nothing could rebuild the environment).
UNKEYED = (INSTANCE_PREFIX, CALLABLE_PREFIX)

_OBS_SUPPORTED = (
    "Box (any shape, flattened), Discrete (one-hot), "
    "or a Dict with a 'state' entry of those (NS-Gym)"
)
_ACT_SUPPORTED = "Discrete (softmax policy) or Box (Gaussian policy)"


@dataclasses.dataclass
class ResolvedEnv:
    """An environment ready to run, and how it was named.

    Attributes
    ----------
    environment : gymnasium.Env
    name : str
        The built-in name, the Gymnasium id, the ``"module:function"`` string; for objects
        passed directly, ``"instance:<id or class>"`` or ``"callable:<name>"`` (these
        cannot be stored: nothing could rebuild them).
    builtin : bool
        One of pyprog's environments by its short name: pyprog sets its drift (``speed``).
    owned : bool
        pyprog made it (and closes it); False for an instance the user passed.
    """

    environment: gym.Env
    name: str
    builtin: bool
    owned: bool


def is_builtin(env: object) -> bool:
    """True for the short names of pyprog's environments, whose drift pyprog sets.

    Examples
    --------
    >>> is_builtin("reco"), is_builtin("pyprog/NSReco-v0"), is_builtin("CartPole-v1")
    (True, False, False)
    """
    return isinstance(env, str) and env in ENVS


def _load_object(text: str) -> tuple[str, Callable | None]:
    """``"module:attr"`` → the attribute (None if the module has no such attribute).

    The current directory is searched first, as uvicorn and gunicorn do, so that a
    factory in ``./my_envs.py`` is found from the command line.
    """
    module_name, _, attr = text.partition(":")
    if not module_name or not attr:
        raise ValueError(f"env {text!r}: a factory is 'module:function', e.g. 'my_envs:make'")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any failure of the user's import is bad input here
        raise ValueError(
            f"env {text!r}: cannot import module {module_name!r} "
            f"({type(exc).__name__}: {exc}); it must be importable from the current "
            f"directory or PYTHONPATH"
        ) from None
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return module_name, None
    return module_name, obj


def _unknown_id(env: str) -> ValueError:
    ids = list(gym.registry)
    close = difflib.get_close_matches(env, [*ENVS, *ids], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return ValueError(
        f"unknown env {env!r}: not a built-in ({', '.join(ENVS)}), not a registered "
        f"Gymnasium id, and not a 'module:function' factory{hint}"
    )


def _check_env_object(env: object, where: str) -> gym.Env:
    if not isinstance(env, gym.Env):
        raise ValueError(f"{where} must be a gymnasium.Env; got {type(env).__name__}")
    return env


def _callable_name(fn: Callable) -> str:
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if module and qualname and "<" not in qualname and module != "__main__":
        return f"{module}:{qualname}"  # importable again: a factory string
    return f"{CALLABLE_PREFIX}{qualname or type(fn).__name__}"


def _check_env_kwargs(env: str, cls: type, kwargs: Mapping[str, Any]) -> None:
    """Every keyword is an argument of the built-in environment's class (``speed`` is given
    apart)."""
    accepted = [p for p in inspect.signature(cls).parameters if p not in ("self", "speed")]
    for name in kwargs:
        if name not in accepted:
            raise ValueError(
                f"env_kwargs: {env!r} ({cls.__name__}) has no argument {name!r}; it accepts "
                f"{', '.join(map(repr, accepted)) or 'none'} (speed is set by the run)"
            )


def resolve_env(
    env: object, speed: float | None = None, env_kwargs: Mapping[str, Any] | None = None
) -> ResolvedEnv:
    """The environment ``env`` names, made (or taken as passed), and its name.

    Parameters
    ----------
    env : str, gymnasium.Env or callable
        A built-in name (``"reco"``, ``"reacher"``, ``"diabetes"``), a registered
        Gymnasium id, ``"module:function"`` (a factory importable from the current
        directory or PYTHONPATH; ``"package:Env-v0"`` imports the package, then makes the
        id, as :func:`gymnasium.make` does), an environment, or a callable returning one.
    speed : float, optional
        For built-in names only (required there): how fast the environment drifts.
    env_kwargs : mapping, optional
        Keyword arguments of the environment's constructor, id or factory.

    Returns
    -------
    ResolvedEnv

    Examples
    --------
    >>> r = resolve_env("CartPole-v1")
    >>> r.name, r.builtin, r.environment.spec.max_episode_steps
    ('CartPole-v1', False, 500)
    >>> resolve_env("CartPole-v1", speed=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: speed is set only for pyprog's built-in environments ...: drop speed
    """
    kwargs = dict(env_kwargs or {})
    if isinstance(env, str):
        if env in ENVS:
            if speed is None:
                raise ValueError(f"env {env!r} needs speed (how fast it drifts; the paper: 0-4)")
            module_name, cls_name = BUILTINS[env].entry_point.split(":")
            cls = getattr(importlib.import_module(module_name), cls_name)
            _check_env_kwargs(env, cls, kwargs)
            return ResolvedEnv(cls(speed=speed, **kwargs), env, True, True)
        if speed is not None:
            raise ValueError(
                f"speed is set only for pyprog's built-in environments ({', '.join(ENVS)}); "
                f"{env} drifts (or not) by itself: drop speed"
            )
        if env in gym.registry:
            return ResolvedEnv(_make_id(env, env, kwargs), env, False, True)
        if ":" not in env:
            raise _unknown_id(env)
        module_name, obj = _load_object(env)
        if obj is None:
            # gymnasium's own "module:Env-v0" form: the import registered the id
            env_id = env.partition(":")[2]
            if env_id in gym.registry:
                return ResolvedEnv(_make_id(env_id, env, kwargs), env, False, True)
            raise ValueError(
                f"env {env!r}: module {module_name!r} has no {env_id!r} "
                f"(neither a function nor a registered Gymnasium id)"
            )
        if not callable(obj):
            raise ValueError(f"env {env!r} is not callable: a factory must return a gym.Env")
        made = _call_factory(obj, kwargs, env)
        return ResolvedEnv(made, env, False, True)
    if speed is not None:
        raise ValueError(
            "speed is set only for pyprog's built-in environments "
            f"({', '.join(ENVS)}); a {type(env).__name__} drifts (or not) by itself: drop speed"
        )
    if isinstance(env, gym.Env):
        if kwargs:
            raise ValueError("env_kwargs cannot be applied to an environment instance")
        spec = getattr(env, "spec", None)
        label = spec.id if spec is not None else type(env.unwrapped).__name__
        return ResolvedEnv(env, f"{INSTANCE_PREFIX}{label}", False, False)
    if callable(env):
        return ResolvedEnv(_call_factory(env, kwargs, repr(env)), _callable_name(env), False, True)
    raise ValueError(
        "env must be a built-in name, a Gymnasium id, 'module:function', a gymnasium.Env "
        f"or a callable returning one; got {type(env).__name__}"
    )


def _unexpected_kwarg(exc: TypeError, kwargs: Mapping[str, Any], where: str) -> None:
    """A ValueError naming the key, if ``exc`` is Python's "unexpected keyword argument"."""
    text = str(exc)
    for name in kwargs:
        if f"unexpected keyword argument {name!r}" in text:
            raise ValueError(f"env_kwargs: env {where} has no argument {name!r} ({text})") from None


def _make_id(env_id: str, where: str, kwargs: Mapping[str, Any]) -> gym.Env:
    try:
        return gym.make(env_id, **kwargs)
    except TypeError as exc:
        _unexpected_kwarg(exc, kwargs, repr(where))
        raise


def _call_factory(fn: Callable, kwargs: dict, where: str) -> gym.Env:
    try:
        made = fn(**kwargs)
    except TypeError as exc:
        _unexpected_kwarg(exc, kwargs, where)
        raise ValueError(f"env {where}: the factory raised TypeError: {exc}") from None
    except Exception as exc:
        raise ValueError(f"env {where}: the factory raised {type(exc).__name__}: {exc}") from None
    if not isinstance(made, gym.Env):
        raise ValueError(
            f"env {where}: the factory must return a gymnasium.Env; got {type(made).__name__}"
        )
    return made


def check_env_spec(env: str, horizon: int | None = None) -> str:
    """``env`` if it names an environment pyprog can build (CLI, grids, sweeps), else a
    ValueError. The environment is built once, its spaces and horizon (its own episode
    length, or ``horizon``) checked, and closed.

    Examples
    --------
    >>> check_env_spec("Pendulum-v1")
    'Pendulum-v1'
    """
    if not isinstance(env, str) or not env:
        raise ValueError(f"env must be a non-empty string; got {env!r}")
    if env in ENVS:
        return env
    resolved = resolve_env(env)
    try:
        environment = resolved.environment
        observation_encoder(environment.observation_space)
        _check_action_space(environment.action_space)
        episode_horizon(environment, horizon)
    finally:
        resolved.environment.close()
    return env


# --------------------------------------------------------------------------- spaces


#: The fix for composite observation spaces that Gymnasium can flatten into a Box.
_FLATTEN_HINT = (
    "; wrap the environment in gymnasium.wrappers.FlattenObservation(env), which turns "
    "this space into a flat Box pyprog reads"
)


def _flatten_hint(space: spaces.Space) -> str:
    flattenable = (spaces.Tuple, spaces.Dict, spaces.MultiDiscrete, spaces.MultiBinary)
    return _FLATTEN_HINT if isinstance(space, flattenable) else ""


def _state_space(space: spaces.Space) -> tuple[spaces.Space, bool]:
    """The space the policy sees, and whether it is the ``"state"`` entry of a Dict."""
    if isinstance(space, spaces.Dict):
        if "state" not in space.spaces:
            raise ValueError(
                f"unsupported observation space {space}: a Dict needs a 'state' entry "
                f"(as NS-Gym's wrappers give); supported: {_OBS_SUPPORTED}"
                f"{_flatten_hint(space)}"
            )
        inner = space.spaces["state"]
        if not isinstance(inner, (spaces.Box, spaces.Discrete)):
            raise ValueError(
                f"unsupported observation space: the 'state' entry is {inner}; "
                f"supported: {_OBS_SUPPORTED}"
            )
        return inner, True
    if not isinstance(space, (spaces.Box, spaces.Discrete)):
        raise ValueError(
            f"unsupported observation space {space}; supported: {_OBS_SUPPORTED}"
            f"{_flatten_hint(space)}"
        )
    return space, False


def observation_encoder(
    space: spaces.Space,
) -> tuple[int, Callable[[Any], np.ndarray] | None]:
    """The policy's input size, and a function from observations to float64 vectors.

    The function is None when ``np.asarray(obs, dtype=np.float64)`` already gives the
    vector (a 1-D ``Box``): the run loop then calls nothing extra per step.

    Parameters
    ----------
    space : gymnasium.spaces.Space
        The environment's observation space.

    Returns
    -------
    obs_dim : int
    encode : callable or None
        ``encode(obs)`` → ndarray of float64, shape (obs_dim,).

    Examples
    --------
    >>> from gymnasium import spaces
    >>> dim, encode = observation_encoder(spaces.Discrete(3, start=1))
    >>> dim, encode(2)
    (3, array([0., 1., 0.]))
    >>> observation_encoder(spaces.Box(0, 1, shape=(2, 2)))[0]
    4
    """
    inner, in_dict = _state_space(space)
    if isinstance(inner, spaces.Discrete):
        n, start = int(inner.n), int(inner.start)
        eye = np.eye(n)

        def encode_discrete(obs: Any) -> np.ndarray:
            i = int(obs) - start  # a float like 1.5, or -1, must not pick a category
            if not 0 <= i < n or i + start != obs:
                raise ValueError(f"is outside the observation space {inner}")
            return eye[i]

        encode: Callable | None = encode_discrete
        dim = n
    else:
        shape = inner.shape
        dim = int(np.prod(shape))
        if dim == 0:
            raise ValueError(
                f"unsupported observation space {inner}: it has no elements (shape {shape}), "
                "so the policy would see nothing"
            )
        if len(shape) == 1:
            encode = None
        else:

            def encode_box(obs: Any) -> np.ndarray:
                return np.asarray(obs, dtype=np.float64).reshape(dim)

            encode = encode_box
    if in_dict:
        inner_encode = encode

        def encode_state(obs: Any) -> np.ndarray:
            state = obs["state"]
            if inner_encode is None:
                return np.asarray(state, dtype=np.float64)
            return inner_encode(state)

        encode = encode_state
    return dim, encode


def _check_action_space(space: spaces.Space) -> None:
    if isinstance(space, spaces.Discrete):
        return
    if isinstance(space, spaces.Box):
        if not np.issubdtype(space.dtype, np.floating):
            raise ValueError(
                f"unsupported action space {space}: a Box of integers; supported: {_ACT_SUPPORTED}"
            )
        if space.shape is None or int(np.prod(space.shape)) == 0:
            raise ValueError(f"unsupported action space {space}: it has no elements")
        low, high = np.ravel(space.low).astype(float), np.ravel(space.high).astype(float)
        both = np.isfinite(low) & np.isfinite(high)
        with np.errstate(over="ignore"):
            width = high[both] - low[both]
        if (width <= 0).any():
            raise ValueError(
                f"unsupported action space {space}: low == high in a dimension, so there is "
                "no action to choose there"
            )
        if not np.isfinite(width).all():
            raise ValueError(
                f"unsupported action space {space}: its bounds are so far apart that their "
                "width overflows float64; use -inf/inf for an unbounded dimension"
            )
        return
    raise ValueError(f"unsupported action space {space}; supported: {_ACT_SUPPORTED}")


def default_gauss_std(space: spaces.Space) -> float | None:
    """The default std of the Gaussian policy on ``space``: a quarter of its mean width.

    ``0.25 · mean(high − low)`` over the dimensions with both bounds finite (so that
    ±2 std spans half the box), 1.0 when no dimension is bounded; None for a
    non-``Box`` space.

    Examples
    --------
    >>> from gymnasium import spaces
    >>> default_gauss_std(spaces.Box(-2.0, 2.0, shape=(1,)))
    1.0
    """
    if not isinstance(space, spaces.Box):
        return None
    _check_action_space(space)  # a bad box is named as such, not as a bad gauss_std
    low, high = np.ravel(space.low).astype(float), np.ravel(space.high).astype(float)
    finite = np.isfinite(low) & np.isfinite(high)
    if not finite.any():
        return 1.0
    return float(0.25 * np.mean(high[finite] - low[finite]))


def make_policy(
    action_space: spaces.Space, obs_dim: int, hyper: Hyper, rng: np.random.Generator
) -> Policy:
    """The policy for ``action_space``: softmax (linear or MLP) or Gaussian.

    Parameters
    ----------
    action_space : gymnasium.spaces.Space
        ``Discrete`` → :class:`SoftmaxLinear`, or :class:`SoftmaxMLP` when
        ``hyper.hidden`` is set; ``Box`` → :class:`GaussianPolicy` with std
        ``hyper.gauss_std`` and its mean bounded where the box is.
    obs_dim : int
    hyper : Hyper
    rng : numpy.random.Generator
        Initial weights of the MLP's hidden layer.

    Returns
    -------
    Policy

    Examples
    --------
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> make_policy(spaces.Discrete(2), 4, Hyper(lr=0.01), np.random.default_rng(0))
    SoftmaxLinear(obs_dim=4, n_actions=2)
    """
    _check_action_space(action_space)
    if isinstance(action_space, spaces.Box):
        if hyper.gauss_std is None:
            raise ValueError(
                f"the action space {action_space} is continuous: the Gaussian policy needs "
                "gauss_std (its standard deviation) in hyper"
            )
        if hyper.hidden is not None:
            raise ValueError(
                f"hidden applies to discrete actions (softmax-MLP); the action space "
                f"{action_space} takes a linear Gaussian policy: drop hidden"
            )
        low, high = np.ravel(action_space.low), np.ravel(action_space.high)
        return GaussianPolicy(obs_dim, low, high, hyper.gauss_std)
    n_actions = int(action_space.n)
    if hyper.hidden is None:
        return SoftmaxLinear(obs_dim, n_actions)
    policy = SoftmaxMLP(obs_dim, n_actions, hyper.hidden, rng)
    policy.hidden_lr = hyper.hidden_lr
    return policy


def action_adapter(space: spaces.Space, builtin: bool = False) -> Callable[[Any], Any] | None:
    """From the policy's action to what ``env.step`` takes (None: the action as it is).

    ``Discrete(n, start)``: ``start + a``. ``Box``: the raw Gaussian sample clipped to the
    box (the policy keeps the raw sample, whose density β is stored), reshaped to the
    space's shape and cast to its dtype. pyprog's own environments clip for themselves.

    Examples
    --------
    >>> from gymnasium import spaces
    >>> import numpy as np
    >>> action_adapter(spaces.Box(-2.0, 2.0, shape=(1,)))(np.array([3.5]))
    array([2.], dtype=float32)
    """
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        if start == 0:
            return None
        return lambda a: start + a
    if builtin:
        return None
    low, high = np.ravel(space.low).astype(np.float64), np.ravel(space.high).astype(np.float64)
    shape, dtype = space.shape, space.dtype

    def to_box(a: np.ndarray) -> np.ndarray:
        return np.clip(a, low, high).reshape(shape).astype(dtype, copy=False)

    return to_box


def episode_horizon(environment: gym.Env, horizon: int | None) -> int:
    """The most steps an episode can take: ``horizon`` if given, else what the environment
    declares — its id's ``max_episode_steps``, a ``TimeLimit`` wrapper's limit, or a
    ``horizon`` attribute (pyprog's environments).

    Raises a ValueError asking for ``horizon`` when none is known: the buffer needs it.

    Examples
    --------
    >>> import gymnasium as gym
    >>> episode_horizon(gym.make("CartPole-v1"), None), episode_horizon(gym.make("CartPole-v1"), 50)
    (500, 50)
    """
    if horizon is not None:
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be an integer >= 1 or None; got {horizon!r}")
        return int(horizon)
    spec = getattr(environment, "spec", None)
    if spec is not None and spec.max_episode_steps:
        return int(spec.max_episode_steps)
    env = environment
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            return int(env._max_episode_steps)
        env = env.env
    own = getattr(environment.unwrapped, "horizon", None)
    if isinstance(own, (int, np.integer)) and not isinstance(own, bool) and own >= 1:
        return int(own)
    raise ValueError(
        f"the environment {environment} declares no episode length (no max_episode_steps, "
        "TimeLimit or horizon attribute): pass horizon=<most steps per episode>"
    )
