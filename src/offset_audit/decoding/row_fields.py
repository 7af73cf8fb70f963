"""A decoded record's fields whatever holds them, for the replays that take rows from several routes.

The share replays are fed Spark Rows by the record-by-record route, dicts by the column readers and
dataclasses by the tests; reading all three the same way keeps one set of checks for each record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import TypeGuard


def as_fields(raw: object) -> Mapping[str, object] | None:
    """A record's fields whatever the caller holds: a mapping, a dataclass, or a Spark Row."""
    if isinstance(raw, Mapping):
        return raw
    if is_dataclass(raw) and not isinstance(raw, type):
        return {f.name: getattr(raw, f.name) for f in fields(raw)}
    as_dict = getattr(raw, "asDict", None)
    if callable(as_dict):
        return as_dict(recursive=True)
    return None


def is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool: Python counts True as 1, a record field never does."""
    return isinstance(value, int) and not isinstance(value, bool)
