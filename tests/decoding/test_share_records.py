"""__share_group_state records against hand-written byte vectors (tests/vectors/share_state.json)."""

from __future__ import annotations

import pytest
from vector_files import load

from offset_audit.decoding.share_records import decode_share_state_record
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import share_state_layouts

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


# Every vector the broker could have written: not those with a tag or bytes no layout of ours knows.
WRITTEN = [
    v
    for v in VECTORS
    if v.record_class == "share_state"
    and v.value is not None
    and not any(w in v.name for w in ("unknown", "trailing", "explicit"))
]


@pytest.mark.parametrize("vector", WRITTEN, ids=str)
def test_the_writer_of_share_state_gives_the_hand_written_bytes(vector):
    """The encoder the generator writes __share_group_state with (layouts/encoder): the fields read from a
    hand-written vector, written again in its era, are the vector's bytes, for every era and tag."""
    from offset_audit.layouts.encoder import encode_key, encode_value

    record_type, key_fields = CODEC.decode_key(vector.key)
    layout = share_state_layouts()[record_type]
    decoded = CODEC.decode_value(record_type, vector.value)
    assert decoded.trailing_bytes == 0
    written = encode_value(layout, decoded.version, decoded.fields, era=decoded.era)
    assert written.hex() == vector.value.hex()
    assert encode_key(layout, key_fields).hex() == vector.key.hex()
