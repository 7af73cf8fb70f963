"""A path is a path: characters operators' folders hold are written and read back as exactly that path,
and the few the Delta writer (delta-rs) cannot take are refused before Spark starts, in one sentence
naming the character (runtime.preflight.check_delta_path)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main

# delta-rs panics on these ("Invalid object store url"), reads a backslash as a separator, and
# percent-decodes an escape when it reads the table back.
REFUSED = {"^": "'^'", "[": "'['", "]": "']'", "|": "'|'", "\\": "a backslash", "%25": "'%25' (a URL escape)",
           "%20": "'%20' (a URL escape)"}  # fmt: skip
# Every one of these is taken as itself by each command that takes a path.
TAKEN = "a #?*:€%{}`;'\"<>=&!$ z"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("character", REFUSED)
@pytest.mark.parametrize("command", ["decode", "audit", "whatif", "history", "share"])
def test_a_table_folder_delta_rs_cannot_take_is_refused_before_spark_naming_the_character(
    no_spark, audited, tmp_path, command, character
):
    output = tmp_path / f"out{character}put"
    extra = ["--retention-minutes", "1d"] if command == "whatif" else []
    result = run(command, "--input", audited.parent / "dump", "--output", output, *extra)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and f"holds {REFUSED[character]}, which" in result.output, result.output
    assert not output.exists()


@pytest.mark.parametrize("character", REFUSED)
@pytest.mark.parametrize("command", ["describe", "delete-plan", "report", "metrics"])
def test_an_audit_folder_delta_rs_cannot_read_is_refused_naming_the_character(no_spark, tmp_path, command, character):
    extra = {"report": ["--output", tmp_path / "r.html"], "metrics": ["--output", tmp_path / "m.prom"]}
    result = run(command, "--audit", tmp_path / f"audit{character}", *extra.get(command, []))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and f"holds {REFUSED[character]}, which" in result.output, result.output


def test_every_other_character_is_a_path_for_every_command(spark, tmp_path):
    """One folder named with all of TAKEN holds the dump, the tables, the report, the metrics and the
    script; every command finds them there and writes nothing anywhere else."""
    from offset_audit.generator.demo_dump import generate_dump

    folder = tmp_path / TAKEN
    folder.mkdir()
    dump, audit = folder / f"dump {TAKEN}", folder / f"audit {TAKEN}"
    generate_dump(str(dump), 3_000, seed=5)
    ends = folder / f"ends {TAKEN}.txt"
    ends.write_text("orders:0:10\n")
    steps = [
        ["audit", "--input", dump, "--output", audit, "--end-offsets", ends, "--quiet"],
        ["whatif", "--input", dump, "--output", audit, "--retention-minutes", "1d,7d", "--quiet"],
        ["history", "--input", dump, "--output", folder / f"history {TAKEN}", "--quiet"],
        ["describe", "--audit", audit],
        ["delete-plan", "--audit", audit, "--script", folder / f"plan {TAKEN}.sh"],
        ["report", "--audit", audit, "--output", folder / f"report {TAKEN}.html"],
        ["metrics", "--audit", audit, "--output", folder / f"metrics {TAKEN}.prom"],
    ]
    for step in steps:
        result = run(*step)
        assert result.exit_code == 0, (step[0], result.output, repr(result.exception))
    written = {p.name for p in folder.iterdir()}
    assert written == {
        f"dump {TAKEN}",
        f"audit {TAKEN}",
        f"history {TAKEN}",
        f"ends {TAKEN}.txt",
        f"plan {TAKEN}.sh",
        f"report {TAKEN}.html",
        f"metrics {TAKEN}.prom",
    }
    assert {"partition_verdicts", "whatif", "runs"} <= {p.name for p in audit.iterdir()}
    assert [p.name for p in tmp_path.iterdir()] == [TAKEN]


def test_an_input_that_exists_is_that_path_not_a_pattern(spark, tmp_path):
    """in?x exists: it is read alone, not with its sibling in-x that the pattern in?x would match too
    (neither by the tool's own glob nor by Spark's)."""
    import json

    from offset_audit.generator.demo_dump import generate_dump

    generate_dump(str(tmp_path / "in?x"), 2_000, seed=5)
    generate_dump(str(tmp_path / "in-x"), 2_000, seed=6)
    counts = {}
    for name in ("in?x", "in-x"):
        result = run("decode", "--input", tmp_path / name, "--output", tmp_path / f"out {name}", "--json")
        assert result.exit_code == 0, result.output
        counts[name] = json.loads(result.stdout)["counts"]["records_read"]
    pattern = run("decode", "--input", tmp_path / "in[?-]x", "--output", tmp_path / "both", "--json")
    assert pattern.exit_code == 0, pattern.output
    assert json.loads(pattern.stdout)["counts"]["records_read"] == sum(counts.values())


def test_a_file_url_is_the_path_after_it_with_no_url_escapes(spark, tmp_path):
    """file:// takes the same characters as a bare path, and '%41' in it is those three characters."""
    import json

    from offset_audit.generator.demo_dump import generate_dump

    folder = tmp_path / f"in {TAKEN} %41"
    generate_dump(str(folder), 2_000, seed=5)
    output = tmp_path / f"out {TAKEN}"
    result = run("decode", "--input", f"file://{folder}", "--output", f"file://{output}", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"]["records_read"] == 2_000
    assert {p.name for p in tmp_path.iterdir()} == {folder.name, output.name}
    assert (output / "offset_commits" / "_delta_log").is_dir()
