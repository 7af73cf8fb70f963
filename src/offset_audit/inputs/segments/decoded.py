"""What decoding one batch gives: its records as columns, or the reason none of them can be trusted.

Both decoders (magic 2 in `record_batch`, magic 0/1 in `legacy`) return the same shape, so the reader
treats every batch alike and a bad batch never leaks half of its records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP: magic 0 messages, and records written without one
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(slots=True)
class DecodedBatch:
    """The records of one batch, column by column, in offset order.

    Columns rather than record objects because a segment holds about a million records: appending to
    a few lists per record is what keeps the reader fast.
    """

    offsets: Sequence[int | None]  # None only in a row standing for bytes that could not be read (RowBuffer.add_error)
    timestamps_ms: list[int]  # NO_TIMESTAMP where the record has none
    keys: list[bytes | None]
    values: list[bytes | None]
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    is_transactional: bool = False
    control_types: list[str] | None = None  # one per record in a control batch, None in a data batch


class UntrustedBatch(Exception):
    """The bytes of a batch cannot be trusted (bad CRC, undecodable payload, impossible structure).

    `reason` says what is wrong; `untrusted` names what is lost ("5 records (offsets 100..104)"), as
    far as the header tells, so the error row can say how much of the log it stands for.
    """

    def __init__(self, reason: str, untrusted: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.untrusted = untrusted
