"""make check's test run (`pytest --quick`): the tests that need no JVM, service or browser, in about a
minute. A pytest plugin loaded by conftest.py.

A test is heavy when it uses a fixture that starts one (HEAVY_FIXTURES, itself or through another
fixture: `audited` and `demo` use `spark`), when it is marked slow or delta_spark, or when it carries the
`heavy` mark itself: a test that starts a JVM another way (a compiler, the command in a process of its
own). `--quick` deselects the heavy ones, and makes `java` and `javac` a script that refuses, on PATH and
as JAVA_HOME, so that an unmarked test that starts a JVM fails and says what to do, rather than passing
slowly. `make test` runs everything.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

HEAVY_FIXTURES = frozenset({"spark", "chromium", "s3"})
HEAVY_MARKS = ("heavy", "slow", "delta_spark")
REFUSED = "make check runs no JVM, and this test started one"
NO_JVM = f"""#!/bin/sh
echo "{REFUSED} ($0): mark it heavy (tests/quick_run.py)" >&2
exit 2
"""
_saved = pytest.StashKey[tuple[Path, dict[str, str | None]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="make check's run: only the tests that need no JVM, service or browser; a JVM started anyway fails",
    )


def is_heavy(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(mark) for mark in HEAVY_MARKS) or bool(HEAVY_FIXTURES & set(item.fixturenames))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "heavy: starts a JVM, a service or a browser itself; make check leaves it out")
    if not config.getoption("quick"):
        return
    home = Path(tempfile.mkdtemp(prefix="no-jvm-"))
    (home / "bin").mkdir()
    for tool in ("java", "javac"):
        (home / "bin" / tool).write_text(NO_JVM)
        (home / "bin" / tool).chmod(0o755)
    config.stash[_saved] = (home, {name: os.environ.get(name) for name in ("JAVA_HOME", "PATH")})
    os.environ["JAVA_HOME"] = str(home)
    os.environ["PATH"] = f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _saved not in config.stash:
        return
    home, before = config.stash[_saved]
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(home, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("quick"):
        return
    heavy = [item for item in items if is_heavy(item)]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [item for item in items if not is_heavy(item)]
