"""Where generated records go: Kafka-source snapshot files, a broker's log segments rewritten from them,
and what kafka-get-offsets.sh would print for the same cluster."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offset_audit import constants as K

SNAPSHOT_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
)


def new_snapshot_folder(output: str) -> Path:
    """`output`, created, without the part files of an earlier snapshot written there."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    return out


def write_snapshot_file(
    path: Path,
    topic: str,
    keys: list[bytes],
    values: list[bytes | None],
    partitions: list[int],
    offsets: list[int],
    timestamps_ms: list[int],
) -> None:
    """One part file of a Kafka-source snapshot: the columns Spark's Kafka source gives a topic's records."""
    table = pa.table(
        {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": pa.array([topic] * len(keys), pa.string()),
            "partition": pa.array(partitions, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array([ms * 1000 for ms in timestamps_ms], pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array([0] * len(keys), pa.int32()),
        },
        schema=SNAPSHOT_SCHEMA,
    )
    pq.write_table(table, path, row_group_size=128_000)


def log_offsets(tips: dict[tuple[str, int], list[int]], seed: int) -> list[tuple[str, int, int, int]]:
    """(topic, partition, log start offset, log end offset) of every topic partition with committed
    offsets, by topic and partition: the log end at or past the newest commit, a quarter of the
    partitions caught up (lag 0), the others up to 4,999 records behind; the log start 0, except on about
    one partition in nine whose retention deleted records a group had not read yet (offset_out_of_range).
    Deterministic: from the seed and the partition's name, never the generator's random stream, so the
    dump's bytes are those of a run without these files."""
    rows = []
    for (topic, partition), committed in sorted(tips.items()):
        mix = zlib.crc32(f"{seed}:{topic}:{partition}".encode())
        lag = 0 if mix % 4 == 0 else 1 + (mix >> 4) % 4999
        # The few commits past 2^54 (there to test exact integers) would otherwise make every other
        # group of their partition 10^16 records behind; the log ends past the ordinary ones.
        ordinary = [c for c in committed if c < 1 << 53] or committed
        log_end = max(ordinary) + lag
        log_start = 0
        if mix % 9 == 1:
            log_start = min(ordinary) + 1
            log_end = max(log_end, log_start)
        rows.append((topic, partition, log_start, log_end))
    return rows


def snapshot_to_segments(
    snapshot: str,
    output: str,
    batch_records: int = 1,
    compression: str = "none",
    segment_bytes: int | None = None,
    topic: str = K.OFFSETS_TOPIC,
    stage: tuple[int, int] | None = None,
) -> dict[str, int]:
    """Rewrite a Kafka-source snapshot as a broker's data directory: `<topic>-N/*.log` (the snapshot's
    records of one internal topic: __consumer_offsets, or __share_group_state).

    The coordinator appends most records one batch each, so `batch_records` defaults to 1; larger
    batches (and compression) show how the reader copes with other producers' shapes.

    `stage` (k, n): the log as it stood when the first k/n of the snapshot's records (in the order they
    were written) were in (`stage_cuts`), so that stage after stage written into one folder grows as a
    broker's log does."""
    from offset_audit.inputs.segments.writer import SEGMENT_BYTES, write_partition

    files = sorted(Path(snapshot).glob("part-*.parquet"))
    partitions = sorted(
        {p for f in files for p in pq.read_table(f, columns=["partition"]).column("partition").unique().to_pylist()}
    )

    def records_of(partition: int) -> Iterator[tuple[int, bytes | None, bytes | None, int]]:
        for file in files:
            table = pq.read_table(file, columns=["key", "value", "partition", "offset", "timestamp"])
            table = table.filter(pc.equal(table.column("partition"), partition))
            stamps = table.column("timestamp").cast(pa.int64()).to_numpy() // 1000
            yield from zip(
                table.column("offset").to_pylist(),
                table.column("key").to_pylist(),
                table.column("value").to_pylist(),
                stamps.tolist(),
                strict=True,
            )

    cuts = stage_cuts(files, stage, batch_records) if stage is not None else None
    segments = 0
    for partition in partitions:
        folder = Path(output) / f"{topic}-{partition}"
        kept = records_of(partition) if cuts is None else islice(records_of(partition), cuts.get(partition, 0))
        segments += len(write_partition(folder, kept, batch_records, compression, segment_bytes or SEGMENT_BYTES))
    records = sum(cuts.values()) if cuts is not None else sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    return {"partitions": len(partitions), "segments": segments, "records": records}


def stage_cuts(files: list[Path], stage: tuple[int, int], batch_records: int) -> dict[int, int]:
    """How many records of each partition stage k of n holds: those among the first k/n of the snapshot's
    records, in the order they were written (its part files in order; a generated partition's offsets
    follow that order), less the records of a batch the cut would split. Batches run as `batch_runs`
    makes them for the whole log, so each stage's batches are the whole log's first ones, byte for byte:
    a broker appends whole batches and never rewrites one to grow it."""
    from offset_audit.inputs.segments.writer import batch_runs

    k, n = stage
    tables = [pq.read_table(f, columns=["partition", "offset"]) for f in files]
    written = pa.concat_tables(tables) if tables else pa.table({"partition": pa.array([], pa.int32())})
    first = written.slice(0, written.num_rows * k // n)
    counts = first.group_by("partition").aggregate([([], "count_all")]).to_pylist()
    cuts = {}
    for row in counts:
        partition, wanted = row["partition"], row["count_all"]
        offsets = written.filter(pc.equal(written.column("partition"), partition)).column("offset").to_pylist()
        whole = 0
        for _, run in batch_runs(((o, None, None, 0) for o in offsets), batch_records):
            if whole + len(run) > wanted:
                break
            whole += len(run)
        cuts[partition] = whole
    return cuts


def write_meta_properties(data_dir: str, cluster_id: str, node_id: int = 1) -> None:
    """The data directory's meta.properties as a KRaft broker writes it (version 1): what names the
    cluster the folders' records come from."""
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    text = f"#\n#{datetime.now(UTC):%a %b %d %H:%M:%S UTC %Y}\nnode.id={node_id}\nversion=1\ncluster.id={cluster_id}\n"
    (Path(data_dir) / "meta.properties").write_text(text)
