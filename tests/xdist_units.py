"""How pytest-xdist shares the suite among its workers (`make test` runs `-n 4 --dist loadgroup`): tests that
share an expensive fixture go to one worker as one unit, and the units that take longest start first, so
that the live stories' waiting (on retention, sweeps, joins) runs beside the CPU-bound tests.

- A test that uses the `demo` or `audited` fixture (session-scoped: each worker would build its own)
  joins the unit `demo`.
- Otherwise a test that uses a module-scoped fixture joins its module's unit; where that fixture is
  parametrized (a live broker of one Kafka version), the unit of that module and parameter, so that each
  version's story runs beside the others.
- Any other test is a unit of its own, which the next free worker takes.

The units are this plugin's own scheduler's (`UnitScheduling`), not xdist_group marks: pytest-xdist 3.8's
loadgroup finds a test's group in a suffix it writes into the test's id, which pytest 9.2's ids no longer
take (pytest-dev/pytest-xdist#1386), so every test went its own way. Each worker writes the units it
collected into a folder the controller made (UNITS_VARIABLE); the scheduler reads them once every worker
has collected. A worker takes its next unit when one test of its unit is left (xdist's own scheduler:
two), and UNIT_SECONDS orders the units, longest first (the measured seconds of each, from a run's
timings file: tests/ci_timings.py); a unit it does not name comes after those it names.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

SHARED_SESSION_FIXTURES = ("demo", "audited")
DEMO_UNIT = "demo"
UNITS_VARIABLE = "OFFSET_AUDIT_XDIST_UNITS"
# Seconds each unit took alone in the suite (wall clock, fixtures included), by unit or module; the
# live modules' figures are per Kafka version. Measured on the 2-core machine; refresh them from
# .ci/test-timings.tsv when a unit grows (docs/development.md).
UNIT_SECONDS: dict[str, float] = {
    "tests/runs/test_cluster.py": 680,
    "tests/test_spark_jars.py::test_every_test_of_a_spark_native_route_passes_in_one_session_with_the_jars": 425,
    "tests/coordinator/test_live_broker.py": 205,
    "tests/test_connect.py": 240,
    "tests/coordinator/test_live_streams_group.py": 125,
    "tests/outputs/test_object_store.py": 145,
    "tests/coordinator/test_history.py": 120,
    "tests/warm/test_warm_session.py": 70,
    # The sdist and wheel built, the wheel installed in a fresh venv, and the demo's commands run by it.
    "tests/test_wheel.py": 45,
    DEMO_UNIT: 95,
    "tests/coordinator/share/test_live_share_groups.py": 45,
    "tests/views/test_hostile_names.py": 34,
    "tests/coordinator/test_live_delete_plan.py": 25,
    "tests/runs/test_audit.py": 27,
    "tests/views/test_operator_commands.py": 23,
    "tests/inputs/test_copies.py": 23,
    "tests/runs/test_runs_table.py": 19,
    "tests/coordinator/test_versions.py": 18,
    "tests/coordinator/test_live_cleaner.py": 15,
    # Measured alone on the reference machine: 124 s (a sweep waited for), seed 0's 20 runs 100 s, a kill 16 s.
    "tests/runs/test_live_incremental.py": 125,
    "tests/runs/test_incremental.py::test_incremental_runs_equal_a_full_read": 100,
    "tests/runs/test_incremental.py::test_a_run_killed_at_any_stage_leaves_a_state_the_next_run_answers_rightly": 16,
    # Six runs, then a history of what they kept and of the log before cleaning per generation: 83 s alone.
    "tests/runs/test_incremental.py::test_history_of_an_audit_is_the_history_of_its_log_before_the_cleaner_ran": 83,
}


def unit_of(item: pytest.Item) -> str | None:
    """The unit a test belongs to, or None for a test any worker may run on its own."""
    fixtures = item._fixtureinfo.name2fixturedefs
    if any(name in fixtures for name in SHARED_SESSION_FIXTURES):
        return DEMO_UNIT
    scoped = sorted(
        name for name, defs in fixtures.items() if defs and defs[-1].scope in ("package", "module", "class")
    )
    if not scoped:
        return None
    params = item.callspec.params if hasattr(item, "callspec") else {}
    chosen = ",".join(f"{name}={params[name]}" for name in scoped if name in params)
    module = item.nodeid.split("::", 1)[0]
    return f"{module}:{chosen}" if chosen else module


# A test expected to take this long, with its unit's fixtures still to set up, gets the shortest unit
# behind it (see UnitScheduling._reschedule).
LONG_SECONDS = 60.0


def seconds(nodeid: str, unit: str | None) -> float:
    """What UNIT_SECONDS expects of the test's unit (by unit, test function or module), 0 when unknown."""
    module = nodeid.split("::", 1)[0]
    for key in (unit, nodeid.split("[", 1)[0], module):
        if key in UNIT_SECONDS:
            return UNIT_SECONDS[key]
    return 0.0


def _worker() -> str | None:
    return os.environ.get("PYTEST_XDIST_WORKER")


def pytest_configure(config: pytest.Config) -> None:
    """The controller of a distributed run makes the folder its workers (started after this) write to."""
    if _worker() is None and config.getoption("dist", "no") != "no":
        os.environ[UNITS_VARIABLE] = tempfile.mkdtemp(prefix="offset-audit-xdist-units-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _worker() is None and config.getoption("dist", "no") != "no" and UNITS_VARIABLE in os.environ:
        shutil.rmtree(os.environ.pop(UNITS_VARIABLE), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker: the units longest first (the tests of a unit keep their order, which every worker
    collects alike), and each test's unit written for the controller's scheduler."""
    folder = os.environ.get(UNITS_VARIABLE)
    if _worker() is None or folder is None:
        return
    units = {item.nodeid: unit_of(item) for item in items}
    order: dict[str, tuple[float, int]] = {}
    for index, item in enumerate(items):
        order.setdefault(units[item.nodeid] or item.nodeid, (-seconds(item.nodeid, units[item.nodeid]), index))
    items.sort(key=lambda item: order[units[item.nodeid] or item.nodeid])
    written = Path(folder) / f".{_worker()}.json"
    written.write_text(json.dumps({nodeid: unit for nodeid, unit in units.items() if unit is not None}))
    written.replace(Path(folder) / f"{_worker()}.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """--dist loadgroup: the units above, and each worker's next unit given when one test is left."""
    if config.getoption("dist") != "loadgroup" or UNITS_VARIABLE not in os.environ:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.units is None:  # every worker has collected, and written its file, by the first call
                written = sorted(Path(os.environ[UNITS_VARIABLE]).glob("gw*.json"))
                assert written, f"no worker wrote its units into {os.environ[UNITS_VARIABLE]}"
                self.units = json.loads(written[0].read_text())
            return self.units.get(nodeid, nodeid)

        def _reschedule(self, node) -> None:
            """A worker runs a test only once it knows the next one (or that none follows), so it gets
            its next unit when one test is left. Where that test is long and its unit has not started
            (the jar session, a live fixture still to set up), the unit given waits all that time behind
            it: then it gets the shortest unit, the queue's last, and the long units go to the workers
            that free up first."""
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            assigned = self.assigned_work.get(node, {})
            if self._pending_of(assigned) > 1:
                return
            waiting = [
                (scope, nodeid)
                for scope, tests in assigned.items()
                if not all(tests.values())
                for nodeid, done in tests.items()
                if not done
            ]
            if waiting and not any(assigned[waiting[0][0]].values()):
                scope, nodeid = waiting[0]
                if seconds(nodeid, None if scope == nodeid else scope) >= LONG_SECONDS:
                    self._assign_shortest_unit(node)
                    return
            self._assign_work_unit(node)

        def _assign_shortest_unit(self, node) -> None:
            scope, tests = self.workqueue.popitem(last=True)
            self.assigned_work.setdefault(node, {})[scope] = tests
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(nodeid) for nodeid, done in tests.items() if not done])

    return UnitScheduling(config, log)
