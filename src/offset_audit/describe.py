"""`describe`: one snapshot's offsets in the shape of `kafka-consumer-groups.sh --describe`.

Operators know that table by heart (GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG), so the
columns only the log can tell come after it: when the offset was committed, which expiry rule holds
it, when it expires, and whether OffsetDelete would succeed now. Like kafka-consumer-groups, each group
gets a line about its state before its rows.
"""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.escaping import terminal

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
    kind = group["group_type"] + (f" {group['protocol_type']}" if group.get("protocol_type") else "")
    state = group["group_state"]
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


def render(offsets: pa.Table, groups: pa.Table, snapshot_id: str, as_of: datetime | None) -> str:
    """The describe view: a line per group, then its rows, columns aligned per group as Kafka's tool does."""
    by_group = {g["group_id"]: g for g in groups.to_pylist()}
    rows = offsets.to_pylist()
    lines = [f"Snapshot {terminal(snapshot_id)} as of {_time(as_of)}"]
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


def document(offsets: pa.Table, groups: pa.Table, snapshot_id: str, as_of: datetime | None) -> dict:
    """--json: the same rows, and the groups they belong to."""
    from offset_audit.documents import iso

    wanted = set(offsets.column("group_id").to_pylist())
    return {
        "command": "describe",
        "snapshot_id": snapshot_id,
        "as_of": iso(as_of),
        "groups": [{k: iso(v) for k, v in g.items()} for g in groups.to_pylist() if g["group_id"] in wanted],
        "offsets": [{k: iso(v) for k, v in r.items()} for r in offsets.to_pylist()],
    }
