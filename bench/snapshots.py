"""What the read commands cost in a folder of a year of scheduled runs, and what retention and upkeep do.

    .venv/bin/python bench/snapshots.py [--records 300000] [--snapshots 1000] [--keep 48]

One audit of a generated dump of --records records, with end offsets so the history chart has lag;
then its snapshot written again under earlier times until the folder holds --snapshots, each copy one
commit per table through delta-rs' writer, as a run's is (offset_audit.generator.snapshot_folder).
describe, metrics, delete-plan and report are timed on the one-snapshot folder, on the full one, after
`tidy` (compaction and checkpoints, nothing removed) and after `tidy --keep-snapshots --keep
--deleted-file-retention 0`: in process (the median of 5, the views called directly: what each command
costs itself) and whole process (the median of 3 commands as a user runs them, Python's start and
imports included).
Beside them, the folder's files: live, on the store, and _delta_log's files and bytes.

Prints a Markdown table (docs/performance.md shows it) and writes bench-data/snapshots.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
PROGRAM = [str(Path(sys.executable).parent / "offset-audit")]
COMMANDS = ("describe", "metrics", "delete-plan", "report")


def audit_once(records: int, folder: Path) -> None:
    """The template: one audit of a generated dump, with the end offsets the generator gives it."""
    dump, ends = folder.parent / "dump", folder.parent / "end-offsets.txt"
    subprocess.run(
        [*PROGRAM, "generate", "--output", str(dump), "--records", str(records), "--seed", "1",
         "--end-offsets", str(ends)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    subprocess.run(
        [*PROGRAM, "audit", "--input", str(dump), "--output", str(folder), "--end-offsets", str(ends), "--quiet"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def in_process(folder: str, command: str) -> None:
    from offset_audit.views import audit_folder, html_report
    from offset_audit.views.describe import read_described, render
    from offset_audit.views.prometheus import snapshot_metrics

    if command == "describe":
        render(read_described(folder, audit_folder.LOCAL, [], None, None, None))
    elif command == "metrics":
        _ = snapshot_metrics(folder).text
    elif command == "delete-plan":
        audit_folder.delete_plan(folder)
    else:
        html_report.render(html_report.read_audit(folder))


def whole_process(folder: str, command: str, scratch: Path) -> list[str]:
    args = {
        "describe": ["describe", "--audit", folder],
        "metrics": ["metrics", "--audit", folder],
        "delete-plan": ["delete-plan", "--audit", folder],
        "report": ["report", "--audit", folder, "--output", str(scratch / "report.html")],
    }[command]
    return [*PROGRAM, *args]


def timed(folder: str, scratch: Path) -> dict[str, dict[str, float]]:
    out = {}
    for command in COMMANDS:
        in_process(folder, command)  # imports and caches warmed
        warm = []
        for _ in range(5):
            started = time.perf_counter()
            in_process(folder, command)
            warm.append(time.perf_counter() - started)
        whole = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run(whole_process(folder, command, scratch), check=True, stdout=subprocess.DEVNULL)
            whole.append(time.perf_counter() - started)
        out[command] = {"in_process_s": statistics.median(warm), "whole_process_s": statistics.median(whole)}
    return out


def files(folder: str) -> dict[str, int]:
    from offset_audit.outputs.folder_layout import audit_tables
    from offset_audit.outputs.table_upkeep import table_files
    from offset_audit.storage import LOCAL

    tables = [table_files(f"{folder}/{t}", LOCAL) for t in audit_tables(folder, LOCAL)]
    return {
        "tables": len(tables),
        "live_files": sum(t.live_files for t in tables),
        "data_files": sum(t.data_files for t in tables),
        "log_files": sum(t.log_files for t in tables),
        "log_bytes": sum(t.log_bytes for t in tables),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--keep", type=int, default=48)
    args = parser.parse_args()

    from offset_audit.generator.snapshot_folder import repeat_snapshot
    from offset_audit.outputs.delta import DELTA_RS, TableWriter
    from offset_audit.runs.upkeep import tidy
    from offset_audit.settings import KeepSnapshots
    from offset_audit.storage import LOCAL
    from offset_audit.views.audit_folder import read_snapshot, snapshots

    writer = TableWriter(DELTA_RS, LOCAL)
    DATA.mkdir(exist_ok=True)  # run on its own, before make bench made it
    with tempfile.TemporaryDirectory(dir=DATA) as scratch_dir:
        scratch = Path(scratch_dir)
        one = scratch / "one"
        audit_once(args.records, one)
        newest = snapshots(str(one))[-1].snapshot_id
        offsets = read_snapshot(str(one), "partition_verdicts", newest, columns=["group_id"]).num_rows
        year = scratch / "year"
        shutil.copytree(one, year)
        started = time.perf_counter()
        repeat_snapshot(str(year), args.snapshots - 1)
        built = time.perf_counter() - started
        rows = []
        for name, folder in (("1 snapshot", str(one)), (f"{args.snapshots} snapshots", str(year))):
            rows.append({"stage": name, "times": timed(folder, scratch), "files": files(folder)})
        started = time.perf_counter()
        tidy(str(year), writer, None, None, 10080)
        rows.append(
            {
                "stage": f"{args.snapshots} snapshots after tidy",
                "tidy_s": time.perf_counter() - started,
                "times": timed(str(year), scratch),
                "files": files(str(year)),
            }
        )
        started = time.perf_counter()
        tidy(str(year), writer, None, KeepSnapshots(count=args.keep), 0)
        rows.append(
            {
                "stage": f"after tidy --keep-snapshots {args.keep} (retention 0)",
                "tidy_s": time.perf_counter() - started,
                "times": timed(str(year), scratch),
                "files": files(str(year)),
            }
        )
        assert len(snapshots(str(year))) == args.keep
    result = {"records": args.records, "offsets": offsets, "snapshots": args.snapshots, "build_s": built, "rows": rows}
    (DATA / "snapshots.json").write_text(json.dumps(result, indent=2))
    base = rows[0]["times"]
    print(
        f"{offsets:,} offsets a snapshot; {args.snapshots} snapshots built in {built:.0f} s "
        f"({args.snapshots - 1} copies, 5 commits each)\n"
    )
    print("| folder | " + " | ".join(f"{c} in process / whole" for c in COMMANDS) + " | live files | files on store "
          "| _delta_log files | _delta_log MiB | tidy |")  # fmt: skip
    print("|---|" + "---:|" * (len(COMMANDS) + 5))
    for row in rows:
        cells = []
        for command in COMMANDS:
            t, b = row["times"][command], base[command]
            ratio = t["in_process_s"] / b["in_process_s"]
            cells.append(f"{t['in_process_s'] * 1000:.0f} ms ({ratio:.2f}x) / {t['whole_process_s']:.2f} s")
        f = row["files"]
        tidy_cell = f"{row['tidy_s']:.1f} s" if "tidy_s" in row else ""
        print(
            f"| {row['stage']} | " + " | ".join(cells) + f" | {f['live_files']:,} | {f['data_files']:,} | "
            f"{f['log_files']:,} | {f['log_bytes'] / 1048576:.1f} | {tidy_cell} |"
        )


if __name__ == "__main__":
    main()
