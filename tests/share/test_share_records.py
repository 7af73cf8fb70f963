"""__share_group_state records against hand-written byte vectors (tests/vectors/share_state.json)."""

from __future__ import annotations

import pytest
from vector_files import load

from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import share_state_layouts
from offset_audit.share.records import decode_share_state_record

VECTORS = load("share_state")
CODEC = RecordCodec(share_state_layouts())


@pytest.mark.parametrize("vector", VECTORS, ids=str)
def test_share_state_vectors(vector):
    row = decode_share_state_record(CODEC, vector.key, vector.value)
    assert row["record_class"] == vector.record_class, row.get("reason")
    for name, expected in vector.expect.items():
        if isinstance(expected, str) and expected.startswith("contains:"):
            assert expected[len("contains:") :] in row[name], name
        else:
            assert row.get(name) == expected, name
