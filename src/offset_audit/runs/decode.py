"""The decode command end to end: inputs -> decoding -> outputs, with the counts that must reconcile.

The CLI and the spark-submit entry scripts in jobs/ both call `run_decode`; neither holds logic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offset_audit.decoding import decoder
from offset_audit.decoding.report import CountKey, DecodeReport
from offset_audit.inputs.dump import FileUnits, load_raw_records, raw_source, resumed_source
from offset_audit.inputs.last_read import LastRow
from offset_audit.inputs.opened import OpenedDump, opened
from offset_audit.inputs.resumed import LogFloors, Resume
from offset_audit.outputs.delta import DataFile, TableWriter, write_delta
from offset_audit.outputs.fast_write import Resumed, commit_decoded, decode_to_files
from offset_audit.outputs.read_back import bytes_skipped
from offset_audit.outputs.runs_table import write_run
from offset_audit.runs.clusters import judge_as, resolve
from offset_audit.runs.counts import check_reconciles, fill_counts
from offset_audit.runtime import progress
from offset_audit.runtime.session import run_report, table_writer
from offset_audit.session_kind import session_cores
from offset_audit.settings import Settings
from offset_audit.storage import join
from offset_audit.table_names import RUNS_TABLE


def written_tables() -> list[str]:
    """Every table the decode command writes under its output folder, checked before Spark starts."""
    return [*decoder.TABLES, RUNS_TABLE]


# The audit's compacted commits are merged a bucket of group ids per Spark task, two tasks per core, so
# that no one worker holds much of a large state: at 20M records of a cluster with 2.7M live offsets,
# on two cores, the workers' peak over the decode and the audit was 1.1 GiB.
COMMIT_BUCKETS_PER_CORE = 2


@dataclass
class Decoded:
    """A decode pass as the audit needs it: the newest timestamp among the records the coordinator
    state is rebuilt from (None when the route did not work it out), and, when asked for, the files
    holding each task's commits (its last record of every key) instead of the offset_commits table."""

    newest_record: datetime | None = None
    compacted_commits: list[str] | None = None
    compacted_rows: int = 0
    # An incremental audit's (`carry_to`): how far each partition's records reached, the files of
    # records to carry to the next run.
    ends: dict[int, int] = field(default_factory=dict)
    carry_files: list[str] = field(default_factory=list)
    # Its files for state/log, not yet committed (`log` of decode_dump).
    log_files: list[DataFile] = field(default_factory=list)
    # Each partition's last record read, for the next run to find again (`inputs.last_read`).
    last_rows: dict[int, LastRow] = field(default_factory=dict)


def decode_dump(
    spark: SparkSession,
    dump: OpenedDump,
    output: str,
    report: DecodeReport,
    writer: TableWriter,
    route: str | None = None,
    compact_commits_to: str | None = None,
    resume: Resume | None = None,
    carry_to: str | None = None,
    check: Callable[[dict[int, int], dict[int, frozenset[str]]], None] | None = None,
    log: LogFloors | None = None,
    log_dir: str | None = None,
    source: DataFrame | FileUnits | None = None,
) -> Decoded:
    """Decode the dump into the decode tables under `output`, filling `report`'s counts.

    route "direct" (the default without Delta jars) decodes and writes in one pass and commits with
    delta-rs; "dataframe" builds one DataFrame per table and writes it with `write_delta` (the route of
    delta-spark sessions). Both produce the same tables. `compact_commits_to` (direct route only) makes
    every task decode only its last record of each key and write its commits to that folder instead of
    offset_commits, which is then committed empty. `carry_to` (an incremental audit, with
    `compact_commits_to`; `resume` when it resumes from a state) makes the tasks leave there what the
    next run carries; `check` sees how far each partition's records reached, and the digests of the records
    found where the run before read last (`Resume.probes`), before anything is committed;
    `log` (with `carry_to`) makes them write what state/log takes into files under `log_dir`. `source`
    (direct route) is read instead of the dump's files: records the tool kept (history --audit).
    """
    settings = dump.settings
    storage = writer.storage
    report.input_format = settings.input.format
    route = route or ("dataframe" if writer.delta_spark else "direct")
    if route == "direct":
        if source is None:
            source = resumed_source(spark, dump, resume) if resume is not None else raw_source(spark, dump)
        # Known up front for Parquet (footers) and Kafka (a count); log dumps are counted as read, and
        # their readers turn unreadable input into error rows, so nothing escapes the count. A resumed
        # read drops the records below its positions as it reads: its tasks count.
        if carry_to is not None:
            known = None
        else:
            known = source.rows if isinstance(source, FileUnits) else source.count()
        if known is not None:
            progress.begin(f"decoding {known:,} records ({settings.input.format})")
        elif isinstance(source, FileUnits):
            files = f"{source.files:,} file{'' if source.files == 1 else 's'}"
            progress.begin(f"decoding {files} ({settings.input.format})")
        else:
            progress.begin(f"decoding the carried and the new records ({settings.input.format})")
        result = decode_to_files(
            spark,
            source,
            output,
            settings.input.topic,
            settings.decode.fast_path,
            compact_commits_to,
            storage=storage,
            commit_buckets=COMMIT_BUCKETS_PER_CORE * session_cores(spark),
            resume=None
            if carry_to is None
            else Resumed(
                resume.floors if resume is not None else {},
                carry_to,
                log,
                log_dir,
                resume.probes if resume is not None else {},
                resume.reread if resume is not None else frozenset(),
            ),
        )
        report.records_read = result.records_read if known is None else known
        report.records_carried = result.carried
        fill_counts(report, result.counts)
        report.format_notes = dict(result.notes)
        report.bytes_skipped = bytes_skipped(result.files["quarantine"], storage)
        check_reconciles(report)  # nothing is committed unless every record is accounted for
        if check is not None:
            check(result.ends, result.probed)
        outcome = Decoded(
            result.newest_record,
            ends=result.ends,
            carry_files=result.carry_files,
            log_files=result.log_files,
            last_rows=result.last_rows,
        )
        if compact_commits_to is not None:
            outcome.compacted_commits = [str(f.path) for f in result.files["offset_commits"]]
            outcome.compacted_rows = sum(f.rows for f in result.files["offset_commits"])
            result.files["offset_commits"] = []
        progress.begin("committing the decode tables")
        for name, written in commit_decoded(output, result.files, run_id=report.run_id, storage=storage).items():
            report.wrote(name, written)
        return outcome
    raw = source if isinstance(source, DataFrame) else load_raw_records(spark, dump)
    progress.begin(f"decoding the dump ({settings.input.format})")
    report.records_read = raw.count()
    decoded = decoder.decode_records(raw, settings.input.topic, settings.decode.fast_path).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        counts: Counter[CountKey] = Counter()
        for row in decoder.decode_counts(decoded).collect():
            counts[CountKey(row.record_class, row.key_type, row.value_version, row.layout_era, row.is_tombstone)] += (
                row.records
            )
        fill_counts(report, counts)
        report.bytes_skipped = decoder.quarantine(decoded).agg(F.sum("skipped_bytes")).collect()[0][0] or 0
        if "source_note" in raw.columns:
            notes = raw.where(F.col("source_note").isNotNull()).groupBy("source_note").count().collect()
            report.format_notes = {row.source_note: row["count"] for row in notes}
        check_reconciles(report)
        for name, build in decoder.TABLE_BUILDERS.items():
            written = write_delta(build(decoded), join(output, name), writer, run_id=report.run_id)
            report.wrote(name, written)
    finally:
        decoded.unpersist()
    return Decoded()


def run_decode(
    spark: SparkSession,
    dump: OpenedDump | list[str],
    output: str,
    settings: Settings,
    route: str | None = None,
) -> DecodeReport:
    """The decode command: every decode table under `output`, and its row in `output/runs`. `dump`: as
    `inputs.opened.open_dump` opened it before Spark started (else its paths, opened here)."""
    dump = opened(dump, settings)
    settings = dump.settings
    report = run_report(spark, "decode", list(dump.inputs), settings)
    writer = table_writer(spark, settings)
    # Its runs row names the cluster as an audit's does, so a --cluster given here is not lost.
    judge_as(report, resolve(spark, dump, output))
    decode_dump(spark, dump, output, report, writer, route)
    report.finished_at = datetime.now(UTC)
    progress.begin("writing the runs row")
    write_run(spark, writer, report, output)
    return report
