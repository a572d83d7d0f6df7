"""The one list of pyprog's built-in environments.

Everything that needs to know which environments are built in — Gymnasium's registry,
the run loop's short names, the paper's settings and figures — reads it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUILTINS", "ENVS", "BuiltinEnv", "register_envs"]


@dataclass(frozen=True)
class BuiltinEnv:
    """A built-in non-stationary environment, under each of its names."""

    #: Short name, as ``pyprog.run`` and the command line take it (e.g. ``"reco"``).
    name: str
    #: The paper's name (e.g. ``"NS-Reco"``), for tables and figures.
    title: str
    #: Gymnasium id (e.g. ``"pyprog/NSReco-v0"``).
    gym_id: str
    #: ``"module:Class"`` of the environment (imported on first use).
    entry_point: str


#: The built-in environments by short name, in the paper's order.
BUILTINS: dict[str, BuiltinEnv] = {
    e.name: e
    for e in (
        BuiltinEnv("reco", "NS-Reco", "pyprog/NSReco-v0", "pyprog.envs.reco:NSReco"),
        BuiltinEnv("reacher", "NS-Reacher", "pyprog/NSReacher-v0", "pyprog.envs.reacher:NSReacher"),
        BuiltinEnv(
            "diabetes", "NS-Diabetes", "pyprog/NSDiabetes-v0", "pyprog.envs.diabetes.env:NSDiabetes"
        ),
    )
}

#: Their short names.
ENVS: tuple[str, ...] = tuple(BUILTINS)


def register_envs() -> None:
    """Register pyprog's environments with Gymnasium (idempotent).

    No ``max_episode_steps``: each environment ends its own episodes (NS-Reacher
    truncates at its ``horizon``), so keyword arguments such as ``horizon=13`` work.

    Examples
    --------
    >>> import gymnasium as gym
    >>> register_envs()
    >>> "pyprog/NSReco-v0" in gym.registry
    True
    """
    import gymnasium as gym

    for env in BUILTINS.values():
        if env.gym_id not in gym.registry:
            gym.register(env.gym_id, entry_point=env.entry_point)
