"""No test passes by not running in CI: a pytest plugin (loaded by conftest.py) that turns every skip CI
does not list here into a failure when the CI variable is set, and prints every skip with its reason at
the end of the run (and into $OFFSET_AUDIT_SKIP_SUMMARY, which .ci/run prints last)."""

from __future__ import annotations

import os
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


def allowed_skip(nodeid: str) -> str | None:
    """Why CI lets this test skip, or None when it may not (parametrized tests share their function's)."""
    return ALLOWED_SKIPS.get(nodeid.split("[", 1)[0])


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    refused = report.skipped and os.environ.get("CI") and allowed_skip(item.nodeid) is None
    if refused and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = (
            f"skipped in CI, where every real part must run: {_skip_reason(report)} "
            "(tests/ci_skips.py lists the skips CI accepts)"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A whole module skipped while it is collected is refused in CI the same way."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and allowed_skip(report.nodeid) is None:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every real part must run: {_skip_reason(report)}"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Every skip with its reason, and whether CI accepts it; also written to $OFFSET_AUDIT_SKIP_SUMMARY
    (.ci/run prints it last)."""
    skipped = terminalreporter.stats.get("skipped", [])
    # A skip in a test body is refused as a failure; one in a fixture (setup) as an error.
    reports = [*terminalreporter.stats.get("failed", []), *terminalreporter.stats.get("error", [])]
    failed_skips = [r for r in reports if "skipped in CI" in str(r.longrepr)]
    lines = [f"skip summary: {len(skipped)} skipped, {len(failed_skips)} skips refused in CI"]
    for report in skipped:
        allowed = allowed_skip(report.nodeid)
        verdict = f"allowed in CI: {allowed}" if allowed else "NOT allowed in CI"
        lines.append(f"  SKIPPED {report.nodeid}: {_skip_reason(report)} [{verdict}]")
    for report in failed_skips:
        lines.append(f"  FAILED {report.nodeid}: {report.longrepr}")
    terminalreporter.write_sep("-", "skip summary")
    for line in lines:
        terminalreporter.write_line(line)
    target = os.environ.get("OFFSET_AUDIT_SKIP_SUMMARY")
    if target:
        Path(target).write_text("\n".join(lines) + "\n")
