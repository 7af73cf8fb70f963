"""In CI a test cannot pass by not running: every skip not on tests/ci_skips.py's list fails the run, and
the run ends with every skip and its reason."""

from __future__ import annotations

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
    result = suite.runpytest("-p", "ci_skips")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*skip summary: 1 skipped*", "*the part is not on this machine*NOT allowed in CI*"])


def test_in_ci_a_skip_not_on_the_list_fails_the_run(suite, monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    summary = tmp_path / "skips.txt"
    monkeypatch.setenv("OFFSET_AUDIT_SKIP_SUMMARY", str(summary))
    result = suite.runpytest("-p", "ci_skips")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped in CI, where every real part must run: the part is not on this machine*"])
    assert summary.read_text().startswith("skip summary: 0 skipped, 1 skips refused in CI\n")


def test_in_ci_a_listed_skip_is_accepted_and_named(suite, monkeypatch):
    import ci_skips

    monkeypatch.setenv("CI", "1")
    monkeypatch.setitem(ci_skips.ALLOWED_SKIPS, "test_parts.py::test_needs_a_part", "the part comes later")
    result = suite.runpytest("-p", "ci_skips")
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
    result = pytester.runpytest("-p", "ci_skips")
    result.assert_outcomes(errors=1)
    assert summary.read_text().startswith("skip summary: 0 skipped, 1 skips refused in CI\n")
    assert "FAILED test_fixture_part.py::test_uses_it: skipped in CI" in summary.read_text()


def test_in_ci_a_module_skipped_at_collection_fails_too(pytester, monkeypatch):
    pytester.makepyfile(test_gone='import pytest\npytest.skip("no part", allow_module_level=True)\n')
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest("-p", "ci_skips")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped in CI, where every real part must run: no part*"])


def test_every_allowed_skip_names_a_test_that_exists():
    from ci_skips import ALLOWED_SKIPS
    from repo_paths import ROOT

    for nodeid, reason in ALLOWED_SKIPS.items():
        path, _, name = nodeid.partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(), nodeid
        assert len(reason) > 20, nodeid
