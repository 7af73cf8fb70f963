"""The outcome a jar-session run reports is read from pytest's own summary line only."""

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
