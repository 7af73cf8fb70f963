"""A realistic, deterministic `__consumer_offsets` dump in the Kafka-source snapshot layout.

It models the groups an operator actually finds on a cluster that has lived through several Kafka
versions (world.py), each in the `__consumer_offsets` partition Kafka's group hash puts it in: their
state records (classic.py, consumer.py, streams.py, share.py), repeated commits (commits.py), deleted
groups and, on request, corrupt records (corrupt.py). Every structural record goes through the same
layouts the decoder reads.
"""

from __future__ import annotations

from pathlib import Path

from offset_audit import constants as K
from offset_audit.generator.classic import CLASSIC_KINDS, classic_group_records, deletion_records
from offset_audit.generator.commits import commit_chunks
from offset_audit.generator.consumer import consumer_group_records
from offset_audit.generator.corrupt import corrupt_records
from offset_audit.generator.share_world import share_group_records
from offset_audit.generator.streams import streams_group_records
from offset_audit.generator.world import END_MS, SPAN_MS, Event, Group, World
from offset_audit.generator.writers import log_offsets, new_snapshot_folder, write_snapshot_file

# The kinds whose state is one set of records written at the group's last change.
_MODERN = {"consumer_848": consumer_group_records, "streams": streams_group_records, "share": share_group_records}


def group_records(world: World, group: Group) -> list[Event]:
    """Metadata records of a group at a few points in time; the last one is the state it loads in."""
    rng = world.rng
    times = sorted(END_MS - rng.randint(0, SPAN_MS) for _ in range(rng.randint(1, 3)))
    if group.kind in CLASSIC_KINDS:
        return classic_group_records(world, group, times)
    return _MODERN[group.kind](world, group, times[-1])


def generate_dump(
    output: str,
    records: int,
    seed: int = 1,
    corrupt: int = 0,
    partitions: int = 10,
    end_offsets: str | None = None,
    start_offsets: str | None = None,
    topic_scale: int = 1,
) -> dict[str, int]:
    """Write `records` records as Parquet files under `output`; returns counts of what was written.

    `end_offsets` and `start_offsets` name files to write what kafka-get-offsets.sh would print for the
    same cluster (`--time -1` and `--time -2`): see writers.log_offsets. `topic_scale` multiplies every
    topic's partition count, for clusters whose groups hold many more offsets (World)."""
    world = World(records, seed, partitions, topic_scale)
    structural: list[Event] = []
    for group in world.groups:
        structural += group_records(world, group)
    for group in world.groups:
        if group.kind == "deleted":
            structural += deletion_records(world, group)
    structural += corrupt_records(world, corrupt)
    structural = structural[:records]
    structural.sort(key=lambda e: e.ts)
    commits = max(0, records - len(structural))

    out = new_snapshot_folder(output)
    next_offset = [0] * partitions
    written = 0
    s = 0
    file_index = 0

    def flush(events: list[Event]) -> None:
        nonlocal file_index, written
        events.sort(key=lambda e: e.ts)
        offsets = []
        for e in events:
            offsets.append(next_offset[e.partition])
            next_offset[e.partition] += 1
        write_snapshot_file(
            out / f"part-{file_index:05d}.parquet",
            K.OFFSETS_TOPIC,
            keys=[e.key for e in events],
            values=[e.value for e in events],
            partitions=[e.partition for e in events],
            offsets=offsets,
            timestamps_ms=[e.ts for e in events],
        )
        file_index += 1
        written += len(events)

    tips: dict[tuple[str, int], list[int]] = {}
    chunks = commit_chunks(world, commits, tips) if commits else iter(())
    for chunk in chunks:
        horizon = chunk[-1].ts
        while s < len(structural) and structural[s].ts <= horizon:
            chunk.append(structural[s])
            s += 1
        flush(chunk)
    if s < len(structural):
        flush(structural[s:])
    counts = {"records": written, "groups": len(world.groups), "files": file_index, "partitions": partitions}
    ends = log_offsets(tips, seed)
    for path, column in ((end_offsets, 3), (start_offsets, 2)):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text("".join(f"{row[0]}:{row[1]}:{row[column]}\n" for row in ends))
            counts["offset_partitions"] = len(ends)
    return counts
