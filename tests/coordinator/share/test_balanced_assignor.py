"""Kafka 4.2+'s share-group SimpleAssignor (share/balanced_assignor.py), against the released broker's.

The fixed cases were written from the 4.2.1 builders by hand (Kafka's own SimpleHomogeneous- and
SimpleHeterogeneousAssignmentBuilder, with Java's HashMap walk) and agree with what the released
4.2.1, 4.2.2 and 4.4.0 jars return. The random cases ask the jars `make kafka` fetched, through
ShareAssignorOracle.java, so any difference in an order or a rule shows.
"""

from __future__ import annotations

import base64
import os
import random
import subprocess
import uuid
from pathlib import Path

import pytest
from kafka_broker import SHORT_LIVED, compile_against, java, kafka_versions, libs, version_tuple
from live_services import Unavailable

from offset_audit.coordinator.share_assignor import ShareAssignorError
from offset_audit.coordinator.share_balanced_assignor import assign_balanced, desired_counts, member_order

T1 = "00000000-0000-1111-0000-000000000001"  # Uuid(0x1111, 0x1)
T2 = "00000000-0000-2222-0000-000000000002"
T3 = "00000000-0000-3333-0000-000000000003"
PARTITIONS = {T1: 10, T2: 4, T3: 3}
NAMES = {T1: "T1", T2: "T2", T3: "T3"}


def _named(result):
    return {m: sorted(f"{NAMES[t]}-{p}" for t, p in held) for m, held in result.items()}


def _parts(topic, *ps):
    return [f"{topic}-{p}" for p in ps]


def test_members_walk_in_the_order_of_a_java_hash_map():
    # "m-a".hashCode() = 106241 (bucket 0), "m-c" bucket 2, "m-b" bucket 3.
    assert member_order(["m-c", "m-b", "m-a"]) == ["m-a", "m-c", "m-b"]


def test_members_sharing_a_bucket_walk_in_the_order_they_were_put_in():
    # "m-a" and "m-q" share bucket 0: their order is the broker's insertion order where it is known.
    assert member_order(["m-q", "m-a", "m-c"]) == ["m-a", "m-q", "m-c"]
    assert member_order(["m-q", "m-a", "m-c"], inserted=["m-q", "gone", "m-a"]) == ["m-q", "m-a", "m-c"]
    assert member_order(["m-a", "m-q"], inserted=["m-q"]) == ["m-q", "m-a"]


def test_a_join_deferred_to_a_later_heartbeat_walks_in_the_timeline_order():
    """Ids a 4.4.0 broker gave two members of one share group: both in HashMap bucket 7. Computed in the
    second one's join, it comes after the walk of the group's map (OverlayMap's additions); computed at a
    later heartbeat (group.share.assignment.interval.ms deferred it), both are in that walk, where
    TimelineHashMap's slots put the newcomer first. The 4.4.0 jar's SimpleAssignor gives these answers."""
    from offset_audit.coordinator.java_order import TimelineKeys, string_hash

    holder, newcomer, topic = "v1aIga9RQAyYNoPJj0CNhA", "6fkMe5OIQImqRfpAcrjkag", "4aedb648-eb64-4a41-a2c9-d7a17351e43e"
    walk = TimelineKeys(string_hash)
    walk.add(holder)
    walk.add(newcomer)
    assert list(walk) == [newcomer, holder]

    def target(inserted):
        result = assign_balanced({holder: [topic], newcomer: [topic]}, {topic: 5}, {holder: [(topic, range(5))]},
                                 inserted=inserted)  # fmt: skip
        return {m: sorted(p for _, p in held) for m, held in result.items()}

    assert target([holder, newcomer]) == {holder: [2, 3, 4], newcomer: [0, 1]}
    assert target(list(walk)) == {holder: [3, 4], newcomer: [0, 1, 2]}


@pytest.mark.parametrize(
    ("sharing", "partitions", "members", "expected"),
    [(1, 10, 3, [4, 3, 3]), (2, 3, 5, [2, 1, 1, 1, 1]), (1, 4, 4, [1, 1, 1, 1]), (0, 0, 2, [0, 0])],
)
def test_the_earlier_members_take_the_larger_shares(sharing, partitions, members, expected):
    assert desired_counts(sharing, partitions, members) == expected


ABC = ["m-a", "m-b", "m-c"]
SCENARIOS = int(os.environ.get("ASSIGNOR_SCENARIOS", "400"))
FIXED = [
    ("fresh group, 3 members, 10 partitions", {m: [T1] for m in ABC}, {},
     {"m-a": _parts("T1", 1, 2, 4, 9), "m-b": _parts("T1", 0, 7, 8), "m-c": _parts("T1", 3, 5, 6)}),
    ("5 members share 3 partitions, 2 to a partition", {m: [T3] for m in [*ABC, "m-d", "m-e"]}, {},
     {"m-a": _parts("T3", 1, 2), "m-b": _parts("T3", 0), "m-c": _parts("T3", 2), "m-d": _parts("T3", 1),
      "m-e": _parts("T3", 0)}),
    ("a third member joins: each keeps what fits its share", {m: [T1] for m in ABC},
     {"m-a": [(T1, [0, 1, 2, 3, 4])], "m-b": [(T1, [5, 6, 7, 8, 9])]},
     {"m-a": _parts("T1", 0, 1, 3, 4), "m-b": _parts("T1", 5, 8, 9), "m-c": _parts("T1", 2, 6, 7)}),
    ("heterogeneous: each topic balanced among its subscribers", {"A": [T1], "B": [T2], "C": [T1, T2]}, {},
     {"A": _parts("T1", 0, 2, 4, 6, 8), "B": _parts("T2", 0, 2),
      "C": _parts("T1", 1, 3, 5, 7, 9) + _parts("T2", 1, 3)}),
    ("heterogeneous: a topic nobody subscribes to any more stays held", {"A": [T1], "B": [T2]},
     {"A": [(T1, [0, 1, 2]), (T3, [0, 1])], "B": [(T2, [0])]},
     {"A": _parts("T1", *range(10)) + _parts("T3", 0, 1), "B": _parts("T2", *range(4))}),
    ("heterogeneous: a topic another member subscribes to moves", {"A": [T1], "B": [T2]},
     {"A": [(T1, [0, 1, 2]), (T2, [0, 1])], "B": [(T2, [2])]},
     {"A": _parts("T1", *range(10)), "B": _parts("T2", *range(4))}),
    ("homogeneous: an unsubscribed topic is dropped", {"A": [T1], "B": [T1]},
     {"A": [(T1, [0, 1, 2]), (T3, [0, 1])], "B": [(T1, [5])]},
     {"A": _parts("T1", 0, 1, 2, 3, 7), "B": _parts("T1", 4, 5, 6, 8, 9)}),
]  # fmt: skip


@pytest.mark.parametrize(("case", "members", "previous", "expected"), FIXED, ids=[c[0] for c in FIXED])
def test_the_4_2_builders_give_what_the_released_jars_give(case, members, previous, expected):
    assert _named(assign_balanced(members, PARTITIONS, previous)) == expected


def test_only_initialised_partitions_are_assigned():
    result = assign_balanced({m: [T1] for m in ABC}, PARTITIONS, assignable={T1: [0, 1, 2, 3]})
    assert sorted(p for held in result.values() for _, p in held) == [0, 1, 2, 3]
    assert sorted(len(held) for held in result.values()) == [1, 1, 2]


# ---- against the released jars ---------------------------------------------------------------------


def _kafka_id(topic_id: str) -> str:
    """Uuid.toString: the 16 bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).decode().rstrip("=")


def _from_kafka_id(text: str) -> str:
    return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")))


def _random_scenario(rng: random.Random, number: int) -> dict:
    topics = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(rng.randint(1, 4))]
    partitions = {t: rng.randint(0, 24) for t in topics}
    members = sorted({f"member-{rng.randint(0, 10**6)}" for _ in range(rng.randint(1, 9))})
    homogeneous = rng.random() < 0.5
    shared = rng.sample(topics, rng.randint(1, len(topics)))
    subscriptions = {m: shared if homogeneous else rng.sample(topics, rng.randint(0, len(topics))) for m in members}
    if not homogeneous and len({frozenset(s) for s in subscriptions.values()}) == 1:
        homogeneous = True
    previous = {}
    for m in members:
        held = []
        for t in rng.sample(topics, rng.randint(0, len(topics))):
            ps = rng.sample(range(partitions[t] + 2), min(partitions[t] + 2, rng.randint(0, 6)))
            if ps:
                held.append((t, ps))
        previous[m] = held
    allowed = None
    if rng.random() < 0.3:
        allowed = {t: sorted(rng.sample(range(partitions[t]), partitions[t] // 2)) for t in topics}
    return {
        "name": f"s{number}", "partitions": partitions, "subscriptions": subscriptions, "previous": previous,
        "homogeneous": homogeneous, "allowed": allowed,
    }  # fmt: skip


def _oracle_input(scenarios: list[dict]) -> str:
    lines = []
    for s in scenarios:
        lines.append(f"scenario {s['name']} {'HOMOGENEOUS' if s['homogeneous'] else 'HETEROGENEOUS'}")
        lines += [f"topic {_kafka_id(t)} {n}" for t, n in s["partitions"].items()]
        for t, ps in (s["allowed"] or {}).items():
            lines.append(f"allowed {_kafka_id(t)} {','.join(map(str, ps)) or '-'}")
        for m, subs in s["subscriptions"].items():
            held = ";".join(f"{_kafka_id(t)}:{'.'.join(map(str, ps))}" for t, ps in s["previous"][m]) or "-"
            lines.append(f"member {m} {','.join(_kafka_id(t) for t in subs) or '-'} {held}")
        lines.append("end")
    return "\n".join(lines) + "\n"


def _oracle(version: str, scenarios: list[dict]) -> dict[str, dict[str, set]]:
    classpath = f"{libs(version)}/*"
    classes = compile_against(version, Path(__file__).with_name("ShareAssignorOracle.java"))
    run = subprocess.run(
        [java(), *SHORT_LIVED, "-cp", f"{classes}:{classpath}", "ShareAssignorOracle"],
        input=_oracle_input(scenarios), capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    answers: dict[str, dict[str, set] | str] = {}
    for line in run.stdout.splitlines():
        name, member, *held = line.split(" ")
        if member == "!":
            answers[name] = held[0]
            continue
        answers.setdefault(name, {})[member] = {
            (_from_kafka_id(t), int(p)) for t, p in (h.rsplit(":", 1) for h in held)
        }
    return answers


def _balanced_versions() -> list[str]:
    return [v for v in kafka_versions() if version_tuple(v) >= (4, 2)]


@pytest.mark.heavy
@pytest.mark.parametrize("version", _balanced_versions() or ["4.4.0"])
def test_random_groups_get_the_released_brokers_assignment(version):
    """400 random groups: homogeneous and not, previous assignments past the partition count, topics no
    longer subscribed, more members than partitions, and only initialised partitions assignable."""
    try:
        scenarios = [_random_scenario(random.Random(seed), seed) for seed in range(SCENARIOS)]
        answers = _oracle(version, scenarios)
    except Unavailable as reason:
        pytest.skip(str(reason))
    differing, failed = [], 0
    for s in scenarios:
        theirs = answers[s["name"]]
        try:
            ours = assign_balanced(
                s["subscriptions"], s["partitions"], s["previous"], assignable=s["allowed"],
                homogeneous=s["homogeneous"],
            )  # fmt: skip
        except ShareAssignorError as error:
            failed += 1
            if not (isinstance(theirs, str) and str(error).startswith(theirs)):
                differing.append(s["name"])
            continue
        if isinstance(theirs, str) or ours != {m: theirs.get(m, set()) for m in ours}:
            differing.append(s["name"])
    assert differing == [], f"{len(differing)} of {len(scenarios)} differ from Kafka {version}: {differing[:10]}"
    assert failed < len(scenarios) // 10  # the cases are mostly ones the broker assigns
