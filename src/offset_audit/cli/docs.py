"""The docs that are generated from the code, so they cannot drift: every command output shown in
README.md and docs/ (produced from the demo data), and docs/tables.md's table sections.

    python -m offset_audit.cli.docs examples          # re-run the examples and rewrite their blocks
    python -m offset_audit.cli.docs examples --check  # exit 1 when a block differs from what the commands print
    python -m offset_audit.cli.docs tables            # rewrite docs/tables.md from schemas/tables/
    python -m offset_audit.cli.docs settings          # rewrite conf/default.toml and docs/settings.md

A block in a Markdown file is marked by the line `<!-- example: NAME -->` right before its fence; the
fence holds `$ <command>` and what the command printed on stdout. The commands run in a scratch
folder holding the demo dump (`make demo`'s generate line), in this process, one after the other (a
later example may read what an earlier one wrote). Printed absolute paths of that folder are shown
relative to it, as `make demo` leaves them in the repository. tests/cli/test_examples.py runs them all
and compares, ignoring only what differs from run to run (run ids).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[3]
DOCUMENTS = [
    "README.md",
    "docs/inputs.md",
    "docs/rules.md",
    "docs/history.md",
    "docs/share-groups.md",
    "docs/upkeep.md",
    "docs/dashboards.md",
    "docs/fleet.md",
]
# Volatile parts of an output, the same in every run only once masked.
VOLATILE = [
    (re.compile(r"\brun [0-9a-f]{12}\b"), "run <id>"),
    (re.compile(r"\(\d[\d,.]* KiB\)"), "(<n> KiB)"),
    # tidy's sizes (commit files carry their times), its seconds, and its file counts (as many files as
    # the session that wrote the tables had tasks)
    (re.compile(r"\b\d+\.\d (KiB|MiB)\b"), r"<n> \1"),
    (re.compile(r"\(\d+\.\d s\)"), "(<n> s)"),
    (re.compile(r"\b(vacuumed|live files|files on the store) \d[\d,]*( -> \d[\d,]*)?"), r"\1 <n>"),
]
# A block's body never holds a fence, so an empty block cannot swallow the text after it.
BLOCK = re.compile(r"(<!-- example: (?P<name>[\w-]+) -->\n```[a-z]*\n)(?P<body>(?:(?!```).)*)(```)", re.S)


@dataclass(frozen=True)
class Example:
    """A command as the docs show it; `shown` is the pipe the reader would type after it, `filter` what
    that pipe does (head, jq), applied here to the captured output."""

    name: str
    argv: list[str]
    shown: str = ""
    filter: Callable[[str], str] | None = None


def head(lines: int) -> Callable[[str], str]:
    return lambda text: "\n".join(text.splitlines()[:lines])


def jq_path(*keys: str) -> Callable[[str], str]:
    """What `jq .a.b` prints for a plain path: the value, indented by two spaces as jq does."""

    def pick(text: str) -> str:
        value = json.loads(text)
        for key in keys:
            value = value[key]
        return json.dumps(value, indent=2, ensure_ascii=False)

    return pick


def grep(pattern: str, limit: int) -> Callable[[str], str]:
    """What `grep -m LIMIT PATTERN` prints."""
    return lambda text: "\n".join([line for line in text.splitlines() if pattern in line][:limit])


DEMO = ["--records", "300000", "--seed", "7", "--corrupt", "12"]
EXAMPLES = [
    Example(
        "generate",
        ["generate", "--output", "demo-input", *DEMO, "--end-offsets", "demo-end-offsets.txt"],
    ),
    Example(
        "audit", ["audit", "--input", "demo-input", "--output", "demo-output", "--end-offsets", "demo-end-offsets.txt"]
    ),
    Example("describe", ["describe", "--audit", "demo-output", "--group", "classic-stable-00044"]),
    Example(
        "audit-json",
        [
            "audit",
            "--input",
            "demo-input",
            "--output",
            "demo-output",
            "--end-offsets",
            "demo-end-offsets.txt",
            "--json",
        ],
        shown="| jq .offsets",
        filter=jq_path("offsets"),
    ),
    Example("delete-plan", ["delete-plan", "--audit", "demo-output"], shown="| head -8", filter=head(8)),
    Example(
        "metrics",
        ["metrics", "--audit", "demo-output"],
        shown="| grep -m 6 classic-stable-00044",
        filter=grep("classic-stable-00044", 6),
    ),
    Example(
        "whatif", ["whatif", "--input", "demo-input", "--output", "demo-output", "--retention-minutes", "1d,7d,30d"]
    ),
    Example("report", ["report", "--audit", "demo-output", "--output", "demo-output/report.html"]),
    Example("tidy", ["tidy", "--audit", "demo-output", "--keep-snapshots", "1", "--deleted-file-retention", "0"]),
    Example("history", ["history", "--input", "demo-input", "--output", "demo-history", "--group", "deleted-00015"]),
    Example("decode", ["decode", "--input", "demo-input", "--output", "demo-decoded"]),
    Example(
        "share-generate",
        [
            "generate",
            "--format",
            "share-state",
            "--output",
            "demo-share-state",
            "--records",
            "30000",
            "--cluster-records",
            "300000",
            "--seed",
            "7",
            "--corrupt",
            "2",
        ],
    ),
    Example(
        "share",
        ["share", "--input", "demo-share-state", "--groups-input", "demo-input", "--output", "demo-share"],
    ),
    # The demo's dump audited as two clusters of a fleet into one folder (docs/fleet.md).
    Example(
        "fleet-eu",
        ["audit", "--input", "demo-input", "--output", "demo-fleet", "--cluster", "eu"],
        "| head -3",
        head(3),
    ),
    Example(
        "fleet-us",
        [
            "audit",
            "--input",
            "demo-input",
            "--output",
            "demo-fleet",
            "--cluster",
            "us",
            "--as-of",
            "2026-10-27T04:00:00",
        ],
        "| head -3",
        head(3),
    ),
    Example(
        "fleet-metrics",
        ["metrics", "--audit", "demo-fleet"],
        "| grep -m 2 snapshot_info{",
        grep("snapshot_info{", 2),
    ),
    Example(
        "fleet-describe", ["describe", "--audit", "demo-fleet", "--cluster", "us", "--group", "classic-stable-00044"]
    ),
    Example("fleet-report", ["report", "--audit", "demo-fleet", "--output", "demo-fleet/fleet.html"]),
]


def shown_command(example: Example) -> str:
    import shlex

    line = "$ offset-audit " + " ".join(shlex.quote(a) for a in example.argv)
    return f"{line} {example.shown}" if example.shown else line


def run_examples(workdir: Path, names: set[str] | None = None) -> dict[str, str]:
    """Run the examples in `workdir`; each block's text by name (command line and output)."""
    from click.testing import CliRunner

    from offset_audit.cli.main import main

    blocks = {}
    previous = Path.cwd()
    os.chdir(workdir)
    try:
        for example in EXAMPLES:
            result = CliRunner().invoke(main, [*example.argv, "--quiet"] if _takes_quiet(example) else example.argv)
            if result.exit_code != 0:
                raise RuntimeError(f"example {example.name} exited {result.exit_code}: {result.output}")
            text = result.stdout.rstrip("\n").replace(f"{workdir.resolve()}/", "").replace(str(workdir.resolve()), ".")
            if example.filter is not None:
                text = example.filter(text)
            blocks[example.name] = f"{shown_command(example)}\n{text}"
    finally:
        os.chdir(previous)
    return blocks


def _takes_quiet(example: Example) -> bool:
    return example.argv[0] in ("decode", "audit", "whatif", "share", "history")


def masked(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def rewrite(text: str, blocks: dict[str, str]) -> str:
    def replace(match: re.Match) -> str:
        name = match.group("name")
        if name not in blocks:
            raise KeyError(f"no example named {name}")
        return match.group(1) + blocks[name] + "\n" + match.group(4)

    return BLOCK.sub(replace, text)


def blocks_in(text: str) -> dict[str, str]:
    return {m.group("name"): m.group("body").rstrip("\n") for m in BLOCK.finditer(text)}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Regenerate the docs that come from the code (for maintainers)."""


@main.command()
@click.option("--check", is_flag=True, help="exit 1 when a shown output is out of date, and rewrite nothing.")
def examples(check: bool) -> None:
    """Re-run the demo commands and rewrite every shown output in README.md and docs/."""
    with tempfile.TemporaryDirectory() as scratch:
        blocks = run_examples(Path(scratch))
    stale = []
    for document in DOCUMENTS:
        path = ROOT / document
        if not path.exists():
            continue
        text = path.read_text()
        new = rewrite(text, blocks)
        if check:
            if masked(new) != masked(text):
                stale.append(document)
        elif new != text:
            path.write_text(new)
            click.echo(f"rewrote the examples of {document}")
    if stale:
        click.echo(
            f"examples out of date in {', '.join(stale)}: run python -m offset_audit.cli.docs examples", err=True
        )
        sys.exit(1)


@main.command()
@click.argument("page", default="docs/tables.md", type=click.Path(dir_okay=False, exists=True))
def tables(page: str) -> None:
    """Rewrite the table sections of PAGE (docs/tables.md) from schemas/tables/."""
    from offset_audit.views.table_docs import sync

    path = Path(page)
    path.write_text(sync(path.read_text()))


@main.command()
@click.option(
    "--check", is_flag=True, help="exit 1 when either file differs from the definitions, and rewrite nothing."
)
def settings(check: bool) -> None:
    """Rewrite conf/default.toml and docs/settings.md from the settings' definitions (settings.py)."""
    from offset_audit.runtime.config import DEFAULT_CONF
    from offset_audit.views.settings_docs import default_toml, settings_page

    stale = []
    for path, text in (
        (Path(str(DEFAULT_CONF)).resolve(), default_toml()),
        (ROOT / "docs" / "settings.md", settings_page()),
    ):
        if path.exists() and path.read_text() == text:
            continue
        if check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            click.echo(f"rewrote {path.relative_to(ROOT)}")
    if stale:
        click.echo(f"out of date: {', '.join(stale)}: run python -m offset_audit.cli.docs settings", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
