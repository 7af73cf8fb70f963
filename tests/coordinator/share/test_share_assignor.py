"""SimpleShareAssignor: KIP-932's worked example, Kafka 4.1's SimpleAssignor behaviours, and `compare`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from offset_audit.coordinator.partitioner import java_string_hash
from offset_audit.coordinator.share_assignor import (
    AssignmentReport,
    MemberDifference,
    ShareAssignorError,
    assign,
    compare,
    member_hash_index,
    round_robin_with_count,
    subscribed_partitions,
)


def tps(spec: str) -> set[tuple[str, int]]:
    """'T1:0 T2:1' -> {("T1", 0), ("T2", 1)}: the KIP table's notation."""
    return {(topic, int(partition)) for topic, partition in (item.split(":") for item in spec.split())}


# --- KIP-932's example table (reference 8.3), every row in sequence ------------------------------------------

SEED_HASH = {f"M{k}": k for k in range(1, 9)}
"""The hashes the table lists next to each member: "M1 (hash 1)" ... "M8 (hash 8)"."""


def seed_position_hash(member_id: str) -> int:
    """The table's "hash k" read as the k-th position: a hashCode of k - 1, so index = (k - 1) mod n.

    Taken literally (hashCode k, index k mod n, as Kafka computes it) the table breaks at its third row:
    M1 would hash onto T1:1 and M2 onto T1:2 (see the test below). Read as positions every row follows
    from Kafka 4.1's algorithm, stickiness included, with no special case: the KIP's authors numbered the
    members' landing places from 1.
    """
    return SEED_HASH[member_id] - 1


@dataclass(frozen=True)
class SeedRow:
    state: str
    members: dict[str, set[str]]
    partitions: dict[str, int]
    changes: dict[str, tuple[str, str]]
    """member -> (assigned, revoked), the table's "Assignment change" column."""
    assignments: dict[str, str]
    """The table's "Assignments" column."""


EIGHT_ON_T1 = {f"M{k}": {"T1"} for k in range(1, 9)}
SEED_ROWS = [
    SeedRow(
        "M1 subscribed to topic T1 with 1 partition",
        {"M1": {"T1"}},
        {"T1": 1},
        {"M1": ("T1:0", "")},
        {"M1": "T1:0"},
    ),
    SeedRow(
        "M2 joins the group and subscribes to T1",
        {"M1": {"T1"}, "M2": {"T1"}},
        {"T1": 1},
        {"M2": ("T1:0", "")},
        {"M1": "T1:0", "M2": "T1:0"},
    ),
    SeedRow(
        "Add 3 partitions to T1",
        {"M1": {"T1"}, "M2": {"T1"}},
        {"T1": 4},
        {"M1": ("T1:2", ""), "M2": ("T1:1 T1:3", "T1:0")},
        {"M1": "T1:0 T1:2", "M2": "T1:1 T1:3"},
    ),
    SeedRow(
        "M3 joins the group and subscribes to T1",
        {"M1": {"T1"}, "M2": {"T1"}, "M3": {"T1"}},
        {"T1": 4},
        {"M1": ("", "T1:2"), "M3": ("T1:2", "")},
        {"M1": "T1:0", "M2": "T1:1 T1:3", "M3": "T1:2"},
    ),
    SeedRow(
        "M4 joins the group and subscribes to T1",
        {"M1": {"T1"}, "M2": {"T1"}, "M3": {"T1"}, "M4": {"T1"}},
        {"T1": 4},
        {"M2": ("", "T1:3"), "M4": ("T1:3", "")},
        {"M1": "T1:0", "M2": "T1:1", "M3": "T1:2", "M4": "T1:3"},
    ),
    SeedRow(
        "M5, M6, M7, M8 join the group and subscribe to T1",
        EIGHT_ON_T1,
        {"T1": 4},
        {"M5": ("T1:0", ""), "M6": ("T1:1", ""), "M7": ("T1:2", ""), "M8": ("T1:3", "")},
        {
            "M1": "T1:0",
            "M2": "T1:1",
            "M3": "T1:2",
            "M4": "T1:3",
            "M5": "T1:0",
            "M6": "T1:1",
            "M7": "T1:2",
            "M8": "T1:3",
        },
    ),
    SeedRow(
        "M1 subscribes to T2 with 2 partitions",
        {**EIGHT_ON_T1, "M1": {"T1", "T2"}},
        {"T1": 4, "T2": 2},
        {"M1": ("T2:0 T2:1", "")},
        {
            "M1": "T1:0 T2:0 T2:1",
            "M2": "T1:1",
            "M3": "T1:2",
            "M4": "T1:3",
            "M5": "T1:0",
            "M6": "T1:1",
            "M7": "T1:2",
            "M8": "T1:3",
        },
    ),
    SeedRow(
        "All members leave except M2",
        {"M2": {"T1"}},
        {"T1": 4, "T2": 2},
        {"M2": ("T1:0 T1:2 T1:3", "")},
        {"M2": "T1:0 T1:1 T1:2 T1:3"},
    ),
]


def run_seed_rows(through: int) -> tuple[dict[str, set[tuple[str, int]]], dict[str, set[tuple[str, int]]]]:
    """Replay the table up to row `through`; each row's current assignment is the previous row's result."""
    previous: dict[str, set[tuple[str, int]]] = {}
    result: dict[str, set[tuple[str, int]]] = {}
    for row in SEED_ROWS[: through + 1]:
        previous = result
        result = assign(row.members, row.partitions, previous, member_hash=seed_position_hash)
    return previous, result


@pytest.mark.parametrize("row_index", range(len(SEED_ROWS)), ids=[row.state for row in SEED_ROWS])
def test_kip_example_row_follows_from_the_previous_row(row_index: int) -> None:
    row = SEED_ROWS[row_index]
    previous, result = run_seed_rows(row_index)

    assert result == {member_id: tps(spec) for member_id, spec in row.assignments.items()}
    changes = {
        member_id: (held - previous.get(member_id, set()), previous.get(member_id, set()) - held)
        for member_id, held in result.items()
    }
    expected_changes = {
        member_id: (tps(assigned), tps(revoked)) for member_id, (assigned, revoked) in row.changes.items()
    }
    assert {member_id: change for member_id, change in changes.items() if change != (set(), set())} == expected_changes


def test_kip_example_hashes_taken_literally_break_the_third_row() -> None:
    """hashCode 1 and 2 put M1 on T1:1 and M2 on T1:2; nobody hashes onto T1:0, so both keep it, and the
    spare T1:3 goes to M1: not the table's M1 -> T1:0, T1:2 and M2 -> T1:1, T1:3."""
    current = {"M1": tps("T1:0"), "M2": tps("T1:0")}

    literal = assign({"M1": {"T1"}, "M2": {"T1"}}, {"T1": 4}, current, SEED_HASH.__getitem__)

    assert literal == {"M1": tps("T1:0 T1:1 T1:3"), "M2": tps("T1:0 T1:2")}


# --- Kafka 4.1 SimpleAssignorTest behaviours, re-expressed -------------------------------------------------
# Members "A", "B", "C" have String.hashCode 65, 66, 67 (the real hash, no injection).


def test_no_members_get_no_assignment() -> None:
    assert assign({}, {"T1": 3}) == {}


def test_member_without_subscription_gets_nothing() -> None:
    assert assign({"A": set()}, {"T1": 3}) == {"A": set()}


def test_subscription_to_a_topic_the_broker_does_not_know_assigns_nothing() -> None:
    """The broker drops names it cannot resolve before the assignor runs (Kafka's assignor-level test
    throws because it is handed an unknown topic id, which the name resolution never produces)."""
    assert assign({"A": {"T2"}}, {"T1": 3}) == {"A": set()}


def test_homogeneous_members_hash_then_share_the_rest_round_robin() -> None:
    """List T1:0 T1:1 T1:2 T3:0 T3:1: A (65 % 5 = 0) -> T1:0, B (66 % 5 = 1) -> T1:1, then A, B, A."""
    result = assign({"A": {"T1", "T3"}, "B": {"T1", "T3"}}, {"T1": 3, "T3": 2})

    assert result == {"A": tps("T1:0 T1:2 T3:1"), "B": tps("T1:1 T3:0")}


def test_homogeneous_with_every_partition_assignable_is_unchanged() -> None:
    result = assign(
        {"A": {"T1", "T3"}, "B": {"T1", "T3"}}, {"T1": 3, "T3": 2}, assignable={"T1": {0, 1, 2}, "T3": {0, 1}}
    )

    assert result == {"A": tps("T1:0 T1:2 T3:1"), "B": tps("T1:1 T3:0")}


def test_homogeneous_skips_partitions_whose_share_state_is_not_initialised() -> None:
    """Only T1 is assignable: A (65 % 3 = 2) -> T1:2, B (66 % 3 = 0) -> T1:0, T1:1 round-robin to A."""
    result = assign({"A": {"T1", "T3"}, "B": {"T1", "T3"}}, {"T1": 3, "T3": 2}, assignable={"T1": {0, 1, 2}})

    assert result == {"A": tps("T1:1 T1:2"), "B": tps("T1:0")}


def test_heterogeneous_members_hash_onto_their_own_partitions() -> None:
    """A indexes T1:0..T2:2 (65 % 6 = 5 -> T2:2), B indexes T3 (66 % 2 = 0 -> T3:0), C indexes T2:0..T3:1
    (67 % 5 = 2 -> T2:2). Spare T1 partitions go to A, T2:0 and T2:1 to A then C, T3:1 to B."""
    members = {"A": {"T1", "T2"}, "B": {"T3"}, "C": {"T2", "T3"}}

    result = assign(members, {"T1": 3, "T2": 3, "T3": 2})

    assert result == {"A": tps("T1:0 T1:1 T1:2 T2:0 T2:2"), "B": tps("T3:0 T3:1"), "C": tps("T2:1 T2:2")}


def test_heterogeneous_member_of_a_non_assignable_topic_gets_nothing() -> None:
    members = {"A": {"T1", "T2"}, "B": {"T3"}, "C": {"T2", "T3"}}

    result = assign(members, {"T1": 3, "T2": 3, "T3": 2}, assignable={"T1": {0, 1, 2}, "T2": {0, 1, 2}})

    assert result == {"A": tps("T1:0 T1:1 T1:2 T2:0 T2:2"), "B": set(), "C": tps("T2:1")}


def test_heterogeneous_member_without_topics_gets_nothing_and_the_other_takes_all() -> None:
    result = assign({"A": {"T1", "T2"}, "B": set()}, {"T1": 3, "T2": 2})

    assert result == {"A": tps("T1:0 T1:1 T1:2 T2:0 T2:1"), "B": set()}


def test_member_hash_index_is_java_remainder_made_positive() -> None:
    assert [java_string_hash(m) for m in ("member1", "member4", "AaAaAaAa")] == [948881623, 948881626, -540425984]
    assert [member_hash_index(m, 3) for m in ("member1", "member2", "member3", "member4", "AaAaAaAa")] == [
        1,
        2,
        0,
        1,
        2,
    ]
    assert member_hash_index("any", 7, member_hash=lambda _: -(2**31)) == 2**31 % 7


def test_round_robin_with_count_lets_a_member_go_one_over_the_desired_count() -> None:
    p1, p2, p3, p4 = ("T1", 0), ("T2", 0), ("T3", 0), ("T4", 0)
    by_member = {"member1": {p1}, "member2": {p1}}

    round_robin_with_count(["member1", "member2"], [p2, p3, p4], by_member, desired_count=2)

    assert by_member == {"member1": {p1, p2, p4}, "member2": {p1, p3}}


def test_round_robin_with_count_fails_when_every_member_is_full() -> None:
    by_member = {"member1": {("T1", 0)}, "member2": {("T1", 0)}}
    spare = [("T2", 0), ("T3", 0), ("T4", 0), ("T4", 1), ("T4", 2)]

    with pytest.raises(ShareAssignorError):
        round_robin_with_count(["member1", "member2"], spare, by_member, desired_count=2)


def test_homogeneous_current_partitions_of_dropped_topics_are_not_kept() -> None:
    first = assign({"A": {"T1", "T2"}, "B": {"T1", "T2"}}, {"T1": 3, "T2": 2})
    assert first == {"A": tps("T1:0 T1:2 T2:1"), "B": tps("T1:1 T2:0")}

    second = assign({"A": {"T2", "T3"}, "B": {"T2", "T3"}, "C": {"T2", "T3"}}, {"T2": 2, "T3": 3}, first)

    assert second == {"A": tps("T2:0 T3:1"), "B": tps("T2:1 T3:2"), "C": tps("T3:0")}


def test_heterogeneous_members_keep_current_partitions_of_topics_they_still_subscribe() -> None:
    """A indexes 8 partitions (65 % 8 = 1 -> T1:1), B indexes T3:0 T3:1 T4:0 (66 % 3 = 0 -> T3:0); only
    T2:1 and T4:0 are neither hashed nor held, so they go round-robin; the rest stay where they were."""
    first = assign({"A": {"T1", "T2"}, "B": {"T3"}, "C": {"T2", "T3"}}, {"T1": 3, "T2": 3, "T3": 2})
    first.pop("C")

    second = assign({"A": {"T1", "T2", "T3"}, "B": {"T3", "T4"}}, {"T1": 3, "T2": 3, "T3": 2, "T4": 1}, first)

    assert second == {"A": tps("T1:0 T1:1 T1:2 T2:0 T2:1 T2:2"), "B": tps("T3:0 T3:1 T4:0")}


# --- Behaviours beyond Kafka's tests -------------------------------------------------------------------------


def test_homogeneous_member_keeps_current_partitions_only_up_to_the_desired_count() -> None:
    """4 partitions, 2 members, desired 2. A hashes onto T1:0 and B onto T1:3; A keeps T1:1, the first old
    partition visited, and then is at the count, so T1:2 is spare. The round-robin starts with A, which may
    go one over."""
    hashes = {"A": 0, "B": 3}
    current = {"A": tps("T1:1 T1:2 T1:3"), "B": set()}

    result = assign({"A": {"T1"}, "B": {"T1"}}, {"T1": 4}, current, hashes.__getitem__)

    assert result == {"A": tps("T1:0 T1:1 T1:2"), "B": tps("T1:3")}


def test_partition_held_by_a_member_who_stopped_subscribing_goes_unassigned_for_a_round() -> None:
    """Kafka 4.1 leaves a currently held partition out of the round-robin, then drops it because its holder
    no longer subscribes: T2:1 ends up with nobody although B subscribes to T2. `compare` surfaces it."""
    hashes = {"A": 0, "B": 0}
    members = {"A": {"T1"}, "B": {"T2"}}
    partitions = {"T1": 1, "T2": 2}

    result = assign(members, partitions, {"A": tps("T2:1")}, hashes.__getitem__)

    assert result == {"A": tps("T1:0"), "B": tps("T2:0")}
    report = compare(result, result, subscribed_partitions({"T1", "T2"}, partitions))
    assert report.unassigned_partitions == (("T2", 1),)


def test_member_order_decides_who_takes_spare_partitions() -> None:
    """Both members hash onto T1:0; the round-robin hands T1:1 to whichever comes first."""
    hashes = {"A": 0, "B": 0}
    members = {"A": {"T1"}, "B": {"T1"}}

    by_name = assign(members, {"T1": 2}, member_hash=hashes.__getitem__)
    reversed_names = assign(members, {"T1": 2}, member_hash=hashes.__getitem__, order=lambda ids: sorted(ids)[::-1])

    assert by_name == {"A": tps("T1:0 T1:1"), "B": tps("T1:0")}
    assert reversed_names == {"A": tps("T1:0"), "B": tps("T1:0 T1:1")}


def test_departed_members_current_assignment_is_ignored() -> None:
    result = assign({"A": {"T1"}}, {"T1": 2}, {"gone": tps("T1:0 T1:1")}, {"A": 1}.__getitem__)

    assert result == {"A": tps("T1:0 T1:1")}


def test_subscribed_partitions_lists_topics_in_order_and_partitions_ascending() -> None:
    assert subscribed_partitions({"b", "a", "missing"}, {"a": 2, "b": 1}) == [("a", 0), ("a", 1), ("b", 0)]
    assert subscribed_partitions({"a"}, {"a": 3}, assignable={"a": [2, 0]}) == [("a", 0), ("a", 2)]


# --- compare -------------------------------------------------------------------------------------------------


def test_compare_reports_a_matching_stored_assignment_as_clean() -> None:
    expected = {"A": tps("T1:0"), "B": tps("T1:1")}

    assert compare(expected, {"A": tps("T1:0"), "B": tps("T1:1")}) == AssignmentReport((), (), ())


def test_compare_lists_unassigned_partitions_idle_members_and_differences() -> None:
    expected = {"A": tps("T1:0 T1:2"), "B": tps("T1:1"), "C": tps("T1:3")}
    stored = {"A": tps("T1:0 T1:1"), "B": set()}

    report = compare(expected, stored, subscribed=tps("T1:0 T1:1 T1:2 T1:3"))

    assert report.unassigned_partitions == (("T1", 2), ("T1", 3))
    assert report.members_without_partitions == ("B", "C")
    assert report.differences == (
        MemberDifference("A", frozenset(tps("T1:2")), frozenset(tps("T1:1"))),
        MemberDifference("B", frozenset(tps("T1:1")), frozenset()),
        MemberDifference("C", frozenset(tps("T1:3")), frozenset()),
    )
    assert not report.matches


def test_compare_without_subscriptions_measures_against_the_expected_partitions() -> None:
    report = compare({"A": tps("T1:0 T1:1")}, {"A": tps("T1:0")})

    assert report.unassigned_partitions == (("T1", 1),)
