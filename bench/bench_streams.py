"""``forecast_value`` on one log three ways (issue 51): in memory, streamed from a Parquet
folder, and partition by partition on Dask.

Run: ``pytest bench/bench_streams.py --benchmark-columns=median,iqr,rounds`` (``-m slow``
for 10⁶ rounds). The log is ``bench/make_rounds_parquet.py``'s (10 actions, 10 context
features, a year in 365 daily files) written to a temporary folder; the baseline in each
group is the log in memory (a dict of arrays), so the "speed-up" column says what reading
it in batches (and, on Dask, scheduling the partitions on the local threaded scheduler)
costs. The three give the same forecast (``tests/test_streams.py``). The targets at 10⁷
and 10⁸ rounds are ``bench/scale_rounds.py``'s (README).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_rounds_parquet

pytest.importorskip("pyarrow")
SIZES = [pytest.param(100_000, id="1e5"), pytest.param(1_000_000, id="1e6",
                                                       marks=pytest.mark.slow)]  # fmt: skip
_FOLDERS: dict = {}


def folder_of(n: int, tmp_path_factory) -> Path:
    if n not in _FOLDERS:
        out = tmp_path_factory.mktemp(f"rounds{n}")
        make_rounds_parquet.main([str(out), str(n)])
        _FOLDERS[n] = out
    return _FOLDERS[n]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("way", ["baseline", "parquet", "dask"])
def bench_forecast_value_ways(benchmark, n, way, tmp_path_factory):
    from pyprog.logs.tables import read_rounds_table
    from pyprog.value.forecast import forecast_value

    folder = folder_of(n, tmp_path_factory)
    benchmark.group = f"forecast_value, {n} rounds: in memory, streamed, on Dask"
    benchmark.extra_info.update(role="baseline" if way == "baseline" else "candidate")
    if way == "baseline":
        log = read_rounds_table(folder)
        log.pop("date")
        benchmark.extra_info.update(impl="in memory (dict of arrays)")
    elif way == "parquet":
        log = folder
        benchmark.extra_info.update(impl="Parquet folder, streamed")
    else:
        dd = pytest.importorskip("dask.dataframe")
        log = dd.read_parquet(folder).drop(columns=["date"])
        benchmark.extra_info.update(impl="Dask DataFrame (local threads)")
    f = benchmark.pedantic(forecast_value, args=(log, "pi_"), kwargs={"at": "2024-01-30"},
                           rounds=3 if n <= 10**5 else 1)  # fmt: skip
    assert f.n_rounds == n and f.low <= f.value <= f.high
