"""share/java_order.TimelineKeys against the released broker's TimelineHashMap (TimelineOrderOracle.java):
the walk of a group's members, after random joins and leaves, as the coordinator makes it."""

from __future__ import annotations

import base64
import random
import subprocess
import uuid
from pathlib import Path

import pytest
from kafka_broker import SHORT_LIVED, compile_against, java, kafka_versions, libs
from live_services import Unavailable

from offset_audit.coordinator.java_order import TimelineKeys, string_hash

SCRIPTS = 300


def _member_id(rng: random.Random) -> str:
    """A client's member id: a random Uuid in URL-safe base64, as Kafka's Uuid.toString writes it."""
    return base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")


def _script(rng: random.Random) -> list[tuple[str, str]]:
    """Joins and leaves of up to 40 members, a member sometimes joining again (a put that replaces)."""
    present: list[str] = []
    ops = []
    for _ in range(rng.randint(1, 60)):
        if present and rng.random() < 0.3:
            ops.append(("-", present.pop(rng.randrange(len(present)))))
        elif present and rng.random() < 0.1:
            ops.append(("+", rng.choice(present)))
        else:
            present.append(_member_id(rng))
            ops.append(("+", present[-1]))
    return ops


def _ours(ops: list[tuple[str, str]]) -> list[str]:
    keys = TimelineKeys(string_hash)
    for op, key in ops:
        keys.add(key) if op == "+" else keys.remove(key)
    return list(keys)


def _oracle(version: str, scripts: list[list[tuple[str, str]]]) -> list[list[str]]:
    classpath = f"{libs(version)}/*"
    classes = compile_against(version, Path(__file__).with_name("TimelineOrderOracle.java"))
    lines = "".join(f"s{i} " + " ".join(f"{op} {key}" for op, key in ops) + "\n" for i, ops in enumerate(scripts))
    run = subprocess.run(
        [java(), *SHORT_LIVED, "-cp", f"{classes}:{classpath}", "TimelineOrderOracle"],
        input=lines, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return [line.split(" ")[1:] for line in run.stdout.splitlines()]


def test_keys_sharing_a_slot_walk_from_the_last_that_came():
    keys = TimelineKeys(lambda key: 7)  # one hash: one slot, whatever the table's length
    for key in ("b", "a", "c", "d"):
        keys.add(key)
    keys.add("b")  # a put that replaces keeps the key's place
    keys.remove("a")
    assert list(keys) == ["d", "c", "b"]


@pytest.mark.heavy
@pytest.mark.parametrize("version", kafka_versions())
def test_random_joins_and_leaves_walk_as_the_brokers_timeline_hash_map(version):
    rng = random.Random(20261127)
    scripts = [_script(rng) for _ in range(SCRIPTS)]
    try:
        theirs = _oracle(version, scripts)
    except Unavailable as reason:
        pytest.skip(str(reason))
    differing = [i for i, ops in enumerate(scripts) if _ours(ops) != theirs[i]]
    assert differing == [], f"{len(differing)} of {SCRIPTS} walks differ from Kafka {version}: {differing[:10]}"
