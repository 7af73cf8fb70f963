"""audit --incremental and --full: the state kept under the audit folder, checked, resumed from and
merged again (docs/incremental.md).

A run reads the state's positions, checks them against what the input shows (`plan`), and then either
resumes (the carried records and the input's records past the positions) or reads everything. Either
way the replay, the rules and the tables are those of a full read; afterwards the records to carry
and the new positions replace the state (`merge_state`), the positions last.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from offset_audit.decoding.report import DecodeReport
from offset_audit.durations import MINUTE_MS, format_minutes
from offset_audit.errors import UserError
from offset_audit.inputs import formats
from offset_audit.inputs.last_read import LastRead, LastRow, last_read_of, missing_batch
from offset_audit.inputs.opened import OpenedDump
from offset_audit.inputs.resumed import InputFacts, LogFloors, Resume, segments_to_open
from offset_audit.inputs.snapshot_files import SeenFiles, files_to_read
from offset_audit.outputs.audit_state import (
    LOG,
    STATE_FORMAT,
    Position,
    StateMergedMeanwhile,
    StoredLog,
    StoredState,
    append_log,
    check_unlocked,
    closing_files,
    compacted_state,
    log_dir,
    log_floors,
    read_log,
    read_state,
    write_files,
    write_positions,
    write_records,
)
from offset_audit.outputs.delta import DataFile
from offset_audit.runtime import progress
from offset_audit.settings import Settings
from offset_audit.storage import Storage, for_settings

FULL = "full"
# runs.state
RESUMED, FIRST, READ_ALL, RESET = "resumed", "first", "full", "reset"


class ReadAgain(Exception):
    """Found while reading: the log is not the one the state was read from (its offsets went backwards, or
    the record read last is not there); the run reads everything instead, as a new generation of state/log."""


@dataclass(frozen=True)
class Plan:
    """How a run uses its state: `resume` (None: read everything), the runs.state word, and why."""

    stored: StoredState | None
    resume: Resume | None
    state: str
    reason: str | None = None
    # The topic is not the one the state was read from (recreated): state/log starts a new generation.
    new_log: bool = False


@dataclass(frozen=True)
class LogPlan:
    """What a run appends to state/log: from which floors, into which generation, where its tasks write
    the files (None: `[audit] keep_log` is off)."""

    floors: LogFloors
    generation: int
    folder: str
    # The generation a recreated topic ends (its pending records go in with this run's).
    closing: int | None = None


def log_plan(output: str, plan_: Plan, settings: Settings) -> LogPlan | None:
    if not settings.audit.keep_log:
        return None
    storage = for_settings(settings)
    stored_log: StoredLog = read_log(output, storage)
    if stored_log.generation == 0:
        # The log's first run (the state's too, or a state kept without a log so far): what the state
        # carries of the runs before is all that is left of them, and goes in with the new records.
        floors, generation = LogFloors(carried=True), 1
    elif plan_.new_log:
        folder = log_dir(output, stored_log.generation + 1)
        return LogPlan(LogFloors(), stored_log.generation + 1, folder, closing=stored_log.generation)
    else:
        floors, generation = log_floors(plan_.stored, storage), stored_log.generation
    return LogPlan(floors, generation, log_dir(output, generation))


def check_resumable(settings: Settings, keep_decoded: bool) -> None:
    """Before Spark starts: what --incremental cannot do, one sentence each."""
    if formats.input_format(settings).text_dump:
        raise UserError(
            f"--incremental cannot resume a {settings.input.format} text dump (its lines carry no offsets a "
            "later dump keeps); give broker folders, a Kafka-source snapshot or --input-format kafka"
        )
    if not formats.input_format(settings).resumable:
        raise UserError(f"--incremental cannot resume {settings.input.format} input")
    if keep_decoded:
        raise UserError("--keep-decoded decodes the whole log every time; it cannot be combined with --incremental")
    from offset_audit.runtime.session import delta_spark_configured

    if settings.output.writer == "delta-spark" or (
        settings.output.writer == "auto" and delta_spark_configured(settings.spark)
    ):
        raise UserError(
            "--incremental keeps its state with delta-rs; run it with --writer auto or delta-rs (its snapshot tables "
            "are the same Delta tables)"
        )


def check_before_start(dump: OpenedDump, output: str, mode: str, keep_decoded: bool) -> str:
    """Everything about the state a run can refuse before Spark starts: the input, a state another run
    holds the lock of, and a state of another cluster (as broker folders show theirs) or of a newer
    layout. The home of the run's state (where its lock is), as far as it is known before Spark."""
    settings = dump.settings
    check_resumable(settings, keep_decoded)
    if dump.format.copies_merged and len(dump.paths) > 1:
        raise UserError(
            "--incremental resumes one Kafka-source snapshot at a time (copies of one would be merged by reading "
            "them whole); give one --input"
        )
    from offset_audit.runs.clusters import before_start

    _, home = before_start(dump, output)
    check_unlocked(home)
    stored = stored_state(home, settings)
    if stored is not None:
        plan(stored, input_facts(None, dump), mode, settings.input.format, 1 << 62, home)
    return home


def resumed_bytes(dump: OpenedDump, output: str, mode: str) -> int | None:
    """About how many bytes a resumed run over broker folders reads: the segment files it opens and the
    state's records (None where that is the whole input, or unknown). A scheduled run over a few new
    records then starts the JVM a small run gets (runtime.local_jvm), not the one for the whole log."""
    settings = dump.settings
    snapshot = dump.seen_files is not None
    if mode == FULL or not (dump.format.broker_folders or snapshot):
        return None
    from offset_audit.runs.clusters import before_start

    stored = stored_state(before_start(dump, output)[1], settings)
    if stored is None:
        return None
    storage = dump.storage
    if snapshot:
        if stored.seen_files is None:
            return None
        assert dump.seen_files is not None  # `snapshot` says so (a cached property: read once)
        sizes = {f.path: f.size for f in dump.seen_files.files}
        opened = sum(sizes[p] for p in files_to_read(dump.seen_files, stored.seen_files).paths)
    else:
        # A group's partition may be unknown (None): it starts at 0, as one the state does not know.
        floors: dict[int | None, int] = {p: position.next_offset for p, position in stored.positions.items()}
        groups = dump.partition_groups
        opened = sum(f.size for g in groups for f in segments_to_open(g.files, floors.get(g.partition, 0)))
    return opened + sum(storage.size(f) for files in stored.record_files.values() for f in files)


def input_facts(spark, dump: OpenedDump) -> InputFacts:
    """What the input shows of its partitions before it is read: the opened dump's (broker folders), or
    the live cluster's, asked through Spark."""
    if dump.format.live and spark is not None:
        from offset_audit.inputs.kafka_topic import topic_facts

        facts = topic_facts(spark, dump.settings, log_starts=True)
        topic_ids = {p: facts.topic_id for p in facts.partitions} if facts.topic_id else {}
        return InputFacts(tuple(facts.partitions), facts.log_starts, topic_ids, facts.cluster_id, None, True)
    return dump.facts


def plan(
    stored: StoredState | None,
    facts: InputFacts,
    mode: str,
    input_format: str,
    delete_retention_ms: int,
    output: str,
    now: datetime | None = None,
    seen: SeenFiles | None = None,
) -> Plan:
    """Resume, or read everything and say why; refuse (UserError) where reading everything would be
    wrong too: a state of another cluster, or of a newer layout. A log that is not the one the state was
    read from (its topic id changed, or the batch read last is not there) starts a new generation of
    state/log, whichever the mode. `seen`: a snapshot's data files now, against those the state read."""
    if stored is None:
        return Plan(None, None, READ_ALL if mode == FULL else FIRST)
    if stored.state_format > STATE_FORMAT:
        raise UserError(
            f"the state in '{output}' was written by a newer version of this tool (state layout "
            f"{stored.state_format}, this one reads {STATE_FORMAT}); upgrade, or give another --output"
        )
    if facts.cluster_id and stored.cluster_id and facts.cluster_id != stored.cluster_id:
        raise UserError(
            f"the state in '{output}' belongs to cluster {stored.cluster_id}, the input to cluster "
            f"{facts.cluster_id}; give the other cluster a --cluster name of its own"
        )
    recreated = _recreated(stored, facts) or _not_the_log_read(stored, facts, input_format)
    if mode == FULL:
        return Plan(stored, None, READ_ALL, new_log=recreated is not None)
    reason = recreated or _why_read_all(stored, facts, input_format, delete_retention_ms, now or datetime.now(UTC))
    if reason is not None:
        return Plan(stored, None, RESET, reason, new_log=recreated is not None)
    floors = {p: position.next_offset for p, position in stored.positions.items()}
    # Records without a batch header are found again by the decode tasks (`check_ends`).
    probes = {
        p: position.next_offset - 1
        for p, position in stored.positions.items()
        if position.last_read is not None and position.last_read.record_digest is not None
    }
    files = None
    if seen is not None and stored.seen_files is not None:
        files = files_to_read(seen, stored.seen_files)
        # A record read last is looked for only where its file is not there as it was read (a probe's
        # partition has a record read last).
        probes = {
            p: at for p, at in probes.items() if files.look_for(cast(LastRead, stored.positions[p].last_read).file)
        }
    return Plan(stored, Resume(floors, stored.record_files, probes=probes, files=files), RESUMED)


def _why_read_all(
    stored: StoredState, facts: InputFacts, input_format: str, delete_retention_ms: int, now: datetime
) -> str | None:
    if stored.state_format < STATE_FORMAT:
        return f"the state was written by an older version of this tool (state layout {stored.state_format})"
    if stored.input_format and stored.input_format != input_format:
        return f"the state counts positions in {stored.input_format} input, this run reads {input_format}"
    if facts.partitions is not None:
        gone = sorted(set(stored.positions) - set(facts.partitions))
        if gone:
            return f"the partition count changed: partition {gone[0]} of the state is not in the input"
        if facts.whole_topic and len(facts.partitions) != len(stored.positions):
            return f"the partition count changed from {len(stored.positions)} to {len(facts.partitions)}"
    for partition, position in sorted(stored.positions.items()):
        start = facts.log_starts.get(partition)
        if start is not None and start > position.next_offset:
            return (
                f"partition {partition}'s log start offset {start} moved past the position read up to "
                f"({position.next_offset})"
            )
    gap_ms = (now - stored.merged_at).total_seconds() * 1000
    if gap_ms > delete_retention_ms:
        gap = _ago(gap_ms)
        retention = format_minutes(max(1, delete_retention_ms // MINUTE_MS))
        if facts.cleaned_to is None:
            return (
                f"the run before merged {gap} ago, more than delete_retention_ms ({retention}): the cleaner may "
                "have removed tombstones since"
            )
        cleaned = facts.cleaned_to
        past = [p for p, position in sorted(stored.positions.items()) if cleaned.get(p, 0) > position.next_offset]
        if past:
            return (
                f"the run before merged {gap} ago, more than delete_retention_ms ({retention}), and the cleaner "
                f"has cleaned partition {past[0]} past its position: tombstones may be gone"
            )
    return None


def _not_the_log_read(stored: StoredState, facts: InputFacts, input_format: str) -> str | None:
    """Whether a partition's log is not the one the state read, as the record read last of each shows
    (`inputs.last_read`): broker folders' batches are looked for here, before Spark starts, and the
    records of the other inputs by the decode tasks (`check_ends`). A partition whose records were lost
    (its log start moved past the position) or that the input lacks has a reason of its own."""
    if stored.state_format != STATE_FORMAT or (stored.input_format and stored.input_format != input_format):
        return None
    for partition, position in sorted(stored.positions.items()):
        start = facts.log_starts.get(partition)
        if position.next_offset <= 0 or (start is not None and start > position.next_offset):
            continue
        last = position.last_read
        if not formats.named(input_format).broker_folders:
            if last is None or last.record_digest is None:
                return f"the state does not say which record of partition {partition} it read last"
            continue
        if partition not in facts.segments:
            continue
        if last is None or last.batch is None:
            return f"the state does not say which batch of partition {partition} it read last"
        why = missing_batch(facts.segments[partition], position.next_offset - 1, last.batch)
        if why is not None:
            return f"partition {partition}'s {why}: the log is not the one the state was read from"
    return None


def _recreated(stored: StoredState, facts: InputFacts) -> str | None:
    for partition, position in sorted(stored.positions.items()):
        topic_id = facts.topic_ids.get(partition)
        if topic_id and position.topic_id and topic_id != position.topic_id:
            return f"partition {partition}'s topic id changed (the topic was recreated)"
    return None


def _ago(ms: float) -> str:
    """A gap in its largest whole unit: "2 days", "5 hours", "12 minutes"."""
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", MINUTE_MS)):
        if ms >= size:
            count = int(ms // size)
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return "less than a minute"


def check_ends(plan_: Plan, log: LogPlan | None = None):
    """The check made once the new records are read, before anything is committed: a partition whose
    records now end below its position (or below state/log's, when everything is read again) had its
    offsets go backwards (the topic was recreated); one whose record read last (Kafka-source snapshots,
    the live topic: `Resume.probes`) is not found where it was, with the same timestamp, key and value,
    is another log."""

    def check(ends: dict[int, int], probed: dict[int, frozenset[str]] | None = None) -> None:
        if plan_.resume is not None:
            floors = plan_.resume.floors
        elif log is not None:
            floors = log.floors.floors
        else:
            return
        files = plan_.resume.files if plan_.resume is not None else None
        some_files = files is not None and not files.rewritten
        for partition, floor in sorted(floors.items()):
            end = ends.get(partition)
            if end is not None and end < floor and some_files:
                raise ReadAgain(
                    f"partition {partition}'s records in the snapshot's files new since the run before end at {end}, "
                    f"below its position ({floor}): the topic was recreated, or those files repeat records read before"
                )
            if end is not None and end < floor:
                raise ReadAgain(
                    f"partition {partition}'s offsets went backwards (its records end at {end}, the position was "
                    f"{floor}): the topic was recreated"
                )
        if plan_.resume is None or plan_.stored is None:
            return
        for partition, offset in sorted(plan_.resume.probes.items()):
            found = (probed or {}).get(partition, frozenset())
            # A probe's partition has a record read last (`plan`).
            if found == {cast(LastRead, plan_.stored.positions[partition].last_read).record_digest}:
                continue
            if not found:
                raise ReadAgain(
                    f"partition {partition}'s last record read (offset {offset}) is not in the input any more: the "
                    "log is not the one the state was read from"
                )
            raise ReadAgain(
                f"partition {partition}'s record at offset {offset} is not the one read last (its timestamp, key or "
                "value differ): the log is not the one the state was read from"
            )

    return check


def new_positions(
    plan_: Plan,
    facts: InputFacts,
    ends: dict[int, int],
    newest_ms: int | None,
    input_format: str,
    last_rows: dict[int, LastRow] | None = None,
) -> list[Position]:
    """Each partition's position after this run: the offset after its last record read (or where it
    stood), with what the input showed of it and what identifies that record (`last_rows`: the decode
    tasks' last record of each partition; a partition this run did not read keeps the run before's)."""
    floors = plan_.resume.floors if plan_.resume is not None else {}
    stored = plan_.stored.positions if plan_.resume is not None and plan_.stored is not None else {}
    partitions = set(ends) | set(floors) | set(facts.partitions or ())
    cluster = facts.cluster_id or (plan_.stored.cluster_id if plan_.stored is not None else None)
    segments = formats.named(input_format).broker_folders
    positions = []
    for p in sorted(partitions):
        next_offset = max(floors.get(p, 0), ends.get(p, 0))
        last = stored[p].last_read if p in stored else None
        row = (last_rows or {}).get(p)
        if row is not None and ends.get(p, 0) >= next_offset:
            last = last_read_of(row, facts.segments.get(p, ()) if segments else None)
        positions.append(
            Position(
                p,
                next_offset,
                facts.log_starts.get(p),
                facts.topic_ids.get(p),
                cluster,
                input_format,
                newest_ms,
                last,
            )
        )
    return positions


def merge_state(
    output: str,
    plan_: Plan,
    facts: InputFacts,
    carry_files: list[str],
    ends: dict[int, int],
    newest_ms: int | None,
    input_format: str,
    run_id: str,
    storage: Storage,
    log: LogPlan | None = None,
    log_files: list[DataFile] | None = None,
    report: DecodeReport | None = None,
    last_rows: dict[int, LastRow] | None = None,
    seen: SeenFiles | None = None,
) -> str | None:
    """Replace the state with this run's, after appending its records to state/log; None when merged,
    else why not (another run merged first). `seen`: a snapshot's data files, all read now."""
    carried = compacted_state(carry_files, storage)
    positions = new_positions(plan_, facts, ends, newest_ms, input_format, last_rows)
    read_version = plan_.stored.positions_version if plan_.stored is not None else None
    records_version = write_records(output, carried, run_id, storage)
    files_version = None if seen is None else write_files(output, seen, run_id, storage)
    if log is not None and report is not None:
        report.records_logged = 0
    if log is not None and log.closing is not None and plan_.stored is not None:
        log_files = [*closing_files(output, plan_.stored, log.closing, storage), *(log_files or [])]
    if log is not None and log_files:
        progress.begin("appending the records read to state/log")
        version = append_log(output, log_files, log.generation, run_id, storage)
        if report is not None:
            report.records_logged = sum(f.rows for f in log_files)
            if version is not None:  # as DecodeReport.wrote: a version the commit cannot be found in is not named
                report.table_versions[LOG] = version
    # A run killed here leaves positions that still name the records of the run before.
    progress.begin("committing the state's positions")
    try:
        write_positions(output, positions, records_version, read_version, run_id, storage, files_version)
    except StateMergedMeanwhile:
        return "another run merged into the state while this one ran: this run's tables are written, its state is not"
    return None


def stored_state(output: str, settings: Settings) -> StoredState | None:
    return read_state(output, for_settings(settings))
