"""No module the API reaches uses what a Spark Connect session lacks (`sparkContext`, RDDs, py4j's `_jvm`
and the `_j*` handles of the JVM's objects) without a Connect route beside it: every use sits in a function
marked `@connect_route(other)` (offset_audit.session_kind), whose `other` is a function of the same module
that uses none of them, or, in the modules that start sessions, `@classic_start`: what starts or sizes a
classic session, which a run on a Spark Connect server never calls."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from repo_paths import ROOT

PACKAGE = ROOT / "src" / "offset_audit"
# Attributes and names only a classic session has.
CLASSIC_ONLY = {"sparkContext", "_jvm", "_jsparkSession", "_jdf", "_jsc", "_jconf", "_gateway", "rdd", "parallelize"}
CLASSIC_NAMES = {"SparkContext"}
# The modules that start sessions, where `@classic_start` may mark a function.
SESSION_STARTERS = {"offset_audit.runtime.session", "offset_audit.runtime.gateway"}


def module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    folder = PACKAGE.joinpath(*parts)
    if (folder / "__init__.py").exists():
        return folder / "__init__.py"
    file = PACKAGE.joinpath(*parts[:-1], parts[-1] + ".py") if parts else PACKAGE / "__init__.py"
    return file if file.exists() else None


def imported(tree: ast.AST, name: str) -> set[str]:
    """The offset_audit modules a module imports anywhere in it (functions' own imports too)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):  # the package imports absolutely: no level to resolve
            found.add(node.module or "")
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {m for m in found if m.startswith("offset_audit") and module_file(m) is not None}


@functools.cache
def reached_from(start: str) -> dict[str, ast.Module]:
    trees: dict[str, ast.Module] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in trees:
            continue
        tree = ast.parse(module_file(name).read_text())
        trees[name] = tree
        todo.extend(imported(tree, name) - set(trees))
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) not in trees)
    return trees


def classic_uses(node: ast.AST) -> list[ast.AST]:
    return [
        n
        for n in ast.walk(node)
        if (isinstance(n, ast.Attribute) and n.attr in CLASSIC_ONLY)
        or (isinstance(n, ast.Name) and n.id in CLASSIC_NAMES)
    ]


def _route_of(function: ast.AST, module: str) -> str | None:
    for decorator in getattr(function, "decorator_list", []):
        if isinstance(decorator, ast.Name) and decorator.id == "classic_start" and module in SESSION_STARTERS:
            return ""
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "connect_route":
            argument = decorator.args[0] if decorator.args else None
            return argument.id if isinstance(argument, ast.Name) else ast.unparse(argument)
    return None


def unmarked_uses(tree: ast.Module, module: str = "") -> list[str]:
    """Each use of CLASSIC_ONLY outside a marked function, and each marked function whose route is not a
    function of the module free of them, as 'line: what'."""
    problems: list[str] = []
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}

    def visit(node: ast.AST, marked: bool) -> None:
        route = _route_of(node, module)
        if route == "":
            marked = True
        elif route is not None:
            remote = functions.get(route)
            if remote is None:
                problems.append(f"{node.lineno}: {node.name}'s Connect route {route} is no function of its module")
            elif classic_uses(remote):
                problems.append(f"{remote.lineno}: {route}, a Connect route, uses a classic session's handles")
            marked = True
        for child in ast.iter_child_nodes(node):
            if not marked and child in direct:
                label = child.attr if isinstance(child, ast.Attribute) else child.id
                problems.append(f"{child.lineno}: {label}")
            visit(child, marked)

    direct = set(classic_uses(tree))
    visit(tree, False)
    return problems


def test_the_checker_finds_an_unmarked_use_and_takes_a_marked_one():
    unmarked = ast.parse("def count(spark):\n    return spark.sparkContext.defaultParallelism\n")
    assert unmarked_uses(unmarked) == ["2: sparkContext"]
    marked = ast.parse(
        "def remote(spark):\n    return 1\n\n"
        "@connect_route(remote)\ndef count(spark):\n    return spark.sparkContext.defaultParallelism\n"
    )
    assert unmarked_uses(marked) == []
    wrong = ast.parse("@connect_route(remote)\ndef count(spark):\n    return spark._jvm\n")
    assert unmarked_uses(wrong) == ["2: count's Connect route remote is no function of its module"]
    started = ast.parse("@classic_start\ndef start(conf):\n    return SparkContext._gateway\n")
    assert unmarked_uses(started, "offset_audit.runtime.session") == []
    assert sorted(unmarked_uses(started, "offset_audit.outputs.delta")) == ["3: SparkContext", "3: _gateway"]


def test_the_api_reaches_the_whole_run():
    reached = reached_from("offset_audit.api")
    for module in ("offset_audit.runtime.session", "offset_audit.outputs.delta", "offset_audit.inputs.kafka_topic",
                   "offset_audit.inputs.log_files", "offset_audit.runtime.progress"):  # fmt: skip
        assert module in reached


@pytest.mark.parametrize("module", sorted(reached_from("offset_audit.api")))
def test_no_module_the_api_reaches_uses_a_classic_sessions_handles_without_a_connect_route(module):
    assert unmarked_uses(reached_from("offset_audit.api")[module], module) == []
