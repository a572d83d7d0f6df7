"""Replay a run and record what its policy chose, episode by episode.

A result store keeps a run's returns, not its policy. Since a run is reproducible from its
seed alone, replaying it — the same environment, policy, learner and random streams as
:func:`pyprog.run` — recovers everything it did; ``probe(policy)`` is called before every
episode to record what is wanted (e.g. the Gaussian policy's mean action, the (CR, CF) an
NS-Diabetes policy would choose without exploration noise). The replay's returns equal the
run's bit for bit (tested), so the record belongs to the stored run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pyprog.learn.hyperparams import Hyper, check_env
from pyprog.learn.policies import Policy
from pyprog.runner.loop import check_episodes_and_seed, env_seed, prepare, train

__all__ = ["Replay", "replay"]


@dataclasses.dataclass
class Replay:
    """A replayed run.

    Attributes
    ----------
    returns : ndarray, shape (episodes,)
        The return of every episode (equal to :func:`pyprog.run`'s).
    probes : ndarray, shape (episodes, ...)
        ``probe(policy)`` before every episode (empty, shape (episodes, 0), without a probe).
    env_seed : int
        The seed the environment was reset with (for NS-Diabetes, the day's meals and noise).
    hyper : Hyper
        The setting that was replayed.
    """

    returns: np.ndarray
    probes: np.ndarray
    env_seed: int
    hyper: Hyper


def replay(
    env: str,
    algo: str,
    *,
    speed: float,
    seed: int,
    episodes: int = 1000,
    hyper: str | Mapping | Hyper | None = None,
    probe: Callable[[Policy], Any] | None = None,
) -> Replay:
    """Re-run ``algo`` on ``env`` exactly as :func:`pyprog.run` does, recording ``probe``.

    Parameters
    ----------
    env, algo, speed, seed, episodes, hyper
        As :func:`pyprog.run`.
    probe : callable, optional
        ``probe(policy)`` is called before every episode (the policy that will act in it);
        its results are stacked into :attr:`Replay.probes`.

    Returns
    -------
    Replay

    Examples
    --------
    >>> from pyprog import run
    >>> mean_action = lambda policy: policy.mean(np.ones(1))
    >>> r = replay("diabetes", "pro-wls", speed=2, seed=0, episodes=3, probe=mean_action)
    >>> r.probes.shape, r.probes[0].tolist()  # (CR, CF) before any update: the box's centre
    ((3, 2), [16.5, 27.5])
    >>> bool((r.returns == run("diabetes", "pro-wls", speed=2, seed=0, episodes=3).returns).all())
    True
    """
    check_env(env)
    check_episodes_and_seed(episodes, seed)
    setup = prepare(env, algo, speed, hyper, None, None)
    probes: list[np.ndarray] = []

    def record(k: int, policy: Policy) -> None:
        probes.append(np.asarray(probe(policy)) if probe is not None else np.empty(0))

    try:
        # pyprog.run's own loop, with the probe: the same streams, so the same run
        result = train(setup, algo, speed, int(seed), episodes, None, probe=record)
    finally:
        if setup.resolved.owned:
            setup.resolved.environment.close()
    return Replay(
        returns=result.returns, probes=np.stack(probes), env_seed=env_seed(seed), hyper=setup.hyper
    )
