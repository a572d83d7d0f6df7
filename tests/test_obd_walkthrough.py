"""The Open Bandit Dataset walkthrough (examples/open_bandit_dataset.py) on the real sample.

Slow, and needs the data: set PYPROG_OBD_PATH to the ``obd`` folder of obp 0.5.7's source
distribution (``.ci/run`` downloads it; the example's docstring says how).
"""

import importlib.util
import os
import time
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).parents[1] / "examples" / "open_bandit_dataset.py"
OBD = os.environ.get("PYPROG_OBD_PATH")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not OBD or not (Path(OBD) / "bts" / "all" / "all.csv").is_file(),
        reason="PYPROG_OBD_PATH does not point to the Open Bandit Dataset sample "
        "(obp-0.5.7/obp/dataset/obd from `pip download --no-deps --no-binary :all: "
        "--ignore-requires-python obp==0.5.7`)",
    ),
]


def test_walkthrough_runs_in_under_two_minutes_on_the_real_sample(capsys):
    spec = importlib.util.spec_from_file_location("open_bandit_dataset", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    start = time.perf_counter()
    result = example.main([OBD])
    assert time.perf_counter() - start < 120
    # the sample: one week, 10,000 rows per policy, 42 clicks under BTS, 38 under random
    assert [r["day"] for r in result["bts"]] == [f"2019-11-{d}" for d in range(24, 31)]
    assert sum(r["rows"] for r in result["bts"]) == sum(r["rows"] for r in result["random"])
    assert result["week_bts"]["clicks"] == 42 and result["week_random"]["clicks"] == 38
    assert result["week_random"]["rate"] == pytest.approx(0.0038)
    # the guide's numbers (docs/guides/open-bandit-dataset.md)
    assert result["week_bts"]["rate"] == pytest.approx(0.00236, abs=5e-6)
    linear = result["forecasts"]["linear"].nis
    assert (linear.value, linear.low, linear.high) == pytest.approx(
        (0.00191, -0.00044, 0.00424), abs=5e-6
    )
    assert np.isfinite(result["forecasts"]["auto"].nis.value)
    assert "forecast of the last day" in capsys.readouterr().out
