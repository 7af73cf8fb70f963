"""Each dump format as a Spark data source: `spark.read.format(...)` in a session that has only
registered the package's sources gives the raw records the audit's own readers give, row for row."""

from __future__ import annotations

import json

import pytest
from draft_chain_records import WORKED_EXAMPLE
from repo_paths import TEXT_DUMPS

from offset_audit.errors import UserError
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.writers import snapshot_to_segments
from offset_audit.inputs import data_sources, formats
from offset_audit.inputs.dump import load_raw_records
from offset_audit.inputs.opened import open_dump
from offset_audit.runs.share_state_reads import read_kip932_lines
from offset_audit.runtime.config import load_settings
from offset_audit.storage import LOCAL

# The formats Spark reads with its own sources: a Kafka-source snapshot's columns, the live topic.
SPARKS_OWN = frozenset({"parquet", "delta", "kafka"})


def rows(frame) -> list[str]:
    return sorted(map(repr, (row.asDict() for row in frame.collect())))


@pytest.fixture(scope="module")
def registered(spark):
    data_sources.register(spark)
    data_sources.register(spark)  # once a session: a second call does nothing
    return spark


@pytest.fixture(scope="module")
def broker_folders(tmp_path_factory):
    """A generated log, written as a broker's partition folders (compressed batches, corrupt records)."""
    root = tmp_path_factory.mktemp("log")
    generate_dump(str(root / "snapshot"), 4_000, seed=3, corrupt=4, partitions=4)
    snapshot_to_segments(str(root / "snapshot"), str(root / "folders"), 20, "zstd", 64 << 10)
    return str(root / "folders")


def test_segments_source_reads_the_audits_raw_records(registered, broker_folders):
    expected = load_raw_records(registered, open_dump([broker_folders], load_settings(input_format="segments")))
    frame = registered.read.format("kafka-log").load(broker_folders)
    assert frame.schema == expected.schema
    got = rows(frame)
    assert len(got) == 4_000 and got == rows(expected)


def test_dump_log_source_labels_transactions_by_markers_found_while_planning(registered):
    path = str(TEXT_DUMPS / "dump_log_3_8.txt")
    expected = load_raw_records(registered, open_dump([path], load_settings(input_format="dump-log")))
    got = rows(registered.read.format("kafka-dump-log").load(path))
    assert got and got == rows(expected)


@pytest.mark.parametrize("name", ["console_json_4_x.txt", "console_scala_offsets.txt"])
def test_console_source_takes_the_partition_the_text_cannot_tell(registered, name):
    path = str(TEXT_DUMPS / name)
    expected = load_raw_records(registered, open_dump([path], load_settings(input_format="console", partition=17)))
    frame = registered.read.format("kafka-console").option("partition", 17).load(path)
    got = rows(frame)
    assert got and got == rows(expected)
    assert {row.source_partition for row in frame.select("source_partition").distinct().collect()} == {17}


def test_share_state_source_reads_the_drafts_lines_with_their_errors(registered, tmp_path):
    path = tmp_path / "share.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in WORKED_EXAMPLE) + "\n\nnot json\n[1]\n")
    frame = registered.read.format("kafka-share-state").load(str(path))
    settings = load_settings(input_format="kip932-json")
    expected = read_kip932_lines(
        registered, [u.path for u in open_dump([str(path)], settings, share=True).log_units], LOCAL
    )
    assert frame.schema == expected.schema
    got = rows(frame)
    assert len(got) == len(WORKED_EXAMPLE) + 2 and got == rows(expected)
    errors = [r.error for r in frame.where("error is not null").orderBy("line").collect()]
    assert errors[0].startswith("not JSON") and errors[1] == "not a JSON object"


def test_several_paths_are_one_dump(registered, tmp_path):
    first, second = TEXT_DUMPS / "console_json_3_9_groups.txt", TEXT_DUMPS / "console_json_3_9_offsets.txt"
    both = registered.read.format("kafka-console").option("partition", 1).load([str(first), str(second)])
    console = registered.read.format("kafka-console").option("partition", 1)
    each = [console.load(str(path)).count() for path in (first, second)]
    assert both.count() == sum(each) > 0


def test_every_format_names_a_source_that_reads_it():
    """The registry's descriptors and the sources agree: a format Spark does not read itself has a source
    of the name its descriptor gives, which reads that format."""
    ours = {source.name(): source.FORMAT for source in data_sources.SOURCES}
    for described in formats.FORMATS:
        if described.spark_source not in SPARKS_OWN:
            assert ours[described.spark_source] is described
    assert set(ours) == {f.spark_source for f in formats.FORMATS} - SPARKS_OWN


def test_a_mistaken_option_is_one_sentence(registered, tmp_path):
    with pytest.raises(Exception, match="option fastPath takes true or false, not 'maybe'"):
        registered.read.format("kafka-log").option("fastPath", "maybe").load(str(tmp_path)).collect()
    with pytest.raises(UserError, match="option partition takes a whole number"):
        data_sources.ConsoleSource({"path": "x", "partition": "seven"}).reader(None)
