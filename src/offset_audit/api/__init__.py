"""The audit as a library: the runs the `offset-audit` command makes, on a SparkSession the caller holds
(a notebook's, a Databricks job's, spark-submit's). The command is a thin caller of this module.

    from offset_audit import api

    raw = api.read_dump(spark, "dump/")                         # raw records of any dump format
    audit = api.audit(spark, "dump/", retention="7d")           # judged as the broker would
    audit.partition_verdicts.where("expired").show()
    scenarios = api.whatif(spark, "dump/", retention=["1d", "7d", "30d"]).whatif
    api.write(audit, "s3://bucket/audits/eu")                   # an audit folder the CLI's views read

Every function checks its options and its inputs before Spark is asked anything (a mistake is one
sentence, `offset_audit.errors.UserError`); in place of the session, a run takes a function that starts
one from its checked settings and inputs, called only once every check has passed.

A run works in an output folder: `output=` names one (the command's --output), or a temporary folder of
the driver holds the run's tables, which `write` then copies to an audit folder or to catalog tables. On
a cluster give `output=` a folder every executor reaches (an object store, a mount), since the executors
write their part of the tables themselves.

A result's tables are DataFrames read lazily from that folder, the run's own snapshot only: an audit
folder keeps earlier snapshots for history. The session's UTC time zone and Parquet timestamp type are
set for the run only and given back afterwards.

May import: the top-level modules, layouts, inputs, decoding, coordinator, share_coordinator, outputs, views,
runtime, runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from offset_audit.decoding.report import DecodeReport
from offset_audit.errors import UserError
from offset_audit.session_kind import is_remote, is_session
from offset_audit.settings import Settings
from offset_audit.storage import for_settings, join, normalize
from offset_audit.table_names import (
    DELETION_CANDIDATES,
    GROUP_VERDICTS,
    OFFSET_HISTORY,
    PARTITION_VERDICTS,
    WHATIF_GROUPS,
    WHATIF_TABLE,
)

if TYPE_CHECKING:
    from offset_audit.inputs.opened import OpenedDump

__all__ = [
    "AuditRun",
    "DecodeRun",
    "HistoryRun",
    "Run",
    "ShareRun",
    "WhatIfRun",
    "audit",
    "decode",
    "history",
    "options",
    "plan_audit",
    "read_dump",
    "register",
    "run_planned_audit",
    "share",
    "whatif",
    "write",
]

Dump = str | os.PathLike | Sequence[str | os.PathLike]
# The session a run uses, or what starts one from the run's checked settings and its dump (as preflight
# opened it: `inputs.opened.OpenedDump`, its paths as `.inputs`), called only once every check has passed
# (the command starts its own session so: a mistake never costs a JVM).
Session = SparkSession | Callable[[Settings, "OpenedDump"], SparkSession]


def _session(spark: Session, dump: OpenedDump) -> SparkSession:
    return spark if is_session(spark) else spark(dump.settings, dump)  # type: ignore[return-value,operator]


def options(
    *,
    conf: str | os.PathLike | None = None,
    format: str | None = None,
    partition: int | None = None,
    topic: str | None = None,
    cluster: str | None = None,
    bootstrap_servers: str | None = None,
    kafka_version: str | None = None,
    retention: int | str | None = None,
    as_of: str | None = None,
    keep_snapshots: int | None = None,
    writer: str | None = None,
    fast_path: bool | None = None,
    storage_options: dict[str, str] | None = None,
) -> Settings:
    """A run's settings as the command builds them: the defaults (docs/settings.md), then `conf` (a TOML file as
    --conf takes), then these (None: the file's value). `retention` is minutes or a duration (7d)."""
    from offset_audit.durations import parse_minutes
    from offset_audit.runtime.config import load_settings

    return load_settings(
        _fspath(conf),
        input_format=format,
        partition=partition,
        topic=topic,
        cluster=cluster,
        bootstrap_servers=bootstrap_servers,
        kafka_version=kafka_version,
        retention_minutes=None if retention is None else parse_minutes(retention, "retention"),
        as_of=as_of,
        keep_snapshots=keep_snapshots,
        writer=writer,
        fast_path=fast_path,
        storage=storage_options,
    )


def _fspath(path: str | os.PathLike | None) -> str | None:
    return None if path is None else os.fspath(path)


def _paths(dump: Dump | None) -> list[str]:
    if dump is None:
        return []
    items = [dump] if isinstance(dump, str | os.PathLike) else list(dump)
    return [normalize(os.fspath(item)) for item in items]


def _settings(settings: Settings | None, given: dict[str, Any]) -> Settings:
    if settings is not None:
        if any(value is not None for value in given.values()):
            raise UserError(f"give settings= or {', '.join(sorted(given))}, not both")
        return settings
    return options(**{name: value for name, value in given.items() if value is not None})


def read_dump(
    spark: SparkSession,
    dump: Dump | DataFrame,
    *,
    format: str | None = None,
    partition: int | None = None,
    topic: str | None = None,
    storage_options: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> DataFrame:
    """The dump's raw records, as the audit decodes them: source_topic, source_partition, source_offset,
    record_timestamp_ms, key, value (a null value is a tombstone), and for log dumps the reader's
    source_error, source_note, skipped_bytes, transaction, copy_state and producer_id. Any format the
    command reads, several inputs merged as copies where they overlap; or a DataFrame the caller has of
    what Spark's Kafka source gives (a snapshot table of the topic), put in the same columns."""
    from offset_audit.inputs.dump import load_raw_records
    from offset_audit.inputs.kafka_source import to_raw_records
    from offset_audit.runtime import preflight

    if isinstance(dump, DataFrame):
        return to_raw_records(dump)
    given = {"format": format, "partition": partition, "topic": topic}
    settings = _settings(settings, given | {"storage_options": storage_options})
    opened = preflight.check_inputs(_paths(dump), settings)
    with _run_conf(spark):
        return load_raw_records(spark, opened)


def register(spark: SparkSession) -> None:
    """Each file dump format as a Spark data source of `spark`, once a session: afterwards
    `spark.read.format("kafka-log").load("dump/")` (and kafka-dump-log, kafka-console, kafka-share-state)
    reads a dump as read_dump's routes do (docs/library.md)."""
    from offset_audit.inputs.data_sources import register as register_sources

    register_sources(spark)


@contextmanager
def _run_conf(spark: SparkSession) -> Iterator[None]:
    from offset_audit.runtime.session import REQUIRED, check_server_package, scoped_conf

    if is_remote(spark):  # the server's Python workers decode: they need this package
        check_server_package(spark)
    with scoped_conf(spark, REQUIRED):
        yield


@dataclass
class Run:
    """A run's tables under `folder`, the run's own snapshot of each, as lazy DataFrames; `report`
    counts what was read, decoded, skipped and quarantined (and reconciles)."""

    spark: SparkSession
    folder: str
    report: DecodeReport
    settings: Settings
    inputs: list[str]
    snapshot_id: str | None
    tables: tuple[str, ...]
    temporary: bool = False

    def place(self, name: str) -> str:
        """The folder a table of the run is in."""
        return self.folder

    def table(self, name: str) -> DataFrame:
        """One of `tables`, read from where the run wrote it (delta-spark where the session has it, else
        the table's live Parquet files)."""
        from offset_audit.outputs.read_back import read_table
        from offset_audit.outputs.snapshot_tables import own_snapshot

        if name not in self.tables:
            raise UserError(f"this run wrote no table {name!r}; its tables are {', '.join(self.tables)}")
        frame = read_table(self.spark, self.place(name), name, for_settings(self.settings))
        return frame if self.snapshot_id is None else own_snapshot(frame, self.snapshot_id, self.report)

    def close(self) -> None:
        """Removes a temporary folder (a run given no output); its DataFrames cannot be read after."""
        if self.temporary:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class DecodeRun(Run):
    """The decode tables (offset_commits, group_metadata, ..., quarantine) of the whole dump."""


@dataclass
class AuditRun(Run):
    """An audit: per-partition and per-group verdicts and deletion candidates; `result` holds the
    summary's counts (expired, expiring within 24 h, ...) and the alert thresholds' inputs."""

    result: Any = None

    @property
    def partition_verdicts(self) -> DataFrame:
        return self.table(PARTITION_VERDICTS)

    @property
    def group_verdicts(self) -> DataFrame:
        return self.table(GROUP_VERDICTS)

    @property
    def deletion_candidates(self) -> DataFrame:
        return self.table(DELETION_CANDIDATES)


@dataclass
class WhatIfRun(Run):
    """What-if scenarios: one row per (retention, as_of) in `whatif`, every group's in `whatif_groups`
    (per_group=True); `scenarios` is the summary's rows."""

    scenarios: list[dict] = field(default_factory=list)

    @property
    def whatif(self) -> DataFrame:
        return self.table(WHATIF_TABLE)

    @property
    def whatif_groups(self) -> DataFrame:
        return self.table(WHATIF_GROUPS)


@dataclass
class HistoryRun(Run):
    """Every commit, state change and deletion of the log with its cause (offset_history)."""

    result: Any = None

    @property
    def offset_history(self) -> DataFrame:
        return self.table(OFFSET_HISTORY)


def _output(output: str | os.PathLike | None) -> tuple[str, bool]:
    if output is not None:
        return normalize(os.fspath(output)), False
    return tempfile.mkdtemp(prefix="offset-audit-"), True


def decode(
    spark: Session,
    dump: Dump,
    *,
    output: str | os.PathLike | None = None,
    format: str | None = None,
    partition: int | None = None,
    topic: str | None = None,
    cluster: str | None = None,
    fast_path: bool | None = None,
    storage_options: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> DecodeRun:
    """Every record decoded into the decode tables (quarantined where it cannot be), as `decode` does."""
    from offset_audit.decoding.decoder import TABLES
    from offset_audit.runs.clusters import before_start
    from offset_audit.runs.decode import run_decode, written_tables
    from offset_audit.runtime import preflight

    given: dict[str, Any] = {"format": format, "partition": partition, "topic": topic}
    given |= {"cluster": cluster, "fast_path": fast_path, "storage_options": storage_options}
    settings, inputs = _settings(settings, given), _paths(dump)
    folder, temporary = _output(output)
    with _discarded_on_failure(folder, temporary):
        opened = preflight.check_inputs(inputs, settings)
        settings = opened.settings
        before_start(opened, folder)
        preflight.check_output(folder, written_tables(), settings)
        spark = _session(spark, opened)
        with _run_conf(spark):
            report = run_decode(spark, opened, folder, settings)
    return DecodeRun(spark, folder, report, settings, inputs, None, tuple(TABLES), temporary)


@dataclass(frozen=True)
class AuditPlan:
    """An audit checked before Spark starts (`plan_audit`): what `run_audit` takes."""

    dump: OpenedDump
    output: str
    settings: Settings
    snapshot_id: str | None
    end_offsets: pa.Table | None
    keep_decoded: bool
    keep_state: str | None
    temporary: bool
    locked: str | None = None

    @property
    def inputs(self) -> list[str]:
        return list(self.dump.inputs)


def plan_audit(
    dump: Dump,
    *,
    output: str | os.PathLike | None = None,
    settings: Settings,
    snapshot_id: str | None = None,
    end_offsets: str | os.PathLike | None = None,
    start_offsets: str | os.PathLike | None = None,
    keep_decoded: bool = False,
    keep_state: str | None = None,
) -> AuditPlan:
    """Everything about an audit that can be refused before Spark starts: the inputs, --as-of, the end
    offsets (read here whole, or asked of the cluster), the output folder and the cluster's name in it,
    and, for a run that keeps its state, the state (the home whose lock the run will take)."""
    from offset_audit.runs.audit import written_tables
    from offset_audit.runs.clusters import before_start
    from offset_audit.runs.snapshots import check_as_of
    from offset_audit.runtime import preflight

    inputs = _paths(dump)
    folder, temporary = _output(output)
    with _discarded_on_failure(folder, temporary):
        opened = preflight.check_inputs(inputs, settings)
        settings = opened.settings
        check_as_of(settings.audit.as_of, settings.input.format)
        ends = preflight.check_end_offsets(
            _fspath(end_offsets),
            settings,
            _fspath(start_offsets),
        )
        preflight.check_output(folder, written_tables(keep_state is not None), settings)
        before_start(opened, folder)
        locked = None
        if keep_state is not None:
            from offset_audit.runs.incremental import check_before_start

            locked = check_before_start(opened, folder, keep_state, keep_decoded)
    return AuditPlan(opened, folder, settings, snapshot_id, ends, keep_decoded, keep_state, temporary, locked)


def run_planned_audit(spark: SparkSession, plan: AuditPlan, *, lock_held: bool = False) -> AuditRun:
    """The audit `plan` describes, on `spark`; with `lock_held`, the caller holds the state's lock
    (the command takes it before Spark starts, so that a second run is refused at once)."""
    from offset_audit.runs.audit import AUDIT_TABLES, run_audit

    with ExitStack() as held:
        if plan.keep_state is not None and not lock_held:
            from offset_audit.outputs.audit_state import state_lock

            assert plan.locked is not None  # plan_audit sets it whenever keep_state is set
            held.enter_context(state_lock(plan.locked))
        with _discarded_on_failure(plan.output, plan.temporary), _run_conf(spark):
            result = run_audit(
                spark,
                plan.dump,
                plan.output,
                plan.settings,
                snapshot_id=plan.snapshot_id,
                end_offsets=plan.end_offsets,
                keep_decoded=plan.keep_decoded,
                keep_state=plan.keep_state,
                locked=plan.locked if plan.keep_state is not None else None,
            )
    return AuditRun(
        spark,
        plan.output,
        result.report,
        plan.settings,
        plan.inputs,
        result.snapshot_id,
        AUDIT_TABLES,
        plan.temporary,
        result=result,
    )


def audit(
    spark: Session,
    dump: Dump,
    *,
    output: str | os.PathLike | None = None,
    retention: int | str | None = None,
    as_of: str | None = None,
    kafka_version: str | None = None,
    end_offsets: str | os.PathLike | None = None,
    start_offsets: str | os.PathLike | None = None,
    snapshot_id: str | None = None,
    cluster: str | None = None,
    format: str | None = None,
    incremental: bool = False,
    keep_decoded: bool = False,
    storage_options: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> AuditRun:
    """Every committed offset and group judged as the broker's expiry sweep would (the `audit` command).
    `retention`: offsets.retention.minutes, minutes or a duration (default 7d); `as_of`: latest (the
    newest record), now, or an ISO timestamp; `incremental`: keep the coordinator's state in the output
    folder and read only what is new from the second run on (an `output` is needed)."""
    given: dict[str, Any] = {"retention": retention, "as_of": as_of, "kafka_version": kafka_version, "cluster": cluster}
    given |= {"format": format, "storage_options": storage_options}
    settings = _settings(settings, given)
    if incremental and output is None:
        raise UserError("incremental=True keeps the audit's state in its output folder: give output=")
    plan = plan_audit(
        dump,
        output=output,
        settings=settings,
        snapshot_id=snapshot_id,
        end_offsets=end_offsets,
        start_offsets=start_offsets,
        keep_decoded=keep_decoded,
        keep_state="incremental" if incremental else None,
    )
    return run_planned_audit(_session(spark, plan.dump), plan)


def whatif(
    spark: Session,
    dump: Dump,
    *,
    retention: Sequence[int | str] | str,
    as_of: Sequence[str] | str = ("latest",),
    output: str | os.PathLike | None = None,
    per_group: bool = False,
    snapshot_id: str | None = None,
    kafka_version: str | None = None,
    cluster: str | None = None,
    format: str | None = None,
    keep_decoded: bool = False,
    storage_options: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> WhatIfRun:
    """What would expire, and which groups would go, under each retention at each as_of (`whatif`).
    `retention`: minutes or durations, a list or "1d,7d,30d"."""
    from offset_audit.runs.clusters import before_start
    from offset_audit.runs.snapshots import check_as_of
    from offset_audit.runs.whatif import run_whatif, written_tables
    from offset_audit.runtime import preflight

    given = {"kafka_version": kafka_version, "cluster": cluster, "storage_options": storage_options}
    settings, inputs = _settings(settings, given | {"format": format}), _paths(dump)
    listed = retention if isinstance(retention, str) else ",".join(str(r) for r in retention)
    minutes = preflight.check_retention_list(listed, "retention")
    points = [as_of] if isinstance(as_of, str) else list(as_of)
    folder, temporary = _output(output)
    with _discarded_on_failure(folder, temporary):
        opened = preflight.check_inputs(inputs, settings)
        settings = opened.settings
        for point in points:
            check_as_of(point, settings.input.format)
        preflight.check_output(folder, written_tables(), settings)
        before_start(opened, folder)
        spark = _session(spark, opened)
        with _run_conf(spark):
            report, rows = run_whatif(
                spark, opened, folder, settings, minutes, points, snapshot_id, per_group=per_group,
                keep_decoded=keep_decoded,
            )  # fmt: skip
    tables = (WHATIF_TABLE, WHATIF_GROUPS) if per_group else (WHATIF_TABLE,)
    return WhatIfRun(spark, folder, report, settings, inputs, report.snapshot_id, tables, temporary, scenarios=rows)


def history(
    spark: Session,
    dump: Dump | None = None,
    *,
    output: str | os.PathLike | None = None,
    groups: Sequence[str] = (),
    topic: str | None = None,
    audit_folder: str | os.PathLike | None = None,
    log_generation: int | None = None,
    snapshot_id: str | None = None,
    retention: int | str | None = None,
    kafka_version: str | None = None,
    cluster: str | None = None,
    format: str | None = None,
    storage_options: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> HistoryRun:
    """Why a group lost its offsets: every commit, state change and deletion of the log with its cause
    (`history`). `topic` keeps one topic of the groups; `audit_folder` reads the records incremental
    audits kept there instead of a dump (their history goes to AUDIT/history unless `output` says)."""
    from offset_audit.runs.clusters import before_start
    from offset_audit.runs.history import run_history, written_tables
    from offset_audit.runtime import preflight

    given: dict[str, Any] = {"retention": retention, "kafka_version": kafka_version, "cluster": cluster}
    given |= {"format": format, "storage_options": storage_options}
    settings, inputs = _settings(settings, given), _paths(dump)
    kept = None
    if audit_folder is not None:
        from offset_audit.outputs.folder_layout import HISTORY
        from offset_audit.outputs.kept_log import kept_log
        from offset_audit.runs.clusters import kept_home

        if inputs:
            raise UserError("give the dump or an audit folder (audit_folder=), not both")
        folder = normalize(os.fspath(audit_folder))
        kept = kept_log(kept_home(folder, settings), log_generation, for_settings(settings))
        if output is None:
            output = join(folder, HISTORY)
    elif log_generation is not None:
        raise UserError("log_generation picks a log of an audit folder; give audit_folder=")
    folder, temporary = _output(output)
    with _discarded_on_failure(folder, temporary):
        if kept is None:
            opened = preflight.check_inputs(inputs, settings)
            settings = opened.settings
            before_start(opened, folder)
        else:  # the records the audits kept: read as kept, nothing listed
            from offset_audit.inputs.opened import OpenedDump

            kept_settings = settings.replaced("input", format=kept.input_format)
            opened = OpenedDump((kept.path,), (kept.path,), kept_settings, for_settings(settings))
        preflight.check_output(folder, written_tables(), settings)
        spark = _session(spark, opened)
        with _run_conf(spark):
            result = run_history(
                spark, opened, folder, settings, groups=list(groups), topic=topic, snapshot_id=snapshot_id, kept=kept
            )
    report = result.report
    return HistoryRun(
        spark, folder, report, settings, inputs, result.snapshot_id, (OFFSET_HISTORY,), temporary, result=result
    )


@dataclass
class ShareRun(Run):
    """Share groups (KIP-932): each share-partition's state, the cleanup cut-offs, the groups and what was
    found (`share_partitions`, `share_state_batches`, `share_problems`, `share_cleanup`, `share_groups`,
    `share_findings`, `quarantine`); `result` holds the summary's rows. A fleet's second cluster keeps
    its share tables under FOLDER/clusters/NAME, which `table` reads."""

    result: Any = None

    def place(self, name: str) -> str:
        """Where the report says the run wrote the table."""
        written = [path for path in self.report.table_rows if path == name or path.endswith(f"/{name}")]
        return join(self.folder, written[0][: -len(name)]) if written else self.folder


def share(
    spark: Session,
    dump: Dump,
    *,
    output: str | os.PathLike | None = None,
    groups_dump: Dump | None = None,
    delivery_count_limit: int | None = None,
    end_offsets: str | os.PathLike | None = None,
    start_offsets: str | os.PathLike | None = None,
    broker_config: str | os.PathLike | None = None,
    kafka_version: str | None = None,
    cluster: str | None = None,
    format: str | None = None,
    bootstrap_servers: str | None = None,
    storage_options: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> ShareRun:
    """Share groups (`share`): the __share_group_state dump replayed to each share-partition's state,
    and, with `groups_dump` (a __consumer_offsets dump with the share groups' records), the groups'
    assignments and limits checked. `broker_config`: a broker's server.properties."""
    from offset_audit.outputs.share_tables import SHARE_TABLES
    from offset_audit.runs.clusters import before_start
    from offset_audit.runs.share import (
        check_share_input_format,
        groups_dump_settings,
        run_share,
        share_broker_version,
        written_tables,
    )
    from offset_audit.runs.share_state_reads import SHARE_STATE_TOPIC
    from offset_audit.runtime import preflight
    from offset_audit.views.kafka_commands import DEFAULT_BOOTSTRAP

    given: dict[str, Any] = {"kafka_version": kafka_version, "cluster": cluster, "format": format}
    given |= {"bootstrap_servers": bootstrap_servers, "storage_options": storage_options}
    if settings is None:
        given["topic"] = SHARE_STATE_TOPIC
    settings, inputs, groups = _settings(settings, given), _paths(dump), _paths(groups_dump)
    share_broker_version(settings.kafka.version)
    folder, temporary = _output(output)
    with _discarded_on_failure(folder, temporary):
        opened = preflight.check_inputs(inputs, settings, share=True)
        settings = opened.settings
        check_share_input_format(settings.input.format)
        groups_opened = preflight.check_inputs(groups, groups_dump_settings(settings)) if groups else None
        ends = preflight.check_end_offsets(
            _fspath(end_offsets),
            settings,
            _fspath(start_offsets),
        )
        if broker_config is not None:
            preflight.check_file(os.fspath(broker_config), "--broker-config")
        preflight.check_output(folder, written_tables(with_groups=bool(groups)), settings)
        before_start(opened, folder)
        spark = _session(spark, opened)
        with _run_conf(spark):
            result = run_share(
                spark,
                opened,
                folder,
                settings,
                delivery_count_limit=delivery_count_limit,
                groups_inputs=groups_opened,
                end_offsets=ends,
                broker_config=_fspath(broker_config),
                # The delete commands name the cluster as given (a shell word of yours), else "$BOOTSTRAP_SERVER".
                bootstrap=settings.kafka.bootstrap_servers or DEFAULT_BOOTSTRAP,
            )
    return ShareRun(spark, folder, result.report, settings, inputs, None, SHARE_TABLES, temporary, result=result)


@contextmanager
def _discarded_on_failure(folder: str, temporary: bool) -> Iterator[None]:
    """A run's temporary folder goes with the run that fails (a mistake, or Spark's error)."""
    try:
        yield
    except BaseException:
        if temporary:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def write(run: Run, output: str | os.PathLike | None = None, *, tables: str | None = None) -> None:
    """A run's tables written where the caller keeps them:

    - `output`: an audit folder (local, mounted or an object store). The run's snapshot is written into
      each of its tables, with its row in `snapshots` and `runs`, as the command would have written it
      there; other snapshots and other clusters' rows stay.
    - `tables`: a prefix of catalog table names, as "db.kafka_audit_": each table is appended to
      PREFIX + name through the session's catalog (Delta where the session has it)."""
    if (output is None) == (tables is None):
        raise UserError("give write() an output folder or a tables= prefix (one of them)")
    if tables is not None:
        _to_catalog(run, tables)
    else:
        assert output is not None  # one of the two is given (checked above)
        _to_folder(run, normalize(os.fspath(output)))


def _to_catalog(run: Run, prefix: str) -> None:
    from offset_audit.outputs.run_copy import to_catalog

    to_catalog(run.spark, {name: run.table(name) for name in run.tables}, prefix)


def _to_folder(run: Run, output: str) -> None:
    from offset_audit.outputs.run_copy import snapshot_rows, to_folder
    from offset_audit.runs.clusters import before_start
    from offset_audit.runtime import preflight
    from offset_audit.runtime.session import table_writer
    from offset_audit.table_names import RUNS_TABLE, SNAPSHOTS_TABLE

    if output == run.folder:
        return
    preflight.check_output(output, [*run.tables, SNAPSHOTS_TABLE, RUNS_TABLE], run.settings)
    from offset_audit.inputs.opened import open_dump

    # The run's cluster as its dump names it (a run keeps its paths, not its listing, once it is done).
    before_start(open_dump(list(run.inputs), run.settings), output)
    storage = for_settings(run.settings)
    rows = [] if run.snapshot_id is None else snapshot_rows(run.folder, run.snapshot_id, run.report, storage)
    frames = {name: run.table(name) for name in run.tables}
    with _run_conf(run.spark):
        to_folder(run.spark, frames, output, run.snapshot_id, rows, run.report, table_writer(run.spark, run.settings))
