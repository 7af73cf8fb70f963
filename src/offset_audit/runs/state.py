"""The coordinator's state for a run: the dump decoded into DIR/decoded, then replayed into the groups
and offsets the group coordinator would hold after loading the log (audit and whatif judge it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offset_audit.broker_versions import NEWEST_VERSION, BrokerVersion, newer_than, parse_version
from offset_audit.coordinator import replay, rules
from offset_audit.decoding.decoder import TABLES
from offset_audit.decoding.report import DecodeReport
from offset_audit.inputs import formats
from offset_audit.inputs.opened import OpenedDump
from offset_audit.inputs.parquet_files import read_parquet_files
from offset_audit.inputs.resumed import LogFloors, Resume
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import TableWriter
from offset_audit.outputs.folder_layout import DECODED
from offset_audit.outputs.read_back import read_table
from offset_audit.outputs.scratch import merge_latest_commits, merge_latest_commits_by_bucket, scratch_folder
from offset_audit.runs.decode import Decoded, decode_dump
from offset_audit.runtime import progress
from offset_audit.runtime.session import scoped_conf
from offset_audit.session_kind import session_cores
from offset_audit.settings import Settings
from offset_audit.storage import LOCAL, Storage, join
from offset_audit.timestamps import MAX_MS, MIN_MS, datetime_of

# Up to this many decoded state rows the replay runs in one partition: every aggregation, window and
# join then needs no shuffle, which halves the Spark jobs, and adaptive execution, with no shuffle to
# tune, is turned off for the run (its re-planning between stages only costs). On two cores this took
# a 1M-record dump's audit from about 11 s to 9 s and a 5M one's from 20 s to 14 s; at 560k state
# rows (20M records) one partition was as fast as four. Bigger states stay spread over the executors.
SMALL_STATE_ROWS = 1_000_000
SMALL_STATE_CONF = {"spark.sql.adaptive.enabled": "false"}
# From this many state rows the verdicts are written by Spark's own Parquet writer (outputs.delta.
# TableWriter.spark_writes), and a state replayed in one partition has its offsets spread over the cores
# again to be judged and written (a round-robin shuffle of the offsets alone), as Spark's writer writes
# in the judging tasks themselves. Measured warm on two cores: 3,357,690 offsets (a 20M-record dump with
# 30 times as many partitions) took 12.5-17.5 s to judge and write with Spark's writer against 19.5-23.0 s
# with the Python workers'; 747,523 offsets (5M records, so replayed in one partition) 8.5-9.1 s against
# 9.2-10.3 s, and 12.1-13.0 s with Spark's writer unspread (7.3 s in one task); 131,944 offsets (the
# fleet's 20M records) took 0.75 s in one task and 1.16 s spread, and the stage 0.1-0.4 s more with
# Spark's writer, which writes one table a job.
WIDE_STATE_ROWS = 500_000
# Up to this many, the replay's and the verdicts' expressions are also evaluated as they stand instead of
# compiled: compiling the generated Java cost more than the rows it then runs over. In a fresh process
# (its JIT still cold) the partition_verdicts query of a 1,000-record audit took 10.0 s compiled, 6.4 s
# without whole-stage code and 4.4 s fully interpreted; at the demo's 300,000 records, warm, 2.7 s
# interpreted against 3.2 s compiled. Spark tests both modes for the same results. Nor is a side of a
# join broadcast: each broadcast is a Spark job of its own (a 1,000-record audit's 7 jobs become 5).
TINY_STATE_ROWS = 100_000
TINY_STATE_CONF = {
    **SMALL_STATE_CONF,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
}
# The decode tables the group rebuild reads besides the commits.
GROUP_TABLES = ("group_metadata", "group_members", "modern_group_records")


def broker_rules(settings: Settings, report: DecodeReport) -> BrokerVersion:
    """The broker version whose rules judge this run, noted in its runs row; where the decoded records
    were written only by a newer broker, the report's notes say so."""
    version = parse_version(settings.kafka.version)
    report.kafka_version = version.label
    report.format_notes.update(newer_than(report.decoded_by_type, version))
    return version


def decoded_tables() -> list[str]:
    """The decode tables a run that judges the state writes, under its output folder."""
    return [f"{DECODED}/{name}" for name in TABLES]


@dataclass
class CoordinatorState:
    offsets: DataFrame
    groups: DataFrame
    newest_record: datetime | None
    load_notes: dict[str, int] = field(default_factory=dict)
    """What stops the judged broker version loading this log (`rules.early_commit_note`)."""
    rows: int = 0
    """The decoded state's rows the replay read (its group records and commits, one per key when merged)."""
    decoded: Decoded | None = None
    """The decode pass, for an incremental audit's state (`runs.incremental`)."""

    def release(self) -> None:
        self.offsets.unpersist()
        self.groups.unpersist()


def load_state(
    spark: SparkSession,
    decoded_dir: str,
    commits: DataFrame | None = None,
    newest: datetime | None = None,
    transactions: bool = False,
    commits_latest: bool = False,
    single_partition: bool = False,
    storage: Storage = LOCAL,
    quarantined: bool = True,
    version: BrokerVersion = NEWEST_VERSION,
    spread: int = 1,
) -> CoordinatorState:
    """Replay the decode tables into what the coordinator would hold after loading the log.

    `commits` replaces the offset_commits table (the audit passes each decode task's last commit of each
    key, or with `commits_latest` those merged across tasks: one per key); `newest`, when the decode
    pass already knows it, saves a scan for the newest record; `transactions` says the input can show
    pending transactional commits (log segments, dump-log); `single_partition` replays a small state in
    one partition (see `SMALL_STATE_ROWS`); `quarantined` False says the quarantine table is empty, which
    spares the replay its look for keys whose last record is unreadable (`replay.unreadable_records`);
    `spread`: the partitions the offsets of a state replayed in one are judged in (WIDE_STATE_ROWS).
    """
    commits = read_table(spark, decoded_dir, "offset_commits", storage) if commits is None else commits
    metadata = read_table(spark, decoded_dir, "group_metadata", storage)
    members = read_table(spark, decoded_dir, "group_members", storage)
    modern = read_table(spark, decoded_dir, "modern_group_records", storage)
    if single_partition:
        commits, metadata, members, modern = (f.coalesce(1) for f in (commits, metadata, members, modern))
    unreadable = None
    if quarantined:
        unreadable = replay.unreadable_records(read_table(spark, decoded_dir, "quarantine", storage))
    pending = replay.pending_commits(commits) if transactions else None
    # Both are read twice (offsets for the group ids and the verdicts, groups for the offset and group
    # verdicts): computed once. Offsets already one per key are only a filtered scan to read again,
    # cheaper than the cache (building it took 1.6 s for 144k rows of a 20M-record dump).
    offsets = replay.live_offsets(commits, pending, commits_latest, unreadable)
    if not commits_latest:
        offsets = offsets.persist(StorageLevel.MEMORY_AND_DISK)
    live_metadata = replay.live_group_metadata(metadata, unreadable)
    live_modern = replay.live_modern_records(modern, unreadable)
    groups = replay.coordinator_groups(offsets, live_metadata, members, live_modern, pending, version).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    load_notes: dict[str, int] = {}
    family = version.load_fails_on_early_commits_of
    if family is not None:
        early = replay.commits_before_group_records(offsets, live_modern, family).orderBy("group_id").collect()
        load_notes = rules.early_commit_note(
            family, [(r["group_id"], r["source_partition"]) for r in early], sum(r["commits"] for r in early)
        )
    if newest is None:
        newest = newest_record(commits, metadata, modern)
    if spread > 1 and commits_latest:
        # Judging and writing each offset's verdict is a map over the offsets: on every core, also when
        # the groups were replayed in one partition.
        offsets = offsets.repartition(spread)
    return CoordinatorState(offsets, groups, newest, load_notes)


def newest_record(*tables: DataFrame) -> datetime | None:
    """The newest record timestamp of decode tables that a date can show, as the decode tasks find it
    (outputs.fast_write): from the milliseconds, so that neither the Python process's time zone nor the
    session's kind (a Spark Connect client's timestamps) changes it."""
    stamps = [t.select(F.col("record_timestamp_ms").alias("ms")) for t in tables]
    union = stamps[0]
    for more in stamps[1:]:
        union = union.unionByName(more)
    shown = union.where(F.col("ms").between(MIN_MS, MAX_MS))
    return datetime_of(shown.agg(F.max("ms")).collect()[0][0])


@contextmanager
def coordinator_state(
    spark: SparkSession,
    dump: OpenedDump,
    output: str,
    report: DecodeReport,
    writer: TableWriter,
    keep_decoded: bool,
    carry: bool = False,
    resume: Resume | None = None,
    check: Callable[[dict[int, int], dict[int, frozenset[str]]], None] | None = None,
    newest_before: datetime | None = None,
    log: LogFloors | None = None,
    log_dir: str | None = None,
    under: str | None = None,
) -> Iterator[CoordinatorState]:
    """Decode the dump into DIR/decoded and replay it; the state lives for the `with` block. `output`
    is the cluster's home (runs.clusters.home), `under` the folder the command was given, when another.

    Unless `keep_decoded`, each decode task decodes only its last record of each key (the rest are
    counted as superseded) and leaves its commits in a scratch folder, removed when the block ends,
    instead of writing the commit history. delta-spark sessions decode through DataFrames and always
    decode and keep everything; the state is the same either way (`replay.unreadable_records`).

    `carry` (an incremental audit): the decode tasks also leave what the next run carries, in the
    scratch folder, read by `runs.incremental.merge_state` before the block ends; `resume` reads the
    state's carried records and the input past its positions; `check` sees how far each partition
    reached, and what was found where the run before read last, before anything is committed;
    `newest_before` is the newest record of the runs before; `log` and `log_dir`: what the tasks write
    for state/log, and where.
    """
    decoded_dir = join(output, DECODED)
    # How the run's report names the decode tables: relative to the folder the command was given.
    named = DECODED if under is None or under == output else f"{output[len(under) :].strip('/')}/{DECODED}"
    storage = writer.storage
    with ExitStack() as stack:
        scratch = None
        if not keep_decoded and not writer.delta_spark:
            # Removed when the block ends, also when decoding or loading fails; a later run clears it
            # if this process is killed (offset_audit.outputs.scratch).
            scratch = stack.enter_context(scratch_folder(output, storage))
        carry_to = join(scratch, "carry") if carry and scratch is not None else None
        decoded = decode_dump(
            spark,
            dump,
            decoded_dir,
            report,
            writer,
            compact_commits_to=scratch,
            resume=resume,
            carry_to=carry_to,
            check=check,
            log=log,
            log_dir=log_dir,
        )
        if newest_before is not None and (decoded.newest_record is None or decoded.newest_record < newest_before):
            decoded.newest_record = newest_before
        report.table_rows = {f"{named}/{name}": rows for name, rows in report.table_rows.items()}
        report.table_versions = {f"{named}/{name}": v for name, v in report.table_versions.items()}
        files = decoded.compacted_commits
        group_rows = sum(report.table_rows.get(f"{named}/{name}", 0) for name in GROUP_TABLES)
        state_rows = group_rows + (
            report.table_rows.get(f"{named}/offset_commits", 0) if files is None else decoded.compacted_rows
        )
        small = state_rows <= SMALL_STATE_ROWS
        progress.begin("rebuilding the coordinator's groups and offsets")
        commits, latest = None, False
        if files is not None:
            if files:
                # Each decode task kept its own last commit of a key, so a key read by several tasks was
                # counted once per task: the route (one partition, TINY_STATE_ROWS, WIDE_STATE_ROWS) is
                # chosen on the merge, one record per key. A small state is merged on the driver, a
                # larger one a bucket per task, which may leave it small enough for one partition.
                assert scratch is not None  # decode_dump compacts commits only into compact_commits_to
                merged = (
                    dict([merge_latest_commits(files, scratch, storage)])
                    if small
                    else merge_latest_commits_by_bucket(spark, files, scratch, storage)
                )
                files, latest = sorted(merged), True
                state_rows = group_rows + sum(merged.values())
                small = state_rows <= SMALL_STATE_ROWS
            commits = read_parquet_files(spark, files, table_schema("offset_commits").struct(), storage)
        # Where the input shows transaction markers, a commit can be pending (reference 1.1).
        transactions = formats.named(report.input_format).markers
        conf = TINY_STATE_CONF if state_rows <= TINY_STATE_ROWS else SMALL_STATE_CONF if small else {}
        with scoped_conf(spark, conf):
            quarantined = report.table_rows.get(f"{named}/quarantine", 0) > 0
            state = load_state(
                spark,
                decoded_dir,
                commits,
                decoded.newest_record,
                transactions,
                latest,
                small,
                storage,
                quarantined,
                parse_version(dump.settings.kafka.version),
                session_cores(spark) if small and state_rows >= WIDE_STATE_ROWS else 1,
            )
            report.format_notes.update(state.load_notes)
            state.decoded, state.rows = decoded, state_rows
            if state_rows >= WIDE_STATE_ROWS:
                # Built here, into the cache load_state gave them: otherwise the partition_verdicts query
                # replays the groups (a broadcast's jobs) inside its own stage. A smaller state's replay
                # stays in that query, which spares it a Spark job.
                state.groups.count()
            try:
                yield state
            finally:
                state.release()
