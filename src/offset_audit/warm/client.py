"""The first thing `offset-audit` does: hand the run to a warm session if there is one that can take it.

The session gets the command line, the working folder, the environment and this process's stdin, stdout
and stderr themselves (passed over the socket), so a run prints to the same terminal, pipe or file as it
would have, and the shell sees its exit status. Ctrl-C and kill reach the run: this process passes the
signals it gets to the session's child that runs the command. Where there is no session, or it cannot
take this run (another run is in it, other code, another environment), the command runs here as it
always did, with a note on stderr saying why when a session was found.

Standard library only, and nothing of the package beyond `place`: a run that finds no session pays a
few milliseconds.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Iterator
from typing import Any

from offset_audit.warm import place

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Exit status when the session ended without saying how the run ended (it was stopped, or crashed).
LOST = 1
# Set to 0 to run every command in its own process whatever sessions exist.
SWITCH = "OFFSET_AUDIT_WARM"


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One message: its length (4 bytes) and its JSON; `fds` ride along with the first byte."""
    body = json.dumps(message).encode()
    frame = struct.pack(">I", len(body)) + body
    if fds:
        sent = sock.sendmsg([frame[:1]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        sock.sendall(frame[sent:])
    else:
        sock.sendall(frame)


def replies(sock: socket.socket) -> Iterator[dict[str, Any]]:
    """The session's replies, one JSON object a line, until it closes the connection."""
    pending = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except InterruptedError:
            continue
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield json.loads(line)


def connect(timeout: float | None = None) -> socket.socket | None:
    """A connection to this user's session, or None when none runs."""
    path = place.socket_path()
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def ask(kind: str, timeout: float = 10.0) -> dict[str, Any] | None:
    """A question that is not a run (status, stop): the session's one reply, or None without a session."""
    sock = connect(timeout)
    if sock is None:
        return None
    with sock:
        send(sock, {"kind": kind})
        return next(replies(sock), None)


def run(argv: list[str]) -> int | None:
    """The run's exit status when the warm session ran it; None when it is to run here."""
    if os.environ.get(SWITCH, "1") == "0" or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None  # told not to, or under spark-submit, whose JVM is the run's
    if os.environ.get("SPARK_REMOTE") or any(arg == "--remote" or arg.startswith("--remote=") for arg in argv):
        return None  # a Spark Connect server's run: its session is there, not in the warm JVM
    sock = connect()
    if sock is None:
        return None
    request = {
        "kind": "run",
        "argv": argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "fingerprint": place.code_fingerprint(),
        "python": os.path.realpath(sys.executable),
    }
    with sock:
        try:
            send(sock, request, fds=[0, 1, 2])
        except OSError:  # a closed stdin or stdout, or a session going away: run here
            return None
        child: int | None = None
        previous = {}

        def forward(signum: int, frame: Any) -> None:
            if child is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signum)

        try:
            for reply in replies(sock):
                if "declined" in reply:
                    print(f"offset-audit: running without the warm session: {reply['declined']}", file=sys.stderr)
                    return None
                if "pid" in reply:
                    child = int(reply["pid"])
                    previous = {s: signal.signal(s, forward) for s in FORWARDED}
                if "exit" in reply:
                    return int(reply["exit"])
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    if child is None:
        return None  # the session closed before taking the run: run here
    print("offset-audit: the warm session ended before the run did (offset-audit warm status)", file=sys.stderr)
    return LOST
