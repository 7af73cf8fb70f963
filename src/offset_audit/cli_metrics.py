"""`offset-audit metrics`: an audited snapshot as Prometheus metrics, read from the Delta tables without
Spark, to stdout or atomically into node_exporter's textfile collector folder."""

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
from offset_audit.storage import normalize, replace_file


@click.command("metrics")
@AUDIT_DIR_OPTION
@click.option(
    "--output",
    default=None,
    metavar="FILE",
    help="write to this *.prom file, atomically (for node_exporter's textfile collector); default: stdout.",
)
@click.option("--snapshot-id", default=None, help="which snapshot (default: the newest).")
@STORAGE_OPTION
@READ_CONF_OPTION
@_user_errors
def metrics(audit_dir, output, snapshot_id, storage_options, conf_file) -> None:
    """Print an audited snapshot as Prometheus metrics (text format 0.0.4): lag, commit age and expiry per
    partition, offsets, lag and expiry per group.

    Reads the audit's partition_verdicts and group_verdicts tables directly (no Spark). Metric names start
    with kafka_offset_audit_ and use kafka-lag-exporter's group, topic and partition labels.
    """
    from offset_audit.views.prometheus import snapshot_metrics

    if output is not None:
        from offset_audit.runs.preflight import check_textfile

        check_textfile(output)
    storage = read_storage(conf_file, storage_options)
    result = snapshot_metrics(normalize(audit_dir), snapshot_id, storage)
    if output is None:
        click.echo(result.text, nl=False)
        return
    _write_atomically(output, result.text)
    click.echo(f"wrote {result.samples} samples of {result.groups} groups to {terminal(output)}", err=True)


def _write_atomically(output: str, text: str) -> None:
    """Renamed over the target (a scrape sees the old file or the new one), readable by all: node_exporter
    usually runs as another user."""
    replace_file(output, text.encode("utf-8"), mode=0o644)
