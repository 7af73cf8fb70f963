"""tests/xdist_units.py under pytest-xdist: the tests of one unit run on one worker, and a long test that
starts its unit never holds a long unit behind it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Each test writes the worker it ran on and when it started and ended.
RECORDING = """
import os
import time
from pathlib import Path

import pytest


def record(name, seconds=0.0):
    started = time.time()
    time.sleep(seconds)
    line = f"{name} {os.environ['PYTEST_XDIST_WORKER']} {started} {time.time()}\\n"
    with open(Path(__file__).parent / "ran.txt", "a") as out:
        out.write(line)
"""

SUITE = {
    # one long test, a unit of its own, that UNIT_SECONDS says takes long (the jar session's kind)
    "test_long": RECORDING + "\n\ndef test_long():\n    record('long', 4)\n",
    # a module-scoped fixture, parametrized: one unit for each parameter
    "test_story": RECORDING
    + """

@pytest.fixture(scope="module", params=["1", "2"])
def story(request):
    return request.param


@pytest.mark.parametrize("n", range(3))
def test_story(story, n):
    record(f"story{story}-{n}", 0.2)
""",
    # the `demo` unit: every test that uses the shared session fixture
    "test_demo": RECORDING
    + """

@pytest.fixture(scope="session")
def demo():
    return "demo"


@pytest.mark.parametrize("n", range(3))
def test_demo(demo, n):
    record(f"demo-{n}", 0.2)
""",
    "test_free": RECORDING
    + """

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    record(f"free-{n}")
""",
}
CONFTEST = """
import xdist_units

pytest_plugins = ["xdist_units"]
xdist_units.UNIT_SECONDS.clear()
xdist_units.UNIT_SECONDS.update(
    {"test_long.py::test_long": 100, "test_story.py:story=1": 50, "test_story.py:story=2": 40, "demo": 30}
)
"""


@pytest.fixture
def ran(pytester, monkeypatch) -> dict[str, tuple[str, float, float]]:
    pytester.makepyfile(**SUITE)
    pytester.makeconftest(CONFTEST)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    for name in [n for n in os.environ if n.startswith(("PYTEST_XDIST_", "OFFSET_AUDIT_XDIST"))]:
        monkeypatch.delenv(name)  # this run's own, under xdist
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=16)
    lines = (pytester.path / "ran.txt").read_text().split()
    return {name: (worker, float(a), float(b)) for name, worker, a, b in zip(*[iter(lines)] * 4, strict=True)}


def test_the_tests_of_a_unit_run_on_one_worker(ran):
    for unit in ("story1", "story2", "demo"):
        workers = {worker for name, (worker, *_) in ran.items() if name.startswith(unit)}
        assert len(workers) == 1, (unit, ran)


def test_no_unit_waits_behind_a_long_test_that_starts_its_unit(ran):
    """The long test starts first; the worker beside it takes the story units one after the other, and
    the long test's worker gets only a one-test unit until the long test is done."""
    long_worker, _, long_ended = ran["long"]
    started_behind = [name for name, (worker, started, _) in ran.items() if worker == long_worker and name != "long"]
    first_after = min(started_behind, key=lambda name: ran[name][1])
    assert first_after.startswith("free"), ran
    for unit in ("story1", "story2"):
        worker, started, _ = min((ran[n] for n in ran if n.startswith(unit)), key=lambda r: r[1])
        assert worker != long_worker or started >= long_ended, (unit, ran)
