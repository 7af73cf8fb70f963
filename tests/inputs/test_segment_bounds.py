"""Whatever a segment's bytes claim, reading it costs bounded memory and loses only the damaged part:
a corrupt length is skipped over (and counted) instead of ending the file, and a batch that inflates past
decode.max_batch_mib is refused without being inflated."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib

import cramjam
import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from offset_audit.cli.main import main
from offset_audit.inputs.segments.crc import crc32c
from offset_audit.inputs.segments.reader import read_segment
from offset_audit.inputs.segments.writer import record_batch

# Every test here runs on both segment readers (conftest.segment_path).
pytestmark = pytest.mark.usefixtures("segment_path")

T = 1_700_000_000_000
GIB = 1 << 30


def _rows(path, **kwargs):
    return pa.Table.from_batches(list(read_segment(str(path), **kwargs))).to_pylist()


def _key(i: int) -> bytes:
    group = f"g{i % 16}".encode()
    return struct.pack(">hh", 1, len(group)) + group + struct.pack(">h", 1) + b"t" + struct.pack(">i", i % 3)


def _value(i: int) -> bytes:
    return struct.pack(">hqihq", 3, i, 0, 0, T + i)


@pytest.fixture(scope="module")
def damaged_segment(tmp_path_factory):
    """3,256 batches of one or two offset commits, as in the report: batch 814's length set to 2^31-1."""
    folder = tmp_path_factory.mktemp("seg") / "__consumer_offsets-0"
    folder.mkdir()
    batches, offset = [], 0
    for n in range(3_256):
        size = 1 + n % 2
        batches.append(
            record_batch(offset, [(_key(offset + i), _value(offset + i), T + offset + i) for i in range(size)])
        )
        offset += size
    damaged = bytearray(batches[813])
    damaged[8:12] = (2**31 - 1).to_bytes(4, "big")
    data = b"".join(batches[:813]) + bytes(damaged) + b"".join(batches[814:])
    (folder / "00000000000000000000.log").write_bytes(data)
    records = offset
    return folder.parent, records, 1 + 813 % 2, len(batches[813])


def test_a_corrupt_length_costs_its_batch_and_reading_goes_on(damaged_segment):
    """Once, reading stopped there: 6,000 records read became 3,559, and the rest was counted nowhere."""
    root, records, lost, lost_bytes = damaged_segment
    rows = _rows(root / "__consumer_offsets-0" / "00000000000000000000.log")
    errors = [r for r in rows if r["source_error"]]
    assert len(errors) == 1 and errors[0]["skipped_bytes"] == lost_bytes
    assert "reading resumed at byte" in errors[0]["source_error"]
    assert len(rows) - 1 == records - lost


def test_the_summary_and_runs_say_how_many_bytes_were_skipped(spark, damaged_segment, tmp_path):
    root, records, lost, lost_bytes = damaged_segment
    result = CliRunner().invoke(main, ["decode", "--input", str(root), "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"{lost_bytes:,} unreadable bytes skipped" in result.output
    (run,) = DeltaTable(str(tmp_path / "out" / "runs")).to_pyarrow_table().to_pylist()
    assert run["bytes_skipped"] == lost_bytes
    assert run["records_read"] == records - lost + 1 and run["quarantined"] == 1
    (row,) = DeltaTable(str(tmp_path / "out" / "quarantine")).to_pyarrow_table().to_pylist()
    assert row["skipped_bytes"] == lost_bytes


# Decompression bombs ---------------------------------------------------------------------------------


def _compressed_batch(base_offset: int, codec: int, payload: bytes) -> bytes:
    """A magic 2 batch claiming one record, its records section `payload` as given (compressed)."""
    header = struct.pack(">hiqqqhii", codec, 0, T, T, -1, -1, -1, 1)
    after_crc = header + payload
    after_length = struct.pack(">ibI", 0, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def _zeros_zstd(size: int) -> bytes:
    compressor = cramjam.zstd.Compressor()
    chunk = bytes(1 << 20)
    for _ in range(size >> 20):
        compressor.compress(chunk)
    return bytes(compressor.finish())


def _zeros_gzip(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    return b"".join(compressor.compress(chunk) for _ in range(size >> 20)) + compressor.flush()


# Memory is measured from after the reader is loaded and has read one small file (numba, the compiled
# walker, pyarrow: a fixed cost whatever the input) to the peak of reading the file under test. The peak
# is VmHWM, reset at that point through /proc/self/clear_refs (ru_maxrss cannot be reset).
PROBE = """
import json, re, sys
import pyarrow as pa
from offset_audit.inputs.segments.reader import read_segment

def status(field):
    return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024

fast = sys.argv[3] == "fast"
list(read_segment(sys.argv[2], fast=fast))
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
baseline = status("VmRSS")
rows = pa.Table.from_batches(list(read_segment(sys.argv[1], fast=fast))).to_pylist()
print(json.dumps({"baseline_mib": baseline, "growth_mib": status("VmHWM") - baseline,
                  "errors": [r["source_error"] for r in rows if r["source_error"]],
                  "offsets": [r["source_offset"] for r in rows if not r["source_error"]]}))
"""


def _read_in_a_fresh_process(path, segment_path: str) -> dict:
    warm = path.parent / "00000000000000000099.log"
    warm.write_bytes(record_batch(99, [(_key(1), _value(1), T)]))
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(path), str(warm), segment_path],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        warm.unlink()
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("codec", "payload"),
    [(1, lambda: _zeros_gzip(GIB)), (4, lambda: _zeros_zstd(GIB)), (4, lambda: _zeros_zstd(2 * GIB))],
)
def test_a_decompression_bomb_is_refused_at_the_bound_with_flat_memory(tmp_path, codec, payload, segment_path):
    """A 1 MiB gzip batch inflating to 1 GiB took the run to 2.8 GiB once (a 2 GiB one, 5 GiB)."""
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    after = record_batch(1, [(_key(1), _value(1), T)])
    path = folder / "00000000000000000000.log"
    path.write_bytes(_compressed_batch(0, codec, payload()) + after)
    read = _read_in_a_fresh_process(path, segment_path)
    (error,) = read["errors"]
    assert "inflates to more than 67,108,864 bytes" in error and "max_batch_mib" in error
    assert read["offsets"] == [1]
    # The bound is 64 MiB of output, plus the bomb's own megabyte read in, the fast path's 16 MiB chunk
    # and 8 MiB of inflated records; the interpreter, pyarrow, numpy and numba are in the baseline.
    assert read["growth_mib"] < 200, read


def test_the_bound_is_a_setting(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    body = b"x" * 5_000
    path = folder / "00000000000000000000.log"
    path.write_bytes(record_batch(0, [(_key(0), body, T)], compression="zstd"))
    assert _rows(path)[0]["value"] == body
    (row,) = _rows(path, max_batch_bytes=1_000)
    assert "inflates to more than 1,000 bytes" in row["source_error"] and row["skipped_bytes"] is None


def test_a_small_legacy_header_inside_a_damaged_stretch_is_weighed_not_a_crash(tmp_path):
    """While looking for the next batch that verifies, a stretch of damaged bytes can hold what reads as
    a magic-0 message of 20 bytes, shorter than the header the search screens. Once, reading then asked
    the file for a negative number of bytes and the run ended in a traceback (a .cleaned file cut short
    by a copy, from Kafka 3.9's cleaner). It is a candidate that fails its CRC, and reading goes on."""
    first = record_batch(0, [(_key(0), _value(0), T)])
    last = record_batch(2, [(_key(2), _value(2), T + 2)])
    # offset 1, size 20, a wrong CRC, magic 0, attributes 0, key and value absent, then the stretch's rest
    fake = struct.pack(">qiIbbii", 1, 20, 0xDEADBEEF, 0, 0, -1, -1) + b"\x00" * 6
    damaged = first[:30] + fake + b"\x07" * 40
    (tmp_path / "__consumer_offsets-0").mkdir()
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.write_bytes(damaged + last)
    rows = _rows(path)
    assert [r["source_offset"] for r in rows if not r["source_error"]] == [2]
    assert sum(r["skipped_bytes"] or 0 for r in rows if r["source_error"]) == len(damaged)
