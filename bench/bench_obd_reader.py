"""``read_obd_csv`` on a 50 MB Open-Bandit-Dataset-shaped file: time and memory (issue 48, item 12).

Run: ``OMP_NUM_THREADS=1 taskset -c 1 pytest bench/bench_obd_reader.py
--benchmark-columns=median,min,rounds``.

The file (:mod:`obd_csv`, written once into a temporary folder, never committed) has the
real files' columns, about 520 bytes a row: 105,000 rows, 50.7 MiB. Memory is the peak
RSS of a fresh process above its RSS just before the call (Linux's VmHWM, reset through
``/proc/self/clear_refs``), with a constant ``evaluation_pscore`` (the five columns used)
and with a callable (which gets every column, as str); ``extra_info`` holds it, its ratio
to the file's size and the peak that tracemalloc traces in the benchmark's process.

Measured on the 2-core development machine (Python 3.11, NumPy 2.4), before the streaming
reader (the whole file as lists of str, then str arrays of every column): 848 MiB either
way, 16.7x the file, 7.5 s. After: 24 MiB (0.47x) and 0.9 s with a constant, 224 MiB
(4.4x) and 2.4 s with a callable given all 90 columns (medians of 3 rounds, the
machine shared: 0.9-1.2 s and 2.4-3.1 s). The peak is about 180 bytes a row (the typed
columns, then the sorted arrays the Logs are built from), whatever the row's width: the
largest file, bts/all's 12 million rows, about 2 GB, the full dataset's 26 million about
5 GB, against 23 GB on this machine (before: about 9 KB a row, 110 GB and 240 GB).
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from bench_long_logs import peak_mib
from obd_csv import write_obd_csv

from pyprog.logs.readers import read_obd_csv

MIB = 50

PEAK = textwrap.dedent(
    """
    import re, sys
    import numpy as np
    from pyprog.logs.readers import read_obd_csv

    def status(key):
        text = open("/proc/self/status").read()
        return int(re.search(key + r":\\s+(\\d+) kB", text).group(1)) / 1024

    pi = (lambda c: np.full(len(c["item_id"]), 1 / 80)) if sys.argv[2] == "callable" else 1 / 80
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the high-water mark (VmHWM) to the current RSS
    base = status("VmRSS")
    read_obd_csv(sys.argv[1], evaluation_pscore=pi, position="all")
    print(status("VmHWM") - base)
    """
)


@pytest.fixture(scope="module")
def obd_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("obd") / "all.csv"
    write_obd_csv(path, MIB)
    return path


def peak_rss_mib(path, kind: str) -> float:
    """A fresh process reading ``path``: its peak RSS above the RSS before the call (Linux's
    VmHWM, reset first), MiB."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK, str(path), kind], capture_output=True, text=True, check=True
    )
    return float(out.stdout)


@pytest.mark.parametrize("kind", ["constant", "callable"])
def bench_read_obd_csv(benchmark, obd_file, kind):
    size = os.path.getsize(obd_file) / 2**20
    peak = peak_rss_mib(obd_file, kind)
    benchmark.group = f"read_obd_csv, {size:.0f} MiB OBD-shaped file"
    benchmark.extra_info.update(
        evaluation_pscore=kind,
        file_mib=round(size, 1),
        peak_rss_mib=round(peak, 1),
        ratio_to_file=round(peak / size, 2),
        before_peak_rss_mib=848,
        before_ratio_to_file=16.7,
    )
    pi = (lambda c: np.full(len(c["item_id"]), 1 / 80)) if kind == "callable" else 1 / 80
    traced = peak_mib(read_obd_csv, obd_file, evaluation_pscore=pi, position="all")
    benchmark.extra_info.update(peak_traced_mib=round(traced, 1))
    logs = benchmark.pedantic(
        read_obd_csv,
        args=(obd_file,),
        kwargs=dict(evaluation_pscore=pi, position="all"),
        rounds=3,
        iterations=1,
    )
    assert logs.episodes > 100_000
    assert peak / size < (1.0 if kind == "constant" else 6.0)
