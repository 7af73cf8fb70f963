"""Snapshot ids: the name each run's rows carry in every table, and the partition folder they sit in.

One form, checked before anything starts: a letter or digit, then letters, digits, `.`, `_` or `-`, up to
100 characters in all. The ids the tool makes (`20261026T073415Z-eeede4f2`) have it. An id in this form
needs no quoting anywhere it goes: a partition folder on any file system or object store, a Delta
partition value, and the delta-spark `replaceWhere` condition, which is SQL text. A backslash or a quote
there would end the string literal early and could replace other snapshots' rows.
"""

from __future__ import annotations

import re

from offset_audit.errors import UserError

FORM = "a letter or digit, then letters, digits, '.', '_' or '-', at most 100 characters"
_FORM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def is_snapshot_id(value: str) -> bool:
    return _FORM.fullmatch(value) is not None


def check_snapshot_id(value: str, option: str = "--snapshot-id") -> str:
    """`value`, if it has the form; otherwise one sentence naming the option."""
    if not is_snapshot_id(value):
        raise UserError(f"{option} takes {FORM}, not {value!r}")
    return value


def id_list(snapshot_ids: list[str]) -> str:
    """SQL text `'a', 'b'` of ids checked to have the form, for a predicate of our own making."""
    return ", ".join(f"'{check_snapshot_id(s, 'a snapshot id')}'" for s in snapshot_ids)
