"""The input formats' registry (inputs/formats.py): each format described once and found by name; auto
recognising every fixture as it did before the registry; and no module outside inputs/ that asks which
format a run reads by comparing its name."""

from __future__ import annotations

import ast
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake
from draft_chain_records import WORKED_EXAMPLE
from repo_paths import ROOT, TEXT_DUMPS
from segment_files import batch

from offset_audit.errors import UserError
from offset_audit.inputs import formats
from offset_audit.inputs.log_files import SNIFF_BYTES
from offset_audit.inputs.opened import open_dump
from offset_audit.runtime.config import load_settings

PACKAGE = ROOT / "src" / "offset_audit"

# --- nothing outside inputs/ compares a format by its name -------------------------------------------------

# Every name a run's input format can have: the choices, and what auto makes of several formats.
FORMAT_NAMES = frozenset({*formats.CHOICES, formats.MIXED.name})
# The names inputs/ and runs/ gave lists of formats before the registry (a module that imports or reads one
# asks by name again), and the registry's own descriptors (a module that compares against one does too).
FORMAT_CONSTANTS = frozenset(
    {
        "SEGMENTS",
        "DUMP_LOG",
        "CONSOLE",
        "LOG_FORMATS",
        "MERGED_FORMATS",
        "KIP932_JSON",
        "MIXED",
        "RESUMABLE",
        "WITH_MARKERS",
        "INPUT_FORMATS",
        "TRANSACTIONAL_FORMATS",
        "PARQUET",
        "DELTA",
        "KAFKA",
        "AUTO",
    }
)
# Names that mention a format but hold another kind of format than the input's, each with why.
OTHER_FORMATS = {"output_format": "generate's --format: what it writes (parquet, segments or share-state)"}


def mentions_format(text: str) -> bool:
    for other in OTHER_FORMATS:
        text = text.replace(other, "")
    return "format" in text.lower()


def format_comparisons(source: str) -> list[str]:
    """Where a module asks which format an input is by its name: a comparison (==, !=, in, not in, is)
    of something that mentions a format with a format's name, or any comparison with a format constant
    or a list of names; a list of two or more names of its own; a format constant imported."""
    tree = ast.parse(source)
    # Names given a format (`kind = settings.input.format`) mention it too.
    carried = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and mentions_format(ast.unparse(node.value))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    own_lists: set[str] = set()

    def about_a_format(node: ast.AST) -> bool:
        return mentions_format(ast.unparse(node)) or any(
            isinstance(n, ast.Name) and n.id in carried for n in ast.walk(node)
        )

    def is_constant(node: ast.AST) -> bool:
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(is_constant(e) for e in node.elts)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return name in FORMAT_CONSTANTS or name in own_lists

    def is_name(node: ast.AST) -> bool:
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(is_name(e) for e in node.elts)
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FORMAT_NAMES

    found = []
    for node in tree.body:
        listed = isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple | ast.List | ast.Set)
        if listed and sum(is_name(e) or is_constant(e) for e in node.value.elts) >= 2:
            own = [t.id for t in node.targets if isinstance(t, ast.Name)]
            own_lists.update(own)
            found += [f"line {node.lineno}: a list of formats of its own, {name}" for name in own]
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            by_name = any(is_name(s) and any(about_a_format(o) for o in sides if o is not s) for s in sides)
            if by_name or any(is_constant(s) for s in sides):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("offset_audit"):
            imported = [a.name for a in node.names if a.name in FORMAT_CONSTANTS]
            found += [f"line {node.lineno}: imports {name} from {node.module}" for name in imported]
    return found


def outside_inputs():
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "inputs")


def test_no_module_outside_inputs_asks_a_format_by_its_name():
    """Code elsewhere asks the descriptor (`input_format(settings).resumable`), so a new format is one
    entry in the registry. Before the registry this found 32 places, in settings.py, cli/options.py and
    runs/ (clusters, config, incremental, preflight, share, state)."""
    found = {
        str(path.relative_to(PACKAGE)): where
        for path in outside_inputs()
        if (where := format_comparisons(path.read_text()))
    }
    assert found == {}, found


@pytest.mark.parametrize(
    "source",
    [
        'if settings.input.format == "kafka": pass',
        'if settings.input.format != "auto": pass',
        'ok = input_format in ("parquet", "delta")',
        'kind = settings.input.format\nif kind == "delta": pass',
        "ok = settings.input.format in log_files.LOG_FORMATS",
        "ok = input_format in (log_files.DUMP_LOG, log_files.CONSOLE)",
        "ok = fmt is formats.SEGMENTS",
        "from offset_audit.inputs.dump import KIP932_JSON",
        'RESUMABLE = ("segments", "parquet", "delta", "kafka")',
        'TRANSACTIONAL = ("segments", "dump-log")\nok = report.input_format in TRANSACTIONAL',
    ],
)
def test_the_scan_sees_a_format_asked_by_its_name(source):
    assert format_comparisons(source)


@pytest.mark.parametrize(
    "source",
    [
        "if formats.input_format(settings).live: pass",
        'frame = spark.read.format("delta")',
        'if settings.output.writer == "auto": pass',
        'if output_format != "segments": pass',
        'settings = settings.replaced("input", format="auto")',
        'KINDS = ("classic_stable", "console", "simple")',
    ],
)
def test_the_scan_leaves_what_is_no_input_format_alone(source):
    assert format_comparisons(source) == []


# --- auto recognises every fixture as before ----------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Files and folders of every format auto tells apart, and some it cannot tell."""
    root = tmp_path_factory.mktemp("corpus")
    for fixture in TEXT_DUMPS.glob("*.txt"):
        (root / fixture.name).write_bytes(fixture.read_bytes())
    (root / "share.jsonl").write_text("\n".join(json.dumps(r) for r in WORKED_EXAMPLE) + "\n")
    table = pa.table({"key": [b"k"], "value": [b"v"], "partition": [0], "offset": [0]})
    pq.write_table(table, root / "snapshot.parquet")
    segment = batch(0, [(b"k", b"v", 1_700_000_000_000)])
    (root / "00000000000000000000.log").write_bytes(segment)
    (root / "dump.log").write_bytes((TEXT_DUMPS / "dump_log_3_8.txt").read_bytes())  # text saved as .log
    (root / "named.log").write_bytes((root / "snapshot.parquet").read_bytes())  # Parquet saved as .log
    (root / "notes.txt").write_text("nothing a format would say\n")
    (root / "empty.parquet").write_text("not Parquet at all\n")
    broker = root / "broker" / "__consumer_offsets-0"
    broker.mkdir(parents=True)
    (broker / "00000000000000000000.log").write_bytes(segment)
    snapshot = root / "snapshots"
    for folder in ("", "_spark_metadata", ".hidden"):
        (snapshot / folder).mkdir(parents=True, exist_ok=True)
    pq.write_table(table, snapshot / "part-0.parquet")
    (snapshot / "_spark_metadata" / "0.log").write_bytes(segment)  # bookkeeping: not counted
    (snapshot / ".hidden" / "1.log").write_bytes(segment)
    write_deltalake(str(root / "table"), table)
    both = root / "both" / "__consumer_offsets-1"
    both.mkdir(parents=True)
    pq.write_table(table, root / "both" / "part-0.parquet")
    (both / "00000000000000000000.log").write_bytes(segment)
    return root


MIX = "the inputs mix formats ({}); give one format per run"
CANNOT_TELL = "cannot tell the format of '{}'; pass --input-format (parquet, delta, segments, dump-log or console)"
# What --input-format auto made of each before the registry (the same answers, run at the commit before).
DETECTED = [
    (["dump_log_2_x.txt"], "dump-log"),
    (["dump_log_3_7.txt"], "dump-log"),
    (["dump_log_3_8.txt"], "dump-log"),
    (["console_json_3_9_groups.txt"], "console"),
    (["console_json_3_9_offsets.txt"], "console"),
    (["console_json_4_3_live.txt"], "console"),
    (["console_json_4_x.txt"], "console"),
    (["console_scala_groups.txt"], "console"),
    (["console_scala_offsets.txt"], "console"),
    (["share.jsonl"], "kip932-json"),
    (["snapshot.parquet"], "parquet"),
    (["00000000000000000000.log"], "segments"),
    (["dump.log"], "dump-log"),
    (["named.log"], "parquet"),
    (["notes.txt"], UserError(CANNOT_TELL)),
    (["empty.parquet"], UserError(CANNOT_TELL)),
    (["broker"], "segments"),
    (["snapshots"], "parquet"),
    (["table"], "delta"),
    (["both"], UserError("cannot tell the format of the folder '{}'; pass --input-format")),
    (["snapshot.parquet", "table"], "parquet"),
    (["dump_log_3_8.txt", "dump_log_3_7.txt"], "dump-log"),
    (["broker", "snapshot.parquet"], "mixed"),
    (["dump_log_3_8.txt", "broker", "table"], "mixed"),
    (["console_json_4_x.txt", "broker"], UserError(MIX.format("console, segments"))),
    (["share.jsonl", "snapshot.parquet"], UserError(MIX.format("kip932-json, parquet"))),
]


def detect_format(paths: list[str]) -> str:
    """What --input-format auto makes of the paths, as a run opens them (share's inputs: any format)."""
    return open_dump(paths, load_settings(), share=True).settings.input.format


@pytest.mark.parametrize(("names", "expected"), DETECTED, ids=lambda v: "+".join(v) if isinstance(v, list) else None)
def test_auto_detects_each_input_as_before_the_registry(corpus, names, expected):
    paths = [str(corpus / name) for name in names]
    if isinstance(expected, UserError):
        with pytest.raises(UserError) as raised:
            detect_format(paths)
        assert str(raised.value) == str(expected).format(paths[0])
    else:
        assert detect_format(paths) == expected


FOLDERS = ("broker", "snapshots", "table", "both")


def sniffed(path) -> list[str]:
    head = path.read_bytes()[:SNIFF_BYTES]
    return [f.name for f in formats.SNIFFED if f.recognises(head, str(path))]


@pytest.mark.parametrize(("name", "expected"), [(n[0], e) for n, e in DETECTED if len(n) == 1 and n[0] not in FOLDERS])
def test_the_first_format_that_recognises_a_file_is_the_one_auto_names(corpus, name, expected):
    found = sniffed(corpus / name)
    assert (found[0] if found else None) == (None if isinstance(expected, UserError) else expected)


def test_each_file_format_recognises_its_own_files_only(corpus):
    """Apart from the order SNIFFED tries them in: a .log name stands for segments only where the bytes say
    nothing else."""
    assert sniffed(corpus / "snapshot.parquet") == ["parquet"]
    assert sniffed(corpus / "share.jsonl") == ["kip932-json"]
    assert sniffed(corpus / "dump_log_3_8.txt") == ["dump-log"]
    assert sniffed(corpus / "console_scala_offsets.txt") == ["console"]
    assert sniffed(corpus / "00000000000000000000.log") == ["segments"]
    assert sniffed(corpus / "dump.log") == ["dump-log", "segments"]


def test_the_live_topic_and_delta_are_never_sniffed_from_a_file():
    assert formats.KAFKA not in formats.SNIFFED and formats.DELTA not in formats.SNIFFED
    assert not (formats.KAFKA.magic or formats.KAFKA.looks_like or formats.KAFKA.suffix or formats.KAFKA.subfolder)
    assert set(formats.SNIFFED) | {formats.KAFKA, formats.DELTA} == set(formats.FORMATS)


# --- the registry -----------------------------------------------------------------------------------------


def test_an_unknown_format_is_one_sentence_naming_the_choices():
    with pytest.raises(UserError) as raised:
        formats.by_name("nope")
    message = str(raised.value)
    assert message == (
        "unknown input format 'nope'; use one of: auto, parquet, delta, kafka, segments, dump-log, console, kip932-json"
    )
    assert "\n" not in message and ". " not in message


def test_mixed_is_what_auto_finds_never_a_choice():
    with pytest.raises(UserError):
        formats.by_name("mixed")
    assert formats.named("mixed") is formats.MIXED and formats.MIXED not in formats.FORMATS


def test_every_format_is_found_by_its_name_and_names_its_spark_data_source():
    assert ("auto", *(f.name for f in formats.FORMATS)) == formats.CHOICES
    for fmt in formats.FORMATS:
        assert formats.by_name(fmt.name) is fmt and fmt.description and fmt.spark_source
    assert {f.name: f.spark_source for f in formats.FORMATS} == {
        "parquet": "parquet",
        "delta": "delta",
        "kafka": "kafka",
        "segments": "kafka-log",
        "dump-log": "kafka-dump-log",
        "console": "kafka-console",
        "kip932-json": "kafka-share-state",
    }


def test_the_command_line_and_the_config_take_the_registry_choices():
    import click

    from offset_audit.cli.main import main
    from offset_audit.runtime.config import load_settings

    options = [param for command in main.commands.values() for param in command.params if param.name == "input_format"]
    assert options and all(isinstance(option.type, click.Choice) for option in options)
    assert all(tuple(option.type.choices) == formats.CHOICES for option in options)
    with pytest.raises(UserError, match=r"^unknown input format 'nope'; use one of: auto, parquet"):
        load_settings(input_format="nope")


# Which formats the code picked by name before the registry, for each question a flag now answers.
PICKED_BEFORE = {
    "log_files": {"segments", "dump-log", "console"},  # log_files.LOG_FORMATS
    "markers": {"segments", "dump-log", "mixed"},  # log_files.WITH_MARKERS, runs.state.TRANSACTIONAL_FORMATS
    "copies_merged": {"parquet", "delta", "dump-log", "mixed"},  # overlapping.MERGED_FORMATS, and MIXED
    "mixable": {"segments", "parquet", "delta", "dump-log"},  # detect_formats' MIXED
    "resumable": {"segments", "parquet", "delta", "kafka"},  # runs.incremental.RESUMABLE
    "text_dump": {"dump-log", "console"},  # LOG_FORMATS but segments; share's (DUMP_LOG, CONSOLE)
    "live": {"kafka"},
    "broker_folders": {"segments"},
    "share_state": {"kip932-json"},
    "delta_table": {"delta"},
    "several_formats": {"mixed"},
    "to_detect": {"auto"},
    "timestamps": {"auto", "parquet", "delta", "kafka", "segments", "dump-log", "kip932-json", "mixed"},  # not console
}


@pytest.mark.parametrize("flag", sorted(PICKED_BEFORE))
def test_each_flag_picks_the_formats_the_code_picked_by_name(flag):
    every = (formats.AUTO, *formats.FORMATS, formats.MIXED)
    assert {f.name for f in every if getattr(f, flag)} == PICKED_BEFORE[flag]
