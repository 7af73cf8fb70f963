"""Progress on stderr: in place on a terminal, plain lines in a log, silent unless a command asks."""

from __future__ import annotations

import io

from offset_audit.runtime import progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Info:
    def __init__(self, done, total):
        self.numCompletedTasks, self.numTasks = done, total


class Tracker:
    """Spark's status tracker as the reporter sees it: two stages running, 3 of 10 tasks done."""

    def getActiveStageIds(self):
        return [4, 5]

    def getStageInfo(self, stage_id):
        return Info(1, 4) if stage_id == 4 else Info(2, 6)


class Session:
    class sparkContext:
        @staticmethod
        def statusTracker():
            return Tracker()


def test_stages_are_silent_without_a_reporter(capsys):
    with progress.stage("decoding"):
        progress.advance(5)
    progress.begin("judging")
    assert capsys.readouterr() == ("", "")


def test_quiet_reports_nothing():
    stream = io.StringIO()
    with progress.reporting(False, stream=stream):
        progress.begin("decoding")
    assert stream.getvalue() == ""


def test_a_log_gets_a_line_when_a_stage_starts_and_when_it_ends():
    stream = io.StringIO()
    with progress.reporting(True, stream=stream):
        progress.begin("decoding 300 records (parquet)")
        progress.begin("writing the runs row")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "offset-audit: decoding 300 records (parquet) ..."
    assert lines[1].startswith("offset-audit: decoding 300 records (parquet) done (")
    assert lines[2] == "offset-audit: writing the runs row ..."
    assert lines[3].startswith("offset-audit: writing the runs row done (")
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()


def test_a_log_line_counts_spark_tasks_and_work_done():
    reporter = progress.Reporter(io.StringIO(), Session(), interactive=False)
    reporter.begin("decoding", total=1_000, unit="records")
    reporter.advance(250)
    line = reporter._describe(reporter.current)
    assert line.startswith("offset-audit: decoding (250/1,000 records, Spark tasks 3/10)")


def test_a_terminal_line_is_rewritten_in_place_and_closed_with_a_newline():
    stream = Tty()
    reporter = progress.Reporter(stream)
    reporter.begin("judging", total=None, unit="records")
    reporter.advance(7)
    reporter.end()
    text = stream.getvalue()
    assert text.count("\r\x1b[K") == 3  # begin, advance, end
    assert text.endswith("\n") and text.count("\n") == 1
    assert "judging (7 records)" in text


def test_a_status_tracker_that_fails_costs_no_progress_line():
    class Broken:
        class sparkContext:
            @staticmethod
            def statusTracker():
                raise RuntimeError("stopping")

    reporter = progress.Reporter(io.StringIO(), Broken(), interactive=False)
    reporter.begin("decoding", None, "records")
    assert reporter._describe(reporter.current) == "offset-audit: decoding ..."
