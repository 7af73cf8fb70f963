"""The package is laid out the way the data flows, and keeps to it: each subpackage imports only what its
`__init__` docstring says it may ("May import: ..."), the coordinator does no I/O, the views never load
Spark, and only the command line parses flags. Imports are read with `ast`, at module level and inside
functions alike; imports under `if TYPE_CHECKING:` (type hints only) are not counted."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from repo_paths import DOCS, ROOT

PACKAGE = ROOT / "src" / "offset_audit"
TOP = "the top-level modules"
# I/O a model of the broker never does: files, object stores, Delta, Kafka, processes.
IO_MODULES = ("deltalake", "pyarrow.parquet", "pyarrow.fs", "pyarrow.csv", "confluent_kafka", "shutil", "tempfile")
FLAG_PARSERS = ("click", "argparse", "optparse", "getopt")


def subpackages() -> list[str]:
    return sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def room(path: Path) -> str:
    """The subpackage a module belongs to, or TOP for the shared modules beside them."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else TOP


def room_of_module(name: str) -> str | None:
    """The room of an imported offset_audit module; None for anything else."""
    parts = name.split(".")
    if parts[0] != "offset_audit":
        return None
    if len(parts) == 1:
        return TOP
    return parts[1] if (PACKAGE / parts[1]).is_dir() else TOP


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@cache
def imports(path: Path, type_only: bool = False) -> tuple[str, ...]:
    """Every module `path` imports when it runs (full dotted names; `from a import b` gives a.b and a);
    with `type_only`, also those it imports for the type checker alone (`if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if _type_checking(node) and not type_only:
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return tuple(found)


@cache
def may_import(package: str) -> frozenset[str]:
    """What a subpackage's __init__ docstring says it may import, besides itself."""
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""
    found = re.search(r"May import: (.+?)\.(?:\s|$)", doc, re.S)
    assert found, f"{package}/__init__.py does not say what it may import ('May import: ...')"
    allowed = {package}
    listed = re.sub(r"\([^)]*\)", "", " ".join(found.group(1).split()))  # a parenthesis says why, not what
    for item in re.split(r",\s*|\s+and\s+", listed):
        allowed.add(TOP if item.startswith("the top-level modules") else item.strip())
    return frozenset(allowed)


def test_every_subpackage_says_what_it_holds_and_may_import():
    for package in subpackages():
        doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
        assert doc and len(doc.splitlines()) >= 3, f"{package}/__init__.py needs a docstring of a few lines"
        assert may_import(package) - {TOP, package} <= set(subpackages()), package


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_flow(path):
    here = room(path)
    allowed = may_import(here) if here != TOP else frozenset({TOP})
    wrong = sorted({name for name in imports(path) if (r := room_of_module(name)) is not None and r not in allowed})
    assert not wrong, f"{path.relative_to(PACKAGE)} ({here}) imports {wrong}; it may import {sorted(allowed)}"


def _module_file(name: str) -> Path | None:
    """The file of an offset_audit module or package a dotted name stands for; None for anything else
    (a function or class imported by name, another library)."""
    parts = name.split(".")
    if parts[0] != "offset_audit":
        return None
    path = PACKAGE.joinpath(*parts[1:])
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else None


def _import_graph() -> dict[Path, set[Path]]:
    """Module -> the package modules it imports, at module level or inside functions alike: a lazy import
    is a cycle all the same, only one that fails later, and an import for the type checker alone is one
    that a reader follows all the same."""
    graph: dict[Path, set[Path]] = {}
    for path in modules():
        targets = {_module_file(name) for name in imports(path, type_only=True)}
        graph[path] = {t for t in targets if t is not None and t != path}
    return graph


def _cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    found: list[list[Path]] = []

    def visit(node: Path) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back():
    """No cycles, lazy and type-only imports and package __init__ files included: a package that
    re-exports its modules while they import it back is one too."""
    cycles = [[str(p.relative_to(PACKAGE)) for p in cycle] for cycle in _cycles(_import_graph())]
    assert not cycles, cycles


def test_the_cycle_check_sees_a_cycle():
    a, b, c = (PACKAGE / f"{name}.py" for name in "abc")
    assert _cycles({a: {b}, b: {c}, c: {a}}) == [[a, b, c]] and _cycles({a: {b}, b: {c}}) == []


# The modules that name what the tables carry, importing nothing heavy: every other module imports the
# name instead of spelling it again.
NAME_MODULES = ("coordinator/rule_names.py", "coordinator/events.py", "table_names.py", "share_findings_rows.py")
# The same words where they name no rule, event or table: (module, word) -> what it names there.
NOT_NAMES = {
    ("api/__init__.py", "whatif"): "the function, in __all__",
    ("cli/docs.py", "whatif"): "the command, in the examples' argv",
    ("cli/warm_commands.py", "runs"): "the warm server's count of runs",
    ("warm/server.py", "runs"): "the warm server's count of runs",
    ("views/fleet_report.py", "snapshots"): "a cluster's count of snapshots, a JSON key and a column",
}


def _names_defined(text: str) -> dict[str, str]:
    """A module's upper-case string constants: value -> constant."""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    found[node.value.value] = target.id
    return found


def _spelled_again(names: dict[str, str], text: str) -> list[tuple[int, str]]:
    """Where a module spells one of `names` as a string of its own."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


@pytest.mark.parametrize("module", NAME_MODULES)
def test_a_rule_event_or_table_name_is_spelled_once(module):
    names = _names_defined((PACKAGE / module).read_text())
    assert names, f"{module} defines no names"
    again = [
        f"{path.relative_to(PACKAGE)}:{line} spells {value!r}: import {names[value]} from {module}"
        for path in modules()
        if path != PACKAGE / module
        for line, value in _spelled_again(names, path.read_text())
        if (str(path.relative_to(PACKAGE)), value) not in NOT_NAMES
    ]
    assert not again, again


def test_the_name_check_sees_a_second_spelling():
    names = _names_defined('EMPTY_GROUP = "EMPTY_GROUP"\nlimit = "x"\n')
    assert names == {"EMPTY_GROUP": "EMPTY_GROUP"}
    assert _spelled_again(names, 'if rule == "EMPTY_GROUP":\n    pass\n') == [(1, "EMPTY_GROUP")]
    assert _spelled_again(names, "if rule == EMPTY_GROUP:\n    pass\n") == []


def _global_statements(text: str) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Global)]


def test_no_module_keeps_state_that_a_function_sets():
    """No `global` statement: what a run needs is handed to it as a value (the warm server hands its
    session to each run it starts), not left in a module for whoever imports it next."""
    found = [f"{p.relative_to(PACKAGE)}:{line}" for p in modules() for line in _global_statements(p.read_text())]
    assert not found, found


def test_the_global_check_sees_a_global_statement():
    assert _global_statements("_kept = None\ndef keep(v):\n    global _kept\n    _kept = v\n") == [3]
    assert _global_statements("def count():\n    n = 0\n    def up():\n        nonlocal n\n") == []


def test_no_subpackage_imports_another_ones_private_names():
    wrong = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("offset_audit."):
                theirs = room_of_module(node.module)
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private and theirs != room(path):
                    wrong.append(f"{path.relative_to(PACKAGE)} imports {private} from {node.module}")
    assert not wrong, wrong


def _listed(doc: str, name: str) -> bool:
    """Whether a docstring names a module in its list (`    name   what it holds`, several names on one
    line separated by commas) or, for the top-level package, in its prose."""
    return bool(re.search(rf"(?m)^\s+(?:[\w/]+,\s+)*{re.escape(name)}/?(?:\s|,|$)", doc))


@pytest.mark.parametrize(
    "package", sorted(p.parent for p in PACKAGE.rglob("__init__.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_package_docstring_lists_its_modules(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    names = [p.stem for p in package.glob("*.py") if p.stem != "__init__"]
    names += [p.name for p in package.iterdir() if (p / "__init__.py").exists()]
    if package == PACKAGE:  # the vocabulary modules are named in a sentence
        missing = [n for n in names if not re.search(rf"\b{n}\b", doc)]
    else:
        missing = [n for n in names if not _listed(doc, n)]
    assert not missing, f"{package.relative_to(ROOT)}/__init__.py does not list {sorted(missing)}"


def test_the_coordinator_does_no_io():
    for path in (PACKAGE / "coordinator").glob("*.py"):
        bad = [n for n in imports(path) if n.startswith(IO_MODULES)]
        assert not bad, f"{path.name} imports {bad}: the broker's model takes DataFrames and returns DataFrames"


def test_views_never_import_pyspark():
    for path in (PACKAGE / "views").glob("*.py"):
        bad = [n for n in imports(path) if n.split(".")[0] == "pyspark"]
        assert not bad, f"views/{path.name} imports {bad}"


def test_importing_every_view_loads_no_pyspark():
    """Not even through what the views import: a read command answers without loading Spark's Python."""
    names = [f"offset_audit.views.{p.stem}" for p in sorted((PACKAGE / "views").glob("*.py")) if p.stem != "__init__"]
    script = "\n".join(
        [
            "import sys",
            *(f"import {name}" for name in names),
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))",
        ]
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded


def test_only_the_command_line_parses_flags():
    for path in modules():
        if room(path) == "cli":
            continue
        bad = [n for n in imports(path) if n.split(".")[0] in FLAG_PARSERS]
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}: flags are parsed in cli/"
        assert "sys.argv" not in path.read_text(), f"{path.relative_to(PACKAGE)} reads sys.argv"


def _map(text: str) -> list[str]:
    """The subpackages a map lists (its `name/  what it holds` lines), in its order."""
    return [line.split()[0].rstrip("/") for line in text.splitlines() if re.match(r"\s+\w+/\s", line)]


def test_the_development_guide_opens_with_the_map_in_the_order_the_data_flows():
    """docs/development.md's first block lists every subpackage, in the package docstring's order."""
    package_map = _map(ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or "")
    assert sorted(package_map) == subpackages(), package_map
    guide = (DOCS / "development.md").read_text()
    assert guide.startswith("# Development\n\n```"), "the guide opens with the map"
    assert _map(guide.split("```", 2)[1]) == package_map


# Names the package defines for its tests and docs tooling only, each with why it stays.
USED_BY_TESTS_ONLY = {
    "LZ4_AVAILABLE": "whether the native walker has lz4: the tests expect the Python path for lz4 batches without it",
    "RECORD_CLASSES": "the vocabulary of record_class: the generator and fuzz tests check every row against it",
    "blocks_in": "which outputs a document shows: the docs test checks each is produced and checked",
    "repeat_snapshot": "a year of runs' snapshots without the runs: the retention tests and bench/snapshots.py",
    "marker_batch": "the segment writer's transaction marker: the tests build transactional segments with it",
}


def _defined_and_used() -> tuple[dict[str, list[str]], dict[str, int]]:
    """Module-level names of the package (functions, classes, assigned names) and how often each name is
    read anywhere in the package and jobs/ (as a name, an attribute, or a string such as a getattr key).
    An assignment's own target counts as one reading, which is taken off again."""
    defined: dict[str, list[str]] = {}
    read: dict[str, int] = {}
    for path in [*modules(), *sorted((ROOT / "jobs").glob("*.py"))]:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                commands = [d for d in node.decorator_list if isinstance(d, ast.Call)]
                if any(getattr(d.func, "attr", "") in ("command", "group") for d in commands):
                    continue  # a click command: reached through its group
                names = [(node.name, 0)]
            elif isinstance(node, ast.Assign):
                names = [(t.id, 1) for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [(node.target.id, 1)]
            else:
                names = []
            for name, own in names:
                if not name.startswith("__"):
                    defined.setdefault(name, []).append(str(path.relative_to(ROOT)))
                    read[name] = read.get(name, 0) - own
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                name = node.value
            else:
                continue
            read[name] = read.get(name, 0) + 1
    return defined, read


def test_every_name_the_package_defines_is_used_by_the_package():
    """Dead code goes: a helper nothing calls is a second way of doing something that drifts from the
    first. Names shared by spelling across modules count together (a conservative check)."""
    defined, read = _defined_and_used()
    unused = {name: where for name, where in defined.items() if read.get(name, 0) <= 0}
    assert set(unused) - set(USED_BY_TESTS_ONLY) == set(), unused
    assert set(USED_BY_TESTS_ONLY) <= set(unused), "used by the package now: take it off USED_BY_TESTS_ONLY"


CITATION = re.compile(r"\b[Rr]eference (\d+(?:\.\d+)?)\b")
HEADING = re.compile(r"(?m)^#{2,3} (\d+(?:\.\d+)?)[. ]")


def _unresolved(texts: dict[str, str], reference: str) -> list[str]:
    """`file:line: reference N.N` for each citation with no heading numbered N.N in the reference, and for
    each mention of the seeds (the KIP texts outside the repository), which nobody who clones can follow."""
    headings = set(HEADING.findall(reference))
    wrong = []
    for name, text in texts.items():
        for number, line in enumerate(text.splitlines(), 1):
            wrong += [f"{name}:{number}: reference {n}" for n in CITATION.findall(line) if n not in headings]
            if re.search(r"\bseeds?[ /]0\d\d", line):
                wrong.append(f"{name}:{number}: cites a seed; cite the reference section that says it")
    return wrong


def test_every_citation_resolves_to_a_section_of_the_reference():
    """Comments cite "reference 4.3"; docs/reference.md must hold a section numbered 4.3."""
    paths = [*modules(), *(ROOT / "schemas").rglob("*.json"), *ROOT.joinpath("jobs").rglob("*.py")]
    paths += [p for p in DOCS.glob("*.md") if p.name != "reference.md"] + [ROOT / "README.md"]
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in paths}
    assert not _unresolved(texts, (DOCS / "reference.md").read_text())


def test_the_citation_check_sees_a_dangling_citation():
    reference = "# Reference\n\n## 2. Records\n\n### 2.9 Share state\n"
    assert _unresolved({"a.py": "# see reference 2.9 and reference 2"}, reference) == []
    assert _unresolved({"a.py": "x\n# reference 2.10 (seed 004)"}, reference) == [
        "a.py:2: reference 2.10",
        "a.py:2: cites a seed; cite the reference section that says it",
    ]


def test_no_two_modules_share_a_file_name_unless_each_names_the_other():
    """A file name says what a module holds; two alike are allowed only where they mirror each other by
    design, and each module's docstring names the other's path, so a reader who opens one finds both."""
    by_name: dict[str, list[Path]] = {}
    for path in modules():
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(path)
    wrong = []
    for paths in (p for p in by_name.values() if len(p) > 1):
        for path in paths:
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            others = [
                str(o.relative_to(PACKAGE)) for o in paths if o != path and str(o.relative_to(PACKAGE)) not in doc
            ]
            wrong += [f"{path.relative_to(PACKAGE)} shares its name with {other}" for other in others]
    assert not wrong, wrong


# Writing a table or a file: the libraries that do it, and the calls.
WRITING_MODULES = ("deltalake", "pyarrow.parquet")
WRITING_CALLS = re.compile(
    r"\b(open_output_stream|write_deltalake|write_table|replace_file|write_text|write_bytes)\(|\.write\."
)
# Who may: outputs/ owns what the job writes and reads back; the views read an audit folder through one
# reader (views/audit_folder.py, over delta_files.py, which the generator shares); inputs/ reads the dumps
# (and writes log segments for the generator); the generator writes dumps; cli/docs rewrites the
# repository's own docs; storage.py is the primitive they all write through.
MAY_WRITE = ("outputs", "inputs", "generator")
EXEMPT = ("views/audit_folder.py", "delta_files.py", "cli/docs.py", "storage.py")


def _io_outside_outputs(path: Path, text: str, imported: tuple[str, ...]) -> list[str]:
    name = str(path.relative_to(PACKAGE))
    if room(path) in MAY_WRITE or name in EXEMPT:
        return []
    found = [f"{name} imports {m}" for m in imported if m.startswith(WRITING_MODULES)]
    found += [
        f"{name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if WRITING_CALLS.search(line)
    ]
    return found


def test_tables_and_files_are_written_only_in_outputs():
    """One owner for what the job writes: a new table or file means a function in outputs/, called with
    the run's writer, so the writer choice, commit retries and whole-file writes live in one place."""
    wrong = [line for p in modules() for line in _io_outside_outputs(p, p.read_text(), imports(p))]
    assert not wrong, wrong


def test_the_io_check_sees_a_write():
    runs, outputs = PACKAGE / "runs" / "x.py", PACKAGE / "outputs" / "x.py"
    assert _io_outside_outputs(runs, "with s.open_output_stream(p) as f:\n", ()) == [
        "runs/x.py:1: with s.open_output_stream(p) as f:"
    ]
    assert _io_outside_outputs(runs, "", ("deltalake",)) == ["runs/x.py imports deltalake"]
    assert _io_outside_outputs(outputs, "pq.write_table(t, p)\n", ("pyarrow.parquet",)) == []


def test_the_top_level_modules_are_type_checked_strictly():
    """pyproject.toml's strict mypy override lists every module beside the subpackages."""
    import tomllib

    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    strict = next(o for o in overrides if o.get("disallow_untyped_defs"))
    top = {f"offset_audit.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {"offset_audit"}
    assert set(strict["module"]) == top
    assert strict["warn_return_any"] and strict["disallow_any_generics"] and strict["check_untyped_defs"]
