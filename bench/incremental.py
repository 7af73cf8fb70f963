"""What a scheduled `audit --incremental` costs against the new records, not the log's size, on each
input a schedule resumes: broker folders, a Parquet snapshot grown by files, a Delta snapshot grown by
appends.

    .venv/bin/python bench/incremental.py [--records 20000000] [--fractions 0.001,0.01,0.1]
                                          [--inputs segments,parquet,delta] [--warm]

The log: make bench's fleet dump (bench-data/dump-<records>-1, 131,944 live offsets at 20M records, each
committed offset rewritten many times), as
- broker folders (bench-data/segments-<records>-1-4mib): segments rolled at SEGMENT_BYTES, so that the
  new records of a run span a few segment files, as 100 MiB segments do in the 500 GB partitions of a
  cluster whose cleaner failed;
- a Parquet snapshot: the records in time order (an export's: every partition in each file), in
  SNAPSHOT_FILES files;
- a Delta snapshot: the same records, appended in SNAPSHOT_FILES commits.

For each fraction f of new records: the log without each partition's newest f of its records is audited
with --incremental (the first run, timed: it makes the state). Then the log grows as a user's does
(broker folders: the whole log, hard links; Parquet: one more file in the same folder; Delta: one more
append) and is audited again from that state (timed), and once more with nothing new (timed). Beside
them, in the same run: a full audit of the whole log, and a full audit of the log already compacted (the
last record of each key, tombstones gone, what the cleaner would leave), in the same format. Every
figure is a whole process, as a user runs it; with `--warm` every audit is handed to a warm session
(`offset-audit warm start`) as well, and timed again.

Prints Markdown tables (docs/performance.md shows them) and writes bench-data/incremental.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from run_bench import dump_for

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
PROGRAM = [str(Path(sys.executable).parent / "offset-audit")]
SEGMENT_BYTES = 4 << 20
SNAPSHOT_FILES = 6
INPUTS = ("segments", "parquet", "delta")
TOPIC = "__consumer_offsets"
AS_OF = "2024-06-01T00:00:00"


def segments_for(records: int) -> Path:
    """The fleet dump as a data directory, written once."""
    target = DATA / f"segments-{records}-1-4mib"
    if not (target / "done").exists():
        _write_data_dir(_snapshot(records), target)
    return target


def compacted_for(records: int) -> Path:
    """The same log as the cleaner would leave it: the last record of each key, tombstones gone."""
    target = DATA / f"segments-{records}-1-4mib-compacted"
    if not (target / "done").exists():
        _write_data_dir(_compacted(records), target)
    return target


def _compacted(records: int) -> pa.Table:
    table = _snapshot(records)
    table = table.append_column("_rank", pa.array(np.arange(table.num_rows)))
    last = table.group_by(["partition", "key"], use_threads=False).aggregate([("_rank", "max")])
    kept = table.take(last.column("_rank_max")).filter(pc.is_valid(pc.field("value")))
    return kept.drop_columns(["_rank"])


def _snapshot(records: int) -> pa.Table:
    return pq.read_table(dump_for(records, 1), columns=["key", "value", "partition", "offset", "timestamp"])


def _write_data_dir(table: pa.Table, target: Path) -> None:
    """Snapshot rows as `__consumer_offsets-N/*.log` segments rolled at SEGMENT_BYTES, marked done."""
    from offset_audit.inputs.segments.writer import write_partition

    shutil.rmtree(target, ignore_errors=True)
    table = table.sort_by([("partition", "ascending"), ("offset", "ascending")])
    partitions = table.column("partition").to_numpy()
    cuts = np.flatnonzero(np.diff(partitions)) + 1
    for start, end in zip([0, *cuts.tolist()], [*cuts.tolist(), len(partitions)], strict=True):
        part = table.slice(start, end - start)
        stamps = (part.column("timestamp").cast(pa.int64()).to_numpy() // 1000).tolist()
        rows = zip(
            part.column("offset").to_pylist(),
            part.column("key").to_pylist(),
            part.column("value").to_pylist(),
            stamps,
            strict=True,
        )
        write_partition(target / f"{TOPIC}-{int(partitions[start])}", rows, segment_bytes=SEGMENT_BYTES)
    (target / "done").write_text("")


def batch_ends(path: Path) -> list[tuple[int, int]]:
    """(byte end, last offset) of every batch of a segment file, from the batch headers."""
    data = path.read_bytes()
    ends, at = [], 0
    while at + 12 <= len(data):
        base = int.from_bytes(data[at : at + 8], "big")
        length = int.from_bytes(data[at + 8 : at + 12], "big")
        delta = int.from_bytes(data[at + 23 : at + 27], "big")
        at += 12 + length
        ends.append((at, base + delta))
    return ends


def without_newest(log: Path, fraction: float, target: Path) -> int:
    """A copy of `log` without each partition's newest `fraction` of records: older files hard-linked,
    the file holding the cut truncated after a batch. Returns the records left out."""
    shutil.rmtree(target, ignore_errors=True)
    left_out = 0
    for folder in sorted(log.glob(f"{TOPIC}-*")):
        files = sorted(folder.glob("*.log"))
        ends = [batch_ends(f) for f in files]
        last = ends[-1][-1][1] if ends and ends[-1] else -1
        keep_below = int((last + 1) * (1 - fraction))
        left_out += last + 1 - keep_below
        (target / folder.name).mkdir(parents=True)
        for file, batches in zip(files, ends, strict=True):
            if batches and batches[-1][1] < keep_below:
                os.link(file, target / folder.name / file.name)
                continue
            cut = max((end for end, offset in batches if offset < keep_below), default=0)
            if cut:
                (target / folder.name / file.name).write_bytes(file.read_bytes()[:cut])
            break
    return left_out


def newest_cut(table: pa.Table, fraction: float) -> np.ndarray:
    """Which rows are among each partition's newest `fraction` of its offsets."""
    partitions = table.column("partition").to_numpy()
    offsets = table.column("offset").to_numpy()
    cut = np.zeros(len(offsets), np.int64)
    for partition in np.unique(partitions):
        mine = partitions == partition
        cut[mine] = int((offsets[mine].max() + 1) * (1 - fraction))
    return offsets >= cut


def time_ordered(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [("timestamp", "ascending"), ("partition", "ascending")]))


def write_older_snapshot(records: int, fraction: float, target: Path, kind: str) -> tuple[int, pa.Table]:
    """The snapshot without each partition's newest `fraction`, as SNAPSHOT_FILES exported files or
    commits; the rows left out (the next export's), and their count."""
    from deltalake import write_deltalake

    shutil.rmtree(target, ignore_errors=True)
    table = _snapshot(records)
    new = newest_cut(table, fraction)
    older, newer = time_ordered(table.filter(pa.array(~new))), time_ordered(table.filter(pa.array(new)))
    n = older.num_rows
    target.mkdir(parents=True)
    for index in range(SNAPSHOT_FILES):
        part = older.slice(index * n // SNAPSHOT_FILES, (index + 1) * n // SNAPSHOT_FILES - index * n // SNAPSHOT_FILES)
        if kind == "parquet":
            pq.write_table(part, target / f"part-{index:05d}.parquet")
        else:
            write_deltalake(str(target), part, mode="append")
    return newer.num_rows, newer


def grow_snapshot(target: Path, newer: pa.Table, kind: str) -> None:
    """The next export: one more file, or one more append."""
    from deltalake import write_deltalake

    if kind == "parquet":
        pq.write_table(newer, target / f"part-{SNAPSHOT_FILES:05d}.parquet")
    else:
        write_deltalake(str(target), newer, mode="append")


def whole_snapshot(records: int, kind: str, compacted: bool = False) -> Path:
    """The whole log (or its compacted form) as a snapshot of `kind`, written once."""
    from deltalake import write_deltalake

    target = DATA / f"{kind}-{records}-1{'-compacted' if compacted else ''}"
    if (target / "_done").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    table = _compacted(records) if compacted else _snapshot(records)
    table = time_ordered(table)
    if kind == "parquet":
        target.mkdir(parents=True)
        pq.write_table(table, target / "part-00000.parquet")
    else:
        write_deltalake(str(target), table)
    (target / "_done").write_text("")
    return target


def timed_audit(log: Path, output: Path, env: dict[str, str], *flags: str) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(
        [*PROGRAM, "audit", "--input", str(log), "--output", str(output), "--as-of", AS_OF, "--json", *flags],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"audit failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout)


def state_size(output: Path, table: str = "records") -> tuple[int, int]:
    """Rows and bytes of a state table at its current version."""
    from deltalake import DeltaTable

    delta = DeltaTable(str(output / "state" / table))
    actions = pa.table(delta.get_add_actions(flatten=True))
    return int(pc.sum(actions.column("num_records")).as_py() or 0), int(pc.sum(actions.column("size_bytes")).as_py())


def measure(records: int, fractions: list[float], env: dict[str, str], label: str, kind: str) -> dict:
    if kind == "segments":
        log, compacted = segments_for(records), compacted_for(records)
    else:
        log, compacted = whole_snapshot(records, kind), whole_snapshot(records, kind, compacted=True)
    work = Path(tempfile.mkdtemp(prefix="bench-incremental-"))
    try:
        full_s, full = timed_audit(log, work / "full", env)
        compact_s, compact = timed_audit(compacted, work / "compacted", env)
        rows = []
        for fraction in fractions:
            out = work / f"state-{fraction}"
            if kind == "segments":
                older = work / f"older-{fraction}"
                left_out = without_newest(log, fraction, older)
                grown = log  # the same offsets, the newest records added: the whole log
            else:
                older = grown = work / f"snapshot-{fraction}"
                left_out, newer = write_older_snapshot(records, fraction, older, kind)
            first_s, _ = timed_audit(older, out, env, "--incremental")
            first_log = state_size(out, "log")
            if kind != "segments":
                grow_snapshot(older, newer, kind)
            seconds, doc = timed_audit(grown, out, env, "--incremental")
            assert doc["state"]["used"] == "resumed", doc["state"]
            assert doc["offsets"] == full["offsets"], (doc["offsets"], full["offsets"])
            state_rows, state_bytes = state_size(out)
            log_rows, log_bytes = state_size(out, "log")
            again_s, again = timed_audit(grown, out, env, "--incremental")
            assert again["state"]["used"] == "resumed" and again["state"]["records_new"] == 0, again["state"]
            rows.append(
                {
                    "fraction": fraction,
                    "new_records": doc["state"]["records_new"],
                    "left_out": left_out,
                    "carried": doc["state"]["records_carried"],
                    "seconds": seconds,
                    "nothing_new_seconds": again_s,
                    "state_rows": state_rows,
                    "state_bytes": state_bytes,
                    "first_seconds": first_s,
                    "log_appended": log_rows - first_log[0],
                    "log_appended_bytes": log_bytes - first_log[1],
                    "log_rows": log_rows,
                    "log_bytes": log_bytes,
                }
            )
            shutil.rmtree(older, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
        return {
            "input": kind,
            "route": label,
            "records": full["counts"]["records_read"],
            "live_offsets": full["offsets"]["total"],
            "full_seconds": full_s,
            "compacted_seconds": compact_s,
            "compacted_records": compact["counts"]["records_read"],
            "runs": rows,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(result: dict) -> str:
    full, compact = result["full_seconds"], result["compacted_seconds"]
    lines = [
        f"{result['input']}, {result['route']}: {result['records']:,} records, {result['live_offsets']:,} live "
        f"offsets; full audit {full:.1f} s; full audit of the compacted log ({result['compacted_records']:,} "
        f"records) {compact:.1f} s",
        "",
        "| new records | run | x compacted full | x full | state rows | state MiB | appended to state/log |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['fraction']:.1%} ({r['new_records']:,}) | {r['seconds']:.1f} s | {r['seconds'] / compact:.2f} "
            f"| {r['seconds'] / full:.0%} | {r['state_rows']:,} | {r['state_bytes'] / 2**20:.1f} "
            f"| {r['log_appended']:,} ({r['log_appended_bytes'] / 2**20:.1f} MiB) |"
        )
    for r in result["runs"]:
        lines.append(
            f"| nothing new (after {r['fraction']:.1%}) | {r['nothing_new_seconds']:.1f} s "
            f"| {r['nothing_new_seconds'] / compact:.2f} | {r['nothing_new_seconds'] / full:.0%} | | | |"
        )
    lines += [
        "",
        "The first run of each state (which also copies what it read into state/log):",
        "",
        "| records read | first run | x full | state/log after the timed run |",
        "|---|---:|---:|---:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {result['records'] - r['left_out']:,} | {r['first_seconds']:.1f} s | {r['first_seconds'] / full:.2f} "
            f"| {r['log_rows']:,} records, {r['log_bytes'] / 2**20:.0f} MiB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000_000)
    parser.add_argument("--fractions", default="0.001,0.01,0.1")
    parser.add_argument("--inputs", default=",".join(INPUTS), help="of " + ", ".join(INPUTS))
    parser.add_argument("--warm", action="store_true", help="also through a warm session")
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    kinds = args.inputs.split(",")
    unknown = sorted(set(kinds) - set(INPUTS))
    if unknown:
        parser.error(f"unknown input {unknown[0]}; give some of {', '.join(INPUTS)}")
    env = {**os.environ, "OFFSET_AUDIT_WARM": "0"}
    results = []
    for kind in kinds:
        results.append(measure(args.records, fractions, env, "each audit alone", kind))
        print(table(results[-1]) + "\n", flush=True)
    if args.warm:
        from fixed_cost import warm_session

        with warm_session() as warm_env:
            for kind in kinds:
                results.append(measure(args.records, fractions, warm_env, "each audit in a warm session", kind))
                print(table(results[-1]) + "\n", flush=True)
    (DATA / "incremental.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
