"""The `offset-audit` command line. Commands parse flags, build settings and call the pipeline."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from offset_audit.cli_common import (
    AUDIT_DIR_OPTION,
    END_OFFSETS_OPTION,
    READ_CONF_OPTION,
    START_OFFSETS_OPTION,
    STORAGE_OPTION,
    _Commands,
    _pairs,
    _user_errors,
    read_storage,
)
from offset_audit.cli_metrics import metrics
from offset_audit.cli_report import report
from offset_audit.errors import UserError
from offset_audit.escaping import terminal
from offset_audit.runs.config import load_settings
from offset_audit.settings import INPUT_FORMATS, MAX_RETENTION_MINUTES
from offset_audit.storage import normalize
from offset_audit.views.kafka_commands import DEFAULT_BOOTSTRAP

OUTPUT_OPTIONS = [
    click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="print one JSON document on stdout (counts, tables written, run and snapshot ids, paths) instead "
        "of the summary.",
    ),
    click.option("--quiet", "-q", is_flag=True, help="no progress on stderr."),
]


def output_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed(OUTPUT_OPTIONS):
        command = decorator(command)
    return command


def _progress(quiet: bool):
    """Progress on stderr for the block (see offset_audit.runs.progress), unless --quiet."""
    from offset_audit.runs import progress

    return progress.reporting(not quiet)


def _emit(as_json: bool, document: Callable[[], dict], summary: Callable[[], str]) -> None:
    """The command's result on stdout: the JSON document, or the readable summary."""
    if as_json:
        from offset_audit.views.json_documents import dumps

        click.echo(dumps(document()))
    else:
        click.echo(summary())


def _paths(values: tuple[str, ...] | list[str]) -> list[str]:
    """Paths as the tool keeps them, worked out here on the driver: a relative path made absolute (an
    executor would resolve it from its own work folder), file:// dropped, s3a:// read as s3://."""
    return [normalize(v) for v in values]


class _Duration(click.ParamType):
    """A duration as operators write it (30m, 24h, 7d; a bare number is minutes), in minutes."""

    name = "duration"
    expected = "takes a duration like 30m, 24h, 7d (a bare number is minutes)"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from offset_audit.durations import parse_minutes

        try:
            return parse_minutes(value, "it")
        except UserError:
            self.fail(f"{self.expected}, not '{value}'", param, ctx)


DURATION = _Duration()


class _RetentionMinutes(_Duration):
    """offsets.retention.minutes: a duration that is a whole number the broker can hold (a Java int, at
    least 1 minute)."""

    expected = "takes minutes or a duration like 30m, 24h, 7d"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        minutes = super().convert(value, param, ctx)
        if not 1 <= minutes <= MAX_RETENTION_MINUTES:
            self.fail(
                f"takes 1 to {MAX_RETENTION_MINUTES} (the broker's offsets.retention.minutes is a Java int), "
                f"not {minutes}",
                param,
                ctx,
            )
        return minutes


RETENTION_MINUTES = _RetentionMinutes()
RUNS = "runs"


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-offset-audit")
def main() -> None:
    """Decode dumps of Kafka's __consumer_offsets and audit offset expiry as the broker would."""


class _HiddenAliases(click.Option):
    """An option whose first name is the one --help shows; the others still parse (a renamed option's
    earlier name, so scripts that use it keep working)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        names = self.opts
        self.opts = names[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = names


def input_options(command: Callable[..., Any], dump_topic_flag: str = "--topic") -> Callable[..., Any]:
    """The options every command that reads a dump takes. `dump_topic_flag` names the dump's topic
    option where `--topic` means something else (history: a topic of the groups)."""
    decorators = [
        click.option(
            "--input",
            "inputs",
            multiple=True,
            metavar="PATH",
            help="the dump: a Kafka-source snapshot (Parquet/Delta), log segment files or folders, or a text "
            "dump; file, folder or glob (repeatable).",
        ),
        click.option(
            "--input-format",
            type=click.Choice(INPUT_FORMATS),
            default=None,
            help="auto (default: from the inputs), parquet, delta, kafka (a live cluster), segments, dump-log "
            "(kafka-dump-log.sh --offsets-decoder output) or console (kafka-console-consumer.sh formatter output).",
        ),
        click.option(
            "--partition",
            type=click.IntRange(min=0),
            default=None,
            help="the __consumer_offsets partition of inputs that do not tell it (flat segment files, console text).",
        ),
        click.option(
            "--bootstrap-server",
            "--bootstrap-servers",  # the earlier name, still read
            "bootstrap_servers",
            cls=_HiddenAliases,
            default=None,
            metavar="HOST:PORT[,HOST:PORT]",
            help="the Kafka cluster, as Kafka's tools name it: read with --input-format kafka, asked with "
            '--end-offsets kafka; share writes it into its delete commands as given (else "$BOOTSTRAP_SERVER").',
        ),
        click.option(
            "--kafka-option",
            "kafka_options",
            multiple=True,
            metavar="NAME=VALUE",
            help="for Spark's Kafka source: its options, and Kafka client settings as kafka.NAME "
            "(kafka.security.protocol=SASL_SSL). --end-offsets kafka (librdkafka) takes kafka.security.protocol, "
            "kafka.sasl.mechanism, kafka.sasl.jaas.config (PLAIN, SCRAM), kafka.ssl.keystore.*, "
            "kafka.ssl.key.password, kafka.ssl.endpoint.identification.algorithm, kafka.client.id, and "
            "librdkafka's own names bare (sasl.username, ssl.ca.location, ...), which Spark ignores (repeatable).",
        ),
        click.option(dump_topic_flag, "topic", default=None, help="topic of the dump (default __consumer_offsets)."),
        STORAGE_OPTION,
        click.option(
            "--conf",
            "conf_file",
            default=None,
            type=click.Path(dir_okay=False),
            help="TOML file overlaying conf/default.toml.",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@main.command()
@input_options
@click.option("--output", required=True, metavar="DIR", help="folder for the Delta tables.")
@click.option("--no-fast-path", is_flag=True, help="decode every record with the generic reader.")
@output_options
@_user_errors
def decode(
    inputs,
    input_format,
    partition,
    bootstrap_servers,
    kafka_options,
    topic,
    storage_options,
    conf_file,
    output,
    no_fast_path,
    as_json,
    quiet,
) -> None:
    """Decode a dump into typed Delta tables (offset_commits, group_metadata, ...)."""
    from offset_audit.decoding.decoder import TABLES
    from offset_audit.runs import preflight
    from offset_audit.runs.decode import run_decode
    from offset_audit.runs.session import start_spark
    from offset_audit.views.json_documents import decode_document
    from offset_audit.views.summary import decode_summary

    settings = _input_settings(
        inputs,
        conf_file,
        input_format,
        partition,
        bootstrap_servers,
        kafka_options,
        topic,
        storage_options,
        fast_path=False if no_fast_path else None,
    )
    inputs, output = _paths(inputs), normalize(output)
    settings = preflight.check_inputs(inputs, settings)
    preflight.check_output(output, [*TABLES, RUNS], settings)
    with _progress(quiet):
        spark = start_spark(settings, inputs)
        report = run_decode(spark, inputs, output, settings)
    _emit(as_json, lambda: decode_document(report, output), lambda: decode_summary(report, output))


def _input_settings(
    inputs, conf_file, input_format, partition, bootstrap_servers, kafka_options, topic, storage_options, **overrides
):
    """Settings from the shared input options (plus command-specific overrides); an input is required."""
    settings = load_settings(
        conf_file,
        input_format=input_format,
        partition=partition,
        bootstrap_servers=bootstrap_servers,
        kafka_options=_pairs(kafka_options, "--kafka-option"),
        topic=topic,
        storage=_pairs(storage_options, "--storage-option"),
        **overrides,
    )
    if settings.input_format != "kafka" and not inputs:
        raise UserError("pass --input PATH (or --input-format kafka --bootstrap-server ...)")
    return settings


KEEP_DECODED_HELP = (
    "decode (and quarantine) every record and keep the full commit history in DIR/decoded/offset_commits "
    "(by default only the last record of each key is decoded, the others count as superseded, and "
    "offset_commits stays empty)."
)


@main.command()
@input_options
@click.option(
    "--output", required=True, metavar="DIR", help="folder for the verdict tables (decode tables go to DIR/decoded)."
)
@click.option("--as-of", default=None, help="latest (default: newest record in the dump), now, or an ISO timestamp.")
@click.option(
    "--retention-minutes",
    type=RETENTION_MINUTES,
    default=None,
    help="offsets.retention.minutes: minutes or a duration like 7d (default 10080 = 7d; at most 2147483647 "
    "minutes, an int on the broker).",
)
@click.option(
    "--snapshot-id",
    default=None,
    help="name of this snapshot in the tables (default: as_of and a digest of the dump, the same wherever it lies).",
)
@END_OFFSETS_OPTION
@START_OFFSETS_OPTION
@click.option("--keep-decoded", is_flag=True, help=KEEP_DECODED_HELP)
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
@output_options
@_user_errors
def audit(
    inputs,
    input_format,
    partition,
    bootstrap_servers,
    kafka_options,
    topic,
    storage_options,
    conf_file,
    output,
    as_of,
    retention_minutes,
    snapshot_id,
    end_offsets,
    start_offsets,
    keep_decoded,
    fail_expiring,
    fail_expired,
    as_json,
    quiet,
) -> None:
    """Judge every committed offset and group as the broker's expiry sweep would.

    Exit codes: 0 ran, 2 user error, 3 and 4 the alert thresholds (--fail-if-...)."""
    from offset_audit.runs import preflight
    from offset_audit.runs.audit import AUDIT_TABLES, run_audit
    from offset_audit.runs.audit import alerts as audit_alerts
    from offset_audit.runs.session import start_spark
    from offset_audit.runs.state import decoded_tables
    from offset_audit.views.json_documents import audit_document
    from offset_audit.views.summary import audit_summary

    settings = _input_settings(
        inputs,
        conf_file,
        input_format,
        partition,
        bootstrap_servers,
        kafka_options,
        topic,
        storage_options,
        as_of=as_of,
        retention_minutes=retention_minutes,
    )
    inputs, output = _paths(inputs), normalize(output)
    settings = preflight.check_inputs(inputs, settings)
    preflight.check_as_of(settings.as_of, settings.input_format)
    end_offsets = preflight.check_end_offsets(end_offsets, settings, start_offsets)
    preflight.check_output(output, [*AUDIT_TABLES, RUNS, *decoded_tables()], settings)
    with _progress(quiet):
        spark = start_spark(settings, inputs)
        result = run_audit(
            spark,
            inputs,
            output,
            settings,
            snapshot_id=snapshot_id,
            end_offsets=end_offsets,
            keep_decoded=keep_decoded,
        )
    alerts = audit_alerts(result, fail_expiring, fail_expired)
    _emit(
        as_json,
        lambda: audit_document(result, output, {a["name"]: a for a in alerts}),
        lambda: audit_summary(result, output),
    )
    fired = [a for a in alerts if a["matched"]]
    for alert in fired:
        click.echo(f"alert: {alert['message']} (exit {alert['exit_code']})", err=True)
    if fired:
        sys.exit(max(a["exit_code"] for a in fired))


@main.command()
@input_options
@click.option("--output", required=True, metavar="DIR", help="folder for the whatif table.")
@click.option(
    "--retention-minutes",
    "retentions",
    required=True,
    metavar="LIST",
    help="comma-separated minutes or durations, e.g. 1d,7d,30d or 1440,10080,43200.",
)
@click.option("--as-of", "as_of_points", multiple=True, help="latest (default), now or ISO timestamps (repeatable).")
@click.option(
    "--snapshot-id",
    default=None,
    help="name of this snapshot in the table (default: from the dump and the first --as-of, as audit names "
    "it). Scenarios of one snapshot accumulate across runs; one judged again is replaced.",
)
@click.option("--per-group", is_flag=True, help="also write every group in every scenario (table whatif_groups).")
@click.option("--keep-decoded", is_flag=True, help=KEEP_DECODED_HELP)
@output_options
@_user_errors
def whatif(
    inputs,
    input_format,
    partition,
    bootstrap_servers,
    kafka_options,
    topic,
    storage_options,
    conf_file,
    output,
    retentions,
    as_of_points,
    snapshot_id,
    per_group,
    keep_decoded,
    as_json,
    quiet,
) -> None:
    """What would expire, and which groups would go, under other retentions or at other times."""
    from offset_audit.runs import preflight
    from offset_audit.runs.session import start_spark
    from offset_audit.runs.state import decoded_tables
    from offset_audit.runs.whatif import WHATIF_TABLES, run_whatif
    from offset_audit.views.json_documents import whatif_document
    from offset_audit.views.summary import whatif_summary

    settings = _input_settings(
        inputs, conf_file, input_format, partition, bootstrap_servers, kafka_options, topic, storage_options
    )
    minutes = preflight.check_retention_list(retentions)
    points = list(as_of_points) or [settings.as_of]
    inputs, output = _paths(inputs), normalize(output)
    settings = preflight.check_inputs(inputs, settings)
    for point in points:
        preflight.check_as_of(point, settings.input_format)
    preflight.check_output(output, [*WHATIF_TABLES, RUNS, *decoded_tables()], settings)
    with _progress(quiet):
        spark = start_spark(settings, inputs)
        report, rows = run_whatif(
            spark,
            inputs,
            output,
            settings,
            minutes,
            points,
            snapshot_id,
            per_group=per_group,
            keep_decoded=keep_decoded,
        )
    _emit(
        as_json,
        lambda: whatif_document(report, rows, output),
        lambda: (
            f"What-if for {terminal(report.input)} (snapshot {terminal(report.snapshot_id)}):\n" + whatif_summary(rows)
        ),
    )


@main.command()
@input_options
@click.option("--output", required=True, metavar="DIR", help="folder for the share tables.")
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
@_user_errors
def share(
    inputs,
    input_format,
    partition,
    bootstrap_servers,
    kafka_options,
    topic,
    storage_options,
    conf_file,
    output,
    groups_inputs,
    delivery_count_limit,
    end_offsets,
    start_offsets,
    broker_config,
    as_json,
    quiet,
) -> None:
    """Share groups (KIP-932): share-partition state, cleanup cut-offs, assignment and limits."""
    import dataclasses

    from offset_audit.constants import OFFSETS_TOPIC
    from offset_audit.runs import preflight
    from offset_audit.runs.session import start_spark
    from offset_audit.runs.share import SHARE_TABLES, check_share_input_format, run_share
    from offset_audit.runs.state import decoded_tables
    from offset_audit.views.json_documents import share_document
    from offset_audit.views.summary import share_summary

    settings = _input_settings(
        inputs,
        conf_file,
        input_format,
        partition,
        bootstrap_servers,
        kafka_options,
        topic or "__share_group_state",
        storage_options,
    )
    inputs, output, groups_inputs = _paths(inputs), normalize(output), _paths(groups_inputs)
    settings = preflight.check_inputs(inputs, settings, share=True)
    check_share_input_format(settings.input_format)
    tables = [*SHARE_TABLES, RUNS]
    if groups_inputs:
        group_settings = dataclasses.replace(settings, input_format="auto", topic=OFFSETS_TOPIC)
        preflight.check_inputs(groups_inputs, group_settings)
        tables += decoded_tables()
    end_offsets = preflight.check_end_offsets(end_offsets, settings, start_offsets)
    if broker_config:
        preflight.check_file(broker_config, "--broker-config")
    preflight.check_output(output, tables, settings)
    with _progress(quiet):
        spark = start_spark(settings, inputs + groups_inputs)
        result = run_share(
            spark,
            inputs,
            output,
            settings,
            delivery_count_limit=delivery_count_limit,
            groups_inputs=groups_inputs,
            end_offsets=end_offsets,
            broker_config=broker_config,
            # The delete commands name the cluster as given (a shell word of yours), else "$BOOTSTRAP_SERVER".
            bootstrap=settings.bootstrap_servers or DEFAULT_BOOTSTRAP,
        )
    _emit(as_json, lambda: share_document(result, output), lambda: share_summary(result, output))


@main.command()
@functools.partial(input_options, dump_topic_flag="--dump-topic")
@click.option(
    "--output", required=True, metavar="DIR", help="folder for offset_history (decode tables go to DIR/decoded)."
)
@click.option(
    "--retention-minutes",
    type=RETENTION_MINUTES,
    default=None,
    help="the offsets.retention.minutes the causes are judged with: minutes or a duration (default 10080 = 7d).",
)
@click.option(
    "--group", "groups", multiple=True, metavar="GROUP", help="only this group, with its timeline (repeatable)."
)
@click.option(
    "--topic", "only_topic", default=None, metavar="TOPIC", help="only this topic's offsets (and its groups' events)."
)
@click.option(
    "--snapshot-id",
    default=None,
    help="name of this snapshot in the table (default: the newest record's time and a digest of the dump).",
)
@output_options
@_user_errors
def history(
    inputs,
    input_format,
    partition,
    bootstrap_servers,
    kafka_options,
    topic,
    storage_options,
    conf_file,
    output,
    retention_minutes,
    groups,
    only_topic,
    snapshot_id,
    as_json,
    quiet,
) -> None:
    """Why did a group lose its offsets? Every commit, state change and deletion from the log, with its cause.

    Here --topic is a topic of the groups; --dump-topic names the dump's own (default __consumer_offsets).
    """
    from offset_audit.runs import preflight
    from offset_audit.runs.history import HISTORY_TABLE, run_history
    from offset_audit.runs.session import start_spark
    from offset_audit.runs.state import decoded_tables
    from offset_audit.views.json_documents import history_document
    from offset_audit.views.summary import history_summary

    settings = _input_settings(
        inputs,
        conf_file,
        input_format,
        partition,
        bootstrap_servers,
        kafka_options,
        topic,
        storage_options,
        retention_minutes=retention_minutes,
    )
    inputs, output = _paths(inputs), normalize(output)
    settings = preflight.check_inputs(inputs, settings)
    preflight.check_output(output, [HISTORY_TABLE, RUNS, *decoded_tables()], settings)
    with _progress(quiet):
        spark = start_spark(settings, inputs)
        result = run_history(
            spark, inputs, output, settings, groups=list(groups), topic=only_topic, snapshot_id=snapshot_id
        )
    _emit(as_json, lambda: history_document(result, output), lambda: history_summary(result, output))


@main.command()
@AUDIT_DIR_OPTION
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="only this group (repeatable).")
@click.option("--topic", default=None, help="only this topic.")
@click.option(
    "--expiring-within",
    type=DURATION,
    default=None,
    metavar="DURATION",
    help="only offsets that expire within DURATION of the snapshot's as_of (24h, 7d; expired ones included).",
)
@click.option("--snapshot-id", default=None, help="which snapshot (default: the newest audit).")
@STORAGE_OPTION
@READ_CONF_OPTION
@click.option("--json", "as_json", is_flag=True, help="print one JSON document (groups and offsets) instead.")
@_user_errors
def describe(audit_dir, groups, topic, expiring_within, snapshot_id, storage_options, conf_file, as_json) -> None:
    """Committed offsets like kafka-consumer-groups.sh --describe, with when each expires and why.

    Reads the audit's tables directly (no Spark): an answer in about a second.
    """
    from offset_audit.durations import MINUTE_MS
    from offset_audit.views import describe as view
    from offset_audit.views.json_documents import dumps

    storage = read_storage(conf_file, storage_options)
    within = None if expiring_within is None else expiring_within * MINUTE_MS
    described = view.read_described(normalize(audit_dir), storage, list(groups), topic, within, snapshot_id)
    click.echo(dumps(view.document(described)) if as_json else view.render(described))


@main.command("delete-plan")
@AUDIT_DIR_OPTION
@click.option("--snapshot-id", default=None, help="which snapshot (default: the newest).")
@click.option(
    "--bootstrap-server",
    default=DEFAULT_BOOTSTRAP,
    show_default=True,
    help="written into the commands as given: a shell word of yours, expanded when the script runs.",
)
@click.option(
    "--script", type=click.Path(dir_okay=False), default=None, help="write the commands to this file instead."
)
@STORAGE_OPTION
@READ_CONF_OPTION
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="print one JSON document (the candidates by group and topic, the snapshot, the script path) instead "
    "of the commands; with --script the script is written too.",
)
@_user_errors
def delete_plan(audit_dir, snapshot_id, bootstrap_server, script, storage_options, conf_file, as_json) -> None:
    """Print ready-to-run kafka-consumer-groups.sh --delete-offsets commands for the deletion candidates.

    Reads the audit's deletion_candidates table directly (no Spark). Every group and topic name in the
    script is quoted and passed as --group=NAME / --topic=NAME, comments are escaped: a name from the
    dump cannot run anything or pass for an option.
    """
    import os

    from offset_audit.runs import preflight
    from offset_audit.views.audit_folder import check_audit_dir
    from offset_audit.views.audit_folder import delete_plan as plan
    from offset_audit.views.json_documents import delete_plan_document, dumps
    from offset_audit.views.summary import delete_plan_lines

    storage = read_storage(conf_file, storage_options)
    audit_dir = normalize(audit_dir)
    check_audit_dir(audit_dir, storage)
    if script:
        preflight.check_script_path(script)
    snapshot, candidates = plan(audit_dir, snapshot_id, storage)
    if not candidates:
        if as_json:
            click.echo(dumps(delete_plan_document(audit_dir, snapshot, [], None)))
        else:
            click.echo(f"no deletion candidates in {terminal(audit_dir)}")
        return
    text = "\n".join(delete_plan_lines(snapshot, candidates, bootstrap_server)) + "\n"
    if script:
        with open(script, "w") as handle:
            handle.write(text)
        os.chmod(script, 0o755)
    if as_json:
        click.echo(dumps(delete_plan_document(audit_dir, snapshot, candidates, script)))
    elif script:
        groups = len({c["group_id"] for c in candidates})
        click.echo(f"wrote {len(candidates)} partitions of {groups} groups to {terminal(script)}")
    else:
        click.echo(text, nl=False)


@main.command()
@click.option("--output", required=True, metavar="PATH", help="folder for the dump.")
@click.option("--records", default=100_000, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=1, show_default=True, type=int)
@click.option(
    "--corrupt",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="how many corrupt or unknown records to mix in.",
)
@click.option(
    "--partitions",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="__consumer_offsets partition count (offsets.topic.num.partitions).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["parquet", "segments", "share-state"]),
    default="parquet",
    show_default=True,
    help="a Kafka-source snapshot of __consumer_offsets, a broker data directory of __consumer_offsets-N/*.log "
    "segments, or a Kafka-source snapshot of __share_group_state for the share groups of the same cluster.",
)
@click.option(
    "--cluster-records",
    default=None,
    type=click.IntRange(min=1),
    help="with --format share-state: the --records of the __consumer_offsets dump whose share groups to use "
    "(default: --records).",
)
@click.option(
    "--compression",
    type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
    default="none",
    show_default=True,
    help="with --format segments: the batches' codec.",
)
@click.option(
    "--batch-records",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="with --format segments: records per batch (the coordinator writes most records one per batch).",
)
@click.option(
    "--end-offsets",
    "end_offsets_file",
    default=None,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="also write what kafka-get-offsets.sh (--time -1) would print for the generated cluster: the log end "
    "offset of every partition with committed offsets, for audit --end-offsets.",
)
@click.option(
    "--start-offsets",
    "start_offsets_file",
    default=None,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="also write the log start offsets (kafka-get-offsets.sh --time -2), a few above committed offsets.",
)
@_user_errors
def generate(
    output,
    records,
    seed,
    corrupt,
    partitions,
    output_format,
    cluster_records,
    compression,
    batch_records,
    end_offsets_file,
    start_offsets_file,
) -> None:
    """Write a realistic, deterministic dump of __consumer_offsets (Parquet snapshot or log segments), or of
    __share_group_state for the same cluster's share groups."""
    import tempfile

    from offset_audit.generator import generate_dump, generate_share_state, snapshot_to_segments

    offsets_files = {"end_offsets": end_offsets_file, "start_offsets": start_offsets_file}
    if output_format == "share-state":
        if end_offsets_file or start_offsets_file:
            raise UserError("--end-offsets and --start-offsets go with --format parquet or segments")
        result = generate_share_state(
            output, records, seed=seed, world_records=cluster_records or records, partitions=partitions, corrupt=corrupt
        )
        click.echo(
            f"wrote {result['records']:,} __share_group_state records of {result['share_partitions']:,} "
            f"share-partitions in {result['partitions']} partitions to {terminal(output)}"
        )
        return
    if output_format == "parquet":
        result = generate_dump(output, records, seed=seed, corrupt=corrupt, partitions=partitions, **offsets_files)
        where = f"({result['files']} Parquet files)"
    else:
        with tempfile.TemporaryDirectory() as snapshot:
            result = generate_dump(
                snapshot, records, seed=seed, corrupt=corrupt, partitions=partitions, **offsets_files
            )
            written = snapshot_to_segments(snapshot, output, batch_records, compression)
        codec = "uncompressed" if compression == "none" else f"{compression}-compressed"
        where = f"({written['segments']} segment files, {codec} batches)"
    click.echo(
        f"wrote {result['records']:,} records of {result['groups']:,} groups in {result['partitions']} "
        f"__consumer_offsets partitions to {terminal(output)} {where}"
    )
    for path in (end_offsets_file, start_offsets_file):
        if path:
            click.echo(f"wrote the offsets of {result['offset_partitions']:,} topic partitions to {terminal(path)}")


main.add_command(metrics)
main.add_command(report)


if __name__ == "__main__":
    main()
