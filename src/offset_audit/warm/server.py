"""The warm session's process (`offset-audit warm start` launches it in the background).

It starts a local SparkSession with the `[spark]` settings of its configuration, warms it with an audit of
a small generated dump (the JVM loads and compiles what an audit uses; Python imports the package), then
waits on a socket only its user can open. For each run it forks a child that takes the caller's stdin,
stdout and stderr (passed over the socket), working folder and environment, opens connections of its
own to the same JVM and runs the command line against a session of its own over the same SparkContext:
its own SQL settings and temporary views, and the warm JVM, compiled code and Python workers. One run
at a time: a run that finds the session busy runs in its own process.

The child leaves no Python state behind (it exits). What it leaves in the JVM is what any run over a
long-lived SparkContext leaves: the objects it held are released before it exits.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import fcntl
import gc
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from offset_audit.runtime import session as sessions
from offset_audit.settings import Settings
from offset_audit.warm import place

# Runs a command line in the session handed to it (the command line's own main).
Command = Callable[[list[str], sessions.WarmSession], None]

# The records of the dump that warms the session: enough for every stage of an audit to run its code.
WARM_UP_RECORDS = 2000
WARM_UP_RUNS = 2
# A run that finds the previous one ending (its exit sent, its process not yet collected) waits this long.
BUSY_WAIT_S = 2.0
ACCEPT_POLL_S = 0.2
IDLE_POLL_S = 5.0
MAX_REQUEST_BYTES = 16 << 20
PYTHON_DAEMON = "spark.python.daemon.module"


class Declined(Exception):
    """This run cannot use the session; the caller runs it in its own process."""


@dataclass
class Session:
    spark: SparkSession
    settings: Settings
    config: str | None
    environment: dict[str, str]
    fingerprint: str
    idle_seconds: float
    command: Command
    started: float = field(default_factory=time.time)
    ready_in_s: float = 0.0
    runs: int = 0
    last_active: float = field(default_factory=time.monotonic)
    child: tuple[int, socket.socket] | None = None
    stopping: bool = False
    # What a child closes first: the socket callers connect to, and the lock that says a session runs.
    inherited: list[Any] = field(default_factory=list)

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "started": self.started,
            "ready_in_s": round(self.ready_in_s, 1),
            "runs": self.runs,
            "busy": self.child is not None,
            "idle_timeout_s": self.idle_seconds,
            "config": self.config,
            "spark_settings": sorted(self.settings.spark),  # names only: values may be credentials
            "socket": str(place.socket_path()),
            "log": str(place.log_path()),
            "fingerprint": self.fingerprint,
        }


def serve(settings: Settings, config: str | None, idle_seconds: float, command: Command) -> None:
    """Run the session until it is stopped or idle for `idle_seconds`; `command` runs a command line in
    the session handed to it (click's main, given by the command line so that this package does not
    import it)."""
    place.make_folder()
    lock = open(place.lock_path(), "w")  # noqa: SIM115 held for the session's life: one session per user and Python
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("offset-audit: a warm session is already running", file=sys.stderr)
        sys.exit(2)
    environment = dict(os.environ)  # before the session's start sets variables of its own
    began = time.monotonic()
    spark = sessions.get_spark({**settings.spark, PYTHON_DAEMON: "offset_audit.warm.python_daemon"})
    session = Session(spark, settings, config, environment, place.code_fingerprint(), idle_seconds, command)
    session.inherited.append(lock)
    warm_up(session)
    session.ready_in_s = time.monotonic() - began
    listener = _listen()
    session.inherited.append(listener)
    signal.signal(signal.SIGTERM, lambda signum, frame: _stop(session))
    print(f"offset-audit: warm session ready in {session.ready_in_s:.1f} s (pid {os.getpid()})", flush=True)
    try:
        _loop(session, listener)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(place.socket_path())
        listener.close()
        spark.stop()
        print(f"offset-audit: warm session stopped after {session.runs} runs", flush=True)


def warm_up(session: Session, runs: int = WARM_UP_RUNS) -> None:
    """Audits of a small generated dump, each in a child as a caller's run would be: the JVM loads and
    compiles the classes an audit uses and Spark starts its Python workers. In a child, because delta-rs
    (tokio) refuses to work in a process forked after it started; the session itself only imports."""
    import offset_audit.runs.audit
    import offset_audit.runs.decode
    import offset_audit.runs.whatif  # noqa: F401
    from offset_audit.generator.demo_dump import generate_dump

    with tempfile.TemporaryDirectory(prefix="offset-audit-warm-up-") as work:
        generate_dump(f"{work}/dump", WARM_UP_RECORDS, seed=1, corrupt=2)
        for run in range(runs):
            argv = ["audit", "--input", f"{work}/dump", "--output", f"{work}/audit-{run}", "--quiet"]
            request = {"argv": argv, "cwd": work, "env": dict(os.environ)}
            stdio = [os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY), os.dup(2)]
            pid = _fork(session, None, request, stdio)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"the warm-up audit failed (exit {os.waitstatus_to_exitcode(status)})")
    session.runs = 0


def _listen() -> socket.socket:
    path = place.socket_path()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a session that died without removing it; the lock says none runs
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(16)
    return listener


def _stop(session: Session) -> None:
    session.stopping = True


def _loop(session: Session, listener: socket.socket) -> None:
    while True:
        _reap(session)
        if session.stopping and session.child is None:
            return
        if session.child is None and time.monotonic() - session.last_active > session.idle_seconds:
            print("offset-audit: warm session idle, stopping", flush=True)
            return
        ready, _, _ = select.select([listener], [], [], ACCEPT_POLL_S if session.child else IDLE_POLL_S)
        if ready:
            conn, _ = listener.accept()
            try:
                _answer(session, conn)
            except Exception:  # a caller that went away mid-request, or sent nonsense: the session goes on
                traceback.print_exc()
                conn.close()


def _reap(session: Session) -> None:
    """Collect a finished child; if a signal ended it, tell its caller (the child could not)."""
    if session.child is None:
        return
    pid, conn = session.child
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        return
    if os.WIFSIGNALED(status):
        with contextlib.suppress(OSError):
            _reply(conn, {"exit": 128 + os.WTERMSIG(status)})
    conn.close()
    session.child = None
    session.last_active = time.monotonic()


def _answer(session: Session, conn: socket.socket) -> None:
    conn.settimeout(30)
    request, fds = _receive(conn)
    kind = request.get("kind")
    if kind == "status":
        _reply(conn, session.status())
        conn.close()
    elif kind == "stop":
        session.stopping = True
        _reply(conn, {"stopping": True, "pid": os.getpid(), "waiting_for": session.child[0] if session.child else None})
        conn.close()
    elif kind == "run":
        try:
            _check(session, request, fds)
        except Declined as declined:
            for fd in fds:
                os.close(fd)
            _reply(conn, {"declined": str(declined)})
            conn.close()
            return
        conn.settimeout(None)
        session.child = (_fork(session, conn, request, fds), conn)
        _reply(conn, {"pid": session.child[0]})
    else:
        conn.close()


def _check(session: Session, request: Mapping[str, Any], fds: list[int]) -> None:
    if len(fds) != 3:
        raise Declined("the run's stdin, stdout and stderr did not arrive")
    if session.stopping:
        raise Declined("it is stopping")
    waited = time.monotonic()
    while session.child is not None and time.monotonic() - waited < BUSY_WAIT_S:
        time.sleep(0.02)
        _reap(session)
    if session.child is not None:
        raise Declined("another run is using it")
    if request.get("python") != os.path.realpath(sys.executable) or request.get("fingerprint") != session.fingerprint:
        raise Declined("the package changed since it started (offset-audit warm start restarts it)")
    different = place.environment_difference(session.environment, request.get("env", {}))
    if different is not None:
        raise Declined(f"it started with another {different} (offset-audit warm start restarts it)")


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request and the descriptors that came with its first byte."""
    fds: list[int] = []
    data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) - len(payload) % 4]))
    while len(data) < 4:
        data += _more(conn)
    (length,) = struct.unpack(">I", data[:4])
    if length > MAX_REQUEST_BYTES:
        raise ValueError(f"a request of {length} bytes")
    while len(data) < 4 + length:
        data += _more(conn)
    return json.loads(data[4 : 4 + length]), fds


def _more(conn: socket.socket) -> bytes:
    chunk = conn.recv(65536)
    if not chunk:
        raise ConnectionError("the caller went away")
    return chunk


def _reply(conn: socket.socket | None, message: Mapping[str, Any]) -> None:
    if conn is None:  # a warm-up run: nobody to tell
        return
    conn.sendall(json.dumps(message).encode() + b"\n")


def _fork(session: Session, conn: socket.socket | None, request: Mapping[str, Any], fds: list[int]) -> int:
    """The child that runs `request`; its pid."""
    session.runs += 1
    session.last_active = time.monotonic()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(session, conn, request, fds)  # never returns
    for fd in fds:
        os.close(fd)
    return pid


def _child(session: Session, conn: socket.socket | None, request: Mapping[str, Any], fds: list[int]) -> None:
    code = 1
    try:
        for inherited in session.inherited:
            inherited.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        atexit._clear()  # the session's own exit handlers are not this run's
        _take_stdio(fds)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _own_connections(session.spark)
        own = session.spark.newSession()
        warm = sessions.WarmSession(own, lambda wanted: _same_settings(own, session.settings.spark, wanted))
        sessions.adopt(warm)
        code = _run(session.command, list(request["argv"]), warm)
    except Declined as declined:
        with contextlib.suppress(OSError):
            _reply(conn, {"declined": str(declined)})
        os._exit(0)
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
        _release(session.spark)
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        _reply(conn, {"exit": code})
    os._exit(code)


def _run(command: Command, argv: list[str], warm: sessions.WarmSession) -> int:
    """The command line's exit status, as the process that ran it would have exited."""
    try:
        command(argv, warm)
    except SystemExit as exit:
        if exit.code is None:
            return 0
        if isinstance(exit.code, int):
            return exit.code
        print(exit.code, file=sys.stderr)
        return 1
    except Declined:
        raise
    except KeyboardInterrupt:
        return 130
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _take_stdio(fds: list[int]) -> None:
    """The caller's descriptors become this process's 0, 1 and 2, with Python's streams over them as a
    process started there would have them (line-buffered on a terminal)."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    # typeshed calls sys.__stdin__ Final; rebound here, as a process started on these descriptors has it.
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(open(0, "rb", buffering=0, closefd=False), encoding="utf-8")  # type: ignore[misc]  # noqa: SIM115
    for name, fd in (("stdout", 1), ("stderr", 2)):
        binary = open(fd, "wb", buffering=0, closefd=False)  # noqa: SIM115
        errors = "backslashreplace" if name == "stderr" else "strict"
        stream = io.TextIOWrapper(
            io.BufferedWriter(binary), encoding="utf-8", errors=errors, line_buffering=os.isatty(fd) or fd == 2
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _own_connections(spark: SparkSession) -> None:
    """Forget the session's connections to the JVM (a child writing on them would garble the session's
    own) and its pending releases of JVM objects; the child opens connections of its own, and releases
    what it lets go of through a worker thread of its own, as py4j does in any process."""
    from py4j.clientserver import FinalizerWorker

    assert spark.sparkContext._gateway is not None  # set when the first SparkContext started, never cleared
    client = spark.sparkContext._gateway._gateway_client
    client.thread_connection = threading.local()
    client.deque = collections.deque()
    finalizer = getattr(client, "finalizer_deque", None)
    if finalizer is not None:
        finalizer.clear()
        worker = FinalizerWorker(finalizer)
        worker.daemon = True
        worker.start()


def _release(spark: SparkSession) -> None:
    """Release in the JVM what the run held, before the child exits and py4j with it."""
    gc.collect()
    assert spark.sparkContext._gateway is not None  # set when the first SparkContext started, never cleared
    client = spark.sparkContext._gateway._gateway_client
    finalizer = getattr(client, "finalizer_deque", None)
    while finalizer:
        task = finalizer.pop()
        if isinstance(task, tuple):
            with contextlib.suppress(Exception):
                task[0].garbage_collect_object(task[1], False)


def _same_settings(own: SparkSession, started: Mapping[str, str], wanted: Mapping[str, str]) -> None:
    """A run's `[spark]` settings against the session's: a SQL setting that may change at run time is
    set on the run's own session; any other difference means another JVM or SparkContext, so the run
    declines the session."""
    for name in sorted(set(started) | set(wanted)):
        if started.get(name) == wanted.get(name):
            continue
        if own.conf.isModifiable(name):
            value = wanted.get(name, sessions.LOCAL_DEFAULTS.get(name))
            if value is None:
                own.conf.unset(name)
            else:
                own.conf.set(name, value)
            continue
        raise Declined(f"the run's [spark] setting {name} differs from the session's")
