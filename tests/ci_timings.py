"""Where the suite's time goes: a pytest plugin (loaded by conftest.py) that measures every test's
wall-clock seconds and the CPU seconds the whole machine spent while it ran, and writes them to
$OFFSET_AUDIT_TIMINGS (a TSV that .ci/run keeps) at the end of the run.

The machine's CPU, not this process's: a live test spends most of its CPU in the brokers, the Spark
workers and the tool JVMs it starts, and a test that waits on a broker's sweep shows a wall time far
above its CPU. Under pytest-xdist the figure also holds what the other workers did meanwhile, which is
the point of running them together: the sum of the wall column over the sum of the CPU column says how
much waiting is left to overlap.

`python tests/ci_timings.py FILE [N]` prints the N slowest tests of such a file (.ci/run does, last).
"""

from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

import pytest

TIMINGS_VARIABLE = "OFFSET_AUDIT_TIMINGS"
COLUMNS = ["nodeid", "outcome", "worker", "started", "wall_s", "cpu_s", "setup_s", "call_s", "teardown_s"]
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PHASES = ("setup", "call", "teardown")


def machine_cpu_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (user, nice, system, irq, softirq,
    steal), from /proc/stat; 0 where there is none (then the column reads 0)."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / _TICKS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Each phase's report carries the machine's CPU seconds during that phase (user_properties travel
    from xdist's workers to the controller with the report)."""
    outcome = yield
    report = outcome.get_result()
    started = item.stash.get(_cpu_at_start, {}).get(call.when)
    if started is not None:
        report.user_properties.append(("machine_cpu_s", round(machine_cpu_seconds() - started, 3)))


_cpu_at_start = pytest.StashKey[dict]()


def _mark_start(item: pytest.Item, phase: str) -> None:
    item.stash.setdefault(_cpu_at_start, {})[phase] = machine_cpu_seconds()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _mark_start(item, "setup")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    _mark_start(item, "call")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _mark_start(item, "teardown")


class _Collector:
    """Gathers the phases of every test as the reports arrive (in the controller under xdist)."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.rows: dict[str, dict] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = self.rows.setdefault(
            report.nodeid,
            {"nodeid": report.nodeid, "outcome": "passed", "cpu_s": 0.0, "started": getattr(report, "start", 0.0)},
        )
        # under xdist the controller's report names the worker that ran the test (gw0, gw1, ...)
        row["worker"] = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "main")
        row[f"{report.when}_s"] = round(report.duration, 3)
        row["cpu_s"] += dict(report.user_properties).get("machine_cpu_s", 0.0)
        if report.failed or (report.skipped and row["outcome"] == "passed"):
            row["outcome"] = report.outcome if report.when == "call" or report.skipped else "error"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        rows = []
        for row in self.rows.values():
            row["wall_s"] = round(sum(row.get(f"{p}_s", 0.0) for p in _PHASES), 3)
            row["cpu_s"] = round(row["cpu_s"], 3)
            row["started"] = time.strftime("%H:%M:%S", time.localtime(row["started"]))
            rows.append(row)
        rows.sort(key=lambda r: -r["wall_s"])
        self.target.parent.mkdir(parents=True, exist_ok=True)
        with open(self.target, "w", newline="") as handle:
            writer = csv.DictWriter(handle, COLUMNS, delimiter="\t", extrasaction="ignore", restval="")
            writer.writeheader()
            writer.writerows(rows)


def pytest_configure(config: pytest.Config) -> None:
    target = os.environ.get(TIMINGS_VARIABLE)
    # xdist's workers send their reports to the controller, which writes the one file.
    if target and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Collector(Path(target)), "ci_timings_collector")


def slowest(path: Path, count: int = 30) -> str:
    """The `count` slowest tests of a timings file, as a table to read at the end of a CI log."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows:
        return "timings: no test ran"
    rows.sort(key=lambda r: -float(r["wall_s"]))
    wall = sum(float(r["wall_s"]) for r in rows)
    lines = [
        f"the {min(count, len(rows))} slowest of {len(rows)} tests (wall: seconds the test took, its fixtures' "
        f"setup included; cpu: seconds the machine's cores were busy meanwhile); {wall:.0f} s of tests in all",
        f"{'wall_s':>8} {'cpu_s':>8}  {'worker':<6} test",
    ]
    for row in rows[:count]:
        lines.append(f"{float(row['wall_s']):8.1f} {float(row['cpu_s']):8.1f}  {row['worker']:<6} {row['nodeid']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(slowest(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30))
