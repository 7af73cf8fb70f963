"""Share-partitions whose start offset an update moved back: a finding each, and a note on the input
where the chosen broker version never writes such an update (4.3 against 4.4)."""

from __future__ import annotations

from offset_audit.broker_versions import parse_version
from offset_audit.share_coordinator.state_findings import moved_back_findings, writer_notes
from offset_audit.share_findings_rows import START_OFFSET_MOVED_BACK

ROWS = [
    {"group_id": "g1", "topic": "orders", "topic_id": "id-1", "partition": 3, "start_offset_moves_back": 2},
    {"group_id": "g1", "topic": None, "topic_id": "id-2", "partition": 0, "start_offset_moves_back": 0},
    {"group_id": "g2", "topic": None, "topic_id": "id-2", "partition": 1, "start_offset_moves_back": 1},
    {"group_id": "g3", "topic": "draft", "topic_id": None, "partition": 0, "start_offset_moves_back": None},
]


def test_a_warning_per_share_partition_whose_start_offset_moved_back():
    findings = moved_back_findings(ROWS)
    assert [(f["group_id"], f["topic"], f["partition"], f["kind"], f["severity"]) for f in findings] == [
        ("g1", "orders", 3, START_OFFSET_MOVED_BACK, "warning"),
        ("g2", "id-2", 1, START_OFFSET_MOVED_BACK, "warning"),
    ]
    assert "back 2 times" in findings[0]["message"] and "back once" in findings[1]["message"]


def test_only_a_version_that_never_writes_such_updates_notes_them():
    assert writer_notes(ROWS, parse_version("4.3")) == {}
    assert writer_notes(ROWS, parse_version("4.2.1")) == {}
    (note, count), *_ = writer_notes(ROWS, parse_version("4.4")).items()
    assert count == 3 and "only brokers before 4.4" in note and "Kafka 4.4" in note
    assert writer_notes(ROWS[1:2], parse_version("4.4")) == {}
