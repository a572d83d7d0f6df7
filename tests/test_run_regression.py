"""Whole runs against recorded fingerprints: speed work must not change what a run computes.

``tests/data/run_regression.json`` holds, for a few fixed-seed runs (NS-Reco with each
learner, NS-Reacher, CartPole-v1), the returns, regret and final policy parameters that
``main`` produced before the episode loop and the compiled Pro-WLS update were sped up, for
each backend (compiled kernels with the compiled update, compiled kernels with the Python
update loop, the NumPy fallback). On the machine that recorded them (same CPU model, NumPy
and Python versions) the runs must reproduce them bit for bit; elsewhere — vectorised
``exp`` and the compiler's contractions may differ in the last bits — to 1e-9.

Regenerate (only when a change of results is intended, and say so in the commit)::

    python tests/test_run_regression.py              # compiled kernels
    PYPROG_PURE_PYTHON=1 python tests/test_run_regression.py
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from pyprog._ext.backend import backend
from pyprog.runner import loop
from pyprog.utils.machine import cpu_model

DATA = Path(__file__).parent / "data" / "run_regression.json"

#: (name, env, algo, speed, episodes): short runs that still make dozens of updates.
CASES = [
    ("reco-pro-wls", "reco", "pro-wls", 2, 300),
    ("reco-pro-ols", "reco", "pro-ols", 2, 300),
    ("reco-ftrl-pg", "reco", "ftrl-pg", 2, 300),
    ("reco-onpg", "reco", "onpg", 2, 300),
    ("reco-pro-wls-auto", "reco", "pro-wls", 2, 120),
    ("reacher-pro-ols", "reacher", "pro-ols", 2, 20),
    ("cartpole-pro-wls", "CartPole-v1", "pro-wls", None, 12),
]
SEED = 3


def machine() -> str:
    """What decides the last bits: CPU model, Python, NumPy."""
    return f"{cpu_model()} | Python {platform.python_version()} | NumPy {np.__version__}"


def modes() -> list[str]:
    """The update paths this backend runs: compiled and Python loop, or the fallback."""
    return ["compiled", "python-loop"] if backend() == "cython" else ["numpy"]


def fingerprint(case: str, mode: str, monkeypatch=None) -> dict:
    """One run's returns, regret and final parameters (as exact hex floats)."""
    _, env, algo, speed, episodes = next(c for c in CASES if c[0] == case)
    made = []
    make_learner = loop.make_learner

    def recording(algo, policy, hyper, horizon):
        learner = make_learner(algo, policy, hyper, horizon)
        if mode == "python-loop":
            learner.compiled = False
        made.append(learner)
        return learner

    hyper = None
    if case.endswith("-auto"):
        from pyprog.learn.hyperparams import paper_hyper

        hyper = paper_hyper(env, algo, speed).replace(basis="auto")
    patch = monkeypatch if monkeypatch is not None else pytest.MonkeyPatch()
    patch.setattr(loop, "make_learner", recording)
    try:
        result = loop.run(env, algo, speed=speed, seed=SEED, episodes=episodes, hyper=hyper)
    finally:
        if monkeypatch is None:
            patch.undo()
    (learner,) = made
    assert learner.compiled == (mode == "compiled")
    return {
        "returns_sha256": hashlib.sha256(result.returns.tobytes()).hexdigest(),
        "returns_sum": float(result.returns.sum()).hex(),
        "regret": None if result.regret is None else float(result.regret).hex(),
        "theta": [float(x).hex() for x in learner.policy.theta],
        "updates": result.updates,
        "skipped_updates": result.skipped_updates,
    }


def _floats(values: list) -> np.ndarray:
    return np.array([float.fromhex(v) for v in values])


@pytest.mark.parametrize("mode", modes())
@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_runs_reproduce_the_recorded_results(case, mode, monkeypatch):
    recorded = json.loads(DATA.read_text())
    expected = recorded["runs"][mode][case]
    got = fingerprint(case, mode, monkeypatch)
    assert (got["updates"], got["skipped_updates"]) == (
        expected["updates"],
        expected["skipped_updates"],
    )
    if recorded["machine"] == machine():
        assert got == expected  # bit for bit
    else:
        np.testing.assert_allclose(
            _floats(got["theta"]), _floats(expected["theta"]), rtol=1e-9, atol=1e-12
        )
        for key in ("returns_sum", "regret"):
            if expected[key] is not None:
                assert float.fromhex(got[key]) == pytest.approx(
                    float.fromhex(expected[key]), rel=1e-9
                )


def test_a_changed_parameter_is_caught():
    """The comparison sees a change in the last bit of one parameter."""
    recorded = json.loads(DATA.read_text())
    mode = modes()[0]
    entry = dict(recorded["runs"][mode]["reco-pro-wls"])
    theta = _floats(entry["theta"])
    theta[0] = np.nextafter(theta[0], np.inf)
    assert [float(x).hex() for x in theta] != entry["theta"]


if __name__ == "__main__":  # record this backend's fingerprints (see the module docstring)
    data = json.loads(DATA.read_text()) if DATA.is_file() else {"runs": {}}
    if data.get("machine", machine()) != machine():
        sys.exit(f"recorded on {data['machine']}; this is {machine()}: regenerate all there")
    data["machine"] = machine()
    for mode in modes():
        data["runs"][mode] = {c[0]: fingerprint(c[0], mode) for c in CASES}
    DATA.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {DATA} ({', '.join(modes())})")
