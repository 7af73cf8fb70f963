"""Group and topic names chosen by an attacker (any client that may commit picks its group id): the
delete-plan script runs exactly the intended kafka-consumer-groups.sh calls and nothing else, and what the
terminal shows cannot be rewritten by a name."""

from __future__ import annotations

import os
import subprocess

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from dump_records import commit, snapshot_table

from offset_audit.cli.main import main

HOSTILE_GROUPS = [
    "nl\ntouch X",
    "--all-groups",
    "$(touch Y)",
    "`touch Z`",
    "q'uote\"d; touch W",
    "esc\x1b[2J\x1b]0;pwned\x07",
    "<script>alert(1)</script>",
    "bidi\u202eexe.txt",
    "space and\ttab",
    "back\\slash",
    "x" * 3000,
]
NUL_GROUP = "nul\x00byte"


@pytest.fixture(scope="module")
def audit_dir(spark, tmp_path_factory):
    """Simple groups with hostile names whose offsets have expired: every one is a deletion candidate."""
    root = tmp_path_factory.mktemp("hostile")
    records = [commit(g, topic, 0, 1, 1) for g in [*HOSTILE_GROUPS, NUL_GROUP] for topic in ("orders", "-t")]
    pq.write_table(snapshot_table(records), root / "dump.parquet")
    result = CliRunner().invoke(
        main,
        ["audit", "--input", str(root / "dump.parquet"), "--output", str(root / "out"), "--as-of", "2026-03-01"],
    )
    assert result.exit_code == 0, result.output
    return root / "out", result.output


STUB = """#!/usr/bin/env bash
# Records its arguments, NUL-separated, one call per file; runs nothing else.
n=$(ls "$CALLS" | wc -l)
printf '%s\\0' "$@" > "$CALLS/$n"
"""


def test_the_script_runs_exactly_the_intended_calls_and_nothing_else(audit_dir, tmp_path):
    out, _ = audit_dir
    script = tmp_path / "plan.sh"
    result = CliRunner().invoke(main, ["delete-plan", "--audit", str(out), "--script", str(script)])
    assert result.exit_code == 0, result.output
    text = script.read_text()
    assert all(line.isprintable() for line in text.splitlines()), "no raw control character in the script"
    stub_dir, calls, work = tmp_path / "bin", tmp_path / "calls", tmp_path / "work"
    for folder in (stub_dir, calls, work):
        folder.mkdir()
    stub = stub_dir / "kafka-consumer-groups.sh"
    stub.write_text(STUB)
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub_dir}:{os.environ['PATH']}", "CALLS": str(calls), "BOOTSTRAP_SERVER": "b:9"}
    subprocess.run(["bash", str(script)], cwd=work, env=env, check=True)
    recorded = [(calls / name).read_bytes().split(b"\0")[:-1] for name in sorted(os.listdir(calls), key=int)]
    expected = [
        [
            b"--bootstrap-server",
            b"b:9",
            b"--delete-offsets",
            f"--group={g}".encode(),
            b"--topic=-t:0",
            b"--topic=orders:0",
        ]
        for g in HOSTILE_GROUPS
    ]
    assert sorted(recorded) == sorted(expected)
    assert list(work.iterdir()) == [] and not (tmp_path / "X").exists()
    assert "left out" in text and "NUL" in text


def test_printed_plan_and_summary_show_names_escaped(audit_dir):
    out, summary = audit_dir
    printed = CliRunner().invoke(main, ["delete-plan", "--audit", str(out)]).output
    for text in (printed, summary):
        assert "\x1b" not in text and "\u202e" not in text and "\x00" not in text
        assert not any(line.lstrip().startswith(("touch", "exe.txt")) for line in text.splitlines())
    assert "esc\\x1b[2J" in summary or "esc\\x1b[2J" in printed


# Every text field a client writes into __consumer_offsets, each with characters a terminal would act on
# (ESC sequences, a C1 control, a bidi override, a line separator) and a name of its own to find it by.
def hostile(field: str) -> str:
    return f"{field}\x1b[31m\u202e\x85\u2028\x9b[2J."


FIELDS = ["group", "topic", "protocol_type", "protocol", "member", "instance", "client", "host", "metadata"]


@pytest.fixture(scope="module")
def every_field(spark, tmp_path_factory):
    """A classic group whose every text field is hostile, audited; its offset expires and is a candidate."""
    from dump_records import DAY, LAYOUTS, T0

    from offset_audit import constants as K
    from offset_audit.layouts.encoder import encode_consumer_protocol, encode_key, encode_value

    h = {field: hostile(field) for field in FIELDS}
    subscription = encode_consumer_protocol(
        "consumer_protocol_subscription", 1, {"Topics": [h["topic"]], "UserData": None, "OwnedPartitions": []}
    )
    member = {
        "memberId": h["member"],
        "groupInstanceId": h["instance"],
        "clientId": h["client"],
        "clientHost": h["host"],
        "rebalanceTimeout": 1000,
        "sessionTimeout": 1000,
        "subscription": subscription,
        "assignment": b"",
    }
    group = {"group": h["group"]}
    records = [
        (
            encode_key(LAYOUTS[K.OFFSET_COMMIT], {**group, "topic": h["topic"], "partition": 0}),
            encode_value(
                LAYOUTS[K.OFFSET_COMMIT],
                3,
                {"offset": 7, "leaderEpoch": 1, "metadata": h["metadata"], "commitTimestamp": T0 + DAY},
            ),
            T0 + DAY,
        ),
        (
            encode_key(LAYOUTS[K.GROUP_METADATA], group),
            encode_value(
                LAYOUTS[K.GROUP_METADATA],
                3,
                {
                    "protocolType": h["protocol_type"],
                    "generation": 2,
                    "protocol": h["protocol"],
                    "leader": h["member"],
                    "currentStateTimestamp": T0 + DAY,
                    "members": [member],
                },
            ),
            T0 + DAY,
        ),
        (
            encode_key(LAYOUTS[K.GROUP_METADATA], group),
            encode_value(
                LAYOUTS[K.GROUP_METADATA],
                3,
                {
                    "protocolType": h["protocol_type"],
                    "generation": 3,
                    "protocol": None,
                    "leader": None,
                    "currentStateTimestamp": T0 + 2 * DAY,
                    "members": [],
                },
            ),
            T0 + 2 * DAY,
        ),
    ]
    root = tmp_path_factory.mktemp("every-field")
    pq.write_table(snapshot_table(records), root / "dump.parquet")
    out = root / "out"
    audit = ["audit", "--input", root / "dump.parquet", "--output", out, "--as-of", "2026-03-01", "--quiet"]
    outputs = {}
    for name, argv in {
        "audit": audit,
        "audit --json": [*audit, "--json"],
        "describe": ["describe", "--audit", out, "--group", h["group"]],
        "describe --json": ["describe", "--audit", out, "--group", h["group"], "--json"],
        "delete-plan": ["delete-plan", "--audit", out],
        "delete-plan --json": ["delete-plan", "--audit", out, "--json"],
        "history": ["history", "--input", root / "dump.parquet", "--output", root / "h", "--group", h["group"], "-q"],
        "history --json": ["history", "--input", root / "dump.parquet", "--output", root / "h", "--json", "-q"],
        "decode --json": ["decode", "--input", root / "dump.parquet", "--output", root / "d", "--json", "-q"],
    }.items():
        result = CliRunner().invoke(main, [str(a) for a in argv])
        assert result.exit_code == 0, (name, result.output)
        outputs[name] = result.stdout + result.stderr
    return h, outputs


ACTS_ON_A_TERMINAL = ("\x1b", "\x9b", "\x85", "\u202e", "\u2028", "\x00")


def test_no_field_of_the_dump_reaches_a_terminal_raw_in_any_output(every_field):
    """Text and JSON alike: every character a terminal would act on leaves as a visible escape."""
    _, outputs = every_field
    for name, text in outputs.items():
        assert not any(char in text for char in ACTS_ON_A_TERMINAL), name
    assert "protocol_type\\x1b[31m\\u202e" in outputs["describe"]  # the group line names its protocol type
    assert "group\\x1b[31m" in outputs["audit"] and "topic\\x1b[31m" in outputs["delete-plan"]


def test_json_escapes_them_so_that_the_same_names_read_back(every_field):
    import json

    h, outputs = every_field
    described = json.loads(outputs["describe --json"])
    (group,) = described["groups"]
    assert (group["group_id"], group["protocol_type"]) == (h["group"], h["protocol_type"])
    assert {(o["group_id"], o["topic"]) for o in described["offsets"]} == {(h["group"], h["topic"])}
    plan = json.loads(outputs["delete-plan --json"])
    assert [(g["group_id"], [t["topic"] for t in g["topics"]]) for g in plan["groups"]] == [(h["group"], [h["topic"]])]
    audited = json.loads(outputs["audit --json"])
    assert {(c["group_id"], c["topic"]) for c in audited["top_deletion_candidates"]} == {(h["group"], h["topic"])}
