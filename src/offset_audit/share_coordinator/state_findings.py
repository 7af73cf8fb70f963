"""What the replayed share-partition state says about the brokers that wrote it.

The replay is the same from Kafka 4.0 to 4.4, but what the share coordinator writes is not: before 4.4
a state write that arrives out of order moves the stored start offset back, and a share-partition
leader that loads that state (after a leadership change) delivers the records between again. The
replay counts such updates per share-partition (`ShareReplay.start_offset_moves_back`); here they
become findings and, where the chosen version could not have written them, a note on the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from offset_audit.broker_versions import BrokerVersion
from offset_audit.share_findings_rows import START_OFFSET_MOVED_BACK, finding_row


def moved_back_findings(partition_rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A warning per share-partition whose start offset an update moved back (share_partitions rows)."""
    findings = []
    for row in partition_rows:
        moves = row.get("start_offset_moves_back") or 0
        if not moves:
            continue
        times = "once" if moves == 1 else f"{moves} times"
        findings.append(
            finding_row(
                row["group_id"],
                START_OFFSET_MOVED_BACK,
                "warning",
                f"a ShareUpdate moved the stored start offset back {times} (see share_problems): a leader "
                "that loads this state delivers the records between again. Brokers before 4.4 persist a "
                "state write that arrives out of order as it comes; 4.4 keeps the higher start offset",
                topic=row.get("topic") or row.get("topic_id"),
                partition=row.get("partition"),
            )
        )
    return findings


def writer_notes(partition_rows: Iterable[Mapping[str, Any]], version: BrokerVersion) -> dict[str, int]:
    """One note, with the records it covers, when the state holds updates the chosen version never
    writes: the dump's broker is older than --kafka-version says."""
    moves = sum(row.get("start_offset_moves_back") or 0 for row in partition_rows)
    if not moves or not version.keeps_share_start_offsets_moving_forward:
        return {}
    note = (
        "ShareUpdates moving a start offset back, which only brokers before 4.4 write, but audited as "
        f"Kafka {version.label} (--kafka-version)"
    )
    return {note: moves}
