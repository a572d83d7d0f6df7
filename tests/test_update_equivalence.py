"""Whole runs of the compiled update and the Python loop: equivalent regret across seeds."""

import sys
from pathlib import Path

import numpy as np
import pytest

from pyprog._ext.backend import backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from update_equivalence import paired_tost, study


def test_paired_tost_decides_by_the_margin():
    rng = np.random.default_rng(0)
    a = rng.normal(100.0, 10.0, size=20)
    assert paired_tost(a, a, 1.0) == ("identical", 0.0)
    near = a + rng.normal(0.0, 0.01, size=20)
    assert paired_tost(near, a, 1.0)[0] == "equivalent"
    far = a + 5.0 + rng.normal(0.0, 0.01, size=20)
    assert paired_tost(far, a, 1.0)[0] == "inconclusive"
    assert paired_tost(a + 0.5, a, 1.0)[0] == "equivalent"
    assert paired_tost(a + 2.0, a, 1.0)[0] == "not equivalent"


@pytest.mark.slow
@pytest.mark.skipif(backend() != "cython", reason="needs the compiled kernels")
def test_whole_runs_have_equivalent_regret_across_seeds():
    out = study(seeds=4, cases=[("reco", "pro-wls", 1000), ("reacher", "pro-ols", 100)])
    for row in out["cases"]:
        assert row["verdict"] in ("identical", "equivalent"), row
