"""The KIP-932 draft's control records (SHARE_CHECKPOINT, SHARE_DELTA) as the tests write them, and the
seed's worked example: shared by the chain's unit tests and the share command's end-to-end ones."""

from __future__ import annotations

AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


def state(base: int, last: int, state: int, count: int) -> dict:
    return {"BaseOffset": base, "LastOffset": last, "State": state, "DeliveryCount": count}


def checkpoint(offset: int, epoch: int, start: int, end: int, *states: dict, group: str = "G1", **extra) -> dict:
    record = {"topic": "T", "partition": 0, "offset": offset, "type": "SHARE_CHECKPOINT", "GroupId": group}
    return record | {"CheckpointEpoch": epoch, "StartOffset": start, "EndOffset": end, "States": list(states)} | extra


def delta(offset: int, epoch: int, back: int, *states: dict, group: str = "G1", **extra) -> dict:
    record = {"topic": "T", "partition": 0, "offset": offset, "type": "SHARE_DELTA", "GroupId": group}
    return record | {"CheckpointEpoch": epoch, "BackOffset": back, "States": list(states)} | extra


# ---- the draft's worked example (reference 8.4), records 130-137 ----------------------------------------------------

# The control records exactly as the seed prints them.
WORKED_EXAMPLE = [
    checkpoint(130, 1, 110, 110),
    delta(131, 1, 130, state(100, 109, ACKNOWLEDGED, 1)),
    delta(132, 1, 131, state(110, 110, AVAILABLE, 1)),
    delta(133, 1, 132, state(111, 118, AVAILABLE, 0), state(119, 119, ACKNOWLEDGED, 1)),
    delta(134, 1, 133, state(111, 112, AVAILABLE, 1)),
    delta(135, 1, 134, state(113, 118, ACKNOWLEDGED, 1)),
    delta(136, 1, 135, state(110, 110, ACKNOWLEDGED, 2)),
    delta(137, 1, 136, state(111, 112, ACKNOWLEDGED, 2)),
]
NEW_CHECKPOINT_137 = checkpoint(137, 2, 120, 120)
