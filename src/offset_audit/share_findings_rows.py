"""A row of the share_findings table, which both coordinators' findings fill: the group coordinator's
about share groups (assignments, group.share.* limits) and the share coordinator's about the state it
replayed. Below both, as Kafka keeps what its two coordinators share out of either.
"""

from __future__ import annotations

from typing import Any, Literal

Severity = Literal["error", "warning", "info"]

# What a finding is about (its `kind`), spelled here once for the coordinators that write them and the
# views and tests that read them.
# The group coordinator's assignment audit (coordinator/share_findings.py):
UNASSIGNED_PARTITION = "UNASSIGNED_PARTITION"
MEMBER_WITHOUT_PARTITIONS = "MEMBER_WITHOUT_PARTITIONS"
ASSIGNMENT_DIFFERS = "ASSIGNMENT_DIFFERS"
ASSIGNMENT_NOT_CHECKED = "ASSIGNMENT_NOT_CHECKED"
# The broker's assignor, run on the group's state, raised instead of assigning: a finding, never the end of
# the run.
ASSIGNMENT_NOT_COMPUTED = "ASSIGNMENT_NOT_COMPUTED"
# Its group.share.* limits (coordinator/share_limits.py), one per check it runs; SHARE_LIMIT for a check
# not named yet.
TOO_MANY_GROUPS = "TOO_MANY_GROUPS"
GROUP_AT_MAX_SIZE = "GROUP_AT_MAX_SIZE"
GROUP_OVER_MAX_SIZE = "GROUP_OVER_MAX_SIZE"
RECORD_LOCK_LIMIT = "RECORD_LOCK_LIMIT"
DELIVERY_LIMIT_REACHED = "DELIVERY_LIMIT_REACHED"
SHARE_LIMIT = "SHARE_LIMIT"
# The broker settings read: a bad value, or a group.share.* name the audit does not read (Kafka 4.1's
# renames, typos).
BAD_BROKER_SETTING = "BAD_BROKER_SETTING"
UNREAD_BROKER_SETTING = "UNREAD_BROKER_SETTING"
# The share coordinator's replay (share_coordinator/state_findings.py): a share-partition's start offset
# went back.
START_OFFSET_MOVED_BACK = "START_OFFSET_MOVED_BACK"


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
