"""How long ``forecast_value`` takes, and how much memory, on a large log (issue 51).

``python bench/scale_rounds.py FOLDER [--in-memory | --dask WORKERS] [--chunk-rows R]``
forecasts π_e's value (the ``pi_`` columns) 30 days after the log of a folder written by
``bench/make_rounds_parquet.py``, with the defaults, and prints the wall time of the call,
the process's peak resident memory and the forecast:

* streamed (default): the folder read in batches (``pyprog.logs.streams.ParquetSource``);
* ``--in-memory``: the folder read whole first (``read_rounds_table``, not timed), then the
  dict of arrays forecast;
* ``--dask W``: a ``dask.distributed.LocalCluster`` of W single-threaded worker processes,
  the folder as a Dask DataFrame (``dask.dataframe.read_parquet``, one partition a file);
  the memory printed is this process's, the workers' peak is the cluster's to read.

Numbers go in the README with the machine they came from (``pyprog info``).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB on Linux


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    way = parser.add_mutually_exclusive_group()
    way.add_argument("--in-memory", action="store_true")
    way.add_argument("--dask", type=int, default=0, metavar="WORKERS")
    parser.add_argument("--chunk-rows", type=int, default=None)
    args = parser.parse_args(argv)

    import pyprog
    import pyprog.logs.chunks as chunks
    from pyprog.logs.tables import read_rounds_table

    if args.chunk_rows:
        chunks.CHUNK_ROWS = args.chunk_rows
    log, cluster = args.folder, None
    if args.in_memory:
        log = read_rounds_table(args.folder)
        log.pop("date", None)
    elif args.dask:
        import dask.dataframe as dd
        import distributed

        cluster = distributed.LocalCluster(n_workers=args.dask, threads_per_worker=1,
                                           dashboard_address=None)  # fmt: skip
        client = distributed.Client(cluster)
        log = dd.read_parquet(args.folder, columns=None).drop(columns=["date"])
    last = np.datetime64("2023-01-01") + np.timedelta64(365 + 30, "D")
    start = time.perf_counter()
    f = pyprog.forecast_value(log, "pi_", at=str(last))
    seconds = time.perf_counter() - start
    way = "in memory" if args.in_memory else f"dask x{args.dask}" if args.dask else "streamed"
    print(f"{f.n_rounds} rounds, {way}: {seconds:.1f} s, peak RSS {peak_rss_gb():.2f} GB")
    print(f)
    print("support:", f.support)
    if cluster is not None:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
