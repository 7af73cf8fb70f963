"""`describe`: one snapshot's offsets in the shape of `kafka-consumer-groups.sh --describe`.

Operators know that table by heart (GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG), so the
columns only the log can tell come after it: when the offset was committed, which expiry rule holds
it, when it expires, and whether OffsetDelete would succeed now. Like kafka-consumer-groups, each group
gets a line about its state before its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.errors import UserError
from offset_audit.escaping import terminal
from offset_audit.storage import Storage
from offset_audit.table_names import GROUP_VERDICTS, PARTITION_VERDICTS
from offset_audit.views import audit_folder
from offset_audit.views.moments import exact_utc

COLUMNS = [
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "log_end_offset",
    "lag",
    "commit_timestamp",
    "rule",
    "expires_at",
    "expired",
    "time_to_expiry_ms",
    "deletable_now",
    "group_type",
    "group_state",
]
HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "COMMITTED-AT",
    "RULE",
    "EXPIRES-AT",
    "DELETABLE-NOW",
)
GROUP_COLUMNS = [
    "group_id",
    "group_type",
    "protocol_type",
    "group_state",
    "current_state_timestamp",
    "member_count",
    "offset_count",
    "expired_offset_count",
    "group_expires_at",
    "would_delete",
]


@dataclass(frozen=True)
class Described:
    """What describe shows of one snapshot: the offsets asked for and the groups they belong to."""

    snapshot_id: str
    as_of: datetime | None
    offsets: pa.Table
    groups: pa.Table
    cluster: str = ""


def read_described(
    audit_dir: str,
    storage: Storage,
    groups: list[str],
    topic: str | None = None,
    within_ms: int | None = None,
    snapshot_id: str | None = None,
    cluster: str | None = None,
) -> Described:
    """One snapshot of an audit folder (the newest by default, of `cluster` when given), its offsets
    chosen as `select_offsets` does; a group asked for that has no committed offset in the snapshot is an
    error naming it."""
    audit_folder.check_audit_dir(audit_dir, storage, PARTITION_VERDICTS)
    known = audit_folder.snapshots(audit_dir, PARTITION_VERDICTS, storage)
    snapshot = audit_folder.pick_snapshot(audit_dir, snapshot_id, PARTITION_VERDICTS, storage, known, cluster)
    offsets = audit_folder.read_snapshot(audit_dir, PARTITION_VERDICTS, snapshot, storage, [*COLUMNS, "as_of"])
    as_of = offsets.column("as_of")[0].as_py() if offsets.num_rows else None
    chosen = select_offsets(offsets.drop_columns(["as_of"]), groups, topic, within_ms)
    unknown = sorted(set(groups) - set(offsets.column("group_id").to_pylist()))
    if unknown:
        raise UserError(
            f"no committed offsets of group '{unknown[0]}' in snapshot '{snapshot.snapshot_id}' of {audit_dir}"
        )
    group_rows = audit_folder.read_snapshot(audit_dir, GROUP_VERDICTS, snapshot, storage, GROUP_COLUMNS)
    return Described(snapshot.snapshot_id, as_of, chosen, group_rows, snapshot.cluster)


def select_offsets(
    offsets: pa.Table, groups: list[str] | None = None, topic: str | None = None, within_ms: int | None = None
) -> pa.Table:
    """The offsets asked for: of these groups, of this topic, expiring within `within_ms` of as_of
    (those already expired included: the next sweep deletes them)."""
    keep = pa.array([True] * offsets.num_rows)
    if groups:
        keep = pc.and_(keep, pc.is_in(offsets.column("group_id"), pa.array(groups, pa.string())))
    if topic is not None:
        keep = pc.and_(keep, pc.fill_null(pc.equal(offsets.column("topic"), topic), False))
    if within_ms is not None:
        soon = pc.fill_null(pc.less(offsets.column("time_to_expiry_ms"), within_ms), False)
        keep = pc.and_(keep, pc.or_(soon, pc.fill_null(offsets.column("expired"), False)))
    chosen = offsets.filter(keep)
    return chosen.sort_by([("group_id", "ascending"), ("topic", "ascending"), ("partition", "ascending")])


def _time(value: datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%dT%H:%M:%SZ}"


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def row_cells(row: dict) -> tuple[str, ...]:
    expires = "expired" if row["expired"] else _time(row["expires_at"])
    if row["expires_at"] is None and not row["expired"]:
        expires = "never"
    return (
        terminal(row["group_id"]),
        terminal(row["topic"]),
        str(row["partition"]),
        _number(row["committed_offset"]),
        _number(row.get("log_end_offset")),
        _number(row["lag"]),
        _time(row["commit_timestamp"]),
        row["rule"] or "-",
        expires,
        "yes" if row["deletable_now"] else "no",
    )


def group_line(group: dict | None, group_id: str) -> str:
    """What kafka-consumer-groups says above a group's rows, with when the group itself goes."""
    if group is None:
        return f"Group '{terminal(group_id)}'"
    # protocol_type is the dump's (a client chooses it); the type and state are ours, escaped all the same
    kind = terminal(group["group_type"]) + (
        f" {terminal(group['protocol_type'])}" if group.get("protocol_type") else ""
    )
    state = terminal(group["group_state"])
    since = group.get("current_state_timestamp")
    members = group.get("member_count") or 0
    text = f"Group '{terminal(group_id)}' ({kind}) is {state}"
    if since is not None and state == "Empty":
        text += f" since {_time(since)}"
    text += f", {members} member{'' if members == 1 else 's'}"
    if group.get("would_delete"):
        text += "; the expiry sweep removes the group now"
    elif group.get("group_expires_at") is not None:
        text += f"; the group goes at {_time(group['group_expires_at'])} with its last offset"
    return text + "."


def render(described: Described) -> str:
    """The describe view: a line per group, then its rows, columns aligned per group as Kafka's tool does."""
    by_group = {g["group_id"]: g for g in described.groups.to_pylist()}
    rows = described.offsets.to_pylist()
    of = f" of cluster {terminal(described.cluster)}" if described.cluster else ""
    # A snapshot is listed by its files of partition_verdicts, which hold rows: read_described read its as_of.
    assert described.as_of is not None
    lines = [f"Snapshot {terminal(described.snapshot_id)}{of} as of {exact_utc(described.as_of)}"]
    if not rows:
        return "\n".join([*lines, "", "no committed offsets match"])
    sections: dict[str, list[dict]] = {}
    for row in rows:
        sections.setdefault(row["group_id"], []).append(row)
    for group_id, group_rows in sections.items():
        cells = [HEADER, *(row_cells(r) for r in group_rows)]
        widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
        lines += ["", group_line(by_group.get(group_id), group_id), ""]
        lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() for cell in cells]
    return "\n".join(lines)


def document(described: Described) -> dict:
    """--json: the same rows, and the groups they belong to."""
    from offset_audit.views.json_documents import iso

    wanted = set(described.offsets.column("group_id").to_pylist())
    groups = described.groups.to_pylist()
    return {
        "command": "describe",
        "snapshot_id": described.snapshot_id,
        "cluster": described.cluster or None,
        "as_of": iso(described.as_of),
        "groups": [{k: iso(v) for k, v in g.items()} for g in groups if g["group_id"] in wanted],
        "offsets": [{k: iso(v) for k, v in r.items()} for r in described.offsets.to_pylist()],
    }
