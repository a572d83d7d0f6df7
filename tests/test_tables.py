"""Logs of rounds in columnar formats (``pyprog.logs.tables``): pyarrow and Polars tables,
Parquet files and hive-partitioned folders of them.

Round trips: one synthetic year of rounds as a dict, a CSV file, a pandas, Polars or pyarrow
table, one Parquet file and partitioned folders gives the same forecast. Every bad input
(files that disagree, a broken partitioning, empty or corrupted files, nulls) is an error
naming the file and the column.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import pyprog
from pyprog.logs.columns import log_columns
from pyprog.logs.tables import is_parquet_path, is_table, read_rounds_table, table_columns
from pyprog.logs.times import as_days

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

N = 3000
EPOCH_DAY = 19358  # 2023-01-01


def _year(seed=0, whole_days=False):
    """The forecast_value docstring's year of rounds, with a policy as columns pi_0, pi_1:
    the columns, the times as datetime64[us] dates, and the target (days)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 365, N))
    if whole_days:
        t = np.floor(t)
    x = rng.normal(size=(N, 2))
    a = rng.integers(0, 2, N)
    r = (a == 1) * (1 + np.sin(2 * np.pi * t / 365.25)) + rng.normal(0, 0.3, N)
    dates = np.round((EPOCH_DAY + t) * 86_400e6).astype(np.int64).astype("datetime64[us]")
    p1 = 1 / (1 + np.exp(-x[:, 0]))
    cols = {"time": as_days(dates), "x0": x[:, 0], "x1": x[:, 1], "action": a, "reward": r,
            "pscore": np.full(N, 0.5), "pi_0": 1 - p1, "pi_1": p1}  # fmt: skip
    return cols, dates, float(cols["time"].max()) + 91.3


COLS, DATES, AT = _year()


def _forecast(log, **kw):
    f = pyprog.forecast_value(log, "pi_", at=AT, **kw)
    return f.value, f.low, f.high, f.model


@pytest.fixture(scope="module")
def want():
    return _forecast(COLS)


def _same(got, want):
    assert got[3] == want[3]
    np.testing.assert_allclose(got[:3], want[:3], rtol=1e-9, atol=0)


def _dated(cols=COLS, dates=DATES):
    return {**cols, "time": dates}


def _write_csv(path, cols, iso=False):
    names = list(cols)
    with open(path, "w") as fh:
        fh.write(",".join(names) + "\n")
        for i in range(len(cols["time"])):
            fields = [
                str(np.datetime_as_string(cols[c][i], unit="us")) if iso and c == "time"
                else repr(float(cols[c][i]))
                for c in names
            ]  # fmt: skip
            fh.write(",".join(fields) + "\n")
    return path


def _write_parts(folder, cols, key, values, drop=()):
    """One Parquet file per value of ``key`` under ``folder/key=value/`` (without ``key``'s
    column, as hive writers write them, nor ``drop``'s)."""
    table = pa.table({c: v for c, v in cols.items() if c not in (key, *drop)})
    for value in np.unique(values):
        rows = np.flatnonzero(values == value)
        sub = folder / f"{key}={value}"
        sub.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.take(rows), sub / "part-0.parquet")
    return folder


# -- round trips -------------------------------------------------------------------------------


def test_dates_and_numbers_as_a_dict_agree(want):
    _same(_forecast(_dated()), want)


@pytest.mark.parametrize("iso", [False, True], ids=["days", "dates"])
def test_a_csv_file(tmp_path, want, iso):
    path = _write_csv(tmp_path / "log.csv", _dated() if iso else COLS, iso=iso)
    _same(_forecast(path), want)


def test_pandas():
    pd = pytest.importorskip("pandas")
    want = _forecast(COLS)
    _same(_forecast(pd.DataFrame(_dated())), want)


@pytest.mark.parametrize("tz", [None, "Asia/Tokyo"])
def test_polars(want, tz):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(_dated())
    if tz:  # the same instants, shown in Tokyo: converted back to UTC
        frame = frame.with_columns(pl.col("time").dt.replace_time_zone("UTC"))
        frame = frame.with_columns(pl.col("time").dt.convert_time_zone(tz))
    _same(_forecast(frame), want)
    _same(_forecast(frame.lazy()), want)


@pytest.mark.parametrize("kind", ["table", "batch", "tz", "days"])
def test_pyarrow(want, kind):
    cols = COLS if kind == "days" else _dated()
    table = pa.table(cols)
    if kind == "tz":
        utc = pa.array(DATES).cast(pa.timestamp("us", tz="UTC"))
        table = table.set_column(0, "time", utc.cast(pa.timestamp("us", tz="Asia/Tokyo")))
    log = table.to_batches(max_chunksize=N)[0] if kind == "batch" else table
    _same(_forecast(log), want)


@pytest.mark.parametrize("suffix", [".parquet", ".pq"])
def test_one_parquet_file(tmp_path, want, suffix):
    path = tmp_path / f"log{suffix}"
    pq.write_table(pa.table(_dated()), path, row_group_size=700)  # several row groups
    _same(_forecast(path), want)
    _same(_forecast(str(path)), want)


def test_a_folder_partitioned_by_day_with_the_time_in_the_files(tmp_path, want):
    day = np.datetime_as_string(DATES, unit="D")
    folder = _write_parts(tmp_path / "log", {**_dated(), "day": day}, "day", day)
    assert len(list(folder.iterdir())) > 300
    _same(_forecast(folder), want)


def test_a_folder_partitioned_by_month_in_month_order_and_shuffled_rows(tmp_path, want):
    month = DATES.astype("datetime64[M]").astype(int) % 12 + 1  # 1 .. 12: month=10 < month=2
    shuffled = np.random.default_rng(1).permutation(N)
    cols = {c: v[shuffled] for c, v in _dated().items()}
    folder = _write_parts(tmp_path / "log", {**cols, "month": month[shuffled]}, "month",
                          month[shuffled])  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:  # streamed: the order is no matter
        warnings.simplefilter("always")
        _same(_forecast(folder), want)
    assert not [w for w in caught if "time order" in str(w.message)]
    # in order, the months come in their numbers' order, not their folders' names'
    folder = _write_parts(tmp_path / "sorted", {**_dated(), "month": month}, "month", month)
    log = read_rounds_table(folder)
    np.testing.assert_array_equal(log["month"], month)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _same(_forecast(folder), want)
    assert not [w for w in caught if "time order" in str(w.message)]


def test_the_time_as_the_partition_key(tmp_path):
    cols, dates, _ = _year(seed=2, whole_days=True)
    day = np.datetime_as_string(dates, unit="D")
    want = _forecast(cols)
    folder = _write_parts(tmp_path / "log", {**cols, "date": day}, "date", day, drop=("time",))
    log = read_rounds_table(folder)
    assert "time" not in log and log["date"].dtype == object and log["date"][0] == day[0]
    _same(_forecast(folder, time="date"), want)


def test_a_file_without_rows_adds_none(tmp_path, want):
    cols = _dated()
    folder = tmp_path / "log"
    folder.mkdir()
    pq.write_table(pa.table(cols), folder / "a.parquet")
    empty = pa.table({c: pa.array([], pa.null()) for c in cols})  # typed loosely, as null
    pq.write_table(empty, folder / "b.parquet")
    _same(_forecast(folder), want)
    only = tmp_path / "none.parquet"
    pq.write_table(empty, only)
    assert {c: v.size for c, v in read_rounds_table(only).items()} == dict.fromkeys(cols, 0)


# -- the columns themselves --------------------------------------------------------------------


def test_conversions_of_pyarrow_columns():
    import decimal

    utc = np.array(["2024-01-01T09:00"], dtype="datetime64[us]")
    table = pa.table({
        "text": pa.array(["a"]).dictionary_encode(),
        "tokyo": pa.array(utc).cast(pa.timestamp("us", tz="UTC")).cast(
            pa.timestamp("us", tz="Asia/Tokyo")),
        "day": pa.array(utc.astype("datetime64[D]")),
        "price": pa.array([decimal.Decimal("1.25")]),
        "flag": [True],
        "large": pa.array(["b"], pa.large_string()),
    })  # fmt: skip
    cols = table_columns(table)
    assert cols["text"].dtype == object and cols["text"].tolist() == ["a"]
    assert cols["tokyo"].dtype == np.dtype("datetime64[us]") and cols["tokyo"][0] == utc[0]
    assert cols["day"].dtype == np.dtype("datetime64[D]")
    assert cols["price"].dtype == np.float64 and cols["price"][0] == 1.25
    assert cols["flag"].dtype == bool and cols["large"].tolist() == ["b"]
    cols["flag"][0] = False  # a copy, not the table's read-only memory


def test_conversions_of_polars_columns():
    pl = pytest.importorskip("polars")
    utc = np.array(["2024-01-01T09:00"], dtype="datetime64[us]")
    frame = pl.DataFrame({"cat": pl.Series(["a"]).cast(pl.Categorical), "t": utc})
    frame = frame.with_columns(pl.col("t").dt.replace_time_zone("UTC")
                               .dt.convert_time_zone("America/New_York"))  # fmt: skip
    cols = table_columns(frame)
    assert cols["cat"].dtype == object and cols["cat"].tolist() == ["a"]
    assert cols["t"][0] == utc[0]


def test_a_column_is_converted_when_read_so_an_unused_null_is_no_error(want):
    table = pa.table({**_dated(), "comment": pa.array([None] * N, pa.string())})
    _same(_forecast(table), want)


def test_detection_imports_neither_library():
    code = (
        "import sys\nimport pyprog.logs.columns as c\n"
        "c.log_columns({'time': [1.0]}); c.log_columns('log.csv')\n"
        "print('pyarrow' in sys.modules, 'polars' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    assert not is_table({"a": [1]}) and is_table(pa.table({"a": [1]}))
    assert is_parquet_path("x.PQ") and not is_parquet_path("x.csv") and not is_parquet_path(3)


# -- errors: each names the file (or the log) and the column -----------------------------------


def test_nulls_name_the_column_and_the_first_row(tmp_path):
    reward = COLS["reward"].astype(object)
    reward[[5, 9]] = None
    table = pa.table({**_dated(), "reward": pa.array(list(reward), pa.float64())})
    with pytest.raises(ValueError, match=r"log: column 'reward' holds a null .* at row 5 "):
        _forecast(table)
    pl = pytest.importorskip("polars")
    with pytest.raises(ValueError, match=r"log: column 'reward' holds a null .* at row 5 "):
        _forecast(pl.from_arrow(table))
    path = tmp_path / "log.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=rf"{path}: column 'reward' holds a null .* row 5 "):
        _forecast(path)


def test_a_null_in_one_file_names_that_file_and_its_row(tmp_path):
    folder = tmp_path / "log"
    folder.mkdir()
    pq.write_table(pa.table({"time": [1.0, 2.0], "reward": [0.0, 1.0]}), folder / "a.parquet")
    pq.write_table(pa.table({"time": [3.0, 4.0], "reward": [0.0, None]}), folder / "b.parquet")
    with pytest.raises(ValueError, match=r"b\.parquet: column 'reward' holds a null .* row 1 "):
        read_rounds_table(folder)


def _two_files(folder, first, second, sub=("", "")):
    for name, cols, where in zip(("a", "b"), (first, second), sub, strict=True):
        (folder / where).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(cols), folder / where / f"{name}.parquet")
    return folder


def test_files_of_different_columns_name_both_files_and_the_column(tmp_path):
    a = {"time": [1.0], "reward": [0.0]}
    folder = _two_files(tmp_path / "extra", a, {**a, "x2": [1.0]})
    with pytest.raises(ValueError, match=r"b\.parquet: column 'x2' is not in .*a\.parquet"):
        _forecast(folder)
    folder = _two_files(tmp_path / "lacks", a, {"time": [1.0]})
    with pytest.raises(ValueError, match=r"b\.parquet: no column 'reward', which .*a\.parquet"):
        read_rounds_table(folder)


def test_a_column_of_another_kind_in_one_partition_names_that_file(tmp_path):
    a = {"time": [1.0], "reward": [0.0]}
    folder = _two_files(tmp_path / "log", a, {"time": [2.0], "reward": ["0.5"]},
                        sub=("date=2023-01-01", "date=2023-01-02"))  # fmt: skip
    with pytest.raises(
        ValueError,
        match=r"date=2023-01-02.b\.parquet: column 'reward' holds string \(text\) where "
        r".*date=2023-01-01.a\.parquet holds double \(number\)",
    ):
        _forecast(folder)
    # types of one kind go together: int32 here, double there
    folder = _two_files(tmp_path / "ok", a, {"time": [2.0], "reward": pa.array([1], pa.int32())})
    assert read_rounds_table(folder)["reward"].tolist() == [0.0, 1.0]


def test_a_missing_or_different_partition_key_names_the_file_and_the_key(tmp_path):
    a = {"time": [1.0], "reward": [0.0]}
    folder = _two_files(tmp_path / "missing", a, a, sub=("", "date=2023-01-02"))
    with pytest.raises(
        ValueError,
        match=r"missing.a\.parquet: not under a 'date=\.\.\.' folder, as .*date=2023-01-02.b"
        r"\.parquet is: .* \(partition column 'date'\)",
    ):
        _forecast(folder)
    folder = _two_files(tmp_path / "other", a, a, sub=("date=2023-01-01", "day=2023-01-02"))
    with pytest.raises(ValueError, match=r"b\.parquet: not under a 'date=\.\.\.' folder, as "
                       r".*a\.parquet is.*'date'"):  # fmt: skip
        read_rounds_table(folder)


def test_a_null_partition_or_a_key_that_is_also_a_column(tmp_path):
    a = {"time": [1.0], "reward": [0.0]}
    folder = _two_files(tmp_path / "null", a, a,
                        sub=("date=2023-01-01", "date=__HIVE_DEFAULT_PARTITION__"))  # fmt: skip
    with pytest.raises(ValueError, match=r"b\.parquet: partition column 'date' is null"):
        read_rounds_table(folder)
    both = {**a, "date": ["2023-01-01"]}
    folder = _two_files(tmp_path / "both", both, both, sub=("date=2023-01-01", "date=2023-01-02"))
    with pytest.raises(ValueError, match=r"a\.parquet: column 'date' is both in the file and"):
        read_rounds_table(folder)


def test_an_empty_file_is_named(tmp_path):
    folder = _two_files(tmp_path / "log", {"time": [1.0]}, {"time": [2.0]})
    (folder / "c.parquet").write_bytes(b"")
    with pytest.raises(ValueError, match=r"c\.parquet: an empty file \(0 bytes\) is not a"):
        _forecast(folder)


@pytest.mark.parametrize("damage", ["junk", "truncated", "data"])
def test_a_corrupted_file_is_named(tmp_path, damage):
    folder = _two_files(tmp_path / "log", {"time": [1.0]}, {"time": np.arange(20000.0)})
    path = folder / "b.parquet"
    data = bytearray(path.read_bytes())
    if damage == "junk":
        data = bytearray(b"not a parquet file" * 20)
    elif damage == "truncated":
        data = data[: len(data) // 2]
    else:  # the footer intact, the data pages overwritten
        data[100:4000] = np.random.default_rng(0).bytes(3900)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"b\.parquet: not a Parquet file, or a corrupted one"):
        read_rounds_table(folder)


def test_paths_that_hold_no_parquet(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.parquet: no such file or folder"):
        _forecast(tmp_path / "nope.parquet")
    (tmp_path / "empty" / "_meta").mkdir(parents=True)
    (tmp_path / "empty" / "_SUCCESS").write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty: a folder with no Parquet files"):
        _forecast(tmp_path / "empty")
    with pytest.raises(ValueError, match=r"log\.csv: not a Parquet file"):
        read_rounds_table(tmp_path / "log.csv")
    pq.write_table(pa.table({"time": [1.0]}), tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"a\.parquet: no column 'reward' \(columns: 'time'\)"):
        read_rounds_table(tmp_path / "a.parquet", columns=["time", "reward"])


def test_duplicate_column_names_and_what_a_log_may_be():
    table = pa.Table.from_arrays([pa.array([1.0]), pa.array([2.0])], names=["r", "r"])
    with pytest.raises(ValueError, match=r"log: two columns are named 'r'"):
        log_columns(table)
    with pytest.raises(ValueError, match=r"log must be a CSV path, a Parquet path .* Polars "
                       r"DataFrame, a pyarrow Table or RecordBatch, or a dict"):  # fmt: skip
        _forecast([1, 2, 3])


def test_without_pyarrow_parquet_says_how_to_install(tmp_path, monkeypatch):
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"time": [1.0]}), path)
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.dataset"):
        monkeypatch.setitem(sys.modules, name, None)  # `import pyarrow` raises ImportError
    with pytest.raises(ImportError, match=r'pip install "pyprog\[parquet\]"'):
        _forecast(path)
