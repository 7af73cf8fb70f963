"""Dumps read from and tables written to an S3-compatible store (moto's server on 127.0.0.1), exactly as
from and to a local folder: executors read and write through pyarrow.fs, the driver commits with
delta-rs, credentials and endpoint from the AWS_* variables or --storage-option."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from live_services import SHORT_LIVED_JVM, live, run_at_once, s3_server, sorted_rows, table_rows

from offset_audit.cli.main import main

pytestmark = pytest.mark.slow

AUDIT_TABLES = ["partition_verdicts", "group_verdicts", "deletion_candidates"]
DECODE_TABLES = ["offset_commits", "group_metadata", "group_members", "modern_group_records", "other_records"]


@pytest.fixture(scope="module")
def dumps(s3, tmp_path_factory):
    """The same records as a Parquet snapshot and as log segments, locally and in the bucket."""
    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.generator.writers import snapshot_to_segments

    folder = tmp_path_factory.mktemp("dumps")
    generate_dump(str(folder / "snapshot"), 20_000, seed=12, corrupt=6)
    snapshot_to_segments(str(folder / "snapshot"), str(folder / "segments"))
    (folder / "ends.csv").write_text("topic,partition,log_start_offset,log_end_offset\norders,0,0,999999\n")
    return {
        "local": folder,
        "snapshot": s3.upload(folder / "snapshot", "dumps/snapshot"),
        "segments": s3.upload(folder / "segments", "dumps/segments"),
        "ends": s3.upload(folder / "ends.csv", "dumps/ends.csv"),
    }


@pytest.fixture
def aws(s3, monkeypatch):
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    return s3.environment


def delta(options: dict[str, str]) -> dict[str, str]:
    from offset_audit.storage import Storage

    return Storage.of(options).delta_options


def cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def assert_same_tables(local: str, remote: str, tables: list[str], options: dict[str, str]) -> None:
    for table in tables:
        mine, theirs = table_rows(os.path.join(local, table)), table_rows(f"{remote}/{table}", options)
        assert mine.schema.equals(theirs.schema, check_metadata=True), f"{table}: {mine.schema} != {theirs.schema}"
        assert mine.num_rows > 0 or table in ("other_records", "offset_commits"), table
        assert sorted_rows(mine) == sorted_rows(theirs), table


def test_decode_from_and_to_s3_gives_the_local_tables(spark, s3, dumps, aws, tmp_path):
    cli("decode", "--input", str(dumps["local"] / "snapshot"), "--output", str(tmp_path / "local"))
    cli("decode", "--input", dumps["snapshot"].replace("s3://", "s3a://"), "--output", s3.url("decoded"))
    assert_same_tables(str(tmp_path / "local"), s3.url("decoded"), [*DECODE_TABLES, "quarantine"], aws)
    runs = table_rows(s3.url("decoded/runs"), aws).to_pylist()
    assert [r["input"] for r in runs] == [dumps["snapshot"]]
    assert runs[0]["records_read"] == 20_000


def test_audit_of_segments_in_s3_gives_the_local_verdicts_and_leaves_no_scratch(spark, s3, dumps, aws, tmp_path):
    common = ["--snapshot-id", "seg", "--as-of", "latest"]
    local_ends = str(dumps["local"] / "ends.csv")
    cli("audit", "--input", str(dumps["local"] / "segments"), "--output", str(tmp_path / "a"), "--end-offsets",
        local_ends, *common)  # fmt: skip
    result = cli("audit", "--input", dumps["segments"], "--output", s3.url("audit-seg"), "--end-offsets",
                 dumps["ends"], *common)  # fmt: skip
    assert "s3://offset-audit/audit-seg" in result.output
    assert_same_tables(str(tmp_path / "a"), s3.url("audit-seg"), AUDIT_TABLES, aws)
    assert_same_tables(str(tmp_path / "a" / "decoded"), s3.url("audit-seg/decoded"), ["quarantine"], aws)
    from offset_audit.storage import Storage

    assert not [n for n in Storage.of(aws).entries(s3.url("audit-seg")) if n.startswith("_replay-")]


def test_a_rerun_of_the_same_snapshot_replaces_its_rows_and_adds_a_run(spark, s3, dumps, aws):
    output = s3.url("audit-rerun")
    for _ in range(2):
        cli("audit", "--input", dumps["snapshot"], "--output", output, "--snapshot-id", "same")
    from deltalake import DeltaTable

    once = table_rows(f"{output}/partition_verdicts", aws)
    assert set(once.column("snapshot_id").to_pylist()) == {"same"}
    runs = table_rows(f"{output}/runs", aws).to_pylist()
    assert len(runs) == 2 and runs[0]["table_rows"] == runs[1]["table_rows"]
    assert once.num_rows == dict(runs[1]["table_rows"])["partition_verdicts"]
    versions = sorted(dict(r["table_versions"])["partition_verdicts"] for r in runs)
    assert versions == [0, 1] and DeltaTable(f"{output}/partition_verdicts", storage_options=delta(aws)).version() == 1


# Loaded into each audit process (sitecustomize, through PYTHONPATH): its first commit to partition_verdicts
# waits until the other process has loaded the table too, so both commit from the same version and one
# of them must retry on the next; each says which version it read and which it made.
OVERLAP = """
import os, pathlib, time
from deltalake import DeltaTable

_commit = DeltaTable.create_write_transaction
_meeting = pathlib.Path(os.environ["OVERLAP_DIR"])


def _meet(prefix):
    (_meeting / f"{prefix}ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 300
    while len(list(_meeting.glob(f"{prefix}ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)


def _create_write_transaction(self, *args, **kwargs):
    # decoded/group_metadata: both runs replace the whole table from the same version, so one commit's
    # check fails (a concurrent transaction deleted data this operation read) and is made again.
    if self.table_uri.rstrip("/").endswith("decoded/group_metadata"):
        if (_meeting / f"decoded-done-{os.getpid()}").exists():
            return _commit(self, *args, **kwargs)
        _meet("decoded-")
        try:
            return _commit(self, *args, **kwargs)
        finally:
            (_meeting / f"decoded-done-{os.getpid()}").touch()
    if "partition_verdicts" not in self.table_uri or (_meeting / f"done-{os.getpid()}").exists():
        return _commit(self, *args, **kwargs)
    read = self.version()
    (_meeting / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 300
    while len(list(_meeting.glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    _commit(self, *args, **kwargs)
    run_id = kwargs["commit_properties"].custom_metadata["offset_audit.run_id"]
    (_meeting / f"done-{os.getpid()}").write_text(f"{read} {run_id}")


DeltaTable.create_write_transaction = _create_write_transaction
"""


def test_two_audits_at_once_into_one_output_both_commit(spark, s3, dumps, aws, tmp_path):
    """Two processes commit to the same tables at the same moment (forced: both load partition_verdicts
    before either commits): delta-rs' conditional put makes one retry on the next version instead of
    overwriting the other's commit, and both snapshots land whole. Both also replace the whole of
    decoded/group_metadata from one version (forced the same way): the commit whose conflict check fails
    is made again, and the run goes on."""
    output = s3.url("audit-concurrent")
    cli("audit", "--input", dumps["snapshot"], "--output", output, "--snapshot-id", "zero", "--quiet")
    hooks, meeting = tmp_path / "hooks", tmp_path / "meeting"
    hooks.mkdir()
    meeting.mkdir()
    (hooks / "sitecustomize.py").write_text(OVERLAP)
    environment = {**os.environ, **s3.environment, "PYTHONPATH": str(hooks), "OVERLAP_DIR": str(meeting)}
    environment["SPARK_SUBMIT_OPTS"] = SHORT_LIVED_JVM  # each run's own short-lived session (live_services)
    command = [sys.executable, "-m", "offset_audit.cli.main", "audit", "--input", dumps["snapshot"], "--output", output]
    audits = run_at_once([[*command, "--snapshot-id", name] for name in ("first", "second")], environment, tmp_path,
                       timeout=600)  # fmt: skip
    assert [r.returncode for r in audits] == [0, 0], [r.stdout + r.stderr for r in audits]
    # The version each commit landed on comes from the commit files (committed_version), not from delta-rs'
    # history, whose numbering shifts when a commit lands while it reads.
    from offset_audit.outputs.delta import committed_version
    from offset_audit.storage import Storage

    assert len(list(meeting.glob("decoded-done-*"))) == 2, "both runs met at decoded/group_metadata"
    again = [r for r in audits if "group_metadata: another writer committed first" in r.stderr]
    assert len(again) == 1, [r.stderr for r in audits]
    read_run = [f.read_text().split() for f in meeting.glob("done-*")]
    storage = Storage.of(s3.environment)
    read_made = sorted(
        (int(read), committed_version(f"{output}/partition_verdicts", run_id, storage)) for read, run_id in read_run
    )
    assert len(read_made) == 2 and read_made[0][0] == read_made[1][0], read_made  # both read one version
    assert sorted(made for _, made in read_made) == [read_made[0][0] + 1, read_made[0][0] + 2]  # one retried
    verdicts = table_rows(f"{output}/partition_verdicts", s3.environment)
    by_snapshot = {
        name: sorted_rows(verdicts.filter(verdicts.column("snapshot_id").to_numpy(zero_copy_only=False) == name))
        for name in ("zero", "first", "second")
    }
    assert by_snapshot["first"] and len(by_snapshot["first"]) == len(by_snapshot["second"])
    strip = [{k: v for k, v in row.items() if k != "snapshot_id"} for row in by_snapshot["first"]]
    assert strip == [{k: v for k, v in row.items() if k != "snapshot_id"} for row in by_snapshot["second"]]
    assert strip == [{k: v for k, v in row.items() if k != "snapshot_id"} for row in by_snapshot["zero"]]
    runs = table_rows(f"{output}/runs", s3.environment).to_pylist()
    assert sorted(r["snapshot_id"] for r in runs) == ["first", "second", "zero"]
    versions = sorted(dict(r["table_versions"])["partition_verdicts"] for r in runs)
    assert versions == [0, 1, 2]


def test_commits_racing_for_one_s3_table_all_land(s3, aws):
    """Eight writers append to one table at the same moment: S3's conditional put (If-None-Match) lets
    exactly one create each log version, the others retry on the next, and no commit is lost."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.parquet as pq

    from offset_audit.outputs.delta import DataFile, commit_files
    from offset_audit.storage import Storage

    storage, table = Storage.of(aws), s3.url("race")
    schema = pa.schema([("writer", pa.int64())])
    commit_files(table, [], schema, mode="append", storage=storage)  # the table exists before the race

    def append(writer: int) -> int | None:
        path = f"{table}/part-{writer}.parquet"
        with storage.open_output_stream(path) as sink:
            pq.write_table(pa.table({"writer": [writer]}, schema=schema), sink)
        size = storage.size(path)
        return commit_files(table, [DataFile(path, 1, size)], schema, "append", run_id=f"w{writer}", storage=storage)

    with ThreadPoolExecutor(8) as pool:
        versions = list(pool.map(append, range(8)))
    assert sorted(versions) == list(range(1, 9))
    rows = table_rows(table, aws).column("writer").to_pylist()
    assert sorted(rows) == list(range(8))
    from deltalake import DeltaTable

    history = DeltaTable(table, storage_options=storage.delta_options).history()  # read now, nothing racing
    assert {h["offset_audit.run_id"]: h["version"] for h in history if h["version"]} == {
        f"w{writer}": version for writer, version in enumerate(versions)
    }


def test_storage_options_on_the_command_line_reach_delete_plan_without_the_environment(
    s3, dumps, aws, spark, monkeypatch
):
    cli("audit", "--input", dumps["snapshot"], "--output", s3.url("audit-plan"), "--snapshot-id", "plan")
    flags = [f"--storage-option={name}={value}" for name, value in aws.items()]
    for name in aws:
        monkeypatch.delenv(name)
    result = cli("delete-plan", "--audit", s3.url("audit-plan"), *flags)
    assert "kafka-consumer-groups.sh" in result.output and "--delete-offsets" in result.output


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("s3://no-such-bucket/audit", "does not exist or cannot be seen with these credentials"),
        ("hdfs://namenode/audit", "takes a local path or an s3:// URI"),
    ],
)
def test_object_store_mistakes_are_one_sentence_before_spark(dumps, aws, no_spark, where, message):
    result = CliRunner().invoke(main, ["audit", "--input", dumps["snapshot"], "--output", where])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and message in result.output, result.output


def test_a_file_where_a_table_goes_in_s3_is_refused_before_spark(s3, dumps, aws, no_spark):
    s3.upload(dumps["local"] / "ends.csv", "taken/runs")
    result = CliRunner().invoke(main, ["decode", "--input", dumps["snapshot"], "--output", s3.url("taken")])
    assert result.exit_code == 2, result.output
    assert "s3://offset-audit/taken/runs is a file where this run writes a table" in result.output


def test_an_unreachable_endpoint_is_one_sentence_before_spark(dumps, aws, no_spark, monkeypatch):
    from live_services import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = CliRunner().invoke(main, ["audit", "--input", dumps["snapshot"], "--output", "/tmp/never-written"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: cannot reach") and result.output.count("\n") == 1, result.output
    assert not Path("/tmp/never-written").exists()


def test_credentials_the_store_refuses_are_one_sentence_before_spark(tmp_path, no_spark, monkeypatch):
    with live(s3_server(tmp_path, checks_credentials=True)) as strict:
        for name, value in strict.environment.items():
            monkeypatch.setenv(name, value)
        result = CliRunner().invoke(main, ["decode", "--input", strict.url("dump"), "--output", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: cannot reach s3://offset-audit/dump: ") and "ACCESS_DENIED" in result.output
    assert result.output.endswith(
        "(check the credentials: AWS_* variables, [storage] in the config, --storage-option)\n"
    )
    assert not (tmp_path / "o").exists()


# Characters an operator's keys hold (tests/cli/test_path_characters.py has them for local paths).
TAKEN = "a #?*:€%{}`;'\"<>=&!$ z"
# delta-rs cuts an s3:// table path at '#' or '?' (a URL's fragment and query): out#x would land in out.
TABLE_TAKEN = TAKEN.replace("#", "").replace("?", "")


def test_s3_keys_are_keys_for_every_command_that_takes_one(spark, s3, dumps, aws, tmp_path):
    """Input, end offsets and report keys hold every character of TAKEN; table folders every one but
    '#' and '?'. Each command finds them and writes under exactly those keys."""
    from offset_audit.storage import Storage

    dump = s3.upload(dumps["local"] / "snapshot", f"keys/dump {TAKEN}")
    ends = s3.upload(dumps["local"] / "ends.csv", f"keys/ends {TAKEN}.csv")
    audit, history = s3.url(f"keys/audit {TABLE_TAKEN}"), s3.url(f"keys/history {TABLE_TAKEN}")
    report = s3.url(f"keys/report {TAKEN}.html")
    cli("audit", "--input", dump, "--output", audit, "--end-offsets", ends, "--quiet")
    cli("whatif", "--input", dump, "--output", audit, "--retention-minutes", "1d,7d", "--quiet")
    cli("history", "--input", dump, "--output", history, "--quiet")
    cli("describe", "--audit", audit)
    cli("delete-plan", "--audit", audit, "--script", str(tmp_path / "plan.sh"))
    cli("report", "--audit", audit, "--output", report)
    cli("metrics", "--audit", audit, "--output", str(tmp_path / "m.prom"))
    keys = Storage.of(aws).files_under(s3.url("keys"))
    tops = {key[len(s3.url("keys/")) :].split("/")[0] for key in keys}
    assert tops == {f"dump {TAKEN}", f"ends {TAKEN}.csv", f"audit {TABLE_TAKEN}", f"history {TABLE_TAKEN}",
                    f"report {TAKEN}.html"}  # fmt: skip
    assert table_rows(f"{audit}/partition_verdicts", aws).num_rows > 0


@pytest.mark.parametrize("character", ["#", "?", "^", "[", "|", "%25"])
def test_an_s3_table_folder_delta_rs_cannot_take_is_refused_naming_the_character(dumps, aws, no_spark, s3, character):
    result = CliRunner().invoke(main, ["audit", "--input", dumps["snapshot"], "--output", s3.url(f"out{character}x")])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and f"holds '{character}'" in result.output, result.output
