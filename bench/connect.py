"""The audit on a Spark Connect server beside the same audit on a classic session, in one run.

    .venv/bin/python bench/connect.py [--records 300000] [--repeats 2]

A server is started by docs/cluster.md's recipe (tests/live_services.connect_server: local[2], the
machine's two cores, 4 GiB),
and the generated Parquet dump `make bench` measures (bench-data/dump-<records>-1) is audited:

- warm, in one client process: `api.audit` on the remote session, best of `--repeats` after a warm-up;
  beside it `api.audit` on a classic local session with delta-spark (the route a Connect run takes:
  decoding through DataFrames, tables written by format("delta")), and on the classic default session
  (the direct route, delta-rs), each in a process of its own;
- whole-process: `offset-audit audit --remote` against the warm server, beside `offset-audit audit` with
  a --conf file that gives its local session delta-spark, and the default `offset-audit audit`.

A process that opens a Connect session turns pyspark's functions to their Connect forms for any session
it holds, so each kind of session runs in its own process. Prints a Markdown table (docs/performance.md
shows it) and writes bench-data/connect.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run_bench import dump_for  # bench/ is on the path of a script run from it

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
PROGRAM = str(Path(sys.executable).parent / "offset-audit")

# Run in a process of its own: the warm seconds of api.audit on one kind of session.
WARM = """
import json, sys, time, glob, shutil
from offset_audit import api
kind, dump, out, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if kind == "connect":
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(sys.argv[5]).getOrCreate()
else:
    from offset_audit.runtime.session import get_spark
    conf = {}
    if kind == "classic-delta":
        jars = sorted(glob.glob(sys.argv[5] + "/*.jar"))
        conf = {"spark.jars": ",".join(jars), "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
    spark = get_spark(conf)
seconds = []
for run in range(repeats + 1):
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    with api.audit(spark, dump, output=out) as audit:
        rows = audit.result.offsets
    seconds.append(time.perf_counter() - started)
print(json.dumps({"warm": min(seconds[1:]), "first": seconds[0], "offsets": rows}))
"""


def warm(kind: str, dump: Path, out: Path, repeats: int, extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WARM, kind, str(dump), str(out), str(repeats), extra],
        capture_output=True, text=True, env=client_env(),
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"{kind}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def whole(args: list[str], out: Path, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        done = subprocess.run([PROGRAM, "audit", *args, "--output", str(out), "-q"], capture_output=True,
                              text=True, env=client_env())  # fmt: skip
        if done.returncode:
            raise SystemExit(f"offset-audit audit {args}: {done.stderr[-3000:]}")
        seconds.append(time.perf_counter() - started)
    return min(seconds)


def client_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_GATEWAY", "SPARK_CONNECT_MODE"))}
    env.pop("SPARK_REMOTE", None)
    env["OFFSET_AUDIT_WARM"] = "0"  # no warm session takes the runs
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from live_services import connect_server

    dump = dump_for(args.records, 1)
    jars = ROOT / ".jars" / "spark"
    with tempfile.TemporaryDirectory(prefix="offset-audit-connect-bench-") as scratch:
        folder = Path(scratch)
        conf = folder / "delta.toml"
        jar_list = ",".join(sorted(str(p) for p in jars.glob("*.jar")))
        conf.write_text(
            f'[spark]\n"spark.jars" = "{jar_list}"\n'
            '"spark.sql.extensions" = "io.delta.sql.DeltaSparkSessionExtension"\n'
            '"spark.sql.catalog.spark_catalog" = "org.apache.spark.sql.delta.catalog.DeltaCatalog"\n'
        )
        figures = {
            "records": args.records,
            "classic default, warm": warm("classic", dump, folder / "a", args.repeats, ""),
            "classic delta-spark, warm": warm("classic-delta", dump, folder / "b", args.repeats, str(jars)),
            "classic default, whole process": whole(["--input", str(dump)], folder / "d", args.repeats),
            "classic delta-spark, whole process": whole(
                ["--input", str(dump), "--conf", str(conf)], folder / "e", args.repeats
            ),
        }
        started = time.perf_counter()
        with connect_server(folder, cores=2, memory="4g") as server:  # docs/cluster.md's recipe
            figures["server start"] = time.perf_counter() - started
            figures["Connect, warm"] = warm("connect", dump, folder / "c", args.repeats, server.url)
            remote = ["--input", str(dump), "--remote", server.url]
            figures["Connect, whole process"] = whole(remote, folder / "f", args.repeats)
    offsets = {figures[k]["offsets"] for k in figures if isinstance(figures[k], dict)}
    assert len(offsets) == 1, f"the sessions judged different offsets: {offsets}"
    same_route = figures["classic delta-spark, warm"]["warm"]
    print(f"\n{args.records:,} records (Parquet), audit seconds on 2 cores; ratio to classic with delta-spark\n")
    print("| session | warm (in one process) | ratio | first run | whole process |")
    print("|---|---|---|---|---|")
    for kind, process in (("classic default", "classic default, whole process"),
                          ("classic delta-spark", "classic delta-spark, whole process"),
                          ("Connect", "Connect, whole process")):  # fmt: skip
        w = figures[f"{kind}, warm"]
        ratio = w["warm"] / same_route
        print(f"| {kind} | {w['warm']:.2f} s | {ratio:.2f} | {w['first']:.2f} s | {figures[process]:.1f} s |")
    print(f"\nThe server's start (spark-submit to listening): {figures['server start']:.1f} s")
    DATA.mkdir(exist_ok=True)
    (DATA / "connect.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
