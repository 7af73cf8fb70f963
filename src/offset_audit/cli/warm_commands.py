"""warm start | status | stop: a Spark session kept warm between runs (offset_audit.warm).

While one runs, every `offset-audit` command of this user and this Python hands itself to it (cli.entry),
and pays neither Spark's start nor a cold JVM: a small audit takes seconds instead of Spark's start and
a cold JVM's compiling. `OFFSET_AUDIT_WARM=0` runs a command in its own process all the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import click

from offset_audit.cli.options import DURATION, user_errors
from offset_audit.errors import UserError

DEFAULT_IDLE = "1h"
WAIT_FOR_START_S = 600
WAIT_FOR_STOP_S = 3600


@click.group()
def warm() -> None:
    """Keep a Spark session warm between runs: small audits answer in seconds."""


@warm.command()
@click.option(
    "--conf",
    "conf_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="TOML file of settings (docs/settings.md): its [spark] settings start the session (runs with other "
    "ones run alone).",
)
@click.option(
    "--idle",
    "idle_minutes",
    type=DURATION,
    default=DEFAULT_IDLE,
    show_default=True,
    help="stop after this long without a run.",
)
@user_errors
def start(conf_file: str | None, idle_minutes: int) -> None:
    """Start the warm session in the background (or say that it runs)."""
    from offset_audit.runtime.config import load_settings
    from offset_audit.runtime.local_jvm import check_java
    from offset_audit.warm import client, place

    load_settings(conf_file)  # a mistake in the file is said here, not in the session's log
    check_java()
    running = client.ask("status")
    if running is not None:
        if running.get("fingerprint") == place.code_fingerprint():
            click.echo(f"a warm session is running (pid {running['pid']}, {running['runs']} runs so far)")
            return
        click.echo(f"the warm session (pid {running['pid']}) runs older code: restarting it")
        _stop(running)
    place.make_folder()
    command = [sys.executable, "-m", "offset_audit.cli.main", "warm", "serve", "--idle", f"{idle_minutes}m"]
    if conf_file:
        command += ["--conf", os.path.abspath(conf_file)]
    with open(place.log_path(), "ab") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    began = time.monotonic()
    while time.monotonic() - began < WAIT_FOR_START_S:
        if process.poll() is not None:
            raise UserError(
                f"the warm session did not start (exit {process.returncode}): {_log_tail(place.log_path())}"
            )
        status = client.ask("status")
        if status is not None and status.get("pid") == process.pid:
            click.echo(
                f"warm session ready in {time.monotonic() - began:.1f} s (pid {process.pid}); offset-audit commands "
                f"use it until 'offset-audit warm stop' or {idle_minutes} minutes without a run"
            )
            return
        time.sleep(0.2)
    process.terminate()
    raise UserError(f"the warm session was not ready after {WAIT_FOR_START_S} s; see {place.log_path()}")


@warm.command()
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON.")
def status(as_json: bool) -> None:
    """Whether a warm session runs, since when, and how many runs it took (exit 1 when none runs)."""
    from offset_audit.views.json_documents import dumps, warm_status_document
    from offset_audit.warm import client

    running = client.ask("status")
    if as_json:
        click.echo(dumps(None if running is None else warm_status_document(running)))
    elif running is None:
        click.echo("no warm session is running")
    else:
        since = f"{datetime.fromtimestamp(running['started'], UTC):%Y-%m-%d %H:%M:%S} UTC"
        state = "running a command" if running["busy"] else "idle"
        click.echo(
            f"warm session pid {running['pid']}, up since {since} (ready in {running['ready_in_s']} s), "
            f"{running['runs']} runs, {state}; stops after {running['idle_timeout_s'] / 60:.0f} minutes idle; "
            f"log {running['log']}"
        )
    sys.exit(0 if running is not None else 1)


@warm.command()
def stop() -> None:
    """Stop the warm session, once a run in it has finished."""
    from offset_audit.warm import client

    running = client.ask("status")
    if running is None:
        click.echo("no warm session is running")
        return
    _stop(running)
    click.echo(f"warm session stopped (pid {running['pid']}, {running['runs']} runs)")


@warm.command(hidden=True)
@click.option("--conf", "conf_file", default=None)
@click.option("--idle", "idle_minutes", type=DURATION, default=DEFAULT_IDLE)
def serve(conf_file: str | None, idle_minutes: int) -> None:
    """The session itself (what `start` launches)."""
    from offset_audit.runtime.config import load_settings
    from offset_audit.runtime.session import WarmSession
    from offset_audit.warm.server import serve as run_session

    root = click.get_current_context().find_root().command

    def command(argv: list[str], warm: WarmSession) -> None:
        # click's obj: the run commands hand it to start_spark (cli.run_commands.spark_starter)
        root.main(args=argv, prog_name="offset-audit", standalone_mode=True, obj=warm)

    run_session(load_settings(conf_file), conf_file, idle_minutes * 60.0, command)


def _stop(running: dict) -> None:
    from offset_audit.runtime.local_jvm import wait_for_exit
    from offset_audit.warm import client

    reply = client.ask("stop") or {}
    if reply.get("waiting_for"):
        click.echo(f"the warm session stops once the run in it (pid {reply['waiting_for']}) has finished")
    if not wait_for_exit(running["pid"], WAIT_FOR_STOP_S):
        os.kill(running["pid"], signal.SIGKILL)


def _log_tail(path: os.PathLike[str]) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 600))
            return log.read().decode(errors="replace").strip().splitlines()[-1]
    except (OSError, IndexError):
        return "no log"
