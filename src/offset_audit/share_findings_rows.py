"""A row of the share_findings table, which both coordinators' findings fill: the group coordinator's
about share groups (assignments, group.share.* limits) and the share coordinator's about the state it
replayed. Below both, as Kafka keeps what its two coordinators share out of either.
"""

from __future__ import annotations

from typing import Any, Literal

Severity = Literal["error", "warning", "info"]


def finding_row(
    group_id: str | None,
    kind: str,
    severity: Severity,
    message: str,
    *,
    member_id: str | None = None,
    topic: str | None = None,
    partition: int | None = None,
) -> dict[str, Any]:
    return {
        "group_id": group_id,
        "member_id": member_id,
        "topic": topic,
        "partition": partition,
        "kind": kind,
        "severity": severity,
        "message": message,
    }
