"""No test passes by not running in CI: a pytest plugin (loaded by conftest.py) that, when the CI variable is
set, as `.ci/run` sets it,
- turns every skip and every xfail this file does not list into a failure;
- runs no test, and says why, when slow tests it collected were deselected (`-m`, `-k`,
  `--deselect`, from the command line or PYTEST_ADDOPTS; `--quick`, make check's run, leaves them to
  make test), when an xfail marker it does not list is on a
  test, when KAFKA_VERSIONS names another Kafka version matrix than the Makefile's, or when a plugin
  would rerun failed tests;
and prints every skip with its reason at the end of the run (and into $OFFSET_AUDIT_SKIP_SUMMARY, which
.ci/run prints last).

A pytest run that a test starts itself (the session with the Spark jars, tests/spark_jars.py) selects its
own tests: the selection checks leave it to the test that started it, which requires every one to pass.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

# The only skips CI accepts, each with why that test cannot run there. In CI (the CI variable is set) any
# other skip fails the run: a real part the suite starts (Java, a Spark cluster, the S3 server, Chromium,
# liblz4, `make package`) that cannot be had must not pass as a test that ran. Outside CI, a skip stays a
# skip, with its reason.
ALLOWED_SKIPS = {
    "tests/cli/test_cli.py::test_kafka_without_the_connector_says_which_package_to_add": (
        "it covers the connector's absence: it skips where the connector is on the classpath"
    ),
}
# The only xfails CI accepts (none today), each with why. An xfail is a test that does not say whether
# its behaviour holds: in CI any other fails the run, whether the test then fails (xfailed) or passes
# (xpassed).
ALLOWED_XFAILS: dict[str, str] = {}
# Set in the environment of a pytest run a test starts (tests/spark_jars.py): it selects its own tests.
NESTED_RUN_VARIABLE = "OFFSET_AUDIT_TEST_SESSION"
MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"
LISTS = "tests/ci_gate.py lists the skips and xfails CI accepts"


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def _selects_for_itself() -> bool:
    return bool(os.environ.get(NESTED_RUN_VARIABLE))


def base_nodeid(nodeid: str) -> str:
    """The test's id as the lists name it: without its parameters, and without the `@group` that
    pytest-xdist's loadgroup adds to the ids of grouped tests."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        nodeid = nodeid.rsplit("@", 1)[0]
    return nodeid.split("[", 1)[0]


def allowed_skip(nodeid: str) -> str | None:
    """Why CI lets this test skip, or None when it may not (parametrized tests share their function's)."""
    return ALLOWED_SKIPS.get(base_nodeid(nodeid))


def allowed_xfail(nodeid: str) -> str | None:
    return ALLOWED_XFAILS.get(base_nodeid(nodeid))


def makefile_kafka_versions(makefile: Path = MAKEFILE) -> list[str]:
    found = re.search(r"^KAFKA_VERSIONS \?= (.+)$", makefile.read_text(), re.M)
    return found.group(1).split() if found else []


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


# Before the first test -------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """A narrowed Kafka matrix (the live tests read KAFKA_VERSIONS) and reruns, which would pass a test
    that failed once, are refused before anything starts."""
    if not in_ci() or _selects_for_itself():
        return
    if config.pluginmanager.hasplugin("rerunfailures"):
        raise pytest.UsageError("CI runs every test once: a failure must not pass on a rerun (-p no:rerunfailures)")
    if "KAFKA_VERSIONS" not in os.environ:
        return
    asked, makefile = os.environ["KAFKA_VERSIONS"].split(), makefile_kafka_versions()
    if asked != makefile:
        raise pytest.UsageError(
            f"CI runs the live tests on the Makefile's Kafka versions ({' '.join(makefile)}), but KAFKA_VERSIONS "
            f"names {' '.join(asked) or 'none'}: unset it, or change KAFKA_VERSIONS in the Makefile"
        )


_deselected = pytest.StashKey[list]()


@pytest.hookimpl
def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        items[0].config.stash.setdefault(_deselected, []).extend(items)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After every deselection: in CI, a slow test left out, or an xfail marker not on the list, is a
    collection error that names them, and no test runs. (An error rather than pytest.UsageError, which
    pytest-xdist's workers would turn into an internal error.) Tests set aside for the Spark-jar session
    (marked delta_spark) are not left out: the launcher in tests/test_spark_jars.py runs them."""
    if not in_ci() or _selects_for_itself():
        return
    # make check (--quick) leaves out the heavy tests, the slow among them: make test runs them.
    quick = config.getoption("quick", False)
    dropped = [
        item.nodeid
        for item in config.stash.get(_deselected, [])
        if item.get_closest_marker("slow") and not item.get_closest_marker("delta_spark") and not quick
    ]
    marked = [item.nodeid for item in items if item.get_closest_marker("xfail") and not allowed_xfail(item.nodeid)]
    refusals = []
    if dropped:
        refusals.append(
            f"CI runs every slow test, but {len(dropped)} collected {'was' if len(dropped) == 1 else 'were'} "
            "deselected (-m, -k or --deselect, on the "
            f"command line or in PYTEST_ADDOPTS), {', '.join(dropped[:3])} among them"
        )
    if marked:
        refusals.append(
            f"CI accepts only the xfails tests/ci_gate.py lists, and {_tests(len(marked))} another: "
            f"{', '.join(marked[:3])}"
        )
    if refusals:
        refused = "\n".join(refusals)
        config.hook.pytest_collectreport(report=pytest.CollectReport("", "failed", refused, []))
        config.hook.pytest_deselected(items=list(items))
        items[:] = []


# Each test -------------------------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if not in_ci():
        return
    if hasattr(report, "wasxfail"):  # xfailed (reported as skipped) or xpassed
        if allowed_xfail(item.nodeid) is None:
            reason = report.wasxfail
            del report.wasxfail
            report.outcome = "failed"
            report.longrepr = f"xfail in CI, where every test must say whether its behaviour holds: {reason} ({LISTS})"
    elif report.skipped and allowed_skip(item.nodeid) is None:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every real part must run: {_skip_reason(report)} ({LISTS})"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A whole module skipped while it is collected is refused in CI the same way."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and allowed_skip(report.nodeid) is None:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every real part must run: {_skip_reason(report)}"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Every skip with its reason, and whether CI accepts it; also written to $OFFSET_AUDIT_SKIP_SUMMARY
    (.ci/run prints it last)."""
    skipped = terminalreporter.stats.get("skipped", [])
    # A skip in a test body is refused as a failure; one in a fixture (setup) as an error.
    reports = [*terminalreporter.stats.get("failed", []), *terminalreporter.stats.get("error", [])]
    failed_skips = [r for r in reports if "skipped in CI" in str(r.longrepr)]
    failed_xfails = [r for r in reports if "xfail in CI" in str(r.longrepr)]
    lines = [
        f"skip summary: {len(skipped)} skipped, {len(failed_skips)} skips refused in CI"
        + (f", {len(failed_xfails)} xfails refused in CI" if failed_xfails else "")
    ]
    for report in skipped:
        allowed = allowed_skip(report.nodeid) or allowed_xfail(report.nodeid)
        verdict = f"allowed in CI: {allowed}" if allowed else "NOT allowed in CI"
        lines.append(f"  SKIPPED {report.nodeid}: {_skip_reason(report)} [{verdict}]")
    for report in [*failed_skips, *failed_xfails]:
        lines.append(f"  FAILED {report.nodeid}: {report.longrepr}")
    terminalreporter.write_sep("-", "skip summary")
    for line in lines:
        terminalreporter.write_line(line)
    target = os.environ.get("OFFSET_AUDIT_SKIP_SUMMARY")
    if target:
        Path(target).write_text("\n".join(lines) + "\n")


def _tests(count: int) -> str:
    return "1 test carries" if count == 1 else f"{count} tests carry"
