"""A headless Chromium driven over the Chrome DevTools Protocol, for tests of the HTML report and for its
screenshot in the docs.

The system's Chromium (Debian's package: `make browser`), started by us with a throwaway profile,
reachable only on loopback, with every host name unresolvable (a page that tried the network would show
it as an error) and stopped by its pid. One page target, spoken to over its websocket with
websocket-client: no browser download, no driver binary.

    with Chromium.start() as browser:
        browser.load(Path("report.html").as_uri())
        assert browser.problems() == []
        browser.screenshot(Path("docs/report.png"))
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
NOT_FOUND = "chromium not on PATH: make browser installs it from Debian packages (needs root)"
# How many of a report page's charts plotly has drawn (an SVG in each [data-chart] block).
DRAWN_CHARTS = "[...document.querySelectorAll('[data-chart]')].filter(c => c.querySelector('.main-svg')).length"
WIDTH, HEIGHT = 1400, 1000


def find_chromium() -> str | None:
    """The first of chromium, chromium-browser, google-chrome on PATH."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class Chromium:
    """One headless browser process and one page of it."""

    def __init__(self, process: subprocess.Popen, profile: tempfile.TemporaryDirectory, page_socket: Any):
        self.process = process
        self._profile = profile
        self._socket = page_socket
        self._next_id = 0
        self.events: list[dict] = []

    @classmethod
    def start(cls, executable: str | None = None, timeout: float = 30.0) -> Chromium:
        import websocket

        executable = executable or find_chromium()
        if executable is None:
            raise FileNotFoundError(NOT_FOUND)
        # Its helper processes may still write to the profile for a moment after the browser exits.
        profile = tempfile.TemporaryDirectory(prefix="offset-audit-chromium-", ignore_cleanup_errors=True)
        args = [
            executable,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile.name}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",  # any free port; Chromium writes it to DevToolsActivePort
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--mute-audio",
            f"--window-size={WIDTH},{HEIGHT}",
            "about:blank",
        ]
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: _stop ends its helper processes too
        )
        try:
            port = _devtools_port(Path(profile.name), process, timeout)
            page = _page_socket_url(port, timeout)
            socket = websocket.create_connection(page, timeout=timeout, suppress_origin=True)
        except BaseException:
            _stop(process)
            profile.cleanup()
            raise
        browser = cls(process, profile, socket)
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable")
        return browser

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Close the socket, end the process by its pid, remove the profile."""
        try:
            self._socket.close()
        finally:
            _stop(self.process)
            self._profile.cleanup()

    def send(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        """One DevTools command; events that arrive meanwhile are kept in `events`."""
        self._next_id += 1
        asked = self._next_id
        self._socket.send(json.dumps({"id": asked, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline, method)
            if message.get("id") == asked:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def _receive(self, deadline: float, waiting_for: str) -> dict:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no answer from Chromium to {waiting_for}")
        self._socket.settimeout(remaining)
        return json.loads(self._socket.recv())

    def wait_for_event(self, method: str, timeout: float = 30.0) -> dict:
        """The first event `method` not seen yet (kept ones included)."""
        for event in self.events:
            if event["method"] == method and not event.get("_seen"):
                event["_seen"] = True
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline, method)
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    message["_seen"] = True
                    return message

    def load(self, url: str, timeout: float = 60.0) -> None:
        """Navigate and wait for the load event (scripts run, inline figures drawn)."""
        self.send("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, timeout
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.1)

    def problems(self) -> list[str]:
        """What the page reported as wrong so far: uncaught exceptions, console.error/assert, browser log
        errors (a refused fetch, a content-security-policy violation), and any dialog a script opened."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console." + params["type"] + ": " + " ".join(str(a.get("value")) for a in params["args"]))
            elif event["method"] == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(f"log: {params['entry'].get('text')}")
            elif event["method"] == "Page.javascriptDialogOpening":
                found.append(f"dialog: {params.get('type')} {params.get('message')}")
        return found

    def screenshot(self, path: Path, width: int = WIDTH) -> None:
        """A PNG of the whole page at `width` CSS pixels."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )
        height = self.evaluate("Math.ceil(document.documentElement.scrollHeight)")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.evaluate("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, timeout=60.0)
        path.write_bytes(base64.b64decode(shot["data"]))


def _devtools_port(profile: Path, process: subprocess.Popen, timeout: float) -> int:
    """The port Chromium chose: the first line of DevToolsActivePort in its profile."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode} before it listened")
        if marker.exists():
            lines = marker.read_text().splitlines()
            if len(lines) >= 2:
                return int(lines[0])
        time.sleep(0.05)
    raise TimeoutError(f"chromium did not start listening within {timeout:.0f} s")


def _page_socket_url(port: int, timeout: float) -> str:
    """The websocket of the page Chromium opened (about:blank)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, whatever *_proxy says
        with direct.open(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as answer:
            targets = json.load(answer)
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.05)
    raise TimeoutError("chromium opened no page")


def _stop(process: subprocess.Popen) -> None:
    """End the browser we started and its helper processes, by its process group: politely, then for
    good."""
    import os
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str] | None = None) -> int:
    """`python tests/browser.py PAGE.html SHOT.png [WIDTH]`: a screenshot of a page (docs/report.png)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print("usage: python tests/browser.py PAGE.html SHOT.png [WIDTH]", file=sys.stderr)
        return 2
    page, shot = Path(args[0]).resolve(), Path(args[1])
    with Chromium.start() as browser:
        browser.load(page.as_uri())
        browser.wait_until("document.querySelectorAll('[data-chart] .main-svg').length > 0")
        problems = browser.problems()
        browser.screenshot(shot, int(args[2]) if len(args) == 3 else WIDTH)
    for problem in problems:
        print(f"page: {problem}", file=sys.stderr)
    print(f"wrote {shot}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
