"""The public API on a session the caller holds: the same runs as the command, so its DataFrames equal
the command's tables row for row, its mistakes are one sentence before Spark is asked anything, and
`write` makes an audit folder the command's views read."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable
from dump_records import DAY, T0, commit, group_record
from segment_files import batch, marker

from offset_audit import api
from offset_audit.errors import UserError
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.writers import snapshot_to_segments


def run_cli(*args):
    from click.testing import CliRunner

    from offset_audit.cli.main import main

    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def table_rows(folder, name) -> list[str]:
    return sorted(map(repr, DeltaTable(f"{folder}/{name}").to_pyarrow_table().to_pylist()))


def frame_rows(frame) -> list[str]:
    return sorted(map(repr, frame.toArrow().to_pylist()))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's dump, small: corrupt records, end offsets, share groups; and the same log as broker
    folders, with a partition of transactional commits beside it."""
    root = tmp_path_factory.mktemp("demo")
    generate_dump(str(root / "input"), 3_000, seed=7, corrupt=12, end_offsets=str(root / "ends.txt"))
    snapshot_to_segments(str(root / "input"), str(root / "folders"), 5, "zstd", 32 << 10)
    # One more partition whose commits are transactional: producer 7 commits, 8 aborts, 9 never ends,
    # and the markers sit in a later segment than the records they settle.
    folder = root / "folders" / "__consumer_offsets-30"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(
        b"".join(
            [
                batch(0, [group_record("txn", 1, members=[]), commit("txn", "orders", 0, 10, 1)]),
                batch(2, [commit("txn", "orders", 0, 20, 2)], producer_id=7, attributes=0x10),
                batch(3, [commit("txn", "payments", 0, 30, 2)], producer_id=8, attributes=0x10),
                batch(4, [commit("txn", "clicks", 0, 40, 2)], producer_id=9, attributes=0x10),
            ]
        )
    )
    (folder / "00000000000000000005.log").write_bytes(marker(5, 7, True, T0 + DAY) + marker(6, 8, False, T0 + DAY))
    return root


@pytest.mark.parametrize("form", ["input", "folders"])
def test_audit_frames_equal_the_commands_tables(spark, demo, tmp_path, form):
    dump, ends = demo / form, demo / "ends.txt"
    run_cli("audit", "--input", dump, "--output", tmp_path / "cli", "--end-offsets", ends, "-q")
    with api.audit(spark, dump, end_offsets=ends) as audit:
        assert audit.report.reconciles and audit.report.quarantined > 0
        if form == "folders":  # the transactional partition: an aborted and a pending commit skipped
            assert {"aborted transaction", "transaction marker"} <= set(audit.report.skipped_by_reason)
            txn = audit.partition_verdicts.where("group_id = 'txn'").select("topic", "committed_offset").collect()
            assert sorted(map(tuple, txn)) == [("orders", 20)]
        for name in ("partition_verdicts", "group_verdicts", "deletion_candidates"):
            assert frame_rows(getattr(audit, name)) == table_rows(tmp_path / "cli", name), name
        assert audit.result.offsets == audit.partition_verdicts.count() > 0
        folder = audit.folder
    assert not (tmp_path / folder).exists()  # a run given no output leaves no folder behind


def test_whatif_history_and_decode_frames_equal_the_commands_tables(spark, demo, tmp_path):
    dump = demo / "input"
    run_cli("whatif", "--input", dump, "--output", tmp_path / "w", "--retention-minutes", "1d,7d", "--per-group", "-q")
    scenarios = api.whatif(spark, dump, retention=["1d", "7d"], per_group=True, output=tmp_path / "api-w")
    for name in ("whatif", "whatif_groups"):
        assert frame_rows(scenarios.table(name)) == table_rows(tmp_path / "w", name), name
    assert len(scenarios.scenarios) == 2

    run_cli("history", "--input", dump, "--output", tmp_path / "h", "-q")
    with api.history(spark, dump) as told:
        assert frame_rows(told.offset_history) == table_rows(tmp_path / "h", "offset_history")

    run_cli("decode", "--input", dump, "--output", tmp_path / "d", "-q")
    with api.decode(spark, dump) as decoded:
        for name in ("group_metadata", "quarantine"):
            assert frame_rows(decoded.table(name)) == table_rows(tmp_path / "d", name), name


def test_share_frames_equal_the_commands_tables(spark, tmp_path):
    from offset_audit.generator.share_world import generate_share_state

    generate_share_state(str(tmp_path / "share"), 2_000, seed=3, corrupt=2)
    run_cli("share", "--input", tmp_path / "share", "--output", tmp_path / "cli", "-q")
    with api.share(spark, tmp_path / "share") as shared:
        assert shared.report.reconciles and shared.report.quarantined == 2
        for name in ("share_partitions", "share_state_batches", "share_cleanup", "quarantine"):
            assert frame_rows(shared.table(name)) == table_rows(tmp_path / "cli", name), name


def test_read_dump_takes_paths_or_a_dataframe_the_caller_has(spark, demo):
    raw = api.read_dump(spark, demo / "input")
    assert raw.columns[:6] == [
        "source_topic",
        "source_partition",
        "source_offset",
        "record_timestamp_ms",
        "key",
        "value",
    ]
    assert raw.count() == 3_000
    snapshot = spark.read.parquet(str(demo / "input"))
    assert frame_rows(api.read_dump(spark, snapshot)) == frame_rows(raw)
    assert api.read_dump(spark, demo / "folders").count() == 3_007  # and the transactional partition's 7
    api.register(spark)
    assert frame_rows(spark.read.format("kafka-log").load(str(demo / "folders"))) == frame_rows(
        api.read_dump(spark, demo / "folders")
    )


def test_write_makes_an_audit_folder_the_views_read(spark, demo, tmp_path):
    with api.audit(spark, demo / "input", retention="3d") as audit:
        api.write(audit, tmp_path / "audits")
        for name in ("partition_verdicts", "group_verdicts", "deletion_candidates"):
            assert frame_rows(audit.table(name)) == table_rows(tmp_path / "audits", name)
    listed = json.loads(run_cli("describe", "--audit", tmp_path / "audits", "--json").output)
    assert listed["snapshot_id"] == audit.snapshot_id and listed["groups"]
    assert [r["command"] for r in DeltaTable(f"{tmp_path}/audits/runs").to_pyarrow_table().to_pylist()] == ["audit"]


def test_mistakes_are_one_sentence_before_spark_runs(no_spark, tmp_path):
    (tmp_path / "x.log").write_bytes(b"")
    with pytest.raises(UserError, match="unknown input format 'avro'"):
        api.options(format="avro")
    with pytest.raises(UserError, match="does not exist"):
        api.audit(None, tmp_path / "missing")
    with pytest.raises(UserError, match="give settings= or"):
        api.audit(None, tmp_path, retention="1d", settings=api.options())
    with pytest.raises(UserError, match="incremental=True keeps the audit's state in its output folder"):
        api.audit(None, tmp_path, incremental=True)
    with pytest.raises(UserError, match="retention"):
        api.whatif(None, tmp_path, retention="soon")
