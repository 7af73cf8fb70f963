"""The commands that read a dump and run Spark: decode, audit, whatif, history and share.

Each one checks its flags and inputs before Spark starts (runtime.preflight: a mistake costs a second,
not a decoded dump), runs (runs/), and prints what the run found (views/).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

import click

from offset_audit.cli.options import (
    DURATION,
    END_OFFSETS_OPTION,
    START_OFFSETS_OPTION,
    Dump,
    dump_options,
    emit,
    output_options,
    setting_option,
    snapshot_id_option,
)
from offset_audit.errors import UserError
from offset_audit.escaping import terminal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

KAFKA_VERSION_OPTION = setting_option("kafka_version")
KEEP_SNAPSHOTS_OPTION = setting_option("keep_snapshots")
KEEP_DECODED_HELP = (
    "decode (and quarantine) every record and keep the full commit history in DIR/decoded/offset_commits "
    "(by default only the last record of each key is decoded, the others count as superseded, and "
    "offset_commits stays empty)."
)


def spark_starter() -> Callable[..., SparkSession]:
    """How a run gets its session: `runtime.session.start_spark`, given what the warm session handed this
    run when it runs there (click's obj, which `warm serve` sets)."""
    from offset_audit.runtime.session import WarmSession, start_spark

    handed = click.get_current_context().find_root().obj
    return functools.partial(start_spark, warm=handed if isinstance(handed, WarmSession) else None)


@click.command()
@dump_options
@click.option("--output", required=True, metavar="DIR", help="folder for the Delta tables.")
@setting_option("fast_path", help="decode every record with the generic reader.")
@output_options
def decode(dump: Dump, output: str, as_json: bool, quiet: bool) -> None:
    """Decode a dump into typed Delta tables (offset_commits, group_metadata, ...)."""
    from offset_audit import api
    from offset_audit.runtime import progress
    from offset_audit.views.json_documents import decode_document
    from offset_audit.views.summary import decode_summary

    with progress.reporting(not quiet):
        decoded = api.decode(spark_starter(), dump.inputs, output=output, settings=dump.settings)
    report, output = decoded.report, decoded.folder
    emit(as_json, lambda: decode_document(report, output), lambda: decode_summary(report, output))


def state_kept(incremental: bool, full: bool) -> str | None:
    """How an audit keeps the coordinator's state: "incremental", "full" (read everything, rebuild the
    state) or None (kept nowhere). The two flags ask for opposite reads: given both, neither is guessed."""
    if incremental and full:
        raise UserError(
            "--incremental reads only the records past the kept state and --full reads everything again: "
            "give one of them"
        )
    return "incremental" if incremental else "full" if full else None


@click.command()
@dump_options
@click.option(
    "--output", required=True, metavar="DIR", help="folder for the verdict tables (decode tables go to DIR/decoded)."
)
@KAFKA_VERSION_OPTION
@setting_option("as_of")
@setting_option("retention_minutes")
@snapshot_id_option(
    "name of this snapshot in the tables: letters, digits, '.', '_', '-' (default: as_of and a digest of the "
    "dump, the same wherever it lies)."
)
@END_OFFSETS_OPTION
@START_OFFSETS_OPTION
@click.option("--keep-decoded", is_flag=True, help=KEEP_DECODED_HELP)
@click.option(
    "--incremental",
    is_flag=True,
    help="keep the coordinator's state in DIR/state and, from the second run on, read only the records past "
    "its positions (broker folders, Kafka-source snapshots, --input-format kafka; docs/incremental.md).",
)
@click.option(
    "--full",
    is_flag=True,
    help="like --incremental, but read everything again and rebuild DIR/state (not with --incremental).",
)
@click.option(
    "--fail-if-expiring-within",
    "fail_expiring",
    type=DURATION,
    default=None,
    metavar="DURATION",
    help="exit 3 when an offset not yet expired expires within DURATION of as_of (24h, 7d, ...): for cron "
    "and CI alerts. The tables and the summary are written first.",
)
@click.option(
    "--fail-if-expired",
    "fail_expired",
    is_flag=True,
    help="exit 4 when a group with members (not Empty) has expired offsets: its consumers reset when they "
    "come back to those partitions. Takes precedence over exit 3.",
)
@KEEP_SNAPSHOTS_OPTION
@output_options
def audit(
    dump: Dump,
    output: str,
    snapshot_id: str | None,
    end_offsets: str | None,
    start_offsets: str | None,
    keep_decoded: bool,
    incremental: bool,
    full: bool,
    fail_expiring: int | None,
    fail_expired: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Judge every committed offset and group as the broker's expiry sweep would.

    Exit codes: 0 ran, 2 user error, 3 and 4 the alert thresholds (--fail-if-...)."""
    from offset_audit import api
    from offset_audit.runs.audit import alerts
    from offset_audit.runtime import progress
    from offset_audit.views.json_documents import audit_document
    from offset_audit.views.summary import audit_summary

    plan = api.plan_audit(
        dump.inputs,
        output=output,
        settings=dump.settings,
        snapshot_id=snapshot_id,
        end_offsets=end_offsets,
        start_offsets=start_offsets,
        keep_decoded=keep_decoded,
        keep_state=state_kept(incremental, full),
    )
    output, input_size = plan.output, None
    with ExitStack() as held:
        if plan.keep_state is not None:
            from offset_audit.outputs.audit_state import state_lock
            from offset_audit.runs.incremental import resumed_bytes

            # Held from here, before Spark starts: a second run started meanwhile is refused at once.
            assert plan.locked is not None  # plan_audit sets it whenever keep_state is set
            held.enter_context(state_lock(plan.locked))
            input_size = resumed_bytes(plan.dump, output, plan.keep_state)
        with progress.reporting(not quiet):
            spark = spark_starter()(plan.settings, plan.dump, input_size)
            result = api.run_planned_audit(spark, plan, lock_held=True).result
    checked = alerts(result, fail_expiring, fail_expired)
    emit(
        as_json,
        lambda: audit_document(result, output, {a["name"]: a for a in checked}),
        lambda: audit_summary(result, output),
    )
    fired = [a for a in checked if a["matched"]]
    for alert in fired:
        click.echo(f"alert: {alert['message']} (exit {alert['exit_code']})", err=True)
    if fired:
        sys.exit(max(a["exit_code"] for a in fired))


@click.command()
@dump_options
@click.option("--output", required=True, metavar="DIR", help="folder for the whatif table.")
@KAFKA_VERSION_OPTION
@click.option(
    "--retention-minutes",
    "retentions",
    required=True,
    metavar="LIST",
    help="comma-separated minutes or durations, e.g. 1d,7d,30d or 1440,10080,43200.",
)
@click.option("--as-of", "as_of_points", multiple=True, help="latest (default), now or ISO timestamps (repeatable).")
@snapshot_id_option(
    "name of this snapshot in the table: letters, digits, '.', '_', '-' (default: from the dump and the first "
    "--as-of, as audit names it). Scenarios of one snapshot accumulate across runs; one judged again is replaced."
)
@click.option("--per-group", is_flag=True, help="also write every group in every scenario (table whatif_groups).")
@click.option("--keep-decoded", is_flag=True, help=KEEP_DECODED_HELP)
@KEEP_SNAPSHOTS_OPTION
@output_options
def whatif(
    dump: Dump,
    output: str,
    retentions: str,
    as_of_points: tuple[str, ...],
    snapshot_id: str | None,
    per_group: bool,
    keep_decoded: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """What would expire, and which groups would go, under other retentions or at other times."""
    from offset_audit import api
    from offset_audit.runtime import preflight, progress
    from offset_audit.views.json_documents import whatif_document
    from offset_audit.views.summary import cluster_lines, upkeep_lines, whatif_summary

    with progress.reporting(not quiet):
        scenarios = api.whatif(
            spark_starter(),
            dump.inputs,
            retention=preflight.check_retention_list(retentions),
            as_of=list(as_of_points) or [dump.settings.audit.as_of],
            output=output,
            per_group=per_group,
            snapshot_id=snapshot_id,
            keep_decoded=keep_decoded,
            settings=dump.settings,
        )
    report, rows, output = scenarios.report, scenarios.scenarios, scenarios.folder
    emit(
        as_json,
        lambda: whatif_document(report, rows, output),
        lambda: (
            f"What-if for {terminal(report.input)} (snapshot {terminal(report.snapshot_id)}):\n"
            + "".join(f"{line}\n" for line in cluster_lines(report))
            + whatif_summary(rows)
            + "".join(f"\n{line}" for line in upkeep_lines(report.upkeep, indent="  "))
        ),
    )


@click.command()
@dump_options(default_topic="__share_group_state")
@click.option("--output", required=True, metavar="DIR", help="folder for the share tables.")
@setting_option(
    "kafka_version",
    help="the broker version whose share-group assignor the stored assignments are checked against, 4.0 to "
    "4.4: 4.1 hashes members onto partitions, 4.2+ balance them.",
)
@click.option(
    "--groups-input",
    "groups_inputs",
    multiple=True,
    metavar="PATH",
    help="a __consumer_offsets dump (any input format) with the share groups' records (types 9-15), repeatable.",
)
@click.option(
    "--delivery-count-limit",
    type=click.IntRange(min=1),
    default=None,
    help="group.share.delivery.count.limit (default: --broker-config's, else 5).",
)
@END_OFFSETS_OPTION
@START_OFFSETS_OPTION
@click.option(
    "--broker-config",
    default=None,
    type=click.Path(dir_okay=False),
    help="a broker's server.properties: its group.share.* limits are checked and used.",
)
@output_options
def share(
    dump: Dump,
    output: str,
    groups_inputs: tuple[str, ...],
    delivery_count_limit: int | None,
    end_offsets: str | None,
    start_offsets: str | None,
    broker_config: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Share groups (KIP-932): share-partition state, cleanup cut-offs, assignment and limits."""

    from offset_audit import api
    from offset_audit.cli.options import paths
    from offset_audit.runtime import progress
    from offset_audit.views.json_documents import share_document
    from offset_audit.views.summary import share_summary

    with progress.reporting(not quiet):
        shared = api.share(
            spark_starter(),
            dump.inputs,
            output=output,
            groups_dump=paths(groups_inputs),
            delivery_count_limit=delivery_count_limit,
            end_offsets=end_offsets,
            start_offsets=start_offsets,
            broker_config=broker_config,
            settings=dump.settings,
        )
    result, output = shared.result, shared.folder
    emit(as_json, lambda: share_document(result, output), lambda: share_summary(result, output))


@click.command()
@dump_options(topic_flag="--dump-topic")
@click.option(
    "--output",
    default=None,
    metavar="DIR",
    help="folder for offset_history (decode tables go to DIR/decoded); with --audit, AUDIT/history by default.",
)
@click.option(
    "--audit",
    "audit_dir",
    default=None,
    metavar="AUDIT",
    help="instead of --input: the records audit --incremental kept in this audit folder (state/log), those the "
    "cleaner has since removed from the topic too.",
)
@click.option(
    "--log-generation",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="with --audit: which log, when the topic was recreated (default the newest).",
)
@KAFKA_VERSION_OPTION
@setting_option("retention_minutes", help="the offsets.retention.minutes the causes are judged with.")
@click.option(
    "--group", "groups", multiple=True, metavar="GROUP", help="only this group, with its timeline (repeatable)."
)
@click.option(
    "--topic", "only_topic", default=None, metavar="TOPIC", help="only this topic's offsets (and its groups' events)."
)
@snapshot_id_option(
    "name of this snapshot in the table: letters, digits, '.', '_', '-' (default: the newest record's time and a "
    "digest of the dump)."
)
@KEEP_SNAPSHOTS_OPTION
@output_options
def history(
    dump: Dump,
    output: str | None,
    audit_dir: str | None,
    log_generation: int | None,
    groups: tuple[str, ...],
    only_topic: str | None,
    snapshot_id: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Why did a group lose its offsets? Every commit, state change and deletion from the log, with its cause.

    Here --topic is a topic of the groups; --dump-topic names the dump's own (default __consumer_offsets).
    """
    from offset_audit import api
    from offset_audit.runtime import progress
    from offset_audit.views.json_documents import history_document
    from offset_audit.views.summary import history_summary

    if audit_dir is not None and dump.inputs:
        raise UserError("give the dump with --input or an audit folder with --audit, not both")
    if audit_dir is None and output is None:
        raise UserError("pass --output DIR (or --audit AUDIT, whose history goes to AUDIT/history)")
    if audit_dir is None and log_generation is not None:
        raise UserError("--log-generation picks a log of --audit; give --audit AUDIT")
    with progress.reporting(not quiet):
        told = api.history(
            spark_starter(),
            dump.inputs,
            output=output,
            groups=groups,
            topic=only_topic,
            audit_folder=audit_dir,
            log_generation=log_generation,
            snapshot_id=snapshot_id,
            settings=dump.settings,
        )
    result, output = told.result, told.folder
    emit(as_json, lambda: history_document(result, output), lambda: history_summary(result, output))
