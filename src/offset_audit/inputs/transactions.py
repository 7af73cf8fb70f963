"""Transactional offset commits, resolved as the broker applies them (reference 1.1).

TxnOffsetCommit writes offset commits in transactional batches; they take effect only when a later
control record of the same producer, in the same partition, says COMMIT, and are discarded on ABORT.
Until then they are pending: the broker keeps them aside and does not expire the partition's offset
or remove the group (reference 4.3).

Log segments and kafka-dump-log output show batches and markers; every other input is either
already resolved (a Kafka source read read_committed) or cannot tell. The markers are few (one per
transaction), so they are gathered in a first, light pass over the files, resolved here on the driver,
and handed to every reading task, which labels its own records: no shuffle, no second copy of the data.

Labels (column `transaction`): null for a non-transactional record; "committed", "aborted" or
"pending" for a transactional data record; "marker" for a control record (counted, never decoded).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

COMMITTED = "committed"
ABORTED = "aborted"
PENDING = "pending"
MARKER = "marker"
_OUTCOME = {"COMMIT": COMMITTED, "ABORT": ABORTED}


@dataclass
class Markers:
    """The COMMIT/ABORT markers of a dump, per (partition, producer id), sorted by offset."""

    by_producer: dict[tuple[int | None, int], tuple[list[int], list[str]]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int | None, int, int, str]]) -> Markers:
        """Rows of (partition, producer id, offset, control type); other control types end nothing."""
        grouped: dict[tuple[int | None, int], list[tuple[int, str]]] = {}
        for partition, producer, offset, control_type in rows:
            if control_type in _OUTCOME:
                grouped.setdefault((partition, producer), []).append((offset, _OUTCOME[control_type]))
        by_producer = {}
        for key, items in grouped.items():
            items.sort()
            by_producer[key] = ([o for o, _ in items], [t for _, t in items])
        return cls(by_producer)

    def outcome(self, partition: int | None, producer: int, offset: int) -> str:
        """The fate of a transactional record: that of the first marker after it, else pending."""
        found = self.by_producer.get((partition, producer))
        if not found:
            return PENDING
        offsets, outcomes = found
        at = bisect.bisect_right(offsets, offset)
        return outcomes[at] if at < len(offsets) else PENDING

    def to_json(self) -> str:
        return json.dumps([[p, producer, o, t] for (p, producer), (o, t) in self.by_producer.items()])

    @classmethod
    def from_json(cls, text: str) -> Markers:
        return cls({(p, producer): (list(o), list(t)) for p, producer, o, t in json.loads(text)})


def marker_rows(batch: pa.RecordBatch) -> list[tuple[int | None, int, int, str]]:
    """The control records of a batch of LOG_RECORD_SCHEMA rows, for `Markers.from_rows`."""
    control = pc.fill_null(batch.column("is_control"), False)
    if not pc.any(control).as_py():
        return []
    picked = batch.filter(control)
    return list(
        zip(
            picked.column("source_partition").to_pylist(),
            picked.column("producer_id").to_pylist(),
            picked.column("source_offset").to_pylist(),
            picked.column("control_type").to_pylist(),
            strict=True,
        )
    )


def label(batch: pa.RecordBatch, markers: Markers) -> pa.Array:
    """The `transaction` label of every row of a LOG_RECORD_SCHEMA batch."""
    n = batch.num_rows
    control = pc.fill_null(batch.column("is_control"), False).to_numpy(zero_copy_only=False)
    transactional = pc.fill_null(batch.column("is_transactional"), False).to_numpy(zero_copy_only=False)
    labels = np.full(n, None, dtype=object)
    labels[control] = MARKER
    data = np.flatnonzero(transactional & ~control)
    if len(data):
        partitions = batch.column("source_partition").to_pylist()
        producers = batch.column("producer_id").to_pylist()
        offsets = batch.column("source_offset").to_pylist()
        for i in data.tolist():
            labels[i] = markers.outcome(partitions[i], producers[i], offsets[i])
    return pa.array(labels, pa.string())
