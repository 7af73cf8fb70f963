"""Progress on stderr while a command runs: which stage, and how much of it is done.

A run is 30 s to minutes of Spark jobs; without this an operator sees nothing until the summary. On a
terminal one line is rewritten in place; when stderr is not a terminal (cron, spark-submit logs) a
plain line is written when a stage starts, every `LOG_INTERVAL_S` while it runs, and when it ends, so
a log shows where a run spent its time. Spark's own console progress bar stays off (runtime/session.py).

The pipeline marks its stages with `stage(...)`, which does nothing unless a command turned reporting
on with `reporting(...)`: library code and tests print nothing. How far a stage has got comes from
Spark's status tracker (tasks done of tasks started by the stage's jobs), read by one polling thread;
on a Spark Connect session, from the progress the server sends with each query's results (every
spark.connect.progress.reportInterval, 2 s unless set); or from `advance()` where the driver itself
does the work.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, Any

from offset_audit.session_kind import connect_route, is_remote

LOG_INTERVAL_S = 15.0
TERMINAL_INTERVAL_S = 0.5


@dataclass
class _Stage:
    name: str
    total: int | None
    unit: str
    started: float = field(default_factory=time.monotonic)
    done: int = 0


class ServerProgress:
    """A Spark Connect client's progress handler: the tasks done of the running query's stages, as the
    server last said (None once the query is done)."""

    def __init__(self) -> None:
        self.tasks: tuple[int, int] | None = None

    def __call__(self, stages: Any, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        stages = [] if done or stages is None else list(stages)
        total = sum(s.num_tasks for s in stages if not s.done)
        self.tasks = (sum(s.num_completed_tasks for s in stages if not s.done), total) if total else None


class Reporter:
    """Writes the current stage to `stream`; the polling thread and the pipeline share it under a lock."""

    def __init__(self, stream: IO[str], spark: Any = None, interactive: bool | None = None) -> None:
        self.stream = stream
        self.spark = spark
        self.interactive = stream.isatty() if interactive is None else interactive
        self.current: _Stage | None = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last_log = 0.0
        self.thread: threading.Thread | None = None
        self.started = time.monotonic()
        self.server_progress: ServerProgress | None = None

    # -- what the pipeline calls
    def begin(self, name: str, total: int | None, unit: str) -> None:
        with self.lock:
            self._end_locked()
            self.current = _Stage(name, total, unit)
            self.last_log = 0.0
            self._show_locked(force=True)

    def advance(self, n: int) -> None:
        with self.lock:
            if self.current is not None:
                self.current.done += n
                self._show_locked()

    def end(self) -> None:
        with self.lock:
            self._end_locked()

    # -- the polling thread
    def start_polling(self) -> None:
        interval = TERMINAL_INTERVAL_S if self.interactive else 1.0
        self.thread = threading.Thread(target=self._poll, args=(interval,), name="offset-audit-progress", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=2)
        if self.server_progress is not None:
            with contextlib.suppress(Exception):  # the session is stopping; progress is best effort
                self.spark.removeProgressHandler(self.server_progress)
        self.end()

    def _poll(self, interval: float) -> None:
        while not self.stop.wait(interval):
            with self.lock:
                self._show_locked()

    # -- Spark's status tracker, or what a Spark Connect server says of its running query
    def _server_tasks(self) -> tuple[int, int] | None:
        return self.server_progress.tasks if self.server_progress is not None else None

    def attach(self, spark: Any) -> None:
        self.spark = spark
        if is_remote(spark):
            self.server_progress = ServerProgress()
            spark.registerProgressHandler(self.server_progress)

    def _no_tracker(self) -> Any:
        return None

    @connect_route(_no_tracker)
    def _tracker(self) -> Any:
        if self.spark is None:
            return None
        try:
            return self.spark.sparkContext.statusTracker()
        except Exception:  # the session is stopping; progress is best effort
            return None

    @connect_route(_server_tasks)
    def _tasks(self) -> tuple[int, int] | None:
        """Tasks done and tasks of the Spark stages running now (None when none runs). The pipeline runs
        its Spark jobs one after the other, so the running stages are the current stage's."""
        tracker = self._tracker()
        if tracker is None or self.current is None:
            return None
        try:
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
        except Exception:
            return None
        return (done, total) if total else None

    # -- output
    def _describe(self, stage: _Stage) -> str:
        elapsed = time.monotonic() - stage.started
        parts = []
        if stage.total is not None:
            parts.append(
                f"{stage.done:,}/{stage.total:,} {stage.unit}" if stage.done else f"{stage.total:,} {stage.unit}"
            )
        elif stage.done:
            parts.append(f"{stage.done:,} {stage.unit}")
        tasks = self._tasks()
        if tasks is not None:
            parts.append(f"Spark tasks {tasks[0]}/{tasks[1]}")
        detail = f" ({', '.join(parts)})" if parts else ""
        return f"offset-audit: {stage.name}{detail}" + (f" {elapsed:.0f}s" if elapsed >= 1 else " ...")

    def _show_locked(self, force: bool = False) -> None:
        stage = self.current
        if stage is None:
            return
        now = time.monotonic()
        if self.interactive:
            self.stream.write("\r\x1b[K" + self._describe(stage))
        elif force or now - self.last_log >= LOG_INTERVAL_S:
            self.stream.write(self._describe(stage) + "\n")
            self.last_log = now
        else:
            return
        self.stream.flush()

    def _end_locked(self) -> None:
        stage = self.current
        if stage is None:
            return
        elapsed = time.monotonic() - stage.started
        count = stage.total if stage.total is not None else stage.done
        amount = f"{count:,} {stage.unit}, " if count else ""
        line = f"offset-audit: {stage.name} done ({amount}{elapsed:.1f}s)"
        if self.interactive:
            self.stream.write("\r\x1b[K" + line + "\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.current = None


# The reporter of the run in progress, scoped to the `reporting` block that set it (and to its thread
# and context: a second run in the same process, or a test, sees its own or none).
_ACTIVE: ContextVar[Reporter | None] = ContextVar("offset_audit_progress", default=None)


@contextmanager
def reporting(enabled: bool, spark: Any = None, stream: IO[str] | None = None) -> Iterator[Reporter | None]:
    """Turn progress on for the block (a command's run); `enabled=False` (--quiet) keeps stderr quiet."""
    if not enabled:
        yield None
        return
    reporter = Reporter(stream or sys.stderr, spark)
    reporter.start_polling()
    token = _ACTIVE.set(reporter)
    try:
        yield reporter
    finally:
        _ACTIVE.reset(token)
        reporter.close()


def attach_spark(spark: Any) -> None:
    """The session, once it exists (it starts after the checks, inside the reporting block)."""
    reporter = _ACTIVE.get()
    if reporter is not None:
        reporter.attach(spark)


@contextmanager
def stage(name: str, total: int | None = None, unit: str = "records") -> Iterator[None]:
    """Mark a stage of the run; the stage ends with the block (or when the next one begins)."""
    reporter = _ACTIVE.get()
    if reporter is None:
        yield
        return
    reporter.begin(name, total, unit)
    try:
        yield
    finally:
        reporter.end()


def advance(n: int = 1) -> None:
    reporter = _ACTIVE.get()
    if reporter is not None:
        reporter.advance(n)


def begin(name: str, total: int | None = None, unit: str = "records") -> None:
    """Start a stage that ends when the next begins (for straight-line code where a `with` would nest)."""
    reporter = _ACTIVE.get()
    if reporter is not None:
        reporter.begin(name, total, unit)
