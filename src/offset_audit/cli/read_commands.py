"""The commands that read an audit's output folder: describe, delete-plan, report and metrics.

They read the finished Delta tables with delta-rs and pyarrow (views.audit_folder) and never start
Spark: an operator expects an answer in about a second.
"""

from __future__ import annotations

import click

from offset_audit.cli.options import (
    DURATION,
    AuditFolder,
    audit_folder_options,
    cluster_option,
    pairs,
    setting_option,
    snapshot_id_option,
)
from offset_audit.errors import UserError
from offset_audit.escaping import terminal
from offset_audit.outputs.text_files import write_metrics_file, write_page, write_script
from offset_audit.storage import normalize
from offset_audit.views.kafka_commands import DEFAULT_BOOTSTRAP
from offset_audit.views.report_numbers import DEFAULT_DAYS

# node_exporter's textfile collector reads only files named *.prom.
TEXTFILE = (".prom", "the only files node_exporter's textfile collector reads")


@click.command()
@audit_folder_options
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="only this group (repeatable).")
@click.option("--topic", default=None, help="only this topic.")
@click.option(
    "--expiring-within",
    type=DURATION,
    default=None,
    metavar="DURATION",
    help="only offsets that expire within DURATION of the snapshot's as_of (24h, 7d; expired ones included).",
)
@snapshot_id_option("which snapshot (default: the newest audit).")
@cluster_option("the cluster, in a folder holding several clusters' audits (default: the one it holds).")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document (groups and offsets) instead.")
def describe(
    audit: AuditFolder,
    groups: tuple[str, ...],
    topic: str | None,
    expiring_within: int | None,
    snapshot_id: str | None,
    cluster: str | None,
    as_json: bool,
) -> None:
    """Committed offsets like kafka-consumer-groups.sh --describe, with when each expires and why.

    Reads the audit's tables directly (no Spark): an answer in about a second.
    """
    from offset_audit.durations import MINUTE_MS
    from offset_audit.views import describe as view
    from offset_audit.views.json_documents import dumps

    within = None if expiring_within is None else expiring_within * MINUTE_MS
    described = view.read_described(audit.path, audit.storage, list(groups), topic, within, snapshot_id, cluster)
    click.echo(dumps(view.document(described)) if as_json else view.render(described))


@click.command("delete-plan")
@audit_folder_options
@snapshot_id_option("which snapshot (default: the newest).")
@cluster_option("the cluster, in a folder holding several clusters' audits (default: the one it holds).")
@click.option(
    "--bootstrap-server",
    default=DEFAULT_BOOTSTRAP,
    show_default=True,
    help="written into the commands as given: a shell word of yours, expanded when the script runs.",
)
@click.option(
    "--script", type=click.Path(dir_okay=False), default=None, help="write the commands to this file instead."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="print one JSON document (the candidates by group and topic, the snapshot, the script path) instead "
    "of the commands; with --script the script is written too.",
)
def delete_plan(
    audit: AuditFolder,
    snapshot_id: str | None,
    cluster: str | None,
    bootstrap_server: str,
    script: str | None,
    as_json: bool,
) -> None:
    """Print ready-to-run kafka-consumer-groups.sh --delete-offsets commands for the deletion candidates.

    Reads the audit's deletion_candidates table directly (no Spark). Every group and topic name in the
    script is quoted and passed as --group=NAME / --topic=NAME, comments are escaped: a name from the
    dump cannot run anything or pass for an option.
    """
    from offset_audit.runtime import preflight
    from offset_audit.views.audit_folder import check_audit_dir
    from offset_audit.views.audit_folder import delete_plan as plan
    from offset_audit.views.json_documents import delete_plan_document, dumps
    from offset_audit.views.summary import delete_plan_lines

    check_audit_dir(audit.path, audit.storage)
    if script:
        preflight.check_output_path(script, "--script")
    snapshot, candidates = plan(audit.path, snapshot_id, audit.storage, cluster)
    if not candidates:
        if as_json:
            click.echo(dumps(delete_plan_document(audit.path, snapshot, [], None)))
        else:
            click.echo(f"no deletion candidates in {terminal(audit.path)}")
        return
    text = "\n".join(delete_plan_lines(snapshot, candidates, bootstrap_server)) + "\n"
    if script:
        write_script(script, text)
    if as_json:
        click.echo(dumps(delete_plan_document(audit.path, snapshot, candidates, script)))
    elif script:
        groups = len({c["group_id"] for c in candidates})
        click.echo(f"wrote {len(candidates)} partitions of {groups} groups to {terminal(script)}")
    else:
        click.echo(text, nl=False)


@click.command()
@audit_folder_options
@click.option(
    "--output",
    required=True,
    metavar="PATH",
    help="the HTML file to write (local or s3://); it opens offline: plotly.js and the styles are inline.",
)
@snapshot_id_option("which snapshot (default: the newest).")
@cluster_option(
    "one cluster of a folder holding several clusters' audits; without it such a folder's page is the fleet's: "
    "a table of its clusters, the most urgent first."
)
@click.option(
    "--days",
    default=DEFAULT_DAYS,
    show_default=True,
    type=click.IntRange(min=1, max=3660),
    help="how many days after as_of the expiry chart covers.",
)
def report(audit: AuditFolder, output: str, snapshot_id: str | None, cluster: str | None, days: int) -> None:
    """Write one HTML page summarising an audit folder: offsets expiring per day by rule, groups by state
    and verdict, the what-if curve, lag by group, the snapshots' history, the top deletion candidates and
    the soonest expiries.

    Every name from the dump on the page is escaped: a group id cannot add markup or run a script.
    """
    from offset_audit.runtime import preflight
    from offset_audit.views.fleet_report import read_fleet, render_fleet
    from offset_audit.views.html_report import read_audit, render

    output = normalize(output)
    preflight.check_output_path(output, "--output", audit.storage)
    fleet = read_fleet(audit.path, audit.storage) if cluster is None and snapshot_id is None else None
    if fleet is not None and len(fleet.clusters) > 1:
        page = render_fleet(fleet)
        shown = f"the fleet's page, {len(fleet.clusters)} clusters (--cluster NAME for one)"
    else:
        page = render(read_audit(audit.path, snapshot_id, audit.storage, cluster), days)
        shown = f"{page.drawn} charts, snapshot {terminal(page.snapshot_id)}"
    written = write_page(output, page.html, audit.storage)
    click.echo(f"wrote {terminal(output)} ({written // 1024:,} KiB): {shown}")


@click.command()
@audit_folder_options
@click.option(
    "--output",
    default=None,
    metavar="FILE",
    help="write to this *.prom file, atomically (for node_exporter's textfile collector); default: stdout.",
)
@snapshot_id_option("which snapshot (default: the newest).")
@cluster_option("only this cluster's newest snapshot (default: the newest of each cluster the folder holds).")
@setting_option("metrics_granularity")
@setting_option("metrics_watch_expiring_within_minutes")
@setting_option("metrics_groups", help="only groups matching it whole (repeatable).")
@setting_option("metrics_exclude_groups", help="leave out groups matching it whole (repeatable).")
@setting_option("metrics_topics", help="topic and partition series only of topics matching it (repeatable).")
@setting_option("metrics_max_samples")
@setting_option("metrics_push_gateway")
@setting_option("metrics_push_job")
@click.option(
    "--push-grouping-key",
    "grouping_key",
    multiple=True,
    metavar="KEY=VALUE",
    help="a grouping key label of the push besides job (repeatable), e.g. cluster=prod.",
)
def metrics(
    audit: AuditFolder,
    output: str | None,
    snapshot_id: str | None,
    cluster: str | None,
    grouping_key: tuple[str, ...],
) -> None:
    """Print an audited snapshot as Prometheus metrics (text format 0.0.4): offsets, lag and expiry per
    group, and per partition for the offsets about to expire or deletable now.

    Reads the audit's partition_verdicts, group_verdicts and runs tables directly (no Spark). Metric names
    start with kafka_offset_audit_ and use kafka-lag-exporter's group, topic and partition labels.
    """
    from offset_audit.runtime import preflight
    from offset_audit.views import pushgateway
    from offset_audit.views.metric_scope import Scope
    from offset_audit.views.prometheus import snapshot_metrics

    conf = audit.settings.metrics
    scope = Scope.of(conf)
    gateway = conf.push_gateway
    push = pushgateway.Push(gateway, conf.push_job, pairs(grouping_key, "--push-grouping-key"))
    if gateway:
        push.check()
    elif grouping_key:
        raise UserError("--push-grouping-key is for a push: give --push-gateway URL too")
    if output is not None:
        preflight.check_output_path(output, "--output", suffix=TEXTFILE)
    result = snapshot_metrics(audit.path, snapshot_id, audit.storage, scope, cluster)
    if gateway:
        push.check_clusters(result)
    if result.left_out:
        click.echo(f"note: {result.left_out}", err=True)
    if not result.groups and (scope.groups or scope.exclude_groups):
        click.echo("note: no group of the snapshot is left by the group filters: no metrics to write", err=True)
    if gateway:
        push.send(result)
        click.echo(f"pushed {result.samples} samples of {result.groups} groups to {terminal(push.url)}", err=True)
    if output is None:
        if not gateway:
            click.echo(result.text, nl=False)
        return
    write_metrics_file(output, result.text)
    click.echo(f"wrote {result.samples} samples of {result.groups} groups to {terminal(output)}", err=True)
