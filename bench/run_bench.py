"""`make bench`: every input path's throughput as a ratio against `decode` of the same records as
Parquet, in one run, at each size (1M and 5M records by default), with driver and worker peak memory.

    python bench/run_bench.py [--sizes 1000000,5000000] [--codecs none,zstd] [--no-python-baseline] [--no-share]
                              [--wide-sizes 20000000]

`--wide-sizes` adds dumps of a cluster whose topics are 30 times as wide (generate --topic-scale 30):
the same records, many times the live offsets (about 3M at 20M records), the shape that costs the audit
most per record.

Numbers are wall-clock seconds on this machine, warm (best of two after a warm-up run, in one
process); only the ratios travel between machines. Whole-process runs add Spark's start, about 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq

from offset_audit.generator.demo_dump import generate_dump
from offset_audit.runs.audit import run_audit
from offset_audit.runs.decode import run_decode
from offset_audit.runtime.config import load_settings
from offset_audit.runtime.session import get_spark

# The repository's bench-data, wherever the script is run from (fixed_cost.py shares its dumps).
DATA = Path(__file__).resolve().parent.parent / "bench-data"


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


# The many-live-offsets dump: every topic 30 times as wide, about 3M live offsets at 20M records.
WIDE_SCALE = 30


def dump_for(records: int, seed: int, topic_scale: int = 1) -> Path:
    name = f"dump-{records}-{seed}" + ("" if topic_scale == 1 else f"-wide{topic_scale}")
    return cached(name, lambda path: generate_dump(str(path), records, seed=seed, corrupt=20, topic_scale=topic_scale))


def raw_scan(spark, path: Path) -> float:
    """What reading the bytes costs: Spark sums key and value lengths over the same Parquet."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(path))
    started = time.perf_counter()
    frame.select(F.sum(F.length("key") + F.coalesce(F.length("value"), F.lit(0)))).collect()
    return time.perf_counter() - started


def segments_for(records: int, seed: int, compression: str = "none") -> Path:
    """The same dump as a broker data directory: one record per batch, as the coordinator writes (each
    batch compressed on its own with `compression`, as a coordinator with compression.type does)."""
    from offset_audit.generator.writers import snapshot_to_segments

    snapshot = dump_for(records, seed)
    name = f"segments-{records}-{seed}" + ("" if compression == "none" else f"-{compression}")
    return cached(name, lambda path: snapshot_to_segments(str(snapshot), str(path), 1, compression))


def copies_for(records: int, seed: int, copies: int = 3) -> Path:
    """The uncompressed data directory as `copies` brokers' folders (hard links: the same bytes), as an
    operator copies every replica: each partition's copies are merged in its task (inputs/copies)."""
    import os

    single = segments_for(records, seed)

    def make(path: Path) -> None:
        for broker in range(1, copies + 1):
            shutil.copytree(single, path / f"broker{broker}", copy_function=os.link)

    return cached(f"segments-{records}-{seed}-x{copies}", make)


def zero_padded_for(records: int, seed: int, gib: int = 1) -> Path:
    """The uncompressed data directory with `gib` GiB of zeros after the last batch of one segment, as a
    broker with file.preallocate=true leaves its active segment (a sparse file: no disk is spent on it)."""
    single = segments_for(records, seed)

    def make(path: Path) -> None:
        shutil.copytree(single, path, copy_function=os.link)
        last = sorted(path.rglob("*.log"))[-1]
        padded = last.with_name(last.name + ".tmp")
        shutil.copyfile(last, padded)  # a copy, not the link: the original stays as it is
        os.truncate(padded, padded.stat().st_size + gib * 2**30)
        os.replace(padded, last)

    return cached(f"segments-{records}-{seed}-zeros{gib}g", make)


def bench_zero_padding(spark, records: int, seed: int, single_s: float) -> dict:
    """What 1 GiB of preallocated zeros adds to decoding the same segments: one quarantine row, crossed
    at memory speed."""
    seconds, report, worker_mb = timed_decode(spark, zero_padded_for(records, seed), f"out-zeros-{records}")
    return {
        "records": records,
        "zero_gib": 1,
        "decode_s": round(seconds, 2),
        "extra_s": round(seconds - single_s, 2),
        "quarantined": report.quarantined,
        "worker_peak_mb": worker_mb,
    }


def bench_copies(spark, records: int, seed: int, parquet_decode_s: float, single_s: float) -> dict:
    seconds, report, worker_mb = timed_decode(spark, copies_for(records, seed), f"out-copies-{records}")
    return {
        "records": records,
        "copies": 3,
        "records_read": report.records_read,
        "duplicates": report.skipped_by_reason.get("duplicate copy", 0),
        "decode_s": round(seconds, 2),
        "vs_parquet_decode": round(seconds / parquet_decode_s, 2),
        "vs_one_copy_x3": round(seconds / (3 * single_s), 2),
        "worker_peak_mb": worker_mb,
    }


class WorkerMemory:
    """The peak resident memory of Spark's Python workers (the processes pyspark.daemon forks), sampled
    every 50 ms from /proc while a stage runs: their VmHWM covers their whole life, not one stage."""

    def __init__(self) -> None:
        self.peak_mib = 0
        self._stop = threading.Event()

    @staticmethod
    def _workers() -> list[int]:
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if b"pyspark.daemon" in (entry / "cmdline").read_bytes():
                        pids.append(int(entry.name))
                except OSError:
                    pass
        return pids

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            for pid in self._workers():
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            self.peak_mib = max(self.peak_mib, int(line.split()[1]) // 1024)
                except OSError:
                    pass

    @contextmanager
    def measuring(self):
        thread = threading.Thread(target=self._sample, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


def timed(run, repeats: int = 2) -> tuple[float, object, int]:
    """Best wall-clock seconds of `repeats` runs after a warm-up run, the last result, and the workers'
    peak memory (MiB) over the measured runs."""
    run()
    best, result = float("inf"), None
    with WorkerMemory().measuring() as memory:
        for _ in range(repeats):
            started = time.perf_counter()
            result = run()
            best = min(best, time.perf_counter() - started)
    return best, result, memory.peak_mib


def timed_decode(spark, path: Path, output_name: str) -> tuple[float, object, int]:
    """`timed` decode of a dump folder into a fresh bench-data/<output_name>."""
    output = DATA / output_name
    shutil.rmtree(output, ignore_errors=True)
    return timed(lambda: run_decode(spark, [str(path)], str(output), load_settings()))


def bench_segments(spark, records: int, seed: int, compression: str, parquet_decode_s: float) -> dict:
    path = segments_for(records, seed, compression)
    megabytes = sum(f.stat().st_size for f in path.rglob("*.log")) / 2**20
    seconds, report, worker_mb = timed_decode(spark, path, f"out-segments-{records}-{compression}")
    return {
        "records": records,
        "compression": compression,
        "segment_mb": round(megabytes, 1),
        "decode_s": round(seconds, 2),
        "vs_parquet_decode": round(seconds / parquet_decode_s, 2),
        "records_per_s": round(report.records_read / seconds),
        "worker_peak_mb": worker_mb,
    }


def bench_share(spark, records: int, seed: int, parquet_decode_s: float) -> dict:
    """`share` on a generated __share_group_state dump (the share groups of a 300k-record cluster) of
    `records` records, against `decode` of a Parquet __consumer_offsets dump of as many records."""
    from offset_audit.generator.share_world import generate_share_state
    from offset_audit.runs.share import run_share

    path = cached(
        f"share-state-{records}-{seed}",
        lambda path: generate_share_state(str(path), records, seed=seed, world_records=300_000),
    )
    output = DATA / f"share-out-{records}"

    def run():
        shutil.rmtree(output, ignore_errors=True)
        return run_share(spark, [str(path)], str(output), load_settings())

    seconds, result, worker_mb = timed(run)
    return {
        "records": records,
        "share_partitions": len(result.partitions),
        "share_s": round(seconds, 2),
        "vs_parquet_decode": round(seconds / parquet_decode_s, 2),
        "worker_peak_mb": worker_mb,
    }


# Reads one segment file in a fresh process, from after the reader is loaded, so that the growth is what
# the file costs (VmHWM reset through /proc/self/clear_refs).
_MEMORY_PROBE = """
import json, re, sys
from offset_audit.inputs.segments.reader import read_segment
def status(field):
    return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
fast = sys.argv[2] == "fast"
for _ in read_segment(sys.argv[3], fast=fast):
    pass
open("/proc/self/clear_refs", "w").write("5")
baseline = status("VmRSS")
rows = sum(batch.num_rows for batch in read_segment(sys.argv[1], fast=fast))
print(json.dumps({"rows": rows, "growth_mib": status("VmHWM") - baseline}))
"""


def bench_segment_memory(seed: int) -> dict:
    """What reading one segment file costs in memory, for a 60 MiB and a 600 MiB file: the 5M dump's
    partitions laid end to end in one file, cut to size at a batch boundary."""
    from offset_audit.inputs.segments.framing import iter_frames

    source = sorted(segments_for(5_000_000, seed).rglob("*.log"))
    result = {}
    for mib in (60, 600):
        folder = DATA / f"segment-memory-{mib}" / "__consumer_offsets-0"
        path = folder / "00000000000000000000.log"
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as out:
                for file in source:
                    with open(file, "rb") as handle:
                        for frame in iter_frames(handle, file.stat().st_size, str(file)):
                            if out.tell() + len(frame.data) > mib << 20:
                                break
                            out.write(frame.data)
                    if out.tell() + 4096 > mib << 20:
                        break
        warm = source[0]
        for path_name in ("fast", "python"):
            done = subprocess.run(
                [sys.executable, "-c", _MEMORY_PROBE, str(path), path_name, str(warm)],
                capture_output=True,
                text=True,
                check=True,
            )
            probe = json.loads(done.stdout)
            result[f"{path_name}_{mib}mib_growth_mb"] = probe["growth_mib"]
            result[f"{path_name}_{mib}mib_rows"] = probe["rows"]
    return result


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


def bench_size(spark, records: int, seed: int, with_python: bool, topic_scale: int = 1) -> dict:
    path = dump_for(records, seed, topic_scale)
    raw_scan(spark, path)  # warm the JVM and the file cache
    scan = min(raw_scan(spark, path) for _ in range(3))
    name = f"{records}" + ("" if topic_scale == 1 else f"-wide{topic_scale}")
    output = DATA / f"out-{name}"
    shutil.rmtree(output, ignore_errors=True)
    decode_s, report, decode_worker_mb = timed(lambda: run_decode(spark, [str(path)], str(output), load_settings()))
    audit_s, audited, audit_worker_mb = timed(
        lambda: run_audit(spark, [str(path)], str(DATA / f"audit-{name}"), load_settings())
    )
    result = {
        "records": records,
        "topic_scale": topic_scale,
        "live_offsets": audited.offsets,
        "raw_scan_s": round(scan, 2),
        "decode_s": round(decode_s, 2),
        "decode_vs_scan": round(decode_s / scan, 2),
        "decoded": report.records_decoded,
        "quarantined": report.quarantined,
        "audit_s": round(audit_s, 2),
        "audit_vs_decode": round(audit_s / decode_s, 2),
        "audit_vs_scan": round(audit_s / scan, 2),
        "worker_peak_mb": max(decode_worker_mb, audit_worker_mb),
    }
    if with_python:
        python_s, _ = plain_python_decode(path)
        result["plain_python_s"] = round(python_s, 2)
        result["plain_python_vs_decode"] = round(python_s / decode_s, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000000,5000000", help="comma-separated record counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-python-baseline", action="store_true")
    parser.add_argument("--no-segments", action="store_true", help="skip the log segments")
    parser.add_argument("--no-share", action="store_true", help="skip __share_group_state")
    parser.add_argument("--no-copies", action="store_true", help="skip the segments copied from 3 brokers")
    parser.add_argument("--no-zeros", action="store_true", help="skip the segments with a 1 GiB zero tail")
    parser.add_argument(
        "--codecs",
        default="none,zstd",
        help="compressions of the segment runs (of none, gzip, snappy, lz4, zstd): the two a coordinator "
        "writes most by default; the others are read by the Python reader and take several times longer",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the 60 and 600 MiB segment files")
    parser.add_argument(
        "--wide-sizes",
        default="",
        help=f"comma-separated record counts of dumps whose topics are {WIDE_SCALE} times as wide (generate "
        "--topic-scale): many live offsets per record, raw scan, decode and audit only",
    )
    args = parser.parse_args()
    unknown = set(args.codecs.split(",")) - {"none", "gzip", "snappy", "lz4", "zstd"}
    if unknown:
        parser.error(f"--codecs: unknown compression {', '.join(sorted(unknown))}")
    DATA.mkdir(exist_ok=True)
    spark = get_spark()
    rows: list[tuple] = []
    results: list[dict] = []
    for records in [int(s) for s in args.sizes.split(",") if s]:
        parquet = bench_size(spark, records, args.seed, with_python=not args.no_python_baseline)
        results.append({"path": "parquet", **parquet})
        print(json.dumps(results[-1]), flush=True)
        base = parquet["decode_s"]
        rows.append((records, "raw scan (Parquet)", parquet["raw_scan_s"], round(parquet["raw_scan_s"] / base, 2), "-"))
        rows.append((records, "decode (Parquet)", base, 1.0, parquet["worker_peak_mb"]))
        rows.append((records, "audit (Parquet)", parquet["audit_s"], parquet["audit_vs_decode"], "-"))
        if "plain_python_s" in parquet:
            rows.append(
                (records, "plain Python script", parquet["plain_python_s"], parquet["plain_python_vs_decode"], "-")
            )
        if not args.no_segments:
            for compression in args.codecs.split(","):
                segments = bench_segments(spark, records, args.seed, compression, base)
                results.append({"path": "segments", **segments})
                print(json.dumps(results[-1]), flush=True)
                label = "uncompressed" if compression == "none" else compression
                rows.append(
                    (
                        records,
                        f"decode (segments, {label})",
                        segments["decode_s"],
                        segments["vs_parquet_decode"],
                        segments["worker_peak_mb"],
                    )
                )
                if compression == "none" and not args.no_zeros:
                    zeros = bench_zero_padding(spark, records, args.seed, segments["decode_s"])
                    results.append({"path": "segment-zero-tail", **zeros})
                    print(json.dumps(results[-1]), flush=True)
                    rows.append(
                        (records, "decode (segments, 1 GiB zero tail)", zeros["decode_s"],
                         round(zeros["decode_s"] / base, 2), zeros["worker_peak_mb"])
                    )  # fmt: skip
                if compression == "none" and not args.no_copies:
                    copies = bench_copies(spark, records, args.seed, base, segments["decode_s"])
                    results.append({"path": "segment-copies", **copies})
                    print(json.dumps(results[-1]), flush=True)
                    rows.append(
                        (records, "decode (segments, 3 broker copies)", copies["decode_s"],
                         copies["vs_parquet_decode"], copies["worker_peak_mb"])
                    )  # fmt: skip
        if not args.no_share:
            share = bench_share(spark, records, args.seed, base)
            results.append({"path": "share", **share})
            print(json.dumps(results[-1]), flush=True)
            rows.append(
                (
                    records,
                    "share (__share_group_state)",
                    share["share_s"],
                    share["vs_parquet_decode"],
                    share["worker_peak_mb"],
                )
            )
    for records in [int(s) for s in args.wide_sizes.split(",") if s]:
        wide = bench_size(spark, records, args.seed, with_python=False, topic_scale=WIDE_SCALE)
        results.append({"path": "parquet-wide", **wide})
        print(json.dumps(results[-1]), flush=True)
        base = wide["decode_s"]
        label = f"{wide['live_offsets']:,} live offsets"
        scan_ratio = round(wide["raw_scan_s"] / base, 2)
        rows.append((records, f"raw scan (Parquet, {label})", wide["raw_scan_s"], scan_ratio, "-"))
        rows.append((records, f"decode (Parquet, {label})", base, 1.0, wide["worker_peak_mb"]))
        rows.append((records, f"audit (Parquet, {label})", wide["audit_s"], wide["audit_vs_decode"], "-"))
    driver = driver_peak_memory(spark)
    results.append({"path": "driver", **driver})
    if not args.no_memory and not args.no_segments:
        memory = bench_segment_memory(args.seed)
        results.append({"path": "segment-memory", **memory})
    print()
    width = max([34, *(len(row[1]) for row in rows)])
    print(f"{'records':>10}  {'path':<{width}} {'seconds':>8} {'x decode (Parquet)':>19} {'worker peak MiB':>16}")
    for records, path, seconds, ratio, worker in rows:
        print(f"{records:>10,}  {path:<{width}} {seconds:>8} {ratio:>19} {worker:>16}")
    print(f"driver peak memory: Python {driver['driver_python_peak_mb']} MiB, JVM {driver['driver_jvm_peak_mb']} MiB")
    if not args.no_memory and not args.no_segments:
        print(
            "one segment file read in a fresh process, memory beyond the loaded reader: "
            f"60 MiB file {memory['fast_60mib_growth_mb']} MiB, 600 MiB file {memory['fast_600mib_growth_mb']} MiB "
            f"(Python reader: {memory['python_60mib_growth_mb']} and {memory['python_600mib_growth_mb']} MiB)"
        )
    (DATA / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
