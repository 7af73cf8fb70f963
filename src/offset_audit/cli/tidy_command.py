"""`offset-audit tidy`: snapshot retention and table upkeep of an output folder, on its own schedule.

delta-rs only, no Spark: it opens each table, deletes, compacts, vacuums and checkpoints, which takes
seconds, not a Spark start. The runs that write snapshots do the same after themselves when
--keep-snapshots ([output] keep_snapshots) is set, through their own writer.
"""

from __future__ import annotations

import click

from offset_audit.cli.options import DURATION, KEEP, AuditFolder, audit_folder_options, emit


@click.command()
@audit_folder_options
@click.option(
    "--keep-snapshots",
    type=KEEP,
    default=None,
    metavar="N|DURATION",
    help="keep only the newest N snapshots of each command (48), or those judged within DURATION of the "
    "newest (30d); default [output] keep_snapshots, and without either no snapshot is removed.",
)
@click.option(
    "--deleted-file-retention",
    type=DURATION,
    default=None,
    metavar="DURATION",
    help="vacuum the files no table version within DURATION lists (default [output] deleted_file_retention, "
    "7d as Delta's): a reader on an older version keeps its files that long.",
)
@click.option("--json", "as_json", is_flag=True, help="print one JSON document instead of the summary.")
def tidy(audit: AuditFolder, keep_snapshots, deleted_file_retention: int | None, as_json: bool) -> None:
    """Remove old snapshots and compact, vacuum and checkpoint the tables of an audit's output folder.

    Only a folder with a runs table, and only the tables this tool keeps there (docs/upkeep.md); never
    the state under DIR/state (its log included) nor the runs rows."""
    from offset_audit.errors import InputNotFound, UserError
    from offset_audit.outputs.delta import DELTA_RS, TableWriter
    from offset_audit.outputs.folder_layout import is_audit_folder
    from offset_audit.runs.upkeep import tidy as tidy_folder
    from offset_audit.views.summary import upkeep_lines

    settings = audit.settings.output
    keep = keep_snapshots if keep_snapshots is not None else settings.keep_snapshots
    retention = settings.deleted_file_retention_minutes if deleted_file_retention is None else deleted_file_retention
    if not audit.storage.exists(audit.path):
        raise InputNotFound(f"'{audit.path}' does not exist: give the --output folder of an audit")
    if not is_audit_folder(audit.path, audit.storage):
        raise UserError(
            f"'{audit.path}' is not an audit's output folder (it holds no runs table), and tidy touches no other: "
            "give the --output folder of an audit"
        )
    done = tidy_folder(audit.path, TableWriter(DELTA_RS, audit.storage), None, keep, retention).document()
    emit(as_json, lambda: {"folder": audit.path, "upkeep": done}, lambda: "\n".join(upkeep_lines(done)))
