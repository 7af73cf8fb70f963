"""The names of the broker's expiry rules and OffsetDelete answers, as the verdict tables carry them.

Apart from rules.py, which builds Spark columns: the views (the report, the summary) and the runs name
the rules too, and import these without loading pyspark. Each name is spelled once, here
(tests/test_layout.py fails on a second spelling).
"""

from __future__ import annotations

EXPLICIT_EXPIRE_TIMESTAMP = "EXPLICIT_EXPIRE_TIMESTAMP"
"""A v1 value carries an explicit expireTimestamp (not -1): the group has an expiration condition, the
topic is not subscribed, and the offset expires at that timestamp (OffsetExpirationConditionImpl;
-1 means absent since KAFKA-8069, reference 2.3 and 4.2)."""

EMPTY_GROUP = "EMPTY_GROUP"
"""Classic group with a protocol type, loaded Empty: retention counts from when the group became Empty
(currentStateTimestamp, GroupMetadataValue v2+), or from the commit when the record has none (v0/v1).
KIP-211; reference 4.3."""

SIMPLE_GROUP = "SIMPLE_GROUP"
"""Classic group without a protocol type (standalone consumers that only commit): retention counts from
each commit. Reference 4.3, first row."""

UNSUBSCRIBED_TOPIC = "UNSUBSCRIBED_TOPIC"
"""The group's subscribed topics are known and exclude the topic: classic Stable "consumer" groups
(KIP-496), every KIP-848 and streams group, empty ones included (they have no "empty since" clock).
Retention counts from the commit. Reference 4.3."""

SUBSCRIBED_TOPIC = "SUBSCRIBED_TOPIC"
"""The group subscribes to the topic: the broker skips the whole topic, nothing expires."""

NON_CONSUMER_PROTOCOL = "NON_CONSUMER_PROTOCOL"
"""Classic non-empty group of another protocol type (connect, schema registry...): no expiration
condition while it has members (ClassicGroup.offsetExpirationCondition returns empty)."""

UNKNOWN_SUBSCRIPTION = "UNKNOWN_SUBSCRIPTION"
"""Classic Stable "consumer" group whose subscriptions the broker cannot parse (or without a selected
protocol): the coordinator does not know the subscribed topics, so it expires nothing (reference 3).
Text dumps that print no subscriptions (kafka-dump-log <=3.7, the console Scala formatter) land here
too: what the dump cannot tell stays unknown, and the summary's format notes say so."""

PENDING_TRANSACTION = "PENDING_TRANSACTION"
"""A transactional commit for the partition awaits its COMMIT/ABORT marker: the broker does not expire
the partition's offset (hasPendingTransactionalOffsets), and a group with an open transaction is not
removed. Only log segments and kafka-dump-log output show transactions; Kafka-source snapshots read
read_committed never show a pending one."""

COMMIT_EXPIRY = "COMMIT_EXPIRY"
"""Brokers before 2.1 (KIP-211): every offset expires at its own expire timestamp, written with the
commit as commit + retention (an explicit one as given), whatever its group does; the sweep's test was
`expireTimestamp < now`, strictly (GroupMetadata.removeExpiredOffsets, 2.0.1)."""

GROUP_HAS_MEMBERS = "GROUP_HAS_MEMBERS"
"""Brokers 2.1 to 2.3: a classic group with a protocol type and members (Stable or rebalancing)
expires nothing; KIP-496 brought the expiry of unsubscribed topics with 2.4."""

TIME_RULES = (EXPLICIT_EXPIRE_TIMESTAMP, EMPTY_GROUP, SIMPLE_GROUP, UNSUBSCRIBED_TOPIC, COMMIT_EXPIRY)

# OffsetDelete answers (reference 5).
GROUP_ID_NOT_FOUND = "GROUP_ID_NOT_FOUND"
NON_EMPTY_GROUP = "NON_EMPTY_GROUP"
GROUP_SUBSCRIBED_TO_TOPIC = "GROUP_SUBSCRIBED_TO_TOPIC"
UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"  # before 2.4 the broker has no OffsetDelete API (KIP-496)
