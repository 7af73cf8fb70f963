"""Prometheus text built a column at a time: label sets, values and lines as Arrow string arrays.

`offset-audit metrics` writes up to a million samples; formatting each in Python (a tuple of labels, an
f-string, a sort key) took 14 s for 785,603 of them. Here every family's lines are made by Arrow's
string kernels over whole columns, a name is escaped once however many samples carry it, and the text
is read out of the lines' data buffer in one copy.

The text is the one the exposition format and our earlier row-by-row writer give, byte for byte:
integers as Python's str() writes them, a ratio of milliseconds as repr() of the double (the shortest
text that reads back as it), a null label left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.escaping import prometheus_label

PREFIX = "kafka_offset_audit_"

Labels = tuple[tuple[str, object], ...]

# ".fff" of a whole number of milliseconds as repr() of the seconds writes it: trailing zeros dropped,
# ".0" for none.
_FRACTIONS = pa.array([".0", *(f".{f:03}".rstrip("0") for f in range(1, 1000))])
# Below 10**15 ms (31,000 years) the seconds have at most 15 significant digits, so the decimal
# ms / 1000 is the shortest text that reads back as the double nearest it: what repr() writes.
_EXACT_MS = 10**15


@dataclass(frozen=True)
class Family:
    """One metric: its name without the prefix, its HELP text, and its samples in the order written,
    as label columns (raw values, a null being a label left out) and value texts."""

    name: str
    help: str
    labels: tuple[tuple[str, pa.Array], ...]
    values: pa.Array  # each sample's value as the text writes it

    @property
    def full_name(self) -> str:
        return PREFIX + self.name

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def samples(self) -> tuple[tuple[Labels, int | float], ...]:
        """The samples as Python values (prometheus_client's collector wants them), read back from the
        texts: an integer as it was, a float as the same double."""
        names = [name for name, _ in self.labels]
        values = [int(v) if v.lstrip("-").isdigit() else float(v) for v in self.values.to_pylist()]
        columns = [column.to_pylist() for _, column in self.labels]
        rows = [tuple(zip(names, row, strict=True)) for row in zip(*columns, strict=True)] if columns else None
        return tuple(zip(rows or [()] * len(values), values, strict=True))

    @property
    def text(self) -> str:
        help_text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        head = f"# HELP {self.full_name} {help_text}\n# TYPE {self.full_name} gauge\n"
        lines = pc.binary_join_element_wise(self.full_name, label_text(self.labels), " ", self.values, "\n", "")
        return head + concatenated(lines)


def family(name: str, help_text: str, labels: Sequence[tuple[str, pa.Array]], values: pa.Array) -> Family:
    """The family of the samples whose value is not null (a null value is a sample not written)."""
    values = _array(values)
    if not values.null_count:
        return Family(name, help_text, tuple((n, _array(v)) for n, v in labels), values)
    written = pc.is_valid(values)
    return Family(name, help_text, tuple((n, _array(v).filter(written)) for n, v in labels), values.filter(written))


def label_text(labels: Sequence[tuple[str, pa.Array]]) -> pa.Array | str:
    """`{name="value",...}` for each sample, its null values left out (simple and modern groups have no
    protocol type), "" when all are: Prometheus reads an empty label value as no label anyway."""
    if not labels:
        return ""
    parts = [
        pc.fill_null(pc.binary_join_element_wise(f',{name}="', escaped(values), '"', ""), "") for name, values in labels
    ]
    joined = pc.binary_join_element_wise(*parts, "")
    braced = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(joined, 1), "}", "")
    return pc.if_else(pc.equal(joined, ""), "", braced)


def escaped(values: pa.Array) -> pa.Array:
    """Label values through `escaping.prometheus_label`: for text, once per distinct name."""
    if pa.types.is_integer(values.type):
        return values.cast(pa.string())  # digits and a sign: nothing to escape
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        encoded = pc.dictionary_encode(values)
        names = pa.array([prometheus_label(v) for v in encoded.dictionary.to_pylist()], pa.string())
        return pc.take(names, encoded.indices)
    return pa.array([None if v is None else prometheus_label(v) for v in values.to_pylist()], pa.string())


def integer_text(values: pa.Array) -> pa.Array:
    """Integers (int columns, exact decimal sums) as str() writes them: every digit, past 2**53 too."""
    return values.cast(pa.string())


def flag_text(values: pa.Array) -> pa.Array:
    """A boolean as 1 or 0."""
    return pc.if_else(values, "1", "0")


def seconds_text(ms: pa.Array) -> pa.Array:
    """Milliseconds as repr() writes ms / 1000 (a Python int divided: the double nearest the ratio)."""
    ms = _array(ms).cast(pa.int64())
    bounds = pc.min_max(ms)
    if bounds["min"].is_valid and not -_EXACT_MS < bounds["min"].as_py() <= bounds["max"].as_py() < _EXACT_MS:
        return _python_seconds(ms.to_pylist())  # a column holding an absurd expiry: Python's way for all
    # |ms| = whole * 1000 + fraction: the sign, the whole seconds' digits, the fraction's text.
    size = pc.abs(ms)
    whole = pc.divide(size, 1000)
    fraction = pc.subtract(size, pc.multiply(whole, 1000))
    sign = pc.if_else(pc.less(ms, 0), "-", "")
    return pc.binary_join_element_wise(sign, whole.cast(pa.string()), pc.take(_FRACTIONS, fraction), "")


def seconds_until(ms: pa.Array, since_ms: int) -> pa.Array:
    """repr() of (ms - since_ms) / 1000, with Python's exact ints where the difference passes a long."""
    try:
        return seconds_text(pc.subtract_checked(_array(ms).cast(pa.int64()), pa.scalar(since_ms, pa.int64())))
    except (pa.ArrowInvalid, OverflowError):
        return _python_seconds([None if v is None else v - since_ms for v in _array(ms).to_pylist()])


def _python_seconds(ms: list[int | None]) -> pa.Array:
    return pa.array([None if v is None else repr(v / 1000) for v in ms], pa.string())


def concatenated(strings: pa.Array) -> str:
    """An array's strings (none null) one after the other: its data buffer between the first offset
    and the last, decoded once."""
    if not len(strings):
        return ""
    _, offsets, data = strings.buffers()
    kind = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    bounds = np.frombuffer(offsets, dtype=kind)[strings.offset : strings.offset + len(strings) + 1]
    return str(memoryview(data)[int(bounds[0]) : int(bounds[-1])], "utf-8")


def _array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
