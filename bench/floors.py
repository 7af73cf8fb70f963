"""What the engines themselves take for the least an audit must do, beside Spark's raw scan of the same dump:

    .venv/bin/python bench/floors.py [--records 20000000]

- Spark's raw scan (the sum of key and value lengths, as `make bench`'s ratios use it);
- Spark's own hash aggregation of the last offset of each (partition, key): every record's key read and
  the last record of each found, which an audit cannot do without;
- Spark's count of the distinct keys alone;
- Spark writing the same records back as Parquet (snappy, as the decode tables are): what `decode`,
  which writes every record decoded, cannot do without;
- pyarrow reading the key and value columns in two threads (what the Python decoders receive).

One warm session, best of three after a warm-up run, on make bench's generated Parquet dump.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq
from pyspark.sql import functions as F
from run_bench import dump_for  # bench/ is on the path of a script run from it


def best(run: Callable[[], object], repeats: int = 3) -> float:
    run()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return min(seconds)


def main() -> None:
    from offset_audit.runtime.session import get_spark

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000_000)
    args = parser.parse_args()
    dump = dump_for(args.records, seed=1).resolve()
    spark = get_spark({"spark.sql.shuffle.partitions": "4"})
    frame = spark.read.parquet(str(dump))
    lengths = F.sum(F.length("key") + F.coalesce(F.length("value"), F.lit(0)))
    scan = best(lambda: frame.select(lengths).collect())
    last_offsets = frame.groupBy("partition", "key").agg(F.max("offset").alias("o"))
    last = best(lambda: last_offsets.agg(F.count("*"), F.sum("o")).collect())
    distinct = best(lambda: frame.groupBy("key").count().agg(F.count("*")).collect())
    copy = tempfile.mkdtemp(prefix="floors-")
    try:
        written = best(lambda: frame.write.mode("overwrite").option("compression", "snappy").parquet(copy))
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    files = sorted(str(p) for p in dump.glob("*.parquet"))

    def read(file: str) -> int:
        return sum(b.num_rows for b in pq.ParquetFile(file).iter_batches(batch_size=100_000, columns=["key", "value"]))

    def arrow() -> int:
        with ThreadPoolExecutor(2) as pool:
            return sum(pool.map(read, files))

    read_s = best(arrow, 2)
    print(f"| what | seconds | raw scans |\n|---|---|---|\n| Spark's raw scan | {scan:.2f} | 1.0 |")
    for name, seconds in (
        ("Spark: the last offset of each (partition, key)", last),
        ("Spark: the distinct keys", distinct),
        ("Spark: the records written back as Parquet", written),
        ("pyarrow: key and value read, 2 threads", read_s),
    ):
        print(f"| {name} | {seconds:.2f} | {seconds / scan:.1f} |")
    spark.stop()


if __name__ == "__main__":
    main()
