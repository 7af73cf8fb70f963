"""The events and causes of offset_history (`event`, `cause`), named once for the history replay that
writes them and the views that print them: plain strings, so a view reads them without loading Spark."""

from __future__ import annotations

# event
COMMITTED = "COMMITTED"
GROUP_STABLE = "GROUP_STABLE"
GROUP_EMPTY = "GROUP_EMPTY"
OFFSET_DELETED = "OFFSET_DELETED"
GROUP_DELETED = "GROUP_DELETED"
# cause of a deletion (history.py's docstring says how each is decided)
EXPIRED = "EXPIRED"
DELETED_BY_REQUEST = "DELETED_BY_REQUEST"
TOPIC_DELETED = "TOPIC_DELETED"
UNKNOWN = "UNKNOWN"
