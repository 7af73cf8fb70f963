"""make check's run (`pytest --quick`, tests/quick_run.py) leaves out every test that needs a JVM, a
service or a browser, CI's gate accepts that it does, and a test that starts a JVM unmarked fails there
saying so."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PARTS = """
import subprocess

import pytest

@pytest.fixture
def spark():
    raise AssertionError("a quick run started the session")

@pytest.fixture
def audited(spark):
    return spark

def test_on_the_session(audited):
    pass

@pytest.mark.slow
def test_against_a_broker():
    pass

@pytest.mark.heavy
def test_compiles_java():
    pass

def test_plain():
    pass

def test_starts_java_unmarked():
    assert subprocess.run(["java", "-version"]).returncode == 0
"""


@pytest.fixture
def parts(pytester, monkeypatch):
    pytester.makeini("[pytest]\nmarkers =\n    slow: starts real services\n")
    pytester.makepyfile(test_parts=PARTS)
    # the plugins are this folder's modules, loaded by name in pytest's own process
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    return pytester


def test_a_quick_run_leaves_out_what_needs_a_jvm_and_ci_accepts_it(parts, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = parts.runpytest_subprocess("-p", "quick_run", "-p", "ci_gate", "--quick", "-k", "not unmarked")
    result.assert_outcomes(passed=1, deselected=4)


def test_a_test_that_starts_a_jvm_unmarked_fails_in_a_quick_run_and_says_what_to_do(parts, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = parts.runpytest_subprocess("-p", "quick_run", "--quick", "-k", "unmarked")
    result.assert_outcomes(failed=1, deselected=4)
    result.stdout.fnmatch_lines(["*make check runs no JVM, and this test started one*mark it heavy*"])


def test_without_quick_every_test_runs(parts, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = parts.runpytest_subprocess("-p", "quick_run", "-k", "not unmarked and not session")
    result.assert_outcomes(passed=3, deselected=2)


def test_the_quick_run_leaves_this_process_as_it_found_it(parts, monkeypatch):
    """pytester's in-process run shares os.environ: JAVA_HOME and PATH come back, the refusing java goes."""
    monkeypatch.setenv("JAVA_HOME", sys.prefix)
    before = {"JAVA_HOME": sys.prefix, "PATH": os.environ["PATH"]}
    parts.runpytest("-p", "quick_run", "--quick", "-k", "plain").assert_outcomes(passed=1, deselected=4)
    assert {name: os.environ[name] for name in before} == before
