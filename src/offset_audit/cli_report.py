"""`offset-audit report`: one self-contained HTML page of an audit folder's charts and tables.

A read command: the audit's Delta tables through delta-rs and pyarrow (`html_report.read_audit`), no
Spark, an answer in about a second. The page itself is `html_report.render`.
"""

from __future__ import annotations

import click

from offset_audit.cli_common import (
    AUDIT_DIR_OPTION,
    READ_CONF_OPTION,
    STORAGE_OPTION,
    _user_errors,
    read_storage,
)
from offset_audit.escaping import terminal
from offset_audit.storage import Storage, is_remote, normalize, replace_file
from offset_audit.views.html_report import DEFAULT_DAYS


@click.command("report")
@AUDIT_DIR_OPTION
@click.option(
    "--output",
    required=True,
    metavar="PATH",
    help="the HTML file to write (local or s3://); it opens offline: plotly.js and the styles are inline.",
)
@click.option("--snapshot-id", default=None, help="which snapshot (default: the newest).")
@click.option(
    "--days",
    default=DEFAULT_DAYS,
    show_default=True,
    type=click.IntRange(min=1, max=3660),
    help="how many days after as_of the expiry chart covers.",
)
@STORAGE_OPTION
@READ_CONF_OPTION
@_user_errors
def report(audit_dir, output, snapshot_id, days, storage_options, conf_file) -> None:
    """Write one HTML page summarising an audit folder: offsets expiring per day by rule, groups by state
    and verdict, the what-if curve, lag by group, the snapshots' history, the top deletion candidates and
    the soonest expiries.

    Every name from the dump on the page is escaped: a group id cannot add markup or run a script.
    """
    from offset_audit.views.html_report import read_audit, render

    storage = read_storage(conf_file, storage_options)
    audit_dir, output = normalize(audit_dir), normalize(output)
    from offset_audit.runs import preflight

    preflight.check_output_file(output, storage)
    page = render(read_audit(audit_dir, snapshot_id, storage), days)
    written = write_page(output, page.html, storage)
    click.echo(
        f"wrote {terminal(output)} ({written // 1024:,} KiB): {page.drawn} charts, "
        f"snapshot {terminal(page.snapshot_id)}"
    )


def write_page(output: str, html: str, storage: Storage) -> int:
    """Write the page whole: locally through a temporary file renamed over `output`, so a reader never
    sees half a page. Returns its size in bytes."""
    data = html.encode("utf-8")
    if is_remote(output):
        with storage.open_output_stream(output) as stream:
            stream.write(data)
        return len(data)
    replace_file(output, data)
    return len(data)
