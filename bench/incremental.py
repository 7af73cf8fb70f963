"""What a scheduled `audit --incremental` costs against the new records, not the log's size.

    .venv/bin/python bench/incremental.py [--records 20000000] [--fractions 0.001,0.01,0.1] [--warm]

The log: make bench's fleet dump (bench-data/dump-<records>-1, 131,944 live offsets at 20M records, each
committed offset rewritten many times) written once as a broker's data directory
(bench-data/segments-<records>-1-4mib). Its segments roll at SEGMENT_BYTES, so that the new records of a run
span a few segment files, as 100 MiB segments do in the 500 GB partitions of a cluster whose cleaner
failed.

For each fraction f of new records: a copy of the log without each partition's last f of its records
(hard links, and the cut file truncated at a batch) is audited with --incremental (untimed: it makes the
state), then the whole log is, from that state: that run is timed, whole process, as a user runs it.
Beside it, in the same run: a full audit of the whole log, and a full audit of the log already compacted
(the last record of each key alone, what the cleaner would leave). With `--warm` every audit is handed
to a warm session (`offset-audit warm start`) as well, and timed again.

Prints a Markdown table (docs/performance.md shows it) and writes bench-data/incremental.json.
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
        table = _snapshot(records)
        table = table.append_column("_rank", pa.array(np.arange(table.num_rows)))
        last = table.group_by(["partition", "key"], use_threads=False).aggregate([("_rank", "max")])
        kept = table.take(last.column("_rank_max")).filter(pc.is_valid(pc.field("value")))
        _write_data_dir(kept.drop_columns(["_rank"]), target)
    return target


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


def measure(records: int, fractions: list[float], env: dict[str, str], label: str) -> dict:
    log = segments_for(records)
    compacted = compacted_for(records)
    work = Path(tempfile.mkdtemp(prefix="bench-incremental-"))
    try:
        full_s, full = timed_audit(log, work / "full", env)
        compact_s, compact = timed_audit(compacted, work / "compacted", env)
        rows = []
        for fraction in fractions:
            older = work / f"older-{fraction}"
            left_out = without_newest(log, fraction, older)
            out = work / f"state-{fraction}"
            first_s, _ = timed_audit(older, out, env, "--incremental")
            first_log = state_size(out, "log")
            seconds, doc = timed_audit(log, out, env, "--incremental")
            assert doc["state"]["used"] == "resumed", doc["state"]
            assert doc["offsets"] == full["offsets"], (doc["offsets"], full["offsets"])
            state_rows, state_bytes = state_size(out)
            log_rows, log_bytes = state_size(out, "log")
            rows.append(
                {
                    "fraction": fraction,
                    "new_records": doc["state"]["records_new"],
                    "left_out": left_out,
                    "carried": doc["state"]["records_carried"],
                    "seconds": seconds,
                    "state_rows": state_rows,
                    "state_bytes": state_bytes,
                    "first_seconds": first_s,
                    "log_appended": log_rows - first_log[0],
                    "log_appended_bytes": log_bytes - first_log[1],
                    "log_rows": log_rows,
                    "log_bytes": log_bytes,
                }
            )
        return {
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
        f"{result['route']}: {result['records']:,} records, {result['live_offsets']:,} live offsets; full audit "
        f"{full:.1f} s; full audit of the compacted log ({result['compacted_records']:,} records) {compact:.1f} s",
        "",
        "| new records | run | x compacted full | x 20M full | state rows | state MiB | appended to state/log |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['fraction']:.1%} ({r['new_records']:,}) | {r['seconds']:.1f} s | {r['seconds'] / compact:.2f} "
            f"| {r['seconds'] / full:.0%} | {r['state_rows']:,} | {r['state_bytes'] / 2**20:.1f} "
            f"| {r['log_appended']:,} ({r['log_appended_bytes'] / 2**20:.1f} MiB) |"
        )
    lines += [
        "",
        "The runs before (the first of each state, which also copies what it read into state/log):",
        "",
        "| records read | first run | x 20M full | state/log after the timed run |",
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
    parser.add_argument("--warm", action="store_true", help="also through a warm session")
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    env = {**os.environ, "OFFSET_AUDIT_WARM": "0"}
    results = [measure(args.records, fractions, env, "each audit alone")]
    print(table(results[0]), flush=True)
    if args.warm:
        from fixed_cost import warm_session

        with warm_session() as warm_env:
            results.append(measure(args.records, fractions, warm_env, "each audit in a warm session"))
        print()
        print(table(results[1]))
    (DATA / "incremental.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
