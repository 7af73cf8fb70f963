"""The broker's log cleaner and log loader as the oracle for folders copied mid-compaction.

On each version `make kafka` fetched: a group commits a few MiB of offsets into 1 MiB segments while
the cleaner is held back (log.cleaner.min.compaction.lag.ms of a day), and the partition's folder is
copied ("before"; nothing writes to it then). The partition's own min.compaction.lag.ms is then set to 0,
the cleaner compacts the rolled segments, and once the broker has stopped the folder is copied again
("after"). Catching the cleaner between two renames is a matter of timing, so each mid-compaction state is
built from these two real folders, as the cleaner leaves them at each step (LogCleaner.cleanSegments,
then UnifiedLog.replaceSegments):
- the compacted segments written as .swap files beside the segments they replace;
- the same, the replaced segments already renamed .deleted;
- the .swap files alone, the segments they replace already gone (the only copy of those records);
- the compacted segments still being written: a .cleaned file cut short beside the old segments.
Each state is put in a partition folder of its own (a topic created for them), the broker is started once
on all four, and what its LogLoader left of each is copied. The audit must read every state exactly as
it reads what the broker made of it, and count every record of a file the broker deleted as skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from kafka_broker import commit_offsets, group_consumer, kafka_broker, kafka_versions, restarted, wait_until
from live_services import live

from offset_audit.cli.main import main
from offset_audit.inputs import log_loader

pytestmark = pytest.mark.slow

HELD = {"log.cleaner.min.compaction.lag.ms": str(24 * 3600 * 1000)}
SETTINGS = {
    **HELD,
    "log.cleaner.backoff.ms": "200",
    "log.cleaner.min.cleanable.ratio": "0.01",
    # the commits must stay: no expiry sweep may write tombstones between the copies
    "offsets.retention.minutes": "10080",
    # segments the broker replaced are renamed .deleted and removed this long after
    "log.segment.delete.delay.ms": "200",
}
GROUP = "cleaned"
TOPIC_PARTITIONS = 20
METADATA = "m" * 900  # about 1 KiB a record: 1 MiB segments roll every thousand commits


def segments(folder: Path) -> dict[str, bytes]:
    """The folder's segment files; one the running cleaner renames or removes while it is read is left out."""
    found = {}
    for f in sorted(folder.iterdir()):
        if log_loader.is_segment_file(f.name):
            try:
                found[f.name] = f.read_bytes()
            except FileNotFoundError:
                continue
    return found


def leftovers(folder: Path) -> list[str]:
    return [f.name for f in folder.iterdir() if f.name.endswith((".swap", ".cleaned", ".deleted"))]


def partition_folder(data: Path) -> Path:
    """The one __consumer_offsets partition that holds GROUP's records (the one with rolled segments)."""
    found = [p for p in data.glob("__consumer_offsets-*") if len(list(p.glob("*.log"))) > 1]
    assert len(found) == 1, found
    return found[0]


def decoded(folder: Path, out: Path) -> tuple[dict, list]:
    result = CliRunner().invoke(main, ["decode", "--input", str(folder), "--output", str(out), "--json"])
    assert result.exit_code == 0, result.output
    commits = DeltaTable(str(out / "offset_commits")).to_pyarrow_table()
    rows = sorted(zip(*(commits.column(c).to_pylist() for c in ("source_offset", "topic", "partition",
                                                                  "committed_offset")), strict=True))  # fmt: skip
    return json.loads(result.stdout)["counts"], rows


STATES = ("swap beside", "swap beside deleted", "swap alone", "cleaned cut short")
STATES_TOPIC = "cleaner-states"  # one partition a state: the broker's loader settles all four at one start


def _let_the_cleaner_compact(broker) -> None:
    """min.compaction.lag.ms=0 on __consumer_offsets: the broker's held-back cleaner takes its segments."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    lag = ConfigEntry("min.compaction.lag.ms", "0", incremental_operation=AlterConfigOpType.SET)
    topic = ConfigResource(ResourceType.TOPIC, "__consumer_offsets", incremental_configs=[lag])
    admin = broker.admin()  # held while its futures run: a destroyed client fails them
    for future in admin.incremental_alter_configs([topic]).values():
        future.result(60)


def _replace_segments(folder: Path, files: dict[str, bytes]) -> None:
    """The partition folder of a stopped broker holding `files` in place of its segments and indexes."""
    for old in folder.iterdir():
        if log_loader.is_segment_file(old.name) or old.suffix in (".index", ".timeindex", ".txnindex"):
            old.unlink()
    for file, content in files.items():
        (folder / file).write_bytes(content)


@pytest.fixture(scope="module", params=kafka_versions())
def cleaned(request, tmp_path_factory):
    """The states built from the real before and after folders, and what the broker's loader made of each."""
    version = request.param
    root = tmp_path_factory.mktemp(f"cleaner-{version}")
    home = root / "broker"
    with live(kafka_broker(home, version, SETTINGS)) as broker:
        from confluent_kafka.admin import NewTopic

        admin = broker.admin()  # held: the futures need their client alive
        topics = [NewTopic("orders", TOPIC_PARTITIONS, 1),
                  NewTopic(STATES_TOPIC, len(STATES), 1, config={"cleanup.policy": "compact"})]  # fmt: skip
        for future in admin.create_topics(topics).values():
            future.result(60)
        consumer = group_consumer(broker, GROUP)
        try:
            for round_ in range(150):
                partitions = [("orders", p, round_ + 1) for p in range(TOPIC_PARTITIONS)]
                commit_offsets(consumer, *partitions, metadata=METADATA)
        finally:
            consumer.close()
        folder = partition_folder(broker.log_dir)
        before = segments(folder)
        assert len(before) >= 3, f"the commits rolled only {len(before)} segments"
        _let_the_cleaner_compact(broker)
        wait_until("the cleaner to compact the rolled segments", lambda: segments(folder) != before, 120)
        wait_until("the cleaner to settle", lambda: not leftovers(folder), 60)
    after = segments(folder)
    compacted = {n: b for n, b in after.items() if before.get(n) != b}
    replaced = {n for n in before if n in compacted or (n not in after)}
    assert compacted and replaced, "the cleaner left the segments as they were"
    # the largest compacted segment, half written (the cleaner can empty a segment: its file is then empty)
    largest = max(compacted, key=lambda n: len(compacted[n]))
    assert compacted[largest], "the cleaner emptied every segment"
    states = {
        "swap beside": {**before, **{n + ".swap": b for n, b in compacted.items()}},
        "swap beside deleted": {
            **{(n + ".deleted" if n in replaced else n): b for n, b in before.items()},
            **{n + ".swap": b for n, b in compacted.items()},
        },
        "swap alone": {
            **{n: b for n, b in before.items() if n not in replaced},
            **{n + ".swap": b for n, b in compacted.items()},
        },
        "cleaned cut short": {**before, largest + ".cleaned": compacted[largest][: len(compacted[largest]) // 2]},
    }
    assert tuple(states) == STATES
    loaded = {name: broker.log_dir / f"{STATES_TOPIC}-{index}" for index, name in enumerate(STATES)}
    results = {}
    for name, files in states.items():
        built = root / name.replace(" ", "-") / folder.name  # named as the partition it was copied from
        built.mkdir(parents=True)
        for file, content in files.items():
            (built / file).write_bytes(content)
        _replace_segments(loaded[name], files)
    # the broker on every state at once: its loader settles each folder at start
    with restarted(home, version):
        wait_until(
            "the broker to finish recovering the folders",
            lambda: not any(leftovers(partition) for partition in loaded.values()),
            60,
        )
    for name, partition in loaded.items():
        recovered = root / f"{name.replace(' ', '-')}-recovered" / folder.name
        recovered.mkdir(parents=True)
        for file, content in segments(partition).items():
            (recovered / file).write_bytes(content)
        results[name] = ((root / name.replace(" ", "-")), recovered.parent, len(before), len(compacted))
    return root, results, {n: len(b) for n, b in before.items()}, replaced


@pytest.mark.parametrize("state", STATES)
def test_a_folder_copied_mid_compaction_reads_as_what_the_brokers_loader_makes_of_it(cleaned, state):
    root, results, _, _ = cleaned
    built, recovered, _, _ = results[state]
    loader_files = {f.name for f in next(recovered.iterdir()).iterdir()}
    assert not any(n.endswith((".swap", ".cleaned", ".deleted")) for n in loader_files), loader_files
    ours, ours_rows = decoded(built, root / f"out-{state}")
    broker, broker_rows = decoded(recovered, root / f"out-{state}-recovered")
    assert ours_rows == broker_rows
    assert ours["decoded"] == broker["decoded"] and broker["skipped"] == 0
    # every record of a file the broker deleted was read, and counted as skipped
    assert ours["records_read"] == broker["records_read"] + ours["skipped_by_reason"].get("cleaner leftover", 0)
    if state != "swap alone":
        assert ours["skipped_by_reason"]["cleaner leftover"] > 0
    else:
        assert "cleaner leftover" not in ours["skipped_by_reason"]
