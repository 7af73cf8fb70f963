"""What the console prints after a run: short, aligned, and numbers that visibly add up.

Names from the dump (groups, topics, members, the messages that quote them) and paths are printed
through `escaping.terminal`: nothing in a group id can move the cursor, clear the screen or fake a line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offset_audit.coordinator import events
from offset_audit.coordinator.rule_names import EMPTY_GROUP
from offset_audit.durations import format_minutes
from offset_audit.escaping import NotAShellArgument, shell_comment, shell_word, terminal
from offset_audit.table_names import RUNS_TABLE, SNAPSHOTS_TABLE
from offset_audit.views.kafka_commands import delete_offsets
from offset_audit.views.moments import exact_utc

if TYPE_CHECKING:
    from offset_audit.decoding.report import DecodeReport  # the run's counts: these views only read them


def _n(value: int) -> str:
    return f"{value:,}"


def _skip_detail(report: DecodeReport) -> str:
    if not report.skipped_by_reason:
        return "(other topic)"
    return "(" + ", ".join(f"{reason} {_n(n)}" for reason, n in sorted(report.skipped_by_reason.items())) + ")"


def _quarantine_detail(report: DecodeReport) -> str:
    if not report.bytes_skipped:
        return "(see quarantine)"
    return f"(see quarantine; {_n(report.bytes_skipped)} unreadable bytes skipped)"


def format_notes(report: DecodeReport) -> list[str]:
    """What the input format could not tell, so nobody mistakes a reconstructed value for a read one,
    and which copy stands for the records left out where a partition was given more than once."""
    if not report.format_notes:
        return []
    lines = ["", "  notes on the input:"]
    lines += [f"    {_n(n):>12} records: {terminal(note)}" for note, n in sorted(report.format_notes.items())]
    return lines


def _era_tells(count) -> bool:
    """Whether the layout era says something about this row: only where Kafka wrote one value version
    in two layouts (KIP-848 records of 3.7 and 3.8+, share records of 4.0 and 4.1+, OffsetCommit v4
    before and after 4.1 gave its tag 0 a meaning). An era that is a record type's only reading of a
    version is left out: "[0.9.0+]" beside v4 would read as "written since 0.9.0"."""
    from offset_audit.layouts.spec import record_layouts

    if not count.layout_era or count.value_version is None:
        return False
    layout = record_layouts().get(count.record_type)
    if layout is None:
        return True
    readers = [v for v in layout.values if count.value_version in v.valid]
    if len(readers) < 2:
        return False
    first = layout.values[0]
    if count.layout_era != first.era:
        return True  # a later era that reads what the general layout also reads: say which
    # The general layout is named only where the other eras are its equals (4.0 against 4.1+).
    return all(str(v.valid) == str(first.valid) for v in layout.values)


def decode_summary(report: DecodeReport, output: str) -> str:
    lines = [
        f"Decoded {terminal(report.input)} ({report.input_format})",
        *cluster_lines(report),
        "",
        f"  records read            {_n(report.records_read):>12}",
        f"  skipped                 {_n(report.records_skipped):>12}   {_skip_detail(report)}",
        f"  decoded                 {_n(report.records_decoded):>12}   of which tombstones {_n(report.tombstones)}",
        f"  unknown types           {_n(report.other_records):>12}   (kept in other_records)",
        f"  quarantined             {_n(report.quarantined):>12}   {_quarantine_detail(report)}",
        "",
        "  decoded by record type and value version:",
    ]
    for t in report.decoded_by_type:
        version = "tombstone" if t.value_version is None else f"v{t.value_version}"
        era = f" [{t.layout_era}]" if _era_tells(t) else ""
        lines.append(f"    {t.record_type:>3} {t.record_name:<38} {version:<10}{era:<10} {_n(t.records):>12}")
    lines += format_notes(report)
    lines += ["", f"  Delta tables under {terminal(output)}:"]
    for name, rows in report.table_rows.items():
        lines.append(f"    {name:<22} {_n(rows):>14} rows")
    lines.append(f"    {RUNS_TABLE:<22} {'+1':>14} row (run {report.run_id[:12]})")
    return "\n".join(lines)


def state_lines(report) -> list[str]:
    """How an audit --incremental or --full used its state (runs.state), one line; a second when its
    state was not merged."""
    if report.state is None:
        return []
    return [*_state_use(report), *_log_lines(report)]


def _log_lines(report) -> list[str]:
    if report.records_logged is None:
        return []
    return [f"  state/log: +{_n(report.records_logged)} records, for history --audit"]


def _state_use(report) -> list[str]:
    new = report.records_read - report.records_carried
    reason = terminal(report.state_reason or "")
    if report.state == "resumed":
        lines = [
            f"  state: resumed: {_n(report.records_carried)} records carried from the runs before, "
            f"{_n(new)} new past their positions"
        ]
        if report.files_note:
            lines.append(f"  {terminal(report.files_note)}")
        if report.state_reason:
            lines.append(f"  state: not merged: {reason}")
        return lines
    if report.state == "first":
        return ["  state: none yet: read everything, and kept the state for the next run"]
    if report.state == "full":
        return ["  state: --full: read everything, and rebuilt the state"]
    return [f"  state: read everything again, as {reason}"]


def audit_summary(result, output: str) -> str:
    """What `audit` prints: groups by verdict, what expires soon, and the best deletion candidates."""
    report = result.report
    lines = [
        f"Audited {terminal(report.input)} as of {exact_utc(result.as_of)} "
        f"(Kafka {terminal(report.kafka_version)} rules, retention {report.retention_minutes} min, "
        f"snapshot {terminal(result.snapshot_id)})",
        f"  records read {_n(report.records_read)}: decoded {_n(report.records_decoded)}, "
        f"unknown types {_n(report.other_records)}, quarantined {_n(report.quarantined)}, "
        f"skipped {_n(report.records_skipped)} {_skip_detail(report)}",
        *([f"  unreadable bytes skipped {_n(report.bytes_skipped)} (see quarantine)"] if report.bytes_skipped else []),
        *cluster_lines(report),
        *state_lines(report),
        *format_notes(report),
        "",
        "  groups by type, state and verdict:",
    ]
    for group_type, state, would_delete, count in result.group_summary:
        verdict = "removed by the sweep" if would_delete else "kept"
        lines.append(f"    {group_type:<9} {state:<12} {verdict:<22} {_n(count):>10}")
    lines += [
        "",
        f"  committed offsets {_n(result.offsets)}: expired {_n(result.expired)}; expire within 24 h "
        f"{_n(result.expiring_24h)}, in 1 to 7 days {_n(result.expiring_1_to_7d)}, later "
        f"{_n(result.expiring_later)}; no expiry while the group consumes them {_n(result.not_expiring)}",
        "",
        "  top deletion candidates (kafka-consumer-groups --delete-offsets would succeed):",
    ]
    if not result.top_candidates:
        lines.append("    none")
    for c in result.top_candidates:
        lag = "" if c["lag"] is None else f", lag {_n(c['lag'])}"
        parts = f"{c['partitions']} partition{'' if c['partitions'] == 1 else 's'}"
        lines.append(
            f"    [{c['priority']}] {c['reason']:<35} {terminal(c['group_id'])} {terminal(c['topic'])} ({parts}{lag})"
        )
    lines += ["", f"  Delta tables under {terminal(output)}:"]
    decoded, decoded_dir = {}, "decoded/"
    for name, rows in report.table_rows.items():
        if name == SNAPSHOTS_TABLE:
            continue  # the snapshot's row in the folder's list of snapshots: bookkeeping, in --json
        folder, _, table = name.rpartition("/")
        if folder == "decoded" or folder.endswith("/decoded"):  # DIR/decoded, or DIR/clusters/NAME/decoded
            decoded[table], decoded_dir = rows, f"{folder}/"
        else:
            lines.append(f"    {name:<22} {_n(rows):>14} rows (snapshot {terminal(result.snapshot_id)})")
    if decoded:
        history = (
            f"offset_commits {_n(decoded['offset_commits'])}"
            if decoded.get("offset_commits")
            else "offset_commits empty (last record per key only; --keep-decoded decodes and keeps all)"
        )
        lines.append(
            f"    {terminal(decoded_dir):<22} {'':>14} quarantine {_n(decoded.get('quarantine', 0))}, "
            f"other_records {_n(decoded.get('other_records', 0))}, {history}"
        )
    lines += upkeep_lines(report.upkeep, indent="  ")
    lines.append(f"  next: offset-audit delete-plan --audit {shell_word(output)}{cluster_flag(report.cluster)}")
    return "\n".join(lines)


def cluster_lines(report) -> list[str]:
    """The cluster the run judged, when the input or --cluster named one (runs.clusters)."""
    if not report.cluster:
        return []
    known = f" (id {terminal(report.cluster_id)})" if report.cluster_id and report.cluster_id != report.cluster else ""
    return [f"  cluster {terminal(report.cluster)}{known}"]


def cluster_flag(cluster: str | None) -> str:
    """` --cluster NAME` for a command line the summary suggests; "" without a name."""
    return f" --cluster {shell_word(cluster)}" if cluster else ""


def upkeep_lines(upkeep: dict | None, indent: str = "") -> list[str]:
    """What retention and upkeep did (runs.upkeep.Upkeep.document()): the snapshots removed by kind,
    the tables compacted, the files vacuumed, and the folder's size before and after."""
    if upkeep is None:
        return []
    keep = upkeep["keep_snapshots"]
    lines = [f"{indent}retention: keep {keep} of each command" if keep else f"{indent}retention: none set"]
    for removed in upkeep["removed"]:
        for cluster in removed["clusters"]:
            ids = cluster["snapshot_ids"]
            span = terminal(ids[0]) if len(ids) == 1 else f"{terminal(ids[0])} .. {terminal(ids[-1])}"
            of = f" of cluster {terminal(cluster['cluster'])}" if cluster["cluster"] else ""
            lines.append(
                f"{indent}  removed {_n(len(ids))} {removed['kind']} snapshot{'' if len(ids) == 1 else 's'}{of} "
                f"({span}), {_n(cluster['kept'])} kept"
            )
    if keep and not upkeep["removed"]:
        lines.append(f"{indent}  nothing to remove")
    before, after = upkeep["before"], upkeep["after"]
    compacted = ", ".join(upkeep["compacted"]) or "none"
    within = format_minutes(upkeep["deleted_file_retention_minutes"])
    lines += [
        f"{indent}upkeep: compacted {compacted}; vacuumed {_n(upkeep['vacuumed_files'])} files "
        f"({_mib(upkeep['vacuumed_bytes'])}) no version within {within} lists",
        f"{indent}  {_n(after['tables'])} tables: live files {_n(before['live_files'])} -> {_n(after['live_files'])}, "
        f"files on the store {_n(before['data_files'])} -> {_n(after['data_files'])}, _delta_log "
        f"{_mib(before['log_bytes'])} -> {_mib(after['log_bytes'])} ({upkeep['seconds']:.1f} s)",
    ]
    return lines


def _mib(size: int) -> str:
    return f"{size / 1048576:.1f} MiB" if size >= 104858 else f"{size / 1024:.1f} KiB"


def whatif_summary(rows: list[dict]) -> str:
    as_of = [exact_utc(r["as_of"]) for r in rows]
    width = max([20, *map(len, as_of)])
    lines = [
        f"  {'as_of':<{width}} {'retention':>12} {'offsets':>12} {'expired':>12} {'groups':>9} {'removed':>9}",
    ]
    for r, shown in zip(rows, as_of, strict=True):
        minutes = r["retention_minutes"]
        retention = f"{minutes // 1440}d" if minutes % 1440 == 0 else f"{minutes}m"
        lines.append(
            f"  {shown:<{width}} {retention:>12} {_n(r['offsets_total']):>12} "
            f"{_n(r['offsets_expired']):>12} {_n(r['groups_total']):>9} {_n(r['groups_deleted']):>9}"
        )
    return "\n".join(lines)


def delete_plan_lines(snapshot_id: str, candidates: list[dict], bootstrap: str) -> list[str]:
    """kafka-consumer-groups.sh commands, one per group, with what the broker is expected to answer.

    Every name is inert (offset_audit.views.kafka_commands): comments are escaped for a terminal, values are
    quoted shell words given as --group=VALUE and --topic=VALUE; a name no command line can carry
    (a NUL) is left out with a comment saying so.
    """
    lines = [
        "#!/usr/bin/env bash",
        f"# Offsets the broker would delete (OffsetDelete, KIP-496) as of snapshot {shell_comment(snapshot_id)}.",
        "# Expected answer for every partition: Successful. A group that changed since the snapshot may",
        "# answer GROUP_SUBSCRIBED_TO_TOPIC or NON_EMPTY_GROUP instead; nothing else is touched.",
        "set -u",
    ]
    cluster = next((c.get("cluster") for c in candidates if c.get("cluster")), None)
    if cluster:  # run against another cluster, the plan would delete offsets its groups still need
        lines.insert(2, f"# Of cluster {shell_comment(cluster)}: give --bootstrap-server of that cluster.")
    by_group: dict[str, dict[str, list[int]]] = {}
    reasons: dict[str, set[str]] = {}
    for c in candidates:
        by_group.setdefault(c["group_id"], {}).setdefault(c["topic"], []).append(c["partition"])
        reasons.setdefault(c["group_id"], set()).add(c["reason"])
    for group, topics in by_group.items():
        lines.append("")
        lines.append(f"# {shell_comment(group)}: {', '.join(sorted(reasons[group]))}")
        try:
            lines.append(delete_offsets(group, topics, bootstrap))
        except NotAShellArgument as err:
            lines.append(f"# left out: {shell_comment(str(err))}; delete these offsets with an Admin client")
    return lines


def share_summary(result, output: str) -> str:
    """What `share` prints: where the share-partitions stand, what is stuck, what can go."""
    report = result.report
    parts = result.partitions
    groups = {p["group_id"] for p in parts}
    lines = [
        f"Share state of {terminal(report.input)} ({report.input_format}, Kafka {terminal(report.kafka_version)} "
        f"rules): {_n(len(parts))} share-partitions of {_n(len(groups))} share groups",
        f"  records read {_n(report.records_read)}: replayed {_n(report.records_decoded)}"
        + (f" (of which tombstones {_n(report.tombstones)})" if report.tombstones else "")
        + f", quarantined {_n(report.quarantined)}, skipped {_n(report.records_skipped)}",
        *cluster_lines(report),
        *format_notes(report),
    ]
    if parts:
        limit = parts[0]["delivery_count_limit"]
        lines.append(
            f"  in flight: available {_n(sum(p['available_records'] or 0 for p in parts))}, acknowledged "
            f"{_n(sum(p['acknowledged_records'] or 0 for p in parts))}, archived "
            f"{_n(sum(p['archived_records'] or 0 for p in parts))}; at the delivery limit ({limit}) "
            f"{_n(sum(p['records_at_delivery_limit'] or 0 for p in parts))}"
        )
        archiving = sum(p.get("archiving_records") or 0 for p in parts)
        if archiving:  # Kafka 4.4+ with a dead-letter topic
            lines.append(f"  on their way to a dead-letter topic (Archiving): {_n(archiving)} records")
        lagged = [p for p in parts if p.get("share_lag")]
        if lagged:
            lines.append(f"  share lag (log end - start offset): {_n(sum(p['share_lag'] for p in lagged))} records")
        counted = [p for p in parts if p.get("broker_lag") is not None]
        if counted:  # states written by Kafka 4.2+, which counts the records done past the start offset
            lines.append(
                f"  lag as Kafka 4.2+ reports it (less the records done past the start offset): "
                f"{_n(sum(p['broker_lag'] for p in counted))} records, {_n(len(counted))} share-partitions"
            )
    problems = result.table_rows.get("share_problems", 0)
    lines.append(f"  replay problems: {_n(problems)}" + (" (see share_problems)" if problems else ""))
    for p in result.problems[:5]:
        where = f"{p['log_partition']}@{p['log_offset']}" if p["log_offset"] is not None else "?"
        topic = terminal(p["topic"] or p["topic_id"])
        lines.append(f"    {terminal(p['group_id'])} {topic}-{p['partition']} at {where}: {terminal(p['reason'])}")
    left = [g for g in result.groups if g.get("left_behind")]
    lines += ["", f"  share groups: {_n(len(result.groups))}, left behind (no members, state kept): {_n(len(left))}"]
    for g in left[:10]:
        lines.append(f"    {terminal(g['delete_command'] or g['group_id'])}")
    by_severity: dict[str, int] = {}
    for f in result.findings:
        by_severity[f["severity"]] = by_severity.get(f["severity"], 0) + 1
    lines.append("  findings: " + (", ".join(f"{s} {_n(n)}" for s, n in sorted(by_severity.items())) or "none"))
    for f in [f for f in result.findings if f["severity"] != "info"][:8]:
        lines.append(f"    [{f['severity']}] {f['kind']}: {terminal(f['message'])}")
    lines += ["", f"  Delta tables under {terminal(output)}:"]
    lines += [f"    {name:<22} {_n(rows):>14} rows" for name, rows in result.table_rows.items()]
    return "\n".join(lines)


def _when(value) -> str:
    return "?" if value is None else f"{value:%Y-%m-%d %H:%M}"


def _duration(ms: int | None) -> str:
    if ms is None:
        return "?"
    minutes = ms // 60_000
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} day{'' if days == 1 else 's'}"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes or not parts else []
    return " ".join(parts)


def timeline_line(event: dict) -> str:
    """One event as an operator reads it: '2026-01-08 10:05 orders-0 deleted: expired, EMPTY_GROUP, ...'."""
    when = _when(event["event_time"])
    kind = event["event"]
    where = f"{terminal(event['topic'])}-{event['partition']}" if event["topic"] is not None else ""
    if kind == events.COMMITTED:
        txn = f" (transactional, {event['transaction']})" if event["transaction"] else ""
        return f"  {when} {where} committed offset {event['committed_offset']}{txn}"
    if kind in (events.GROUP_STABLE, events.GROUP_EMPTY):
        state = "became Empty" if kind == events.GROUP_EMPTY else f"is {event['group_state']}"
        members = event["member_count"] or 0
        return f"  {when} {state} (generation {event['generation']}, {members} member{'' if members == 1 else 's'})"
    if kind == events.OFFSET_DELETED:
        cause = event["cause"]
        if cause == events.EXPIRED:
            clock = "after the group became Empty" if event["rule"] == EMPTY_GROUP else "after the commit"
            return (
                f"  {when} {where} deleted: expired, {event['rule']}, "
                f"{_duration(event['event_time_ms'] - event['base_timestamp_ms'])} {clock}"
            )
        if cause == events.UNKNOWN:
            return f"  {when} {where} deleted: cause unknown (the commit it deleted is not in the dump)"
        if cause == events.TOPIC_DELETED:
            return f"  {when} {where} deleted with its topic: the topic was deleted then ({event['rule']} before)"
        expires = event["expires_at"]
        if expires is None:
            left = f"{event['rule']}: it never expires by time"
        elif event["expires_at_ms"] > event["event_time_ms"]:
            left = f"{event['rule']}, it would have expired {_when(expires)}"
        else:
            left = f"{event['rule']}, it expired {_when(expires)} but a sweep would have deleted it within minutes"
        return f"  {when} {where} deleted by a request (OffsetDelete or an admin tool): {left}"
    cause = "removed by the expiry sweep" if event["cause"] == events.EXPIRED else "deleted by a request (DeleteGroups)"
    return f"  {when} group {cause}; it was {event['group_state'] or 'unknown'}"


def timeline(group_events: list[dict]) -> list[str]:
    """A group's events in log order (runs.history.timeline_rows: runs of commits already folded)."""
    lines = []
    for event in group_events:
        if event["event"] != "COMMIT_RUN":
            lines.append(timeline_line(event))
            continue
        where = f"{terminal(event['topic'])}-{event['partition']}"
        txn = f" ({_n(event['transactional'])} transactional)" if event["transactional"] else ""
        if event["commits"] == 1:
            lines.append(f"  {_when(event['event_time'])} {where} committed offset {event['committed_offset']}{txn}")
        else:
            lines.append(
                f"  {_when(event['event_time'])} to {_when(event['last_time'])} {where}: {_n(event['commits'])} "
                f"commits, offset {event['committed_offset']} to {event['last_offset']}{txn}"
            )
    return lines


def _kept_log_lines(kept) -> list[str]:
    """Where history --audit read from: which generation of the kept log, and how many there are."""
    if kept is None:
        return []
    others = [g for g in sorted(kept.log.files) if g != kept.generation]
    line = (
        f"  read from what audit --incremental runs kept: log generation {kept.generation} "
        f"({_n(kept.records)} records appended)"
    )
    if others:
        line += f"; the topic was recreated, other generations: {', '.join(map(str, others))} (--log-generation N)"
    return [line]


def history_summary(result, output: str) -> str:
    report = result.report
    counts = result.events_by_kind
    deleted = {
        cause: counts.get((events.OFFSET_DELETED, cause), 0)
        for cause in (events.EXPIRED, events.DELETED_BY_REQUEST, events.TOPIC_DELETED, events.UNKNOWN)
    }
    groups_deleted = {
        cause: counts.get((events.GROUP_DELETED, cause), 0) for cause in (events.EXPIRED, events.DELETED_BY_REQUEST)
    }
    lines = [
        f"History of {terminal(report.input)} (snapshot {terminal(result.snapshot_id)}, causes judged at retention "
        f"{result.retention_minutes} min)",
        f"  records read {_n(report.records_read)}: decoded {_n(report.records_decoded)}, quarantined "
        f"{_n(report.quarantined)}, skipped {_n(report.records_skipped)} {_skip_detail(report)}",
        *cluster_lines(report),
        f"  events: commits {_n(counts.get((events.COMMITTED, None), 0))}, group state changes "
        f"{_n(counts.get((events.GROUP_STABLE, None), 0) + counts.get((events.GROUP_EMPTY, None), 0))}",
        f"  offsets deleted: expired {_n(deleted[events.EXPIRED])}, "
        f"by request {_n(deleted[events.DELETED_BY_REQUEST])}"
        + (f", with their topic {_n(deleted[events.TOPIC_DELETED])}" if deleted[events.TOPIC_DELETED] else "")
        + (f", unknown {_n(deleted[events.UNKNOWN])}" if deleted[events.UNKNOWN] else ""),
        f"  groups deleted: expired {_n(groups_deleted[events.EXPIRED])}, by request "
        f"{_n(groups_deleted[events.DELETED_BY_REQUEST])}",
        *_kept_log_lines(result.kept),
        *upkeep_lines(report.upkeep, indent="  "),
    ]
    bound = result.retention
    if bound.tombstones:
        if bound.consistent:
            lines.append(
                f"  offsets.retention.minutes consistent with all {_n(bound.tombstones)} swept tombstones: "
                f"{_n(bound.low)} to {_n(bound.high)}"
            )
        else:
            lines.append(f"  no single offsets.retention.minutes fits all {_n(bound.tombstones)} swept tombstones")
        for label, row in (("at least", bound.low_by), ("at most", bound.high_by)):
            lines.append(
                f"    {label} by {terminal(row['group_id'])} {terminal(row['topic'])}-{row['partition']} "
                f"(record {row['source_partition']}@{row['source_offset']})"
            )
    for group in result.groups:
        group_events = [e for e in result.timeline if e["group_id"] == group]
        lines += ["", f"  {terminal(group)}:"]
        if not group_events:
            lines.append("    no record of this group in the dump")
        lines += timeline(group_events)
    reach = result.reach
    lines += [
        "",
        f"  how far back the log reaches, per group ({_n(len(reach))} group{'' if len(reach) == 1 else 's'}):",
    ]
    for r in reach[:20]:
        lines.append(
            f"    {terminal(r['group_id']):<32} {_when(r['first'])} to {_when(r['last'])}: {_n(r['events'])} events"
        )
    if len(reach) > 20:
        lines.append(f"    ... {_n(len(reach) - 20)} more in offset_history")
    if result.kept is None:
        caveat = [
            "  A compacted log keeps only the last record of each key up to the cleaner's point, and tombstones only",
            "  delete.retention.ms (24 h by default) after cleaning: older commits and deletions may be gone. Log",
            "  segments with their uncompacted head tell the most.",
        ]
    else:
        caveat = [
            "  The runs kept every record they read, those the cleaner removed since included; a record the cleaner",
            "  removed before any run read it is not there. Each run reading every segment the broker rolled keeps",
            "  them all.",
        ]
    lines += [
        "",
        *caveat,
        "",
        f"  Delta tables under {terminal(output)}:",
    ]
    lines += [
        f"    {name:<22} {_n(rows):>14} rows"
        for name, rows in report.table_rows.items()
        if "/" not in name and name != SNAPSHOTS_TABLE
    ]
    return "\n".join(lines)
