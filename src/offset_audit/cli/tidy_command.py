"""`offset-audit tidy`: snapshot retention and table upkeep of an output folder, on its own schedule.

delta-rs only, no Spark: it opens each table, deletes, compacts, vacuums and checkpoints, which takes
seconds, not a Spark start. The runs that write snapshots do the same after themselves when
--keep-snapshots ([output] keep_snapshots) is set, through their own writer.
"""

from __future__ import annotations

import click

from offset_audit.cli.options import AuditFolder, audit_folder_options, emit, setting_option


@click.command()
@audit_folder_options
@setting_option(
    "keep_snapshots",
    help="keep only the newest N snapshots of each command (48), or those judged within DURATION of the newest "
    "(30d); without it no snapshot is removed.",
)
@setting_option("deleted_file_retention_minutes")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document instead of the summary.")
def tidy(audit: AuditFolder, as_json: bool) -> None:
    """Remove old snapshots and compact, vacuum and checkpoint the tables of an audit's output folder.

    Only a folder with a runs table, and only the tables this tool keeps there (docs/upkeep.md); never
    the state under DIR/state (its log included) nor the runs rows."""
    from offset_audit.errors import InputNotFound, UserError
    from offset_audit.outputs.delta import DELTA_RS, TableWriter
    from offset_audit.outputs.folder_layout import is_audit_folder
    from offset_audit.runs.upkeep import tidy as tidy_folder
    from offset_audit.views.summary import upkeep_lines

    keep, retention = audit.settings.output.keep_snapshots, audit.settings.output.deleted_file_retention_minutes
    if not audit.storage.exists(audit.path):
        raise InputNotFound(f"'{audit.path}' does not exist: give the --output folder of an audit")
    if not is_audit_folder(audit.path, audit.storage):
        raise UserError(
            f"'{audit.path}' is not an audit's output folder (it holds no runs table), and tidy touches no other: "
            "give the --output folder of an audit"
        )
    done = tidy_folder(audit.path, TableWriter(DELTA_RS, audit.storage), None, keep, retention).document()
    emit(as_json, lambda: {"folder": audit.path, "upkeep": done}, lambda: "\n".join(upkeep_lines(done)))
