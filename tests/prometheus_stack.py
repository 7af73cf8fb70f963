"""Prometheus, node_exporter's textfile collector and the Pushgateway, started by the tests on loopback from
Debian's binaries (`make prometheus` unpacks them into .prometheus/root) and stopped by pid.

Each is a context manager for `live_services.live`, which skips the test with the reason when the binaries
are not there (in CI such a skip fails the run: tests/ci_gate.py).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from live_services import LOOPBACK, Unavailable, _start, _stop, free_port
from repo_paths import ROOT

FOLDER = ROOT / ".prometheus"
BINARIES = {
    "prometheus": "usr/bin/prometheus",
    "promtool": "usr/bin/promtool",
    "node_exporter": "usr/bin/prometheus-node-exporter",
    "pushgateway": "usr/bin/prometheus-pushgateway",
}


def binary(name: str) -> Path:
    """The unpacked binary, or Unavailable with why it is not there."""
    path = FOLDER / "root" / BINARIES[name]
    if path.is_file():
        return path
    said = FOLDER / "unavailable"
    if said.is_file():
        raise Unavailable(said.read_text().strip())
    raise Unavailable(f"{path} is missing: run make prometheus (Debian's {name} package, unpacked)")


@dataclass(frozen=True)
class Served:
    """A started server: its base URL and its process id."""

    url: str
    pid: int


def _wait_until_ready(url: str, process: subprocess.Popen, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{url} exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {seconds} s: {log.read_text()[-2000:]}")


@contextmanager
def _served(command: list[str], ready_path: str, port: int, log: Path) -> Iterator[Served]:
    process = _start(command, log)
    try:
        base = f"http://{LOOPBACK}:{port}"
        _wait_until_ready(base + ready_path, process, log)
        yield Served(base, process.pid)
    finally:
        _stop(process)


@contextmanager
def node_exporter(textfile_dir: Path, folder: Path) -> Iterator[Served]:
    """node_exporter with only its textfile collector, reading `textfile_dir`."""
    port = free_port()
    command = [
        str(binary("node_exporter")),
        f"--web.listen-address={LOOPBACK}:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfile_dir}",
    ]
    with _served(command, "/metrics", port, folder / "node_exporter.log") as served:
        yield served


@contextmanager
def pushgateway(folder: Path) -> Iterator[Served]:
    port = free_port()
    command = [str(binary("pushgateway")), f"--web.listen-address={LOOPBACK}:{port}"]
    with _served(command, "/-/ready", port, folder / "pushgateway.log") as served:
        yield served


@contextmanager
def prometheus(folder: Path, targets: dict[str, str], rule_files: list[Path]) -> Iterator[Served]:
    """Prometheus scraping `targets` (job -> host:port) every second, honouring pushed labels, with the
    rules evaluated every second."""
    port = free_port()
    scrape = [
        {
            "job_name": job,
            "honor_labels": job == "pushgateway",
            "scrape_interval": "1s",
            "static_configs": [{"targets": [target]}],
        }
        for job, target in targets.items()
    ]
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": scrape,
    }
    config_file = folder / "prometheus.yml"
    config_file.write_text(json.dumps(config, indent=2))  # JSON is YAML
    command = [
        str(binary("prometheus")),
        f"--config.file={config_file}",
        f"--storage.tsdb.path={folder / 'tsdb'}",
        f"--web.listen-address={LOOPBACK}:{port}",
        "--web.enable-lifecycle",
    ]
    with _served(command, "/-/ready", port, folder / "prometheus.log") as served:
        yield served


def query(prometheus_url: str, promql: str) -> list[dict]:
    """An instant query's result vector (or the scalar as one unlabelled sample): [{"metric", "value"}]."""
    url = f"{prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=30) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    data = body["data"]
    if data["resultType"] == "scalar":
        return [{"metric": {}, "value": data["result"]}]
    return data["result"]


def values(prometheus_url: str, promql: str) -> dict[frozenset, float]:
    """An instant query's samples as {labels without job and instance: value}."""
    out = {}
    for sample in query(prometheus_url, promql):
        labels = {k: v for k, v in sample["metric"].items() if k not in ("job", "instance")}
        out[frozenset(labels.items())] = float(sample["value"][1])
    return out


def alerts(prometheus_url: str) -> list[dict]:
    with urllib.request.urlopen(f"{prometheus_url}/api/v1/alerts", timeout=30) as answer:
        return json.load(answer)["data"]["alerts"]


def wait_for(what: str, check, seconds: float = 60, pause: float = 0.5):
    """`check()`'s first truthy answer, or an AssertionError naming `what`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answer = check()
        if answer:
            return answer
        time.sleep(pause)
    raise AssertionError(f"waited {seconds} s for {what}")
