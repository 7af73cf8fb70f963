"""The session with the Spark jars: one run of every test marked delta_spark, whose outcome is read from
pytest's own summary line only."""

import re

import pytest
from ci_gate import base_nodeid
from live_services import Unavailable
from spark_jars import _outcome


def test_a_client_log_line_is_not_read_as_an_outcome() -> None:
    stdout = ".  [100%]\nskip summary: 0 skipped, 0 skips refused in CI\n1 passed in 39.38s\n"
    log = "%3|1795719260.056|FAIL|rdkafka#producer-2| 127.0.0.1:46745/bootstrap failed: Connection refused\n"
    assert _outcome(stdout) == "1 passed"
    assert _outcome(stdout + log) == "1 passed"


def test_failures_skips_and_missing_runs_show() -> None:
    assert _outcome("==== 1 failed, 2 passed, 3 deselected in 4.01s ====\n") == "1 failed, 2 passed"
    assert _outcome("1 passed, 1 skipped in 2.00s\n") == "1 passed, 1 skipped"
    assert _outcome("no tests ran in 0.10s\n") == ""


@pytest.mark.slow
def test_every_test_of_a_spark_native_route_passes_in_one_session_with_the_jars(request):
    """The tests marked delta_spark, which the suite's session set aside (conftest.py), in one pytest whose
    session has the jars and writes through delta-spark: every one must pass. Where this run collected
    none of them (a run of this file alone), the modules that hold them."""
    from spark_jars import JAR_MODULES, SET_ASIDE, run_in_jar_session

    set_aside = [base_nodeid(nodeid) for nodeid in request.config.stash.get(SET_ASIDE, [])]
    assert all(nodeid.split("::", 1)[0] in JAR_MODULES for nodeid in set_aside), set_aside
    try:
        run_in_jar_session(set_aside or list(JAR_MODULES))
    except Unavailable as reason:
        pytest.skip(str(reason))


def test_every_module_of_the_jar_session_holds_tests_marked_for_it():
    from repo_paths import ROOT
    from spark_jars import JAR_MODULES

    marker = re.compile(r"^@pytest\.mark\.delta_spark$", re.M)
    marked = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if marker.search(p.read_text())}
    assert marked == set(JAR_MODULES)


def test_the_run_with_the_jars_never_starts_another(monkeypatch):
    """A jar session whose session lacks a class fails its tests at once: it once started itself again,
    which took 20 minutes to time out."""
    from spark_jars import SESSION_VARIABLE, run_in_jar_session

    monkeypatch.setenv(SESSION_VARIABLE, "delta-spark")
    with pytest.raises(AssertionError, match="would start another"):
        run_in_jar_session(["tests/outputs/test_delta.py::test_delta_spark_route"])
