"""Segment-building helpers for the end-to-end tests of log-file inputs: the package's writer
(offset_audit.inputs.segments.writer), whose output the hand-laid vectors of test_segments.py do not depend on."""

from __future__ import annotations

from offset_audit.inputs.segments.writer import TRANSACTIONAL, marker_batch, record_batch


def batch(base_offset, records, producer_id=-1, attributes=0):
    return record_batch(base_offset, records, producer_id, attributes)


def marker(offset, producer_id, commit, timestamp):
    return marker_batch(offset, producer_id, commit, timestamp)


__all__ = ["TRANSACTIONAL", "batch", "marker"]
