"""The whatif command end to end: the coordinator's state judged under other retentions and at other
times, each scenario's offsets and groups deleted, accumulating across runs of one snapshot."""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from offset_audit.coordinator import verdicts
from offset_audit.decoding.report import DecodeReport
from offset_audit.inputs.opened import OpenedDump, opened
from offset_audit.outputs.delta import TableWriter
from offset_audit.outputs.read_back import read_table
from offset_audit.outputs.runs_table import write_run
from offset_audit.outputs.snapshot_tables import own_snapshot, record_snapshot, write_snapshot
from offset_audit.runs.clusters import home, judge_as, resolve
from offset_audit.runs.snapshots import resolve_as_of, snapshot_id_for
from offset_audit.runs.state import CoordinatorState, broker_rules, coordinator_state, decoded_tables
from offset_audit.runs.upkeep import keep_and_tidy
from offset_audit.runtime import progress
from offset_audit.runtime.session import run_report, table_writer
from offset_audit.settings import Settings
from offset_audit.storage import Storage
from offset_audit.table_names import RUNS_TABLE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE, WHATIF, WHATIF_GROUPS, WHATIF_TABLE

WHATIF_TABLES = SNAPSHOT_TABLES[WHATIF]


def written_tables() -> list[str]:
    """Every table a what-if writes under its output folder, checked before Spark starts."""
    return [*WHATIF_TABLES, SNAPSHOTS_TABLE, RUNS_TABLE, *decoded_tables()]


def run_whatif(
    spark: SparkSession,
    dump: OpenedDump | list[str],
    output: str,
    settings: Settings,
    retentions: list[int],
    as_of_specs: list[str],
    snapshot_id: str | None = None,
    per_group: bool = False,
    keep_decoded: bool = False,
) -> tuple[DecodeReport, list[dict]]:
    """`dump`: as `inputs.opened.open_dump` opened it before Spark started (else its paths, opened here)."""
    dump = opened(dump, settings)
    settings = dump.settings
    report = run_report(spark, WHATIF, list(dump.inputs), settings)
    writer = table_writer(spark, settings)
    cluster = resolve(spark, dump, output)
    judge_as(report, cluster)
    cluster_home = home(output, cluster, settings)
    with coordinator_state(spark, dump, cluster_home, report, writer, keep_decoded, under=output) as state:
        return _compare(spark, state, writer, output, settings, report, retentions, as_of_specs, snapshot_id, per_group)


def _compare(
    spark: SparkSession,
    state: CoordinatorState,
    writer: TableWriter,
    output: str,
    settings: Settings,
    report: DecodeReport,
    retentions: list[int],
    as_of_specs: list[str],
    snapshot_id: str | None,
    per_group: bool,
) -> tuple[DecodeReport, list[dict]]:
    points = [resolve_as_of(spec, state.newest_record) for spec in as_of_specs]
    snapshot = snapshot_id_for(report, state.newest_record, points[0], snapshot_id)
    version = broker_rules(settings, report)
    judged = verdicts.judged_offsets(state.offsets, state.groups, version)
    progress.begin(f"judging {len(retentions) * len(points)} what-if scenarios")
    groups = verdicts.whatif_groups(judged, state.groups, retentions, points, version)
    groups = groups.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        table = verdicts.whatif(groups)
        storage = writer.storage
        rows = [r.asDict() for r in table.collect()]
        write_snapshot(
            _with_earlier_scenarios(spark, table, output, WHATIF_TABLE, snapshot, report, storage),
            output,
            WHATIF_TABLE,
            snapshot,
            report,
            writer,
        )
        if per_group:
            kept = _with_earlier_scenarios(spark, groups, output, WHATIF_GROUPS, snapshot, report, storage)
            write_snapshot(kept, output, WHATIF_GROUPS, snapshot, report, writer)
    finally:
        groups.unpersist()
    row = {"kind": WHATIF, "snapshot_id": snapshot, "as_of": points[0], "written_at": datetime.now(UTC)}
    record_snapshot(spark, output, row, report, writer)
    report.snapshot_id, report.as_of = snapshot, points[0]
    report.finished_at = datetime.now(UTC)
    progress.begin("writing the runs row")
    write_run(spark, writer, report, output)
    keep_and_tidy(spark, output, settings, report, writer)
    return report, rows


SCENARIO = ["retention_minutes", "as_of"]


def _with_earlier_scenarios(
    spark: SparkSession,
    frame: DataFrame,
    output: str,
    table: str,
    snapshot_id: str,
    report: DecodeReport,
    storage: Storage,
) -> DataFrame:
    """This run's scenarios plus the snapshot's earlier ones that it does not judge again: what-if runs
    on one dump accumulate (1d and 7d today, 30d tomorrow), and a scenario run again is replaced. The
    snapshot's rows are still replaced in one commit, so readers never see half of it; another
    cluster's snapshot of the same id is neither read nor replaced."""
    from offset_audit.views.audit_folder import has_table

    if not has_table(output, table, storage):
        return frame
    earlier = own_snapshot(read_table(spark, output, table, storage), snapshot_id, report)
    again = frame.select(*SCENARIO).distinct()
    return frame.unionByName(earlier.drop("snapshot_id").join(again, SCENARIO, "left_anti").select(*frame.columns))
