"""Whole runs against recorded fingerprints: speed work must not change what a run computes.

``tests/data/run_regression.json`` holds, for a few fixed-seed runs (NS-Reco with each
learner, NS-Reacher, CartPole-v1), the returns, regret and final policy parameters of each
backend (compiled kernels with the compiled update, compiled kernels with the Python update
loop, the NumPy fallback), and the configuration that recorded them (:func:`machine`). Two
checks, by where the tests run:

* **On the recording configuration, bit for bit.** Same CPU model, Python, NumPy and the
  SIMD targets its dispatch uses, SciPy, and each OpenBLAS's version and kernel
  architecture: every case, returns (SHA-256), regret and parameters as hex floats, and the
  counts of updates. A change meant only to be faster must keep these bits.
* **Anywhere else, to a tolerance** (:data:`PORTABLE_RTOL`
  = 1e-6 on the parameters, relative to their largest magnitude, and on the returns' sum and
  the regret; the counts of updates exactly). Measured on the recording machine (Intel Xeon
  with AVX-512, 2 cores, GCC 12) under every perturbation that another machine brings, the
  largest drift of any portable case was 7.0e-9 (NS-Reco Pro-WLS's parameters): OpenBLAS's
  Haswell or Zen kernels instead of SkylakeX (``OPENBLAS_CORETYPE``; what an AMD EPYC without
  AVX-512 runs) 7.0e-9; NumPy's dispatch without AVX-512 or AVX2 (``NPY_DISABLE_CPU_FEATURES``)
  1.9e-13; the Cython kernels built without their AVX-512 clone 2.2e-11, without any clone
  and without fused multiply-adds (``-march=x86-64 -mno-fma -ffp-contract=off``) 1.7e-9, with
  contracted FMAs everywhere (``-march=x86-64-v3 -ffp-contract=fast``) 1.2e-9; all of these
  at once 7.0e-9; the NumPy fallback under them 2.7e-9. The returns, the regret and the
  counts of updates did not move at all (no sampled action flipped). 1e-6 leaves a margin of
  140 over the worst drift, and still sees a change of the learning rate by 1e-4 (the
  parameters move by 2.8e-5 to 0.23: :func:`test_a_real_change_is_caught_across_machines`).
  Compiler flags are not part of the configuration :func:`machine` sees: kernels built
  with other flags than pip's on the recording machine are told to take the cross-machine
  check with ``PYPROG_FINGERPRINTS=portable`` (the failure says so).
* **CartPole-v1 Pro-WLS with pyprog's default setting was chaotic** until Pro-WLS's
  forecast gradient on as many episodes as features (3 episodes, d = 3) became exactly 0:
  such a fit interpolates them whatever the weights, so the forecast does not depend on the
  policy, and RMSprop had normalised the gradient's rounding noise (~1e-14) into full
  steps, a last-bit difference moving the parameters by up to 1.15 (relative). Now only
  the entropy term moves θ there (:class:`pyprog.learn.ProWLS`); the case's drift under
  OpenBLAS's Zen kernels is 4e-15, and every case is held to the tolerance. CartPole-v1
  Pro-WLS with d = 2 over 30 episodes (10 updates) is a second Gymnasium case (drift at
  most 2.5e-12).

Regenerate (only when a change of results is intended, and say so in the commit; on the
recording configuration, so that the other cases stay bit for bit)::

    python tests/test_run_regression.py              # compiled kernels
    PYPROG_PURE_PYTHON=1 python tests/test_run_regression.py
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from pyprog._ext.backend import backend
from pyprog.learn.hyperparams import Hyper, default_hyper, paper_hyper
from pyprog.runner import loop
from pyprog.utils.machine import cpu_model

DATA = Path(__file__).parent / "data" / "run_regression.json"

#: Cross-machine tolerance (see the module docstring for the drift it covers).
PORTABLE_RTOL = 1e-6


class Case(NamedTuple):
    """A fixed-seed run: short, but with dozens of updates."""

    name: str
    env: str
    algo: str
    speed: int | None
    episodes: int
    changes: dict | None = None  # fields of the paper's (or pyprog's default) setting changed


CASES = [
    Case("reco-pro-wls", "reco", "pro-wls", 2, 300),
    Case("reco-pro-ols", "reco", "pro-ols", 2, 300),
    Case("reco-ftrl-pg", "reco", "ftrl-pg", 2, 300),
    Case("reco-onpg", "reco", "onpg", 2, 300),
    Case("reco-pro-wls-auto", "reco", "pro-wls", 2, 120, {"basis": "auto"}),
    Case("reacher-pro-ols", "reacher", "pro-ols", 2, 20),
    Case("cartpole-pro-wls", "CartPole-v1", "pro-wls", None, 12),
    Case("cartpole-pro-wls-d2", "CartPole-v1", "pro-wls", None, 30, {"d": 2}),
]
CASE = {c.name: c for c in CASES}
SEED = 3

#: What the recording configuration is made of, as a script: run here, or by ``python -c``
#: under another environment (:func:`test_the_configuration_names_the_blas_kernel`).
_CONFIGURATION = """
import json, numpy, scipy, scipy.linalg, threadpoolctl
try:  # NumPy >= 2
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # NumPy 1.x
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
simd = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
blas = sorted(
    f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
    for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"
)
print(json.dumps([numpy.__version__, simd, scipy.__version__, blas]))
"""


def machine() -> str:
    """What decides the last bits: CPU, Python, NumPy's SIMD paths, SciPy, OpenBLAS's kernels."""
    numpy_version, simd, scipy_version, blas = _configuration()
    return (
        f"{cpu_model()} | Python {platform.python_version()} | NumPy {numpy_version}"
        f" ({' '.join(simd) or 'baseline SIMD'}) | SciPy {scipy_version} | {', '.join(blas)}"
    )


def _configuration(env: dict | None = None) -> list:
    if env is None:  # in this process: the script's print returns
        namespace: dict = {}
        namespace["print"] = lambda text: namespace.update(out=text)
        exec(_CONFIGURATION, namespace)
        return json.loads(namespace["out"])
    done = subprocess.run(
        [sys.executable, "-c", _CONFIGURATION], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def modes() -> list[str]:
    """The update paths this backend runs: compiled and Python loop, or the fallback."""
    return ["compiled", "python-loop"] if backend() == "cython" else ["numpy"]


def hyper_of(case: Case, tweak: Callable[[Hyper], Hyper] | None = None) -> Hyper | None:
    """The case's setting (None: the run's own default), changed by ``tweak`` if given."""
    if case.changes is None and tweak is None:
        return None
    base = paper_hyper(case.env, case.algo, case.speed) if case.speed is not None else None
    hyper = (base or default_hyper(case.algo)).replace(**(case.changes or {}))
    return hyper if tweak is None else tweak(hyper)


def fingerprint(
    case: str, mode: str, monkeypatch=None, tweak: Callable[[Hyper], Hyper] | None = None
) -> dict:
    """One run's returns, regret and final parameters (as exact hex floats)."""
    spec = CASE[case]
    made = []
    make_learner = loop.make_learner

    def recording(algo, policy, hyper, horizon):
        learner = make_learner(algo, policy, hyper, horizon)
        if mode == "python-loop":
            learner.compiled = False
        made.append(learner)
        return learner

    patch = monkeypatch if monkeypatch is not None else pytest.MonkeyPatch()
    patch.setattr(loop, "make_learner", recording)
    try:
        result = loop.run(
            spec.env,
            spec.algo,
            speed=spec.speed,
            seed=SEED,
            episodes=spec.episodes,
            hyper=hyper_of(spec, tweak),
        )
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


def assert_close_across_machines(got: dict, expected: dict) -> None:
    """The cross-machine check: counts exactly, the rest to :data:`PORTABLE_RTOL`."""
    counts = ("updates", "skipped_updates")
    assert [got[k] for k in counts] == [expected[k] for k in counts], "updates differ"
    theta, recorded = _floats(got["theta"]), _floats(expected["theta"])
    drift = np.max(np.abs(theta - recorded)) / np.max(np.abs(recorded))
    assert drift <= PORTABLE_RTOL, f"parameters {drift:.2e} off (tolerance {PORTABLE_RTOL:g})"
    for key in ("returns_sum", "regret"):
        if expected[key] is not None:
            value, want = float.fromhex(got[key]), float.fromhex(expected[key])
            assert abs(value - want) <= PORTABLE_RTOL * abs(want), f"{key} {value!r} != {want!r}"


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(DATA.read_text())


def bit_for_bit(recorded_machine: str, choice: str | None = None) -> bool:
    """Whether this run is held bit for bit: on the recording configuration, unless told not.

    ``choice`` is ``PYPROG_FINGERPRINTS``: unset or ``"auto"``, or ``"portable"`` (the
    cross-machine check here too: for kernels built with other compiler flags than pip's,
    which :func:`machine` cannot see).
    """
    choice = os.environ.get("PYPROG_FINGERPRINTS", "auto") if choice is None else choice
    if choice not in ("auto", "portable"):
        raise ValueError(f"PYPROG_FINGERPRINTS must be 'auto' or 'portable'; got {choice!r}")
    return choice == "auto" and recorded_machine == machine()


@pytest.fixture(scope="module")
def on_recording_machine(recorded) -> bool:
    return bit_for_bit(recorded["machine"])


@pytest.mark.parametrize("mode", modes())
@pytest.mark.parametrize("case", list(CASE))
def test_runs_reproduce_the_recorded_results(
    case, mode, monkeypatch, recorded, on_recording_machine
):
    expected = recorded["runs"][mode][case]
    got = fingerprint(case, mode, monkeypatch)
    if on_recording_machine:
        assert got == expected, (
            f"{case} ({mode}) is not bit for bit what {DATA.name} recorded on this configuration;"
            " kernels built with other compiler flags than pip's: PYPROG_FINGERPRINTS=portable"
        )
    else:
        assert_close_across_machines(got, expected)


@pytest.mark.parametrize("case", ["reco-pro-wls", "reco-onpg", "cartpole-pro-wls-d2"])
def test_a_real_change_is_caught_across_machines(case, monkeypatch, recorded):
    """A learning rate 1e-4 higher fails the cross-machine check (and the bit-for-bit one)."""
    mode = modes()[0]
    got = fingerprint(case, mode, monkeypatch, tweak=lambda h: h.replace(lr=h.lr * (1 + 1e-4)))
    with pytest.raises(AssertionError, match="parameters"):
        assert_close_across_machines(got, recorded["runs"][mode][case])


def test_the_tolerance_holds_what_cpus_do_and_no_more(recorded):
    """Parameters moved by 10x the largest measured drift pass; by 1e-5 they fail."""
    mode = modes()[0]
    expected = recorded["runs"][mode]["reco-pro-wls"]
    theta = _floats(expected["theta"])
    for scale, passes in ((7e-8, True), (1e-5, False)):
        moved = theta.copy()
        moved[0] += scale * np.max(np.abs(theta))
        got = dict(expected, theta=[float(x).hex() for x in moved])
        if passes:
            assert_close_across_machines(got, expected)
        else:
            with pytest.raises(AssertionError, match="parameters"):
                assert_close_across_machines(got, expected)
    got = dict(expected, skipped_updates=expected["skipped_updates"] + 1)
    with pytest.raises(AssertionError, match="updates"):
        assert_close_across_machines(got, expected)


def test_a_changed_parameter_is_caught():
    """The comparison sees a change in the last bit of one parameter."""
    recorded = json.loads(DATA.read_text())
    mode = modes()[0]
    entry = dict(recorded["runs"][mode]["reco-pro-wls"])
    theta = _floats(entry["theta"])
    theta[0] = np.nextafter(theta[0], np.inf)
    assert [float(x).hex() for x in theta] != entry["theta"]


def test_the_choice_of_check_is_named_and_checked(recorded):
    here = recorded["machine"] == machine()
    assert bit_for_bit(recorded["machine"], "auto") == here
    assert not bit_for_bit(recorded["machine"], "portable")
    assert not bit_for_bit("another CPU | Python 3.11.7", "auto")
    with pytest.raises(
        ValueError, match="PYPROG_FINGERPRINTS must be 'auto' or 'portable'; got 'bits'"
    ):
        bit_for_bit(recorded["machine"], "bits")


def test_the_configuration_names_the_blas_kernel():
    """Another OpenBLAS kernel (what an AMD CPU runs) is another configuration: no bit check."""
    here = _configuration()
    if platform.machine().lower() not in ("x86_64", "amd64") or not all(
        b.startswith("openblas ") for b in here[3]
    ):
        pytest.skip(f"OPENBLAS_CORETYPE picks x86-64 OpenBLAS kernels; this BLAS: {here[3]}")
    arch = {b.rsplit(" ", 1)[-1] for b in here[3]}
    other = "Sandybridge" if "Sandybridge" not in arch else "Haswell"
    there = _configuration(env={**os.environ, "OPENBLAS_CORETYPE": other})
    assert there[3] != here[3] and there[:3] == here[:3]


if __name__ == "__main__":  # record this backend's fingerprints (see the module docstring)
    data = json.loads(DATA.read_text()) if DATA.is_file() else {"runs": {}}
    if data.get("machine", machine()) != machine():
        sys.exit(f"recorded on {data['machine']}; this is {machine()}: regenerate all there")
    data["machine"] = machine()
    for mode in modes():
        data["runs"][mode] = {c.name: fingerprint(c.name, mode) for c in CASES}
    DATA.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {DATA} ({', '.join(modes())})")
