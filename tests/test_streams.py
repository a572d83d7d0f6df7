"""Logs larger than memory (issue 51): a Parquet folder streamed in batches, and a Dask
DataFrame partition by partition, give the forecast of the log in memory."""

import numpy as np
import pytest

import pyprog.logs.chunks as chunks
from pyprog.logs.streams import DaskSource, ParquetSource, is_dask_frame
from pyprog.value.forecast import forecast_value

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

COLUMNS = {"time": "time", "context": "x", "action": "action", "reward": "reward",
           "pscore": "pscore"}  # fmt: skip


def year(n: int = 4000, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 365, n))
    x = rng.normal(size=(n, 2))
    a = rng.integers(0, 3, n)
    r = (a == 1) * (1 + np.sin(2 * np.pi * t / 365.25)) + 0.3 * x[:, 0] + rng.normal(0, 1, n)
    stamps = np.datetime64("2023-01-01") + (t * 86400).astype("timedelta64[s]")
    pi = np.tile([0.2, 0.6, 0.2], (n, 1))
    return {"time": stamps, "x0": x[:, 0], "x1": x[:, 1], "action": a, "reward": r,
            "pscore": np.full(n, 1 / 3), "pi_0": pi[:, 0], "pi_1": pi[:, 1],
            "pi_2": pi[:, 2]}  # fmt: skip


def write_folder(path, log: dict, parts: int = 6):
    """``log`` as ``parts`` Parquet files, one folder each (hive: ``part=k``)."""
    for k, rows in enumerate(np.array_split(np.arange(len(log["time"])), parts)):
        (path / f"part={k}").mkdir(parents=True)
        table = pa.table({c: v[rows] for c, v in log.items()})
        pq.write_table(table, path / f"part={k}" / "data.parquet")
    return path


def same(a, b):
    assert (a.model, a.estimator, a.n_rounds, a.n_bins) == (b.model, b.estimator, b.n_rounds,
                                                            b.n_bins)  # fmt: skip
    np.testing.assert_allclose([a.value, a.low, a.high, a.se], [b.value, b.low, b.high, b.se],
                               rtol=1e-9)  # fmt: skip


@pytest.fixture(scope="module")
def log():
    return year()


@pytest.fixture(scope="module")
def in_memory(log):
    return forecast_value(log, "pi_", at="2024-01-20")


def test_a_folder_streamed_in_small_batches_gives_the_forecast_in_memory(
    tmp_path, log, in_memory, monkeypatch
):
    folder = write_folder(tmp_path / "log", log)
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 250)  # batches of 250 rows in files of ~667
    src = ParquetSource(folder, COLUMNS, "pi_", None, chunk_rows=250)
    assert [c.rounds.n for c in src.chunks()][:3] == [250, 250, 167]
    assert src.scan.n == 4000 and src.dated
    same(forecast_value(folder, "pi_", at="2024-01-20"), in_memory)


def test_a_bad_value_in_one_file_is_named_by_its_file_and_row_there(tmp_path, log):
    bad = dict(log, pscore=log["pscore"].copy())
    bad["pscore"][2000 + 5] = 0.0  # in the fourth file (rows 2000 ..), its row 5 ... or so
    folder = write_folder(tmp_path / "log", bad)
    sizes = np.cumsum([len(p) for p in np.array_split(np.arange(4000), 6)])
    k = int(np.searchsorted(sizes, 2005, side="right"))
    row = 2005 - (sizes[k - 1] if k else 0)
    with pytest.raises(ValueError, match=rf"part={k}.data\.parquet: pscore must be a "
                       rf"probability in \(0, 1\].*at row {row}\b"):  # fmt: skip
        forecast_value(folder, "pi_", at="2024-01-20")


def test_a_dask_frame_gives_the_forecast_in_memory(log, in_memory):
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(pd.DataFrame(log), npartitions=5)
    assert is_dask_frame(frame) and not is_dask_frame(pd.DataFrame(log))
    src = DaskSource(frame, COLUMNS, "pi_", None)
    assert src.scan.n == 4000 and src.dated
    same(forecast_value(frame, "pi_", at="2024-01-20"), in_memory)


def test_a_bad_value_in_one_partition_is_named(log):
    dd = pytest.importorskip("dask.dataframe")
    bad = pd.DataFrame(log)
    bad.loc[3100, "reward"] = np.inf
    frame = dd.from_pandas(bad, npartitions=4)  # rows 3000 .. 3999 in partition 3
    with pytest.raises(ValueError, match=r"partition 3: reward must be finite; got inf at "
                       r"row 100\b"):  # fmt: skip
        forecast_value(frame, "pi_", at="2024-01-20")


def test_a_dask_local_cluster_gives_the_forecast_in_memory(log, in_memory):
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):  # fmt: skip
        frame = dd.from_pandas(pd.DataFrame(log), npartitions=4)
        same(forecast_value(frame, "pi_", at="2024-01-20"), in_memory)


def test_the_command_line_streams_a_parquet_file_or_folder(tmp_path, log, in_memory, capsys):
    import json

    from pyprog.cli.main import main

    folder = write_folder(tmp_path / "log", log)
    single = tmp_path / "rounds.parquet"
    pq.write_table(pa.table(log), single)
    for path in (folder, single):
        out = tmp_path / "out.json"
        code = main(["forecast", str(path), "--time", "time", "--at", "2024-01-20",
                     "--json", str(out)])  # fmt: skip
        assert code == 0, capsys.readouterr()
        assert json.loads(out.read_text())["value"] == pytest.approx(in_memory.value, rel=1e-9)
    code = main(["forecast", str(single), "--time", "time", "--at", "2024-01-20",
                 "--compact-dates", "date"])  # fmt: skip
    assert code == 2 and "--compact-dates: for CSV logs" in capsys.readouterr().err
