"""Which broker version's rules judge a dump (`--kafka-version`, `[kafka] version`).

The group coordinator's expiry rules changed with the broker version, and two releases shipped known
expiry bugs. Each difference is one property here, and `rules` asks the property, never the version
(docs/rules.md, "By version", cites the sources: the released Kafka jars of each version). Beside the
subpackages: the share coordinator asks it too, and imports nothing of the group coordinator.

- before 2.1 (KIP-211): every offset expires at its own expire timestamp, commit + retention, whatever
  its group does (GroupMetadata.removeExpiredOffsets, 2.0.1: `expireTimestamp < now`, strictly);
- 2.1 to 2.3: a group with members (Stable or rebalancing) expires nothing; KIP-496's expiry of the
  topics a Stable consumer group no longer subscribes to came with 2.4 (KAFKA-8730);
- 2.1.0 and 2.1.1 (no 2.1.2 was released) load a v1 value written with expire timestamp -1 as
  "expires at -1" (KAFKA-8069, fixed in 2.2.0): such offsets of Empty and simple groups go at the
  first sweep after a load;
- 2.4.0 to 2.8.1, 3.0.0 and 3.1.0 expire a consumer group's unsubscribed topics in any non-Empty
  state, and the subscription of a group that went Empty is empty until the next generation
  (KAFKA-13636, fixed in 2.8.2, 3.0.1, 3.1.1, 3.2.0): when a member rejoins, every offset committed
  more than the retention ago goes during the rebalance;
- the Scala coordinator (before 4.0) never held an offset back for a pending transactional commit;
  the Java one (the default from 4.0) does;
- the new coordinator of 3.7 to 3.9 (KIP-848 consumer groups) and 4.1.0 to 4.2.0 (streams groups) fail
  to load a partition where a group's offset commit comes before its group records (KAFKA-17306,
  KAFKA-20254), as compaction leaves them;
- 4.0 removes an Empty share group at the sweep; from 4.1 share groups are kept (KAFKA-19016);
- 4.1 counts a streams group with members as subscribed to nothing while its soft-state configured
  topology is missing or not ready; from 4.2 the persisted topology decides (KAFKA-19779);
- 4.3 deletes a deleted topic's offsets only where their stored topicId is that topic's (or zero);
  before, every offset of the topic's name;
- 4.4 keeps an Empty streams group whose topology description a plugin stored until the plugin's
  cleanup clears it (StreamsGroup.shouldExpire, KAFKA-20696).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from offset_audit.errors import UserError

# The newest release of the newest line; a line given without its patch ("3.9") means its newest
# release, so the bug windows below are judged as fixed where the line got the fix.
OLDEST = (2, 0, 0)
NEWEST = (4, 4, 0)
_NEWEST_PATCH = 99
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True)
class BrokerVersion:
    """A broker version as (major, minor, patch); `given` is how the user wrote it."""

    number: tuple[int, int, int]
    given: str

    @property
    def label(self) -> str:
        return self.given

    @property
    def expires_each_offset_from_its_commit(self) -> bool:
        """Before KIP-211 (2.1): group state plays no part."""
        return self.number < (2, 1, 0)

    @property
    def expires_unsubscribed_topics(self) -> bool:
        """KIP-496 (2.4): a consumer group with members expires the topics it does not subscribe to."""
        return self.number >= (2, 4, 0)

    @property
    def kafka_8069(self) -> bool:
        """2.1.0 and 2.1.1 load an expire timestamp of -1 as a timestamp (KAFKA-8069)."""
        return (2, 1, 0) <= self.number < (2, 2, 0)

    @property
    def kafka_13636(self) -> bool:
        """Unsubscribed topics expire while a consumer group rebalances (KAFKA-13636)."""
        n = self.number
        fixed = {(2, 8): 2, (3, 0): 1, (3, 1): 1}
        if not (2, 4, 0) <= n < (3, 2, 0):
            return False
        return n[2] < fixed.get(n[:2], _NEWEST_PATCH + 1)

    @property
    def holds_offsets_for_pending_transactions(self) -> bool:
        """The Java coordinator (the default from 4.0) skips a partition with a pending transactional
        commit; the Scala one did not."""
        return self.number >= (4, 0, 0)

    @property
    def streams_subscription_needs_ready_topology(self) -> bool:
        """4.1's StreamsGroup.isSubscribedToTopic asked the configured topology, soft state that is not
        ready while internal topics are missing; 4.2 asks the persisted topology (KAFKA-19779)."""
        return self.number < (4, 2, 0)

    @property
    def streams_deletion_waits_for_stored_description(self) -> bool:
        """4.4: StreamsGroup.shouldExpire is false while a topology description plugin is configured and
        StoredDescriptionTopologyEpoch is not -1."""
        return self.number >= (4, 4, 0)

    @property
    def load_fails_on_early_commits_of(self) -> str | None:
        """The group type whose records this version cannot replay after an offset commit of the same
        group: the commit made the group a simple classic one, and the type's records then fail the
        partition's load ("Group X is not a ... group"). KAFKA-17306 (the new coordinator of 3.7 to 3.9,
        KIP-848 consumer groups, fixed in 4.0.0); KAFKA-20254 (streams groups, 4.1.0 to 4.2.0, fixed in
        4.2.1)."""
        if (3, 7, 0) <= self.number < (4, 0, 0):
            return "consumer"
        if (4, 1, 0) <= self.number < (4, 2, 1):
            return "streams"
        return None

    @property
    def topic_deletion_matches_topic_ids(self) -> bool:
        """4.3's OffsetMetadataManager.onTopicsDeleted tombstones an offset only where its stored topicId is
        the deleted topic's or zero; up to 4.2 onPartitionsDeleted went by topic name and partition."""
        return self.number >= (4, 3, 0)

    @property
    def share_assignor_balances(self) -> bool:
        """4.2 replaced 4.1's hashing SimpleAssignor with balanced, sticky builders (KAFKA-19362, KAFKA-19363)."""
        return self.number >= (4, 2, 0)

    @property
    def keeps_share_start_offsets_moving_forward(self) -> bool:
        """4.4's share coordinator writes the higher of a state write's start offset and the stored one
        (apache/kafka#23074); before, an out-of-order write moved it back (the records between are
        delivered again). Only what is written changed: every version replays records alike."""
        return self.number >= (4, 4, 0)

    @property
    def removes_empty_share_groups(self) -> bool:
        """4.0's sweep removed an Empty share group; 4.1 keeps them (KAFKA-19016)."""
        return (4, 0, 0) <= self.number < (4, 1, 0)


def parse_version(text: str) -> BrokerVersion:
    """`2.8`, `2.8.1` or `4.4.0` -> BrokerVersion; anything else, or outside 2.0 to 4.4, is a user error."""
    match = _VERSION.match(str(text).strip())
    if not match:
        raise UserError(f"kafka version takes a broker version like 3.9 or 2.8.1, not {text!r}")
    major, minor, patch = int(match[1]), int(match[2]), match[3]
    number = (major, minor, _NEWEST_PATCH if patch is None else int(patch))
    if number < OLDEST or (major, minor) > NEWEST[:2]:
        raise UserError(f"kafka version {text} is not one this tool has the rules of: 2.0 to 4.4")
    return BrokerVersion(number, str(text).strip())


NEWEST_VERSION = parse_version(".".join(map(str, NEWEST[:2])))


# The first release that writes each record type and value version (reference 7.4): a dump holding
# them was written by that release or a later one. Absent: written since before 2.0.
_FIRST_WRITTEN_BY_VALUE: dict[tuple[int, int | None], tuple[int, int, str]] = {
    (0, 2): (2, 1, "offset commits v2"),
    (0, 3): (2, 1, "offset commits v3"),
    (1, 2): (2, 1, "offset commits v2"),
    (1, 3): (2, 1, "offset commits v3"),
    (1, 4): (4, 1, "offset commits v4"),
    (2, 2): (2, 1, "group metadata v2"),
    (2, 3): (2, 3, "group metadata v3"),
}
_FIRST_WRITTEN_BY_TYPE = [
    (range(3, 9), (3, 7, "KIP-848 consumer group records")),
    (range(9, 16), (4, 0, "share group records")),
    (range(16, 17), (4, 0, "KIP-848 regex records")),
    (range(17, 24), (4, 1, "streams group records")),
]


def _first_written(record_type: int | None, value_version: int | None) -> tuple[int, int, str] | None:
    if record_type is None:
        return None
    for types, first in _FIRST_WRITTEN_BY_TYPE:
        if record_type in types:
            return first
    return _FIRST_WRITTEN_BY_VALUE.get((record_type, value_version))


class CountedRecords(Protocol):
    """What newer_than reads of a count of one record type and version (decoding.report.TypeCount)."""

    @property
    def record_type(self) -> int | None: ...
    @property
    def value_version(self) -> int | None: ...
    @property
    def records(self) -> int: ...


def newer_than(decoded_by_type: Iterable[CountedRecords], version: BrokerVersion) -> dict[str, int]:
    """One note, with how many records it covers, when the dump holds records only a newer broker than
    `version` writes (`decoded_by_type`: runs.counts.TypeCount rows): the rules it is judged by are
    likely not its broker's. Empty when nothing says so."""
    newest: tuple[int, int] | None = None
    what: list[str] = []
    records = 0
    for row in decoded_by_type:
        first = _first_written(row.record_type, row.value_version)
        if first is None or first[:2] <= version.number[:2]:
            continue
        records += row.records
        if newest is None or first[:2] > newest:
            newest, what = first[:2], [first[2]]
        elif first[:2] == newest and first[2] not in what:
            what.append(first[2])
    if newest is None:
        return {}
    note = (
        f"written only by Kafka {newest[0]}.{newest[1]} or later ({', '.join(what)}), but judged by "
        f"Kafka {version.label}'s rules (--kafka-version)"
    )
    return {note: records}
