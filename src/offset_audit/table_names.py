"""The names of the tables an output folder holds, spelled once: the runs that write them, the views that
read them, the upkeep that prunes them and the API all import them from here (the layout test fails on a
second spelling).

The snapshot tables are grouped by the kind of snapshot that has rows in them (its command); `snapshots`
lists every snapshot of a folder, one row per kind and id (written by outputs.snapshot_tables, read by
views.audit_folder, pruned by runs.upkeep); `runs` has one row per run.
"""

from __future__ import annotations

RUNS_TABLE = "runs"
SNAPSHOTS_TABLE = "snapshots"

PARTITION_VERDICTS = "partition_verdicts"
GROUP_VERDICTS = "group_verdicts"
DELETION_CANDIDATES = "deletion_candidates"
WHATIF_TABLE = "whatif"
WHATIF_GROUPS = "whatif_groups"
OFFSET_HISTORY = "offset_history"

# The kinds of snapshot: the commands that write them.
AUDIT, WHATIF, HISTORY = "audit", WHATIF_TABLE, "history"
SNAPSHOT_TABLES = {
    AUDIT: (PARTITION_VERDICTS, GROUP_VERDICTS, DELETION_CANDIDATES),
    WHATIF: (WHATIF_TABLE, WHATIF_GROUPS),
    HISTORY: (OFFSET_HISTORY,),
}
KIND_OF_TABLE = {table: kind for kind, tables in SNAPSHOT_TABLES.items() for table in tables}
