"""What an audit costs beyond its records: whole-process `audit` runs beside Spark's own start, and the
seconds and Spark jobs of each stage.

    .venv/bin/python bench/fixed_cost.py [--sizes 1000,300000] [--baseline REF] [--repeats 2] [--topic-scale 30]

For each size the generated Parquet dump `make bench` measures (bench-data/dump-<records>-1, made once)
is audited:

- whole-process: `offset-audit audit` as a user runs it, best of `--repeats` runs, with its stages' seconds
  read from its progress lines on stderr;
- beside it, Spark's start: a process that only starts a local session as the audit would for that dump
  (the same JVM options) and stops; and a process that only imports the CLI;
- warm, in one process: the stages' seconds and the Spark jobs each one ran (from Spark's status tracker),
  best of two after a warm-up run;
- the same whole-process audit handed to a warm session (`offset-audit warm start`, in a cache folder of
  its own), best of `--repeats` runs after the session's own warm-up;
- with `--baseline REF` (a commit, e.g. HEAD~3): the same whole-process audit run by that commit's code,
  checked out in a git worktree and put first on PYTHONPATH, in the same run.

Prints Markdown tables (docs/performance.md shows them) and writes bench-data/fixed-cost.json (with
`--topic-scale N`, fixed-cost-wideN.json).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from floors import best  # bench/ is on the path of a script run from it
from run_bench import dump_for

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
CLI = [sys.executable, "-m", "offset_audit.cli.main"]
# The program as users run it: it hands a run to a warm session when one runs.
PROGRAM = [str(Path(sys.executable).parent / "offset-audit")]
STAGE_DONE = re.compile(r"^offset-audit: (.+?) done \((?:[\d,]+ \w+, )?([\d.]+)s\)$")


def _stage_name(name: str) -> str:
    return re.sub(r"^decoding [\d,]+ records", "decoding", name)


def whole_audit(
    dump: Path, output: Path, env: dict[str, str] | None = None, program: list[str] = CLI
) -> tuple[float, dict[str, float]]:
    """Seconds of one `offset-audit audit` process, and its stages' seconds from its progress lines."""
    shutil.rmtree(output, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run(
        [*program, "audit", "--input", str(dump), "--output", str(output)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"audit of {dump} failed:\n{done.stderr[-3000:]}")
    stages = {}
    for line in done.stderr.splitlines():
        match = STAGE_DONE.match(line.strip())
        if match:
            stages[_stage_name(match.group(1))] = float(match.group(2))
    return seconds, stages


def best_whole_audit(
    dump: Path, repeats: int, env: dict[str, str] | None = None, program: list[str] = CLI
) -> tuple[float, dict[str, float]]:
    output = Path(tempfile.mkdtemp(prefix="fixed-cost-"))
    try:
        runs = (whole_audit(dump, output / "audit", env, program) for _ in range(repeats))
        return min(runs, key=lambda r: r[0])
    finally:
        shutil.rmtree(output, ignore_errors=True)


SPARK_ONLY = """
import sys, time
started = time.perf_counter()
from offset_audit.runtime.session import get_spark
spark = get_spark(None, int(sys.argv[1]))
print(time.perf_counter() - started)
spark.stop()
"""


def spark_start(dump: Path, repeats: int) -> tuple[float, float]:
    """Spark's start for this dump: seconds to a session in-process (imports included), and of the whole
    process that starts it and stops, best of `repeats`."""
    from offset_audit.inputs.opened import open_dump
    from offset_audit.runtime.config import load_settings

    size = open_dump([str(dump)], load_settings()).size
    best_up, best_whole = float("inf"), float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", SPARK_ONLY, str(size)], capture_output=True, text=True, check=True, cwd=ROOT
        )
        best_whole = min(best_whole, time.perf_counter() - started)
        best_up = min(best_up, float(done.stdout.strip().splitlines()[-1]))
    return best_up, best_whole


@contextmanager
def warm_session() -> Iterator[dict[str, str]]:
    """A warm session of its own (its socket in a cache folder of its own, the small runs' class archive
    linked in); the environment whose runs it takes."""
    from offset_audit.warm import place

    cache = Path(tempfile.mkdtemp(prefix="fixed-cost-cache-"))
    (cache / "kafka-offset-audit").mkdir()
    for archive in place.cache_folder().glob("*.jsa"):
        (cache / "kafka-offset-audit" / archive.name).symlink_to(archive)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("OFFSET_AUDIT_WARM", None)
    try:
        subprocess.run([*PROGRAM, "warm", "start"], env=env, check=True, capture_output=True)
        yield env
    finally:
        subprocess.run([*PROGRAM, "warm", "stop"], env=env, capture_output=True)
        shutil.rmtree(cache, ignore_errors=True)


def cli_import(repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([*CLI, "--version"], capture_output=True, check=True, cwd=ROOT)
        best = min(best, time.perf_counter() - started)
    return best


def warm_stages(
    dumps: dict[int, Path],
) -> tuple[dict[int, dict[str, tuple[float, int]]], dict[int, dict[str, tuple[int, float]]]]:
    """Each stage's seconds and Spark jobs, warm: best of two audits after a warm-up, in this process;
    and the plain writes of the verdict tables the last one wrote (`plain_writes`)."""
    import io

    from offset_audit.runs.audit import run_audit
    from offset_audit.runtime import progress
    from offset_audit.runtime.config import load_settings
    from offset_audit.runtime.session import get_spark

    spark = get_spark()
    tracker = spark.sparkContext.statusTracker()
    marks: list[tuple[str, float, int]] = []
    begin = progress.Reporter.begin

    def marking(self, name, total, unit):
        marks.append((_stage_name(name), time.perf_counter(), len(tracker.getJobIdsForGroup(None))))
        begin(self, name, total, unit)

    progress.Reporter.begin = marking
    found = {}
    floors: dict[int, dict[str, tuple[int, float]]] = {}
    try:
        for records, dump in dumps.items():
            best: dict[str, tuple[float, int]] = {}
            for attempt in range(3):
                output = Path(tempfile.mkdtemp(prefix="fixed-cost-warm-"))
                marks.clear()
                with progress.reporting(True, spark, io.StringIO()):
                    run_audit(spark, [str(dump)], str(output / "audit"), load_settings())
                marks.append(("end", time.perf_counter(), len(tracker.getJobIdsForGroup(None))))
                if attempt == 2:
                    floors[records] = plain_writes(spark, output / "audit")
                shutil.rmtree(output, ignore_errors=True)
                if attempt == 0:
                    continue
                for (name, at, jobs), (_, until, jobs_after) in itertools.pairwise(marks):
                    seconds = until - at
                    if name not in best or seconds < best[name][0]:
                        best[name] = (seconds, jobs_after - jobs)
            found[records] = best
    finally:
        progress.Reporter.begin = begin
        spark.stop()
    return found, floors


VERDICT_TABLES = ("partition_verdicts", "deletion_candidates", "group_verdicts")


def plain_writes(spark, audit: Path) -> dict[str, tuple[int, float]]:
    """The floor of judging (issue: at most 1.5x it): Spark's own Parquet write (snappy) of the rows the
    audit wrote to each verdict table, held in memory first so that only the write is timed; best of
    three after a warm-up, as bench/floors.py times its floors. The rows and the seconds, by table."""
    from pyspark import StorageLevel

    found = {}
    for table in VERDICT_TABLES:
        rows = spark.read.parquet(str(audit / table)).persist(StorageLevel.MEMORY_ONLY)
        count = rows.count()
        target = Path(tempfile.mkdtemp(prefix="fixed-cost-floor-"))
        try:
            seconds = best(partial(rows.write.mode("overwrite").option("compression", "snappy").parquet, str(target)))
        finally:
            rows.unpersist()
            shutil.rmtree(target, ignore_errors=True)
        found[table] = (count, seconds)
    return found


def judging_stages(stages: dict) -> dict[str, list[str]]:
    """The verdict tables by the audit stage that judges and writes them, from the stages' own names (the
    candidates are written with the partition verdicts, by the same tasks)."""
    found: dict[str, list[str]] = {}
    for table in VERDICT_TABLES:
        stage = next(name for name in stages if name.startswith("judging and writing ") and table in name.split())
        found.setdefault(stage, []).append(table)
    return found


def baseline_env(ref: str) -> tuple[dict[str, str], Path]:
    """An environment whose Python imports the package as it was at `ref` (a git worktree)."""
    tree = Path(tempfile.mkdtemp(prefix="fixed-cost-baseline-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), ref], cwd=ROOT, check=True, capture_output=True)
    return {**os.environ, "PYTHONPATH": str(tree / "src")}, tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,300000", help="comma-separated record counts")
    parser.add_argument("--repeats", type=int, default=2, help="whole-process runs per figure (the best counts)")
    parser.add_argument("--baseline", help="a git commit whose code to run beside this one's (whole process)")
    parser.add_argument(
        "--topic-scale",
        type=int,
        default=1,
        help="audit make bench's wide dumps instead (generate --topic-scale, e.g. 30: many live offsets per record)",
    )
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    dumps = {records: dump_for(records, 1, args.topic_scale).resolve() for records in sizes}
    env, tree = (None, None) if not args.baseline else baseline_env(args.baseline)
    results = []
    try:
        cli = cli_import(args.repeats)
        with warm_session() as warm_env:
            in_session = {r: best_whole_audit(d, args.repeats, warm_env, PROGRAM)[0] for r, d in dumps.items()}
        for records, dump in dumps.items():
            up, whole_start = spark_start(dump, args.repeats)
            seconds, stages = best_whole_audit(dump, args.repeats)
            row = {
                "records": records,
                "audit_whole_s": round(seconds, 2),
                "spark_start_s": round(up, 2),
                "spark_start_whole_s": round(whole_start, 2),
                "cli_import_s": round(cli, 2),
                "beyond_spark_start_s": round(seconds - whole_start, 2),
                "audit_warm_session_s": round(in_session[records], 2),
                "stages_whole_s": stages,
            }
            if env is not None:
                old, old_stages = best_whole_audit(dump, args.repeats, env)
                row |= {"baseline": args.baseline, "baseline_audit_whole_s": round(old, 2)}
                row["baseline_stages_whole_s"] = old_stages
            results.append(row)
            print(json.dumps(row), flush=True)
    finally:
        if tree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    warm, floors = warm_stages(dumps)
    for row in results:
        row["stages_warm"] = {
            name: {"s": round(s, 2), "jobs": jobs} for name, (s, jobs) in warm[row["records"]].items()
        }
        row["plain_writes"] = {t: {"rows": n, "s": round(s, 2)} for t, (n, s) in floors[row["records"]].items()}
    name = "fixed-cost.json" if args.topic_scale == 1 else f"fixed-cost-wide{args.topic_scale}.json"
    (DATA / name).write_text(json.dumps(results, indent=2))
    print()
    head = (
        "| records | `audit`, whole process | Spark's start (process) | beyond Spark's start "
        "| `audit` in a warm session, whole process |"
    )
    rule = "|---|---|---|---|---|"
    if args.baseline:
        head += f" `audit` at {args.baseline} |"
        rule += "---|"
    print(head)
    print(rule)
    for row in results:
        line = (
            f"| {row['records']:,} | {row['audit_whole_s']:.1f} s | {row['spark_start_whole_s']:.1f} s "
            f"(session up in {row['spark_start_s']:.1f} s) | {row['beyond_spark_start_s']:.1f} s "
            f"| {row['audit_warm_session_s']:.1f} s |"
        )
        if args.baseline:
            line += f" {row['baseline_audit_whole_s']:.1f} s |"
        print(line)
    print()
    names = list(dict.fromkeys(name for row in results for name in [*row["stages_whole_s"], *row["stages_warm"]]))
    print("| stage | " + " | ".join(f"{r['records']:,}: whole process / warm (jobs)" for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for name in names:
        cells = []
        for row in results:
            cold = row["stages_whole_s"].get(name)
            hot = row["stages_warm"].get(name)
            whole = "-" if cold is None else f"{cold:.1f} s"
            cells.append(whole + " / " + ("-" if hot is None else f"{hot['s']:.2f} s ({hot['jobs']})"))
        print(f"| {name} | " + " | ".join(cells) + " |")
    jobs = {row["records"]: sum(v["jobs"] for v in row["stages_warm"].values()) for row in results}
    print()
    print("Spark jobs per audit: " + ", ".join(f"{n} at {r:,} records" for r, n in jobs.items()))
    print()
    print("| records | stage, warm | its tables' rows | Spark's plain write of them | ratio |")
    print("|---|---|---|---|---|")
    for row in results:
        for stage, tables in judging_stages(row["stages_warm"]).items():
            plain = sum(row["plain_writes"][t]["s"] for t in tables)
            rows = " + ".join(f"{row['plain_writes'][t]['rows']:,}" for t in tables)
            judged = row["stages_warm"][stage]["s"]
            print(f"| {row['records']:,} | {stage} | {rows} | {plain:.2f} s | {judged / plain:.1f}x |")


if __name__ == "__main__":
    main()
