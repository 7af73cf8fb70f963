"""In CI a test cannot pass by not running: every skip and xfail not on tests/ci_gate.py's lists fails the
run, a run that deselected slow tests or narrowed the Kafka matrix stops before its first test, and the run
ends with every skip and its reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SKIPPING = """
import pytest

def test_needs_a_part():
    pytest.skip("the part is not on this machine")

def test_runs():
    pass
"""


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(test_parts=SKIPPING)
    return pytester


def test_outside_ci_a_skip_stays_a_skip_with_its_reason(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest("-p", "ci_gate")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*skip summary: 1 skipped*", "*the part is not on this machine*NOT allowed in CI*"])


def test_in_ci_a_skip_not_on_the_list_fails_the_run(suite, monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    summary = tmp_path / "skips.txt"
    monkeypatch.setenv("OFFSET_AUDIT_SKIP_SUMMARY", str(summary))
    result = suite.runpytest("-p", "ci_gate")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped in CI, where every real part must run: the part is not on this machine*"])
    assert summary.read_text().startswith("skip summary: 0 skipped, 1 skips refused in CI\n")


def test_in_ci_a_listed_skip_is_accepted_and_named(suite, monkeypatch):
    import ci_gate

    monkeypatch.setenv("CI", "1")
    monkeypatch.setitem(ci_gate.ALLOWED_SKIPS, "test_parts.py::test_needs_a_part", "the part comes later")
    result = suite.runpytest("-p", "ci_gate")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the part is not on this machine*allowed in CI: the part comes later*"])


def test_in_ci_a_skip_in_a_fixture_is_an_error_and_counted_as_refused(pytester, monkeypatch, tmp_path):
    """A part started by a fixture (a browser, a broker) that cannot be had skips at setup: in CI that is
    an error, and the summary counts it (seen in a run without Chromium)."""
    pytester.makepyfile(
        test_fixture_part="""
import pytest

@pytest.fixture
def part():
    pytest.skip("no browser here")

def test_uses_it(part):
    pass
"""
    )
    monkeypatch.setenv("CI", "true")
    summary = tmp_path / "skips.txt"
    monkeypatch.setenv("OFFSET_AUDIT_SKIP_SUMMARY", str(summary))
    result = pytester.runpytest("-p", "ci_gate")
    result.assert_outcomes(errors=1)
    assert summary.read_text().startswith("skip summary: 0 skipped, 1 skips refused in CI\n")
    assert "FAILED test_fixture_part.py::test_uses_it: skipped in CI" in summary.read_text()


def test_in_ci_a_module_skipped_at_collection_fails_too(pytester, monkeypatch):
    pytester.makepyfile(test_gone='import pytest\npytest.skip("no part", allow_module_level=True)\n')
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest("-p", "ci_gate")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped in CI, where every real part must run: no part*"])


def test_every_allowed_skip_names_a_test_that_exists():
    from ci_gate import ALLOWED_SKIPS
    from repo_paths import ROOT

    for nodeid, reason in ALLOWED_SKIPS.items():
        path, _, name = nodeid.partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(), nodeid
        assert len(reason) > 20, nodeid


XFAILING = """
import pytest

def test_known_broken():
    pytest.xfail("the fix comes later")

@pytest.mark.xfail(reason="flaky here")
def test_marked():
    assert False
"""


def test_in_ci_an_xfail_not_on_the_list_fails(pytester, monkeypatch):
    """An imperative xfail fails the test; an xfail marker stops the run before its first test."""
    pytester.makepyfile(test_xfails='import pytest\n\ndef test_known_broken():\n    pytest.xfail("later")\n')
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("-p", "ci_gate")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*xfail in CI, where every test must say whether its behaviour holds: later*"])
    pytester.makepyfile(test_xfails=XFAILING)
    result = pytester.runpytest("-p", "ci_gate")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CI accepts only the xfails tests/ci_gate.py lists, and 1 test carries another*"])


def test_outside_ci_an_xfail_stays_an_xfail(pytester, monkeypatch):
    pytester.makepyfile(test_xfails=XFAILING)
    monkeypatch.delenv("CI", raising=False)
    pytester.runpytest("-p", "ci_gate").assert_outcomes(xfailed=2)


def test_in_ci_a_listed_xfail_is_accepted(pytester, monkeypatch):
    import ci_gate

    pytester.makepyfile(test_xfails=XFAILING)
    monkeypatch.setenv("CI", "1")
    monkeypatch.setitem(ci_gate.ALLOWED_XFAILS, "test_xfails.py::test_known_broken", "the fix comes in 4.5")
    monkeypatch.setitem(ci_gate.ALLOWED_XFAILS, "test_xfails.py::test_marked", "the broker's own flake")
    pytester.runpytest("-p", "ci_gate").assert_outcomes(xfailed=2)


SLOW_AND_FAST = """
import pytest

@pytest.mark.slow
def test_against_a_broker():
    pass

def test_fast():
    pass
"""


@pytest.fixture
def marked_suite(pytester):
    pytester.makeini("[pytest]\nmarkers =\n    slow: starts real services\n    delta_spark: in the jar session\n")
    pytester.makepyfile(test_marked=SLOW_AND_FAST)
    return pytester


@pytest.mark.parametrize(
    ("args", "addopts"), [(["-m", "not slow"], None), (["-k", "fast"], None), ([], '-m "not slow"')]
)
def test_in_ci_a_run_that_deselects_slow_tests_runs_none(marked_suite, monkeypatch, args, addopts):
    monkeypatch.setenv("CI", "true")
    if addopts:
        monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
    result = marked_suite.runpytest("-p", "ci_gate", *args)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*CI runs every slow test, but 1 collected was deselected*test_against_a_broker*"])
    result.assert_outcomes(errors=1)


def test_deselecting_is_left_alone_outside_ci_and_in_a_run_that_selects_for_itself(marked_suite, monkeypatch):
    from ci_gate import NESTED_RUN_VARIABLE

    monkeypatch.delenv("CI", raising=False)
    marked_suite.runpytest("-p", "ci_gate", "-m", "not slow").assert_outcomes(passed=1)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(NESTED_RUN_VARIABLE, "delta-spark")
    marked_suite.runpytest("-p", "ci_gate", "-m", "not slow").assert_outcomes(passed=1)


def test_in_ci_a_kafka_matrix_other_than_the_makefiles_stops_the_run(marked_suite, monkeypatch):
    from ci_gate import makefile_kafka_versions

    versions = makefile_kafka_versions()
    assert len(versions) >= 3, versions
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("KAFKA_VERSIONS", versions[0])
    result = marked_suite.runpytest("-p", "ci_gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*CI runs the live tests on the Makefile's Kafka versions*names {versions[0]}*"])
    monkeypatch.setenv("KAFKA_VERSIONS", " ".join(versions))
    marked_suite.runpytest("-p", "ci_gate").assert_outcomes(passed=2)


def test_the_lists_name_tests_by_their_id_without_parameters_or_xdists_group():
    from ci_gate import base_nodeid

    assert base_nodeid("tests/a.py::test_x@demo") == "tests/a.py::test_x"
    assert base_nodeid("tests/a.py::test_x[4.4.0]@live-4.4.0") == "tests/a.py::test_x"
    assert base_nodeid("tests/a.py::test_x[user@host]") == "tests/a.py::test_x"


def test_under_xdist_a_grouped_listed_skip_is_accepted_and_an_unlisted_one_refused(pytester, monkeypatch):
    """The same lists, read with the ids pytest-xdist's loadgroup gives grouped tests (`...@group`)."""
    pytester.makepyfile(
        test_grouped="""
import pytest

@pytest.mark.xdist_group("parts")
def test_listed():
    pytest.skip("the part comes later")

@pytest.mark.xdist_group("parts")
def test_unlisted():
    pytest.skip("no part")
"""
    )
    pytester.makeconftest(
        "pytest_plugins = ['ci_gate']\n\n"
        "def pytest_configure(config):\n"
        "    import ci_gate\n\n"
        "    ci_gate.ALLOWED_SKIPS['test_grouped.py::test_listed'] = 'it comes later'\n"
    )
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:  # this run's own, under xdist
        monkeypatch.delenv(name)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*SKIPPED test_grouped.py::test_listed*: the part comes later*allowed in CI: it comes later*"]
    )


def test_under_xdist_a_run_that_deselects_slow_tests_runs_none_and_says_why(marked_suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
        monkeypatch.delenv(name)
    result = marked_suite.runpytest_subprocess("-p", "ci_gate", "-n", "2", "-m", "not slow", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*CI runs every slow test, but 1 collected was deselected*"])
    result.assert_outcomes(errors=1)


def test_in_ci_a_plugin_that_reruns_failures_stops_the_run(pytester, monkeypatch):
    pytester.makepyfile(
        rerunfailures="def pytest_configure(config):\n    pass\n", test_one="def test_one():\n    pass\n"
    )
    pytester.syspathinsert()
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("-p", "ci_gate", "-p", "rerunfailures")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*CI runs every test once: a failure must not pass on a rerun*"])
