"""Non-stationary environments: NS-Reco, NS-Reacher and NS-Diabetes (Gymnasium API).

Importing :mod:`pyprog` registers them with Gymnasium::

    import gymnasium as gym
    import pyprog  # noqa: F401
    env = gym.make("pyprog/NSReco-v0", speed=3)
"""

import gymnasium as gym

__all__ = ["register_envs"]

ENV_IDS = {
    "pyprog/NSReco-v0": "pyprog.envs.reco:NSReco",
    "pyprog/NSReacher-v0": "pyprog.envs.reacher:NSReacher",
    "pyprog/NSDiabetes-v0": "pyprog.envs.diabetes.env:NSDiabetes",
}


def register_envs() -> None:
    """Register pyprog's environments with Gymnasium (idempotent).

    No ``max_episode_steps``: each environment ends its own episodes (NS-Reacher
    truncates at its ``horizon``), so keyword arguments such as ``horizon=13`` work.
    """
    for env_id, entry_point in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point)


register_envs()
