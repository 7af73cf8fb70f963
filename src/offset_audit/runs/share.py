"""`offset-audit share`: orchestration only. The records are read by share_state_reads and share_fast_replay, the
share-partition state replayed by share_coordinator/ (its Spark passes in share_coordinator/state_replay.py),
the share groups' (assignment, limits) in coordinator/, the tables' shapes in outputs/share_tables."""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from offset_audit.broker_versions import BrokerVersion, parse_version
from offset_audit.constants import OFFSETS_TOPIC
from offset_audit.coordinator.replay import UNREADABLE_COLUMNS
from offset_audit.decoding.decoder import arrow_schema
from offset_audit.decoding.report import CountKey, DecodeReport
from offset_audit.decoding.share_records import QUARANTINE, SHARE_STATE
from offset_audit.errors import UserError
from offset_audit.inputs import formats
from offset_audit.inputs.broker_properties import load_broker_config
from offset_audit.inputs.dump import load_raw_records, raw_source
from offset_audit.inputs.end_offsets import end_offsets_table
from offset_audit.inputs.opened import OpenedDump, opened
from offset_audit.layouts.spec import share_state_layouts
from offset_audit.outputs import share_tables
from offset_audit.outputs.delta import write_arrow
from offset_audit.outputs.read_back import read_table
from offset_audit.outputs.runs_table import write_run
from offset_audit.outputs.share_tables import SHARE_TABLES
from offset_audit.runs import clusters, share_fast_replay, share_state_reads
from offset_audit.runs.clusters import judge_as
from offset_audit.runs.counts import fill_counts
from offset_audit.runs.decode import decode_dump
from offset_audit.runs.state import decoded_tables
from offset_audit.runtime import progress
from offset_audit.runtime.session import run_report, table_writer
from offset_audit.settings import Settings
from offset_audit.share_coordinator import state_replay
from offset_audit.share_coordinator.share_partition import DELIVERY_STATE_NAMES
from offset_audit.storage import join
from offset_audit.table_names import RUNS_TABLE

STATE_BY_NAME = {name: number for number, name in DELIVERY_STATE_NAMES.items()}


def written_tables(with_groups: bool) -> list[str]:
    """Every table a share run writes under its output folder (the decode tables too when it reads the
    groups' dump), checked before Spark starts."""
    return [*SHARE_TABLES, RUNS_TABLE, *(decoded_tables() if with_groups else [])]


@dataclasses.dataclass
class ShareResult:
    report: DecodeReport
    table_rows: dict[str, int]
    partitions: list[dict]
    groups: list[dict]
    findings: list[dict]
    problems: list[dict]


def _state_from_dump(spark: SparkSession, dump: OpenedDump, report: DecodeReport, limit: int):
    """__share_group_state records -> (replayed rows, quarantined records, the log the cut-offs name).

    `[decode] fast_path` (the default) reads and folds the records in one pass (runs/share_fast_replay.py);
    false replays them record by record (decode, group by share-partition, replay), the reference the
    fast route is tested against."""
    dump = dump.on_topic(share_state_reads.SHARE_STATE_TOPIC)
    if dump.settings.decode.fast_path:
        source = raw_source(spark, dump)
        done = share_fast_replay.replay_dump(
            spark,
            source,
            lambda: load_raw_records(spark, dump),
            limit,
            share_state_reads.SHARE_STATE_TOPIC,
        )
        _count(report, done.counts)
        replayed, quarantine = done.replayed, done.quarantine
    else:
        raw = load_raw_records(spark, dump)
        decoded = share_state_reads.decode_share_state(raw, share_state_reads.SHARE_STATE_TOPIC).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        try:
            grouped = decoded.groupBy(*CountKey._fields).count().collect()
            _count(report, Counter({CountKey(*(r[k] for k in CountKey._fields)): r["count"] for r in grouped}))
            quarantined = decoded.where(F.col("record_class") == QUARANTINE)
            quarantine = quarantined.select(*share_fast_replay.QUARANTINE_SCHEMA.names).toArrow()
            replayed = state_replay.replay_share_state(decoded, limit).toArrow()
        finally:
            decoded.unpersist()
    report.bytes_skipped = pc.sum(quarantine.column("skipped_bytes")).as_py() or 0
    return replayed, quarantine, share_state_reads.SHARE_STATE_TOPIC


def _count(report: DecodeReport, counts: Counter) -> None:
    """Counts keyed as the decode stage keys them (CountKey): by class, and by record type,
    value version, layout era and tombstone, so the runs row reads as decode's and audit's do."""
    report.records_read = sum(counts.values())
    report.by_class = {SHARE_STATE: 0, QUARANTINE: 0}
    fill_counts(report, counts, share_state_layouts())


def _state_from_kip932(spark: SparkSession, dump: OpenedDump, report: DecodeReport, limit: int):
    """The draft's JSON lines -> (replayed rows, lines that are no record, None: each share-partition's
    state is in its own topic's log)."""
    settings = dump.settings
    lines = share_state_reads.read_kip932_lines(spark, [u.path for u in dump.log_units], dump.storage)
    lines = lines.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        errors = lines.where(F.col("error").isNotNull())
        report.records_read = lines.count()
        bad = errors.count()
        report.by_class = {SHARE_STATE: report.records_read - bad, QUARANTINE: bad}
        quarantine = errors.select(
            F.lit(None).cast("int").alias("source_partition"),
            F.col("line").alias("source_offset"),
            F.lit(None).cast("bigint").alias("record_timestamp_ms"),
            F.lit(None).cast("smallint").alias("record_type"),
            F.lit(None).cast("smallint").alias("value_version"),
            F.concat(
                F.col("error"), F.lit(" ["), F.col("source_file"), F.lit(", line "), F.col("line"), F.lit("]")
            ).alias("reason"),
            F.lit(None).cast("binary").alias("key"),
            F.encode("text", "utf-8").alias("value"),
            F.lit(None).cast("bigint").alias("skipped_bytes"),
        ).toArrow()
        replayed = state_replay.replay_kip932(lines, limit, settings.decode.fast_path).toArrow()
    finally:
        lines.unpersist()
    return replayed, quarantine, None


def _observations(partition_rows: list[dict], batches: pa.Table, delivery_count_limit: int) -> dict[str, list]:
    """Each share group's partitions as the limits check reads them: in-flight records from the
    recovered state, and the batches at the delivery limit (the only ones that check looks at)."""
    from offset_audit.coordinator.share_limits import SharePartitionObservation
    from offset_audit.share_coordinator.share_partition import StateBatch

    at_limit: dict[tuple, list] = {}
    for b in batches.filter(pc.greater_equal(batches.column("delivery_count"), delivery_count_limit)).to_pylist():
        state = STATE_BY_NAME.get(b["state"])
        if state is None:  # an unknown state number: reported in share_problems already
            continue
        key = (b["group_id"], b["topic"] or b["topic_id"], b["partition"])
        at_limit.setdefault(key, []).append(StateBatch(b["first_offset"], b["last_offset"], state, b["delivery_count"]))
    observations: dict[str, list] = {}
    for r in partition_rows:
        topic = r["topic"] or r["topic_id"]
        in_flight = (r["end_offset"] or 0) - (r["start_offset"] or 0)
        observations.setdefault(r["group_id"], []).append(
            SharePartitionObservation(
                topic,
                r["partition"],
                in_flight_records=max(in_flight, 0),
                state_batches=tuple(at_limit.get((r["group_id"], topic, r["partition"]), ())),
            )
        )
    return observations


def check_share_input_format(input_format: str) -> None:
    """The text dumps show __consumer_offsets records only, never __share_group_state."""
    if formats.named(input_format).text_dump:
        raise UserError(
            "share reads __share_group_state from a Kafka-source snapshot, Delta, live Kafka or its log "
            "segments, or the KIP-932 draft's records with --input-format kip932-json; the "
            f"{input_format} text shows __consumer_offsets records only (give it as --groups-input)"
        )


def groups_dump_settings(settings: Settings) -> Settings:
    """How the --groups-input dump is read: --input-format and --topic describe the share-state input,
    so the groups dump's format is detected and its topic is __consumer_offsets."""
    return settings.replaced("input", format="auto", topic=OFFSETS_TOPIC)


def effective_delivery_limit(effective) -> int:
    """group.share.delivery.count.limit from the broker's config (its default when not set)."""
    return int(effective["group.share.delivery.count.limit"])


def share_broker_version(text: str) -> BrokerVersion:
    """The broker version whose share-group rules apply (the assignor); share groups came with 4.0."""
    version = parse_version(text)
    if version.number < (4, 0, 0):
        raise UserError(f"share groups came with Kafka 4.0: kafka version {version.label} has none to audit")
    return version


def run_share(
    spark: SparkSession,
    dump: OpenedDump | list[str],
    output: str,
    settings: Settings,
    delivery_count_limit: int | None = None,
    groups_inputs: OpenedDump | list[str] | None = None,
    end_offsets: str | pa.Table | None = None,
    broker_config: str | None = None,
    bootstrap: str = '"$BOOTSTRAP_SERVER"',
) -> ShareResult:
    """Replay every share-partition's state, audit the share groups, write the share tables. `dump` and
    `groups_inputs` (--groups-input): as `inputs.opened.open_dump` opened them before Spark started (else
    their paths, opened here)."""
    from offset_audit.coordinator import share_findings, share_groups
    from offset_audit.coordinator import share_limits as limits
    from offset_audit.share_coordinator import state_findings
    from offset_audit.views.share_group_rows import share_group_rows

    dump = opened(dump, settings, share=True)
    settings = dump.settings
    groups = opened(groups_inputs, groups_dump_settings(settings)) if groups_inputs else None
    writer = table_writer(spark, settings)
    storage = writer.storage
    report = run_report(spark, "share", list(dump.inputs), settings)
    cluster = clusters.resolve(spark, dump, output)
    judge_as(report, cluster)
    # A fleet's first cluster writes its share tables at DIR itself, every other one under DIR/clusters/NAME.
    home = clusters.home(output, cluster, settings)
    under = home[len(output) :].strip("/")
    named = (lambda name: f"{under}/{name}") if under else (lambda name: name)
    version = share_broker_version(settings.kafka.version)
    report.kafka_version = version.label
    limits_config = load_broker_config(broker_config) if broker_config else {}
    setting_findings = limits.check_settings(limits_config)
    try:
        effective = limits.effective_limits(limits_config)
    except limits.InvalidBrokerConfig:
        # The bad settings are reported as findings; the group checks use the valid ones and defaults.
        effective = limits.limits_despite_errors(limits_config)
    if delivery_count_limit is None:
        delivery_count_limit = effective_delivery_limit(effective)
    check_share_input_format(settings.input.format)
    progress.begin(f"replaying share-partition state ({settings.input.format})")
    if formats.input_format(settings).share_state:
        replayed, quarantine, log = _state_from_kip932(spark, dump, report, delivery_count_limit)
    else:
        replayed, quarantine, log = _state_from_dump(spark, dump, report, delivery_count_limit)
    topic_names: list[tuple[str, str]] = []
    group_rows: list[dict] = []
    if groups is not None:
        group_report = DecodeReport.start("share", list(groups.inputs), settings.input.format, "")
        group_report.run_id = report.run_id  # one run: its decode tables are named in its runs row too
        decode_dump(spark, groups, join(home, "decoded"), group_report, writer)
        report.table_versions.update({named(f"decoded/{n}"): v for n, v in group_report.table_versions.items()})
        modern = read_table(spark, join(home, "decoded"), "modern_group_records", storage)
        share_records = modern.where(F.col("group_type") == "share").orderBy("source_partition", "source_offset")
        group_rows = [r.asDict(recursive=True) for r in share_records.collect()]
        topic_names = [
            (t["topic_id"], t["topic_name"]) for r in group_rows for t in (r.get("topics") or []) if t["topic_name"]
        ]
    progress.begin("auditing share-partitions and share groups")
    tables = share_tables.with_topic_names(share_tables.split_replay(replayed), topic_names)
    if end_offsets is not None:
        ends = end_offsets_table(end_offsets, storage)
        tables["share_partitions"] = share_tables.with_share_lag(tables["share_partitions"], ends)
    tables["share_cleanup"] = share_tables.cleanup_cutoffs(tables["share_partitions"], log)
    # Everything is worked out before the first table is written: a finding that fails stops the run
    # with every table as it was, not half of them new.
    partition_rows = tables["share_partitions"].to_pylist()
    found_groups = share_groups.replay_share_groups(group_rows)
    has_state = {r["group_id"] for r in partition_rows}
    group_table = share_group_rows(found_groups, has_state, bootstrap)
    observations = _observations(partition_rows, tables["share_state_batches"], delivery_count_limit)
    findings = share_findings.broker_setting_findings(setting_findings)
    findings += share_findings.assignment_findings(found_groups, version)
    findings += share_findings.limit_findings(found_groups, observations, effective)
    findings += state_findings.moved_back_findings(partition_rows)
    report.format_notes.update(state_findings.writer_notes(partition_rows, version))
    # The key columns of __consumer_offsets records whose value was unreadable: share state keys are
    # not among them, so they stay null.
    tables["quarantine"] = share_tables.shaped(quarantine, "quarantine", absent=tuple(UNREADABLE_COLUMNS[1:]))
    tables["share_groups"] = pa.Table.from_pylist(group_table, arrow_schema("share_groups"))
    tables["share_findings"] = pa.Table.from_pylist(findings, arrow_schema("share_findings"))
    problems = tables["share_problems"].slice(0, 20).to_pylist()
    progress.begin(f"writing {len(SHARE_TABLES)} share tables")
    for name in SHARE_TABLES:
        rows = share_tables.with_cluster(tables[name], report.cluster)
        written = write_arrow(spark, rows, join(home, name), writer, run_id=report.run_id)
        report.wrote(named(name), written)
    report.finished_at = datetime.now(UTC)
    progress.begin("writing the runs row")
    write_run(spark, writer, report, output)  # last: a run without its row did not finish
    return ShareResult(report, dict(report.table_rows), partition_rows, group_table, findings, problems)
