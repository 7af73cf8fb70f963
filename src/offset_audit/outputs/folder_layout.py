"""Where an audit folder keeps its tables: the names every command writes under its --output, and the
list that upkeep (runs.upkeep, `offset-audit tidy`) works on, so that it touches this tool's tables and
nothing else a folder may hold (docs/upkeep.md).

    DIR/                    runs, snapshots, the snapshot tables (partition_verdicts, whatif, ...),
                            the decode command's tables and share's
    DIR/decoded/            the decode tables an audit, what-if or history rebuilds the state from
    DIR/state/              an incremental audit's state
    DIR/clusters/NAME/      decoded/, state/ and the share tables of each cluster of a fleet but the
                            first (runs.clusters)
    DIR/history/            what `history --audit DIR` writes: an audit folder of its own
"""

from __future__ import annotations

from offset_audit.decoding.decoder import TABLES
from offset_audit.outputs.audit_state import STATE_TABLES
from offset_audit.outputs.share_tables import SHARE_TABLES
from offset_audit.storage import Storage, join
from offset_audit.table_names import RUNS_TABLE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE

DECODED = "decoded"
CLUSTERS = "clusters"
HISTORY = "history"
# The tables an audit folder may hold at its top: every snapshot table, the snapshots and runs tables,
# the decode command's tables and share's.
ROOT_TABLES = (
    *(t for tables in SNAPSHOT_TABLES.values() for t in tables),
    SNAPSHOTS_TABLE,
    RUNS_TABLE,
    *TABLES,
    *(t for t in SHARE_TABLES if t not in TABLES),
)


def is_audit_folder(folder: str, storage: Storage) -> bool:
    """Whether `folder` holds a runs table: every command that writes tables writes its row there."""
    return _is_table(folder, RUNS_TABLE, storage)


def audit_tables(folder: str, storage: Storage) -> list[str]:
    """The tables this tool keeps in an audit folder, as paths relative to it ("runs",
    "decoded/offset_commits"): those of ROOT_TABLES it holds, each cluster's working tables, and the
    history folder's. None when `folder` is no audit folder. Any other table in it is someone else's."""
    if not is_audit_folder(folder, storage):
        return []
    found = [t for t in ROOT_TABLES if _is_table(folder, t, storage)]
    homes = [""]
    clusters = join(folder, CLUSTERS)
    if storage.is_dir(clusters):
        homes += [f"{CLUSTERS}/{name}/" for name in sorted(storage.entries(clusters)) if not name.startswith(".")]
    for home in homes:
        working = [f"{DECODED}/{t}" for t in TABLES] + list(STATE_TABLES) + (list(SHARE_TABLES) if home else [])
        found += [f"{home}{t}" for t in working if _is_table(folder, f"{home}{t}", storage)]
    found += [f"{HISTORY}/{t}" for t in audit_tables(join(folder, HISTORY), storage)]
    return sorted(found)


def _is_table(folder: str, table: str, storage: Storage) -> bool:
    return storage.is_dir(join(folder, table, "_delta_log"))
