"""The read commands on an audit folder whose tables were damaged, vacuumed or left half written: one
sentence naming the table and what is wrong with it, exit 2, never delta-rs' or pyarrow's traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main


def _data_files(table: Path) -> list[Path]:
    """Every data file of the table: whichever snapshot a command reads, its files are among them."""
    return [p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts]


def _vacuumed(table: Path) -> None:
    for data in _data_files(table):
        data.unlink()


def _cut_short(table: Path) -> None:
    for data in _data_files(table):
        data.write_bytes(data.read_bytes()[:100])


def _half_written_commit(table: Path) -> None:
    commits = sorted((table / "_delta_log").glob("*.json"))
    commits[-1].write_text(commits[-1].read_text()[:40])


def _log_emptied(table: Path) -> None:
    for commit in (table / "_delta_log").iterdir():
        commit.unlink()


DAMAGE = {
    "vacuumed": (_vacuumed, "a data file its log lists is gone (vacuumed or deleted?)"),
    "cut short": (_cut_short, "a data file is damaged (Parquet magic bytes not found"),
    "half-written commit": (_half_written_commit, "its Delta log is damaged or incomplete"),
    "empty log": (_log_emptied, "its Delta log is damaged or incomplete"),
}
COMMANDS = {
    "describe": (["describe"], "partition_verdicts"),
    "report": (["report", "--output", "REPORT"], "partition_verdicts"),
    "metrics": (["metrics"], "partition_verdicts"),
    "delete-plan": (["delete-plan"], "deletion_candidates"),
}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_damaged_table_is_one_sentence_naming_it(no_spark, audited, tmp_path, damage, command):
    folder = tmp_path / "audit"
    shutil.copytree(audited, folder)
    args, table = COMMANDS[command]
    harm, said = DAMAGE[damage]
    harm(folder / table)
    argv = [a.replace("REPORT", str(tmp_path / "r.html")) for a in args]
    result = CliRunner().invoke(main, [argv[0], "--audit", str(folder), *argv[1:]])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: the {table} table under '{folder}' cannot be read: ")
    assert said in result.stderr and result.stderr.count("\n") == 1
    assert result.stdout == "" and not (tmp_path / "r.html").exists()
