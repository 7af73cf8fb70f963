"""`offset-audit metrics` at scale: samples, bytes, build time and a real node_exporter scrape per granularity.

    .venv/bin/python bench/metrics_scale.py --audit DIR [--max-samples N]

For each granularity, the default budget and no budget: the samples written, the file's size, the
seconds `snapshot_metrics` takes (warm, in this process), and the seconds one scrape of a node_exporter
(Debian's, from `make prometheus`) serving the file takes, with the bytes it moved. Prints a Markdown
table (docs/performance.md shows one).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_EXPORTER = ROOT / ".prometheus" / "root" / "usr" / "bin" / "prometheus-node-exporter"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _scrape(textfile: Path) -> tuple[float, int]:
    """Seconds and bytes of one scrape of node_exporter's textfile collector serving `textfile`, best of 3."""
    port = _port()
    process = subprocess.Popen(
        [str(NODE_EXPORTER), f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
         "--collector.textfile", f"--collector.textfile.directory={textfile.parent}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(100):
            try:  # its landing page: a scrape of a big file outlasts a short timeout, and piles up
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        best, size = float("inf"), 0
        for _ in range(3):
            started = time.perf_counter()
            with urllib.request.urlopen(url, timeout=120) as answer:
                size = len(answer.read())
            best = min(best, time.perf_counter() - started)
        return best, size
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from offset_audit.views.metric_scope import DEFAULT_MAX_SAMPLES, Scope
    from offset_audit.views.prometheus import snapshot_metrics

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audit", required=True)
    parser.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES)
    args = parser.parse_args()
    snapshot_metrics(args.audit)  # warm: imports, the first delta-rs read
    print("| granularity | budget | samples | left out | file MiB | build s | scrape s | scrape MiB |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for granularity in ("group", "topic", "partition"):
            for budget in (args.max_samples, 10**9):
                scope = Scope(granularity=granularity, max_samples=budget)
                started = time.perf_counter()
                result = snapshot_metrics(args.audit, scope=scope)
                built = time.perf_counter() - started
                text = result.text.encode()
                textfile = Path(scratch) / "offset_audit.prom"
                textfile.write_bytes(text)
                scraped, size = _scrape(textfile) if NODE_EXPORTER.is_file() else (float("nan"), 0)
                left = f"{result.wanted - result.samples:,}" if result.left_out else "0"
                shown = f"{budget:,}" if budget < 10**9 else "none"
                print(
                    f"| {granularity} | {shown} | {result.samples:,} | {left} | {len(text) / 2**20:.1f} | "
                    f"{built:.2f} | {scraped:.2f} | {size / 2**20:.1f} |"
                )


if __name__ == "__main__":
    main()
