"""`make bench`: decode and audit throughput, as ratios against a raw scan in the same run.

    python bench/run_bench.py --records 5000000 [--sizes 1000000,5000000,20000000]

Numbers are wall-clock seconds on this machine; only the ratios travel between machines.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import time
from pathlib import Path

import pyarrow.parquet as pq

from offset_audit.audit import run_audit
from offset_audit.config import load_settings
from offset_audit.generator import generate_dump
from offset_audit.pipeline import run_decode
from offset_audit.session import get_spark

DATA = Path("bench-data")


def cached(name: str, make) -> Path:
    """bench-data/<name>, made once by make(path): later runs measure the same bytes."""
    path = DATA / name
    marker = path / ".complete"
    if not marker.exists():
        shutil.rmtree(path, ignore_errors=True)
        started = time.perf_counter()
        make(path)
        marker.write_text("ok")
        print(f"made {path} in {time.perf_counter() - started:.1f}s")
    return path


def dump_for(records: int, seed: int) -> Path:
    return cached(f"dump-{records}-{seed}", lambda path: generate_dump(str(path), records, seed=seed, corrupt=20))


def raw_scan(spark, path: Path) -> float:
    """What reading the bytes costs: Spark sums key and value lengths over the same Parquet."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(path))
    started = time.perf_counter()
    frame.select(F.sum(F.length("key") + F.coalesce(F.length("value"), F.lit(0)))).collect()
    return time.perf_counter() - started


def segments_for(records: int, seed: int) -> Path:
    """The same dump as a broker data directory: one record per batch, as the coordinator writes."""
    from offset_audit.generator import snapshot_to_segments

    snapshot = dump_for(records, seed)
    return cached(f"segments-{records}-{seed}", lambda path: snapshot_to_segments(str(snapshot), str(path)))


def plain_read(spark, files: list[str]) -> float:
    """Reading the segment bytes in the same Python workers, one task per file, and nothing else."""

    def size(path: str) -> int:
        total = 0
        with open(path, "rb") as handle:
            while chunk := handle.read(8 << 20):
                total += len(chunk)
        return total

    started = time.perf_counter()
    spark.sparkContext.parallelize(files, len(files)).map(size).sum()
    return time.perf_counter() - started


def bench_segments(spark, records: int, seed: int) -> dict:
    path = segments_for(records, seed)
    files = sorted(str(f) for f in path.rglob("*.log"))
    megabytes = sum(Path(f).stat().st_size for f in files) / 2**20
    plain_read(spark, files)  # warm
    read_s = min(plain_read(spark, files) for _ in range(3))
    output = DATA / f"out-segments-{records}"
    shutil.rmtree(output, ignore_errors=True)
    decode_s = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        report = run_decode(spark, [str(path)], str(output), load_settings())
        decode_s = min(decode_s, time.perf_counter() - started)
    return {
        "segment_files": len(files),
        "segment_mb": round(megabytes, 1),
        "segments_plain_read_s": round(read_s, 2),
        "segments_decode_s": round(decode_s, 2),
        "segments_decode_vs_read": round(decode_s / read_s, 2),
        "segments_records_per_s": round(report.records_read / decode_s),
        "segments_mb_per_s": round(megabytes / decode_s, 1),
    }


def bench_share(spark, records: int, seed: int) -> dict:
    """`share` on a generated __share_group_state dump (the share groups of a 300k-record cluster)."""
    from offset_audit.generator import generate_share_state
    from offset_audit.share.run import run_share

    path = cached(
        f"share-state-{records}-{seed}",
        lambda path: generate_share_state(str(path), records, seed=seed, world_records=300_000),
    )
    raw_scan(spark, path)
    scan = min(raw_scan(spark, path) for _ in range(3))
    output = DATA / f"share-out-{records}"
    best = float("inf")
    for _ in range(3):  # the first run warms the Python workers
        shutil.rmtree(output, ignore_errors=True)
        started = time.perf_counter()
        result = run_share(spark, [str(path)], str(output), load_settings())
        best = min(best, time.perf_counter() - started)
    return {
        "share_state_records": records,
        "share_partitions": len(result.partitions),
        "share_raw_scan_s": round(scan, 2),
        "share_s": round(best, 2),
        "share_vs_scan": round(best / scan, 2),
    }


def plain_python_decode(path: Path) -> tuple[float, int]:
    """The baseline a script would be: one process, struct.unpack record by record (offset commits
    fully, other records only classified)."""
    unpack_h = struct.Struct(">h").unpack_from
    unpack_i = struct.Struct(">i").unpack_from
    unpack_q = struct.Struct(">q").unpack_from
    decoded = 0
    started = time.perf_counter()
    for batch in pq.ParquetFile(next(iter([path]))).iter_batches() if path.is_file() else _batches(path):
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        for key, value in zip(keys, values, strict=True):
            try:
                kind = unpack_h(key, 0)[0]
                if kind not in (0, 1):
                    continue
                n = unpack_h(key, 2)[0]
                group = key[4 : 4 + n].decode()
                m = unpack_h(key, 4 + n)[0]
                topic = key[6 + n : 6 + n + m].decode()
                partition = unpack_i(key, 6 + n + m)[0]
                if value is None:
                    decoded += 1
                    continue
                version = unpack_h(value, 0)[0]
                offset = unpack_q(value, 2)[0]
                pos = 10
                if version >= 3:
                    pos += 4
                if version == 4:
                    length = value[pos] - 1
                    pos += 1
                else:
                    length = unpack_h(value, pos)[0]
                    pos += 2
                metadata = value[pos : pos + length].decode()
                commit = unpack_q(value, pos + length)[0]
                del group, topic, partition, offset, metadata, commit
                decoded += 1
            except (struct.error, IndexError, UnicodeDecodeError):
                continue
    return time.perf_counter() - started, decoded


def _batches(path: Path):
    for file in sorted(path.glob("*.parquet")):
        yield from pq.ParquetFile(file).iter_batches(batch_size=65536)


def driver_peak_memory(spark) -> dict:
    """Peak resident memory of the driver: this Python process and the Spark JVM it started."""
    import resource

    python_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    jvm_mb = None
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                jvm_mb = int(line.split()[1]) / 1024
    except Exception:
        pass
    return {"driver_python_peak_mb": round(python_mb), "driver_jvm_peak_mb": round(jvm_mb) if jvm_mb else None}


def bench_size(spark, records: int, seed: int, with_python: bool) -> dict:
    path = dump_for(records, seed)
    raw_scan(spark, path)  # warm the JVM and the file cache
    scan = min(raw_scan(spark, path) for _ in range(3))
    output = DATA / f"out-{records}"
    shutil.rmtree(output, ignore_errors=True)
    run_decode(spark, [str(path)], str(output), load_settings())  # warm the Python workers too
    decode_s = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        report = run_decode(spark, [str(path)], str(output), load_settings())
        decode_s = min(decode_s, time.perf_counter() - started)
    result = {
        "records": records,
        "raw_scan_s": round(scan, 2),
        "decode_to_delta_s": round(decode_s, 2),
        "decode_vs_scan": round(decode_s / scan, 2),
        "decoded": report.records_decoded,
        "quarantined": report.quarantined,
    }
    run_audit(spark, [str(path)], str(DATA / f"audit-{records}"), load_settings())  # warm
    audit_s = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        run_audit(spark, [str(path)], str(DATA / f"audit-{records}"), load_settings())
        audit_s = min(audit_s, time.perf_counter() - started)
    result["audit_s"] = round(audit_s, 2)
    result["audit_vs_scan"] = round(audit_s / scan, 2)
    result.update(driver_peak_memory(spark))
    if with_python:
        python_s, _ = plain_python_decode(path)
        result["plain_python_s"] = round(python_s, 2)
        result["plain_python_vs_decode"] = round(python_s / decode_s, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--sizes", default="", help="comma-separated record counts for the growth table")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-python-baseline", action="store_true")
    parser.add_argument("--no-segments", action="store_true", help="skip the log-segment throughput")
    parser.add_argument("--share-records", type=int, default=1_000_000, help="__share_group_state records (0: skip)")
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    spark = get_spark()
    sizes = [int(s) for s in args.sizes.split(",") if s] or [args.records]
    results = []
    for records in sizes:
        result = bench_size(
            spark, records, args.seed, with_python=not args.no_python_baseline and records == args.records
        )
        results.append(result)
        print(json.dumps(result))
    print()
    print(
        f"{'records':>12} {'raw scan s':>11} {'decode s':>9} {'decode/scan':>12} {'audit s':>8} {'audit/scan':>11}"
        f" {'python s':>9} {'python/decode':>14} {'driver peak MB (py/jvm)':>24}"
    )
    for r in results:
        print(
            f"{r['records']:>12,} {r['raw_scan_s']:>11} {r['decode_to_delta_s']:>9} {r['decode_vs_scan']:>12}"
            f" {r['audit_s']:>8} {r['audit_vs_scan']:>11} {r.get('plain_python_s', '-'):>9}"
            f" {r.get('plain_python_vs_decode', '-'):>14} {r['driver_python_peak_mb']:>13}/{r['driver_jvm_peak_mb']}"
        )
    if not args.no_segments:
        segments = bench_segments(spark, args.records, args.seed)
        results.append(segments)
        print()
        print(
            f"log segments of the {args.records:,}-record dump: {segments['segment_files']} files, "
            f"{segments['segment_mb']} MiB; plain read {segments['segments_plain_read_s']} s, decode to Delta "
            f"{segments['segments_decode_s']} s ({segments['segments_decode_vs_read']}x), "
            f"{segments['segments_records_per_s']:,} records/s, {segments['segments_mb_per_s']} MiB/s"
        )
    if args.share_records:
        share = bench_share(spark, args.share_records, args.seed)
        results.append(share)
        print(
            f"share: {share['share_state_records']:,} __share_group_state records, {share['share_partitions']:,} "
            f"share-partitions; raw scan {share['share_raw_scan_s']} s, share {share['share_s']} s "
            f"({share['share_vs_scan']}x)"
        )
    (DATA / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
