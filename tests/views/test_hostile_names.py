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
