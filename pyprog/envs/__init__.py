"""Non-stationary environments: NS-Reco, NS-Reacher and NS-Diabetes (Gymnasium API).

Importing :mod:`pyprog` registers them with Gymnasium::

    import gymnasium as gym
    import pyprog  # noqa: F401
    env = gym.make("pyprog/NSReco-v0", speed=3)

The list of built-ins lives in :mod:`pyprog.envs.registry`.

May import :mod:`pyprog.forecast`, :mod:`pyprog.value` and every layer below them
(the environments use only :mod:`pyprog.utils` and :mod:`pyprog._ext`).
"""

from pyprog.envs.registry import BUILTINS, ENVS, BuiltinEnv, register_envs

__all__ = ["BUILTINS", "ENVS", "ENV_IDS", "BuiltinEnv", "register_envs"]

#: Gymnasium id → entry point of every built-in environment.
ENV_IDS = {env.gym_id: env.entry_point for env in BUILTINS.values()}

register_envs()
