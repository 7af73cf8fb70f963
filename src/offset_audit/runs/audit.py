"""The audit command end to end: decode -> replay -> rules -> verdicts -> Delta, and what the summary,
--json and the alert exit codes need. Orchestration only; the logic lives in coordinator/."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from offset_audit.coordinator import verdicts
from offset_audit.decoding.report import DecodeReport
from offset_audit.durations import MINUTE_MS, format_minutes
from offset_audit.errors import UserError
from offset_audit.inputs.end_offsets import read_end_offsets
from offset_audit.inputs.opened import OpenedDump, opened
from offset_audit.outputs.audit_state import STATE_TABLES, state_lock
from offset_audit.outputs.delta import TableWriter
from offset_audit.outputs.runs_table import write_run
from offset_audit.outputs.snapshot_tables import (
    Along,
    Written,
    record_snapshot,
    write_along_and_read_back,
    write_and_read_back,
)
from offset_audit.runs import clusters, incremental
from offset_audit.runs.clusters import judge_as
from offset_audit.runs.snapshots import resolve_as_of, snapshot_id_for
from offset_audit.runs.state import WIDE_STATE_ROWS, CoordinatorState, broker_rules, coordinator_state, decoded_tables
from offset_audit.runs.upkeep import keep_and_tidy
from offset_audit.runtime import progress
from offset_audit.runtime.session import run_report, table_writer
from offset_audit.settings import Settings
from offset_audit.snapshot_totals import snapshot_totals
from offset_audit.table_names import (
    AUDIT,
    DELETION_CANDIDATES,
    GROUP_VERDICTS,
    PARTITION_VERDICTS,
    RUNS_TABLE,
    SNAPSHOT_TABLES,
    SNAPSHOTS_TABLE,
)
from offset_audit.timestamps import datetime_of, millis_of

AUDIT_TABLES = SNAPSHOT_TABLES[AUDIT]


def written_tables(keep_state: bool = False) -> list[str]:
    """Every table an audit writes under its output folder, checked before Spark starts."""
    return [*AUDIT_TABLES, SNAPSHOTS_TABLE, RUNS_TABLE, *decoded_tables(), *(STATE_TABLES if keep_state else ())]


@dataclass
class AuditResult:
    """What an audit found, as the summary, --json and the alert exit codes need it. The offset counts
    are exclusive buckets that add up to `offsets`."""

    report: DecodeReport
    as_of: datetime
    snapshot_id: str
    group_summary: list[tuple[str, str, bool, int]] = field(default_factory=list)
    expired: int = 0
    expiring_24h: int = 0
    expiring_1_to_7d: int = 0
    expiring_later: int = 0
    not_expiring: int = 0
    offsets: int = 0
    top_candidates: list[dict] = field(default_factory=list)
    # expired, time_to_expiry_ms, group_state, expires_at and lag of every offset: what the alert
    # thresholds test and the snapshots table's totals.
    expiry: pa.Table | None = None

    def expiring_within(self, ms: int) -> int:
        """Offsets not yet expired that expire within `ms` of as_of."""
        if self.expiry is None:
            return 0
        ttl = self.expiry.column("time_to_expiry_ms")
        ahead = pc.and_(pc.invert(pc.fill_null(self.expiry.column("expired"), False)), pc.greater_equal(ttl, 0))
        return _true_count(pc.and_(ahead, pc.less(ttl, ms)))

    def expired_in_active_groups(self) -> int:
        """Expired offsets of groups that have members (not Empty or Dead): a consumer still runs there,
        and reads from its reset policy when it comes back to that partition (KIP-496's unsubscribed
        topics, or a simple group's commits)."""
        if self.expiry is None:
            return 0
        idle = pc.is_in(self.expiry.column("group_state"), pa.array(["Empty", "Dead"]))
        return _true_count(pc.and_(self.expiry.column("expired"), pc.invert(pc.fill_null(idle, False))))


def run_audit(
    spark: SparkSession,
    dump: OpenedDump | list[str],
    output: str,
    settings: Settings,
    snapshot_id: str | None = None,
    end_offsets: str | pa.Table | None = None,
    keep_decoded: bool = False,
    keep_state: str | None = None,
    locked: str | None = None,
) -> AuditResult:
    """`keep_state` "incremental" or "full": the run keeps its state under `output` (runs.incremental);
    `locked`: the home whose state lock the caller holds already (taken before Spark started). `dump`: as
    `inputs.opened.open_dump` opened it before Spark started (else its paths, opened here)."""
    dump = opened(dump, settings)
    settings = dump.settings
    report = run_report(spark, "audit", list(dump.inputs), settings)
    writer = table_writer(spark, settings)
    if keep_state is not None:
        result = audit_with_state(spark, dump, output, report, writer, keep_state, snapshot_id, end_offsets, locked)
    else:
        cluster = clusters.resolve(spark, dump, output)
        judge_as(report, cluster)
        home = clusters.home(output, cluster, settings)
        with coordinator_state(spark, dump, home, report, writer, keep_decoded, under=output) as state:
            result = _judge(spark, state, writer, output, settings, report, snapshot_id, end_offsets)
    report.finished_at = datetime.now(UTC)
    progress.begin("writing the runs row")
    write_run(spark, writer, report, output)
    keep_and_tidy(spark, output, settings, report, writer)
    return result


def audit_with_state(
    spark: SparkSession,
    dump: OpenedDump,
    output: str,
    report: DecodeReport,
    writer: TableWriter,
    mode: str,
    snapshot_id: str | None,
    end_offsets: str | pa.Table | None,
    locked: str | None = None,
) -> AuditResult:
    """The audit of a run that keeps its state: planned from the stored state, read (resumed or whole),
    judged, and the state merged after the tables are written, under the state's lock (`locked`: the
    home whose lock the caller took before Spark started; any other is taken here)."""
    if writer.delta_spark:
        raise UserError(
            "--incremental keeps its state with delta-rs, and this session writes with delta-spark; give "
            "--writer delta-rs"
        )
    storage = writer.storage
    settings = dump.settings
    input_format = settings.input.format
    facts = incremental.input_facts(spark, dump)
    cluster = clusters.resolve(spark, dump, output, found=facts.cluster_id)
    judge_as(report, cluster)
    home = clusters.home(output, cluster, settings)  # the cluster's state: DIR/state, or DIR/clusters/NAME/state
    with nullcontext() if home == locked else state_lock(home):
        progress.begin("reading the audit's state")
        stored = incremental.stored_state(home, settings)
        seen = dump.seen_files
        retention = settings.audit.delete_retention_ms
        plan = incremental.plan(stored, facts, mode, input_format, retention, home, seen=seen)
        for attempt in (1, 2):
            log = incremental.log_plan(home, plan, settings)
            report.state, report.state_reason = plan.state, plan.reason
            files = plan.resume.files if plan.resume is not None else None
            if files is None:
                report.files_note = None
            else:
                # incremental.plan works files out only from the state's listing and this run's.
                assert stored is not None and stored.seen_files is not None and seen is not None
                report.files_note = files.note(stored.seen_files, seen)
            newest = stored.newest_record_ms if plan.resume is not None and stored is not None else None
            try:
                with coordinator_state(
                    spark,
                    dump,
                    home,
                    report,
                    writer,
                    False,
                    under=output,
                    carry=True,
                    resume=plan.resume,
                    check=incremental.check_ends(plan, log),
                    newest_before=datetime_of(newest),
                    log=None if log is None else log.floors,
                    log_dir=None if log is None else log.folder,
                ) as state:
                    result = _judge(spark, state, writer, output, settings, report, snapshot_id, end_offsets)
                    progress.begin("merging the audit's state")
                    newest_ms = None if state.newest_record is None else millis_of(state.newest_record)
                    assert state.decoded is not None  # coordinator_state sets it before it yields
                    why_not = incremental.merge_state(
                        home,
                        plan,
                        facts,
                        state.decoded.carry_files,
                        state.decoded.ends,
                        newest_ms,
                        input_format,
                        report.run_id,
                        storage,
                        log,
                        state.decoded.log_files,
                        report,
                        state.decoded.last_rows,
                        seen,
                    )
                    if why_not is not None:
                        report.state_reason = why_not
                    return result
            except incremental.ReadAgain as again:
                if attempt == 2:
                    raise
                plan = incremental.Plan(stored, None, incremental.RESET, str(again), new_log=True)
                report.reset_counts()
    raise AssertionError("unreachable")


def _judge(
    spark: SparkSession,
    state: CoordinatorState,
    writer: TableWriter,
    output: str,
    settings: Settings,
    report: DecodeReport,
    snapshot_id: str | None,
    end_offsets: str | pa.Table | None,
) -> AuditResult:
    as_of = resolve_as_of(settings.audit.as_of, state.newest_record)
    snapshot = snapshot_id_for(report, state.newest_record, as_of, snapshot_id)
    ends = read_end_offsets(spark, end_offsets, writer.storage) if end_offsets is not None else None
    retention, interval = settings.audit.retention_minutes, settings.audit.check_interval_ms

    def written(frame: DataFrame, table: str) -> Written:
        progress.begin(f"judging and writing {table}")
        return write_and_read_back(spark, frame, output, table, snapshot, report, writer)

    version = broker_rules(settings, report)
    judged = verdicts.judged_offsets(state.offsets, state.groups, version)
    progress.begin("judging and writing partition_verdicts and deletion_candidates")
    # The candidates are some verdicts, other columns: written by the tasks that write the verdicts.
    candidates_of = Along(DELETION_CANDIDATES, *verdicts.candidate_rows_and_columns())
    partitions, candidates = write_along_and_read_back(
        spark,
        verdicts.partition_verdicts(judged, as_of, retention, interval, ends, version),
        output,
        PARTITION_VERDICTS,
        candidates_of,
        snapshot,
        report,
        replace(writer, spark_parquet=state.rows >= WIDE_STATE_ROWS),
    )
    groups = written(
        verdicts.group_verdicts(partitions.frame, state.groups, as_of, retention, interval, version), GROUP_VERDICTS
    )
    report.wrote(DELETION_CANDIDATES, candidates.result)
    # Its own stage: the driver reads columns of every verdict written, which at millions of offsets
    # is seconds that are not group_verdicts' (bench/fixed_cost.py sets each stage beside its floor).
    progress.begin("summarising the verdicts")
    result = AuditResult(report, as_of, snapshot)
    _summarise(result, partitions, groups, candidates)
    progress.begin(f"listing the snapshot in {SNAPSHOTS_TABLE}")
    listed = snapshot_totals(snapshot, as_of, result.expiry)
    lag = listed.lag if listed.lag is None or listed.lag < 2**63 else None
    row = {"kind": AUDIT, "snapshot_id": snapshot, "as_of": as_of, "retention_minutes": retention}
    row |= {"offsets": listed.offsets, "expired": listed.expired, "expiring_soon": listed.expiring_soon}
    row |= {"lag": lag, "groups": sum(n for *_, n in result.group_summary), "written_at": datetime.now(UTC)}
    record_snapshot(spark, output, row, report, writer)
    report.snapshot_id, report.as_of, report.retention_minutes = snapshot, as_of, settings.audit.retention_minutes
    return result


def _summarise(result: AuditResult, partitions: Written, groups: Written, candidates: Written) -> None:
    """The printed summary, from the few columns it needs brought to the driver as Arrow: three plain
    reads of the written verdicts instead of three aggregations, each several Spark stages."""
    by_state = (
        groups.columns(["group_type", "group_state", "would_delete"])
        .group_by(["group_type", "group_state", "would_delete"], use_threads=False)
        .aggregate([([], "count_all")])
        .sort_by([("group_type", "ascending"), ("group_state", "ascending")])
    )
    result.group_summary = [
        (r["group_type"], r["group_state"], r["would_delete"], r["count_all"]) for r in by_state.to_pylist()
    ]
    offsets = partitions.columns(["expired", "time_to_expiry_ms", "group_state", "expires_at", "lag"], ("group_state",))
    day = 86_400_000
    ttl = offsets.column("time_to_expiry_ms")
    expired = pc.fill_null(offsets.column("expired"), False)
    ahead = pc.and_(pc.invert(expired), pc.greater_equal(ttl, 0))
    result.offsets = offsets.num_rows
    result.expiry = offsets
    result.expired = _true_count(expired)
    result.expiring_24h = _true_count(pc.and_(ahead, pc.less(ttl, day)))
    result.expiring_1_to_7d = _true_count(pc.and_(ahead, pc.and_(pc.greater_equal(ttl, day), pc.less(ttl, 7 * day))))
    result.expiring_later = _true_count(pc.and_(ahead, pc.greater_equal(ttl, 7 * day)))
    result.not_expiring = result.offsets - result.expired - result.expiring_24h - result.expiring_1_to_7d
    result.not_expiring -= result.expiring_later
    keys = ("priority", "reason", "group_id", "topic")
    top = (
        _plain(
            candidates.columns([*keys, "lag"], ("reason", "group_id", "topic"))  # the string keys
            .group_by(list(keys), use_threads=False)
            .aggregate([([], "count_all"), ("lag", "sum")])
        )
        .rename_columns({"count_all": "partitions", "lag_sum": "lag"})
        .sort_by(
            [("priority", "ascending"), ("partitions", "descending"), ("group_id", "ascending"), ("topic", "ascending")]
        )
        .slice(0, 10)
    )
    result.top_candidates = top.select(["priority", "reason", "group_id", "topic", "partitions", "lag"]).to_pylist()


def _plain(table: pa.Table) -> pa.Table:
    """The table with its dictionary-encoded columns decoded (Arrow sorts no dictionary column)."""
    return table.cast(
        pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in table.schema])
    )


def _true_count(flags: pa.ChunkedArray | pa.Array) -> int:
    return int(pc.sum(pc.fill_null(flags, False).cast(pa.int64())).as_py() or 0)


def alerts(result, expiring_minutes: int | None, expired: bool) -> list[dict]:
    """The alert thresholds asked for (--fail-if-expiring-within, --fail-if-expired), each with whether it
    matched and its exit code."""
    alerts = []
    if expiring_minutes is not None:
        count = result.expiring_within(expiring_minutes * MINUTE_MS)
        within = format_minutes(expiring_minutes)
        alerts.append(
            {
                "name": "expiring_within",
                "within_minutes": expiring_minutes,
                "offsets": count,
                "matched": count > 0,
                "exit_code": 3,
                "message": f"{count:,} committed offsets expire within {within} of {result.as_of:%Y-%m-%d %H:%M} UTC",
            }
        )
    if expired:
        count = result.expired_in_active_groups()
        alerts.append(
            {
                "name": "expired_in_active_groups",
                "offsets": count,
                "matched": count > 0,
                "exit_code": 4,
                "message": f"{count:,} expired offsets belong to groups with members",
            }
        )
    return alerts
