"""Fuzzing with a fixed seed: mutated records of every type, mutated segment files and mutated text dumps.

Whatever the mutation: no exception leaves a reader or decoder, every record is accounted for (decoded,
kept as unknown, quarantined or skipped: the counts add up), and the good records beside the bad ones
decode exactly as they do alone.
"""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest
from repo_paths import TEXT_DUMPS
from vector_files import all_vectors

from offset_audit.decoding import decoder, records
from offset_audit.decoding.fast_commits import decode_offset_commits
from offset_audit.inputs.segments.reader import read_segment
from offset_audit.inputs.segments.writer import record_batch
from offset_audit.inputs.textdumps.console import read_console_dump
from offset_audit.inputs.textdumps.dump_log import read_dump_log
from offset_audit.layouts.codec import RecordCodec

SEED = 20261124
CODEC = RecordCodec()
GOOD = [v for v in all_vectors() if v.record_class not in (records.QUARANTINE,)]


def _mutate(rng: random.Random, data: bytes | None) -> bytes | None:
    """One random damage: a flipped bit, a changed byte, a cut, extra bytes, an extreme length field,
    inserted bytes, or a null."""
    if data is None:
        return bytes(rng.randbytes(rng.randint(0, 12)))
    data = bytearray(data)
    kind = rng.randrange(8)
    if kind == 0 and data:
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and data:
        data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 2:
        data = data[: rng.randrange(len(data) + 1)]
    elif kind == 3:
        data += rng.randbytes(rng.randint(1, 20))
    elif kind in (4, 5) and len(data) >= 4:
        i = rng.randrange(len(data) - 3)
        data[i : i + 4] = rng.choice(
            [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x00"]
        )
    elif kind == 6:
        i = rng.randrange(len(data) + 1)
        data[i:i] = rng.randbytes(rng.randint(1, 8))
    else:
        return None
    return bytes(data)


def mutants(count_per_vector: int = 6) -> list[tuple[bytes | None, bytes | None]]:
    rng = random.Random(SEED)
    out = []
    for vector in GOOD:
        for _ in range(count_per_vector):
            key, value = vector.key, vector.value
            target = rng.randrange(3)
            if target in (0, 2):
                value = _mutate(rng, value)
            if target in (1, 2):
                key = _mutate(rng, key)
            out.append((key, value))
    return out


def test_there_are_a_few_hundred_mutants_covering_every_record_type():
    types = {records.decode_record(CODEC, v.key, v.value).get("key_type") for v in GOOD}
    assert len(mutants()) >= 300 and len(types) >= 20


def test_the_generic_reader_never_raises_and_always_classifies():
    classes = Counter(records.decode_record(CODEC, key, value)["record_class"] for key, value in mutants())
    assert set(classes) <= set(records.RECORD_CLASSES)
    assert classes[records.QUARANTINE] > 50 and classes[records.OFFSET_COMMIT] > 50


def test_the_fast_path_takes_only_what_the_generic_reader_reads_the_same_way():
    pairs = mutants()
    keys = pa.array([k for k, _ in pairs], pa.binary())
    values = pa.array([v for _, v in pairs], pa.binary())
    fast = decode_offset_commits(keys, values)
    columns = pa.table(fast.columns).to_pylist()
    for row_index, fast_row in zip(fast.rows.tolist(), columns, strict=True):
        generic = records.decode_record(CODEC, *pairs[row_index])
        assert generic["record_class"] == records.OFFSET_COMMIT, pairs[row_index]
        assert fast_row == {name: generic["offset_commit"].get(name) for name in fast_row}, pairs[row_index]


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "generic-only"])
def test_a_batch_of_good_and_damaged_records_accounts_for_each_and_decodes_the_good_ones(fast):
    rng = random.Random(SEED + 1)
    bad = mutants(3)
    good = [(v.key, v.value) for v in GOOD]
    mixed = [("good", pair) for pair in good] + [("bad", pair) for pair in bad]
    rng.shuffle(mixed)
    batch = pa.RecordBatch.from_pydict(
        {
            "source_partition": [0] * len(mixed),
            "source_offset": list(range(len(mixed))),
            "record_timestamp_ms": [1_700_000_000_000] * len(mixed),
            "key": pa.array([p[0] for _, p in mixed], pa.binary()),
            "value": pa.array([p[1] for _, p in mixed], pa.binary()),
            "other_topic": [False] * len(mixed),
        }
    )
    decoded = decoder.decode_batch(batch, CODEC, fast)
    assert sum(decoded.counts.values()) == len(mixed)
    commits = {row["source_offset"]: row for row in decoded.table("offset_commits").to_pylist()}
    for offset, (kind, (key, value)) in enumerate(mixed):
        if kind != "good":
            continue
        alone = records.decode_record(CODEC, key, value)
        if alone["record_class"] == records.OFFSET_COMMIT:
            expected = alone["offset_commit"]
            fields = ("group_id", "topic", "partition", "is_tombstone", "committed_offset")
            assert {k: commits[offset][k] for k in fields} == {k: expected.get(k) for k in fields}


# Segment files -----------------------------------------------------------------------------------------

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _segment(rng: random.Random) -> tuple[bytes, list[tuple[int, int, list[tuple[int, bytes, bytes]]]]]:
    """60 batches of 1-3 offset commits, codecs mixed: the bytes, and each batch's byte range and records."""
    commits = [(v.key, v.value) for v in GOOD if v.record_class == records.OFFSET_COMMIT and v.value is not None]
    data, batches, offset = b"", [], 0
    for n in range(60):
        size = rng.randint(1, 3)
        chosen = [commits[rng.randrange(len(commits))] for _ in range(size)]
        raw = record_batch(offset, [(k, v, 1_700_000_000_000 + offset) for k, v in chosen], compression=CODECS[n % 5])
        batches.append((len(data), len(data) + len(raw), [(offset + i, k, v) for i, (k, v) in enumerate(chosen)]))
        data += raw
        offset += size
    return data, batches


def _damage(rng: random.Random, data: bytes) -> tuple[bytes, list[tuple[int, int]], tuple[int, int] | None]:
    """The damaged bytes, the ranges of the original changed in place, and (position, length) of
    inserted bytes, if any."""
    damaged = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:  # bit flips here and there
        spots = [rng.randrange(len(data)) for _ in range(rng.randint(1, 6))]
        for spot in spots:
            damaged[spot] ^= 1 << rng.randrange(8)
        return bytes(damaged), [(s, s + 1) for s in spots], None
    if kind == 1:  # a batch length overwritten (lengths are outside the CRC)
        spot = rng.randrange(len(data) - 4)
        damaged[spot : spot + 4] = rng.randrange(2**32).to_bytes(4, "big")
        return bytes(damaged), [(spot, spot + 4)], None
    if kind == 2:  # a stretch zeroed
        start = rng.randrange(len(data))
        end = min(len(data), start + rng.randint(1, 3000))
        damaged[start:end] = bytes(end - start)
        return bytes(damaged), [(start, end)], None
    if kind == 3:  # cut short
        cut = rng.randrange(len(data))
        return bytes(damaged[:cut]), [(cut, len(data))], None
    spot = rng.randrange(len(data))  # garbage inserted
    garbage = rng.randbytes(rng.randint(1, 5000))
    return bytes(damaged[:spot] + garbage + damaged[spot:]), [], (spot, len(garbage))


@pytest.mark.parametrize("case", range(24))
def test_a_damaged_segment_loses_only_the_batches_its_damage_touches(tmp_path, case):
    rng = random.Random(SEED + 100 + case)
    data, batches = _segment(rng)
    damaged, changed, inserted = _damage(rng, data)
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    path = folder / "00000000000000000000.log"
    path.write_bytes(damaged)
    arrow = list(read_segment(str(path), fast=False))
    rows = pa.Table.from_batches(arrow).to_pylist() if arrow else []
    fast_arrow = list(read_segment(str(path), fast=True))
    # the fast path reads the good batches itself and hands the damaged stretch to the Python path
    assert (pa.Table.from_batches(fast_arrow).to_pylist() if fast_arrow else []) == rows
    for row in rows:
        assert (row["source_error"] is None) or (row["key"] is None and row["value"] is None)
    read = {(r["source_offset"], r["key"], r["value"]) for r in rows if r["source_error"] is None}
    for start, end, records_ in batches:
        touched = any(start < b and a < end for a, b in changed)
        if inserted is not None and start < inserted[0] < end:
            touched = True
        if touched:
            continue
        for record in records_:
            assert record in read, (case, start, record[0])


def test_a_segment_of_random_bytes_is_skipped_quickly_and_whole(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    path = folder / "00000000000000000000.log"
    path.write_bytes(random.Random(SEED).randbytes(3 << 20))
    rows = [r for b in read_segment(str(path), fast=False) for r in b.to_pylist()]
    assert [r for b in read_segment(str(path), fast=True) for r in b.to_pylist()] == rows
    assert sum(r["skipped_bytes"] or 0 for r in rows) == 3 << 20
    assert all(r["source_error"] for r in rows)


# Text dumps --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "reader"),
    [
        ("dump_log_3_7.txt", read_dump_log),
        ("dump_log_3_8.txt", read_dump_log),
        ("console_json_4_x.txt", read_console_dump),
        ("console_scala_offsets.txt", read_console_dump),
    ],
)
def test_damaged_text_dumps_end_in_error_rows_never_in_an_exception(tmp_path, fixture, reader):

    source = (TEXT_DUMPS / fixture).read_bytes()
    rng = random.Random(SEED + len(fixture))
    for case in range(20):
        damaged = bytearray(source)
        for _ in range(rng.randint(1, 10)):
            spot = rng.randrange(len(damaged))
            choice = rng.randrange(3)
            if choice == 0:
                damaged[spot] = rng.randrange(256)
            elif choice == 1:
                damaged[spot:spot] = rng.choice([b"\xff\xfe", b"\n", b"{", b'"', b"99999999999999999999", b"\x00"])
            else:
                del damaged[spot : spot + rng.randint(1, 40)]
        path = tmp_path / f"{case}.txt"
        path.write_bytes(bytes(damaged))
        rows = [r for b in reader(str(path)) for r in b.to_pylist()]
        for row in rows:
            assert (row["source_error"] is None) or (row["key"] is None and row["value"] is None)
