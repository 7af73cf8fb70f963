"""The `offset-audit` command line. Commands parse flags, build settings and call the pipeline."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from offset_audit.commands import DEFAULT_BOOTSTRAP
from offset_audit.config import INPUT_FORMATS, MAX_RETENTION_MINUTES, load_settings
from offset_audit.errors import UserError, user_error_in
from offset_audit.escaping import terminal
from offset_audit.storage import normalize


def _fail(message: str) -> None:
    """The one way a user error ends a command: `error: <one sentence>` on stderr, exit code 2."""
    click.echo(f"error: {terminal(message)}", err=True)
    sys.exit(2)


def _user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """A user error is one sentence on stderr and exit code 2, never a traceback: raised here, or in a
    Spark task (where it reaches the driver wrapped in Spark's exception and its Python traceback)."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UserError as err:
            _fail(str(err))
        except Exception as err:
            message = user_error_in(err)
            if message is None:
                raise
            _fail(message)

    return wrapper


class _Commands(click.Group):
    """Usage errors (a missing or malformed option) in the same one-sentence style as every other user
    error, with where to read more, instead of click's usage block."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as err:
            where = err.ctx.command_path if err.ctx is not None else ctx.command_path
            _fail(f"{err.format_message()} (see {where} --help)")


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    options = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"{option} takes NAME=VALUE, got '{item}'")
        options[name] = value
    return options


def _session(settings, inputs: list[str]):
    """The run's SparkSession; under spark-submit, with shuffles sized to the dump and the cluster."""
    from offset_audit.session import fit_to_cluster, get_spark, under_spark_submit
    from offset_audit.sources import input_bytes

    spark = get_spark(settings.spark)
    if under_spark_submit():
        size = input_bytes(inputs, settings)
        for name, value in fit_to_cluster(spark, size).items():
            cores = spark.sparkContext.defaultParallelism
            dump = "a live topic" if size is None else f"{size / 2**20:,.1f} MiB of input"
            click.echo(f"offset-audit: {name}={value} for {cores} cores and {dump} (set it to choose)", err=True)
    return spark


def _paths(values: tuple[str, ...] | list[str]) -> list[str]:
    """Paths as the tool keeps them, worked out here on the driver: a relative path made absolute (an
    executor would resolve it from its own work folder), file:// dropped, s3a:// read as s3://."""
    return [normalize(v) for v in values]


class _RetentionMinutes(click.ParamType):
    """offsets.retention.minutes: a whole number the broker can hold (a Java int, at least 1)."""

    name = "minutes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            minutes = int(value)
        except (TypeError, ValueError):
            self.fail(f"takes a whole number of minutes, not '{value}'", param, ctx)
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


STORAGE_OPTION = click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="for s3:// paths, as delta-rs names them (AWS_ENDPOINT_URL, AWS_REGION, ...); over the AWS_* "
    "environment and the config's [storage] (repeatable).",
)


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
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
        click.option("--bootstrap-servers", default=None, help="with --input-format kafka"),
        click.option(
            "--kafka-option",
            "kafka_options",
            multiple=True,
            metavar="NAME=VALUE",
            help="extra option for Spark's Kafka source (repeatable).",
        ),
        click.option("--topic", default=None, help="topic of the dump (default __consumer_offsets)."),
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
) -> None:
    """Decode a dump into typed Delta tables (offset_commits, group_metadata, ...)."""
    from offset_audit import preflight
    from offset_audit.decode import TABLES
    from offset_audit.pipeline import run_decode
    from offset_audit.summary import decode_summary

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
    spark = _session(settings, inputs)
    report = run_decode(spark, inputs, output, settings)
    click.echo(decode_summary(report, output))


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
        raise UserError("pass --input PATH (or --input-format kafka --bootstrap-servers ...)")
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
    help="offsets.retention.minutes (default 10080; 1 to 2147483647, an int on the broker).",
)
@click.option(
    "--snapshot-id", default=None, help="name of this snapshot in the tables (default: from input and as_of)."
)
@click.option(
    "--end-offsets",
    default=None,
    metavar="PATH",
    help="Parquet or CSV of topic, partition, log_start_offset, log_end_offset.",
)
@click.option("--keep-decoded", is_flag=True, help=KEEP_DECODED_HELP)
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
    keep_decoded,
) -> None:
    """Judge every committed offset and group as the broker's expiry sweep would."""
    from offset_audit import preflight
    from offset_audit.audit import AUDIT_TABLES, run_audit
    from offset_audit.summary import audit_summary

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
    if end_offsets:
        end_offsets = normalize(end_offsets)
        preflight.check_end_offsets(end_offsets, settings)
    preflight.check_output(output, [*AUDIT_TABLES, RUNS, *_decoded_tables()], settings)
    spark = _session(settings, inputs)
    result = run_audit(
        spark,
        inputs,
        output,
        settings,
        snapshot_id=snapshot_id,
        end_offsets=end_offsets,
        keep_decoded=keep_decoded,
    )
    click.echo(audit_summary(result, output))


def _minutes_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError as err:
        raise UserError(
            f"--retention-minutes takes comma-separated minutes, e.g. 1440,10080,43200, not '{text}'"
        ) from err
    if not values:
        raise UserError("--retention-minutes needs at least one number of minutes")
    from offset_audit.preflight import check_retention_minutes

    for value in values:
        check_retention_minutes(value)
    return values


def _decoded_tables() -> list[str]:
    from offset_audit.audit import DECODED
    from offset_audit.decode import TABLES

    return [f"{DECODED}/{name}" for name in TABLES]


@main.command()
@input_options
@click.option("--output", required=True, metavar="DIR", help="folder for the whatif table.")
@click.option("--retention-minutes", "retentions", required=True, help="comma-separated, e.g. 1440,10080,43200.")
@click.option("--as-of", "as_of_points", multiple=True, help="latest (default), now or ISO timestamps (repeatable).")
@click.option("--snapshot-id", default=None)
@click.option("--per-group", is_flag=True, help="also write every group in every scenario (table whatif_groups).")
@click.option("--keep-decoded", is_flag=True, help=KEEP_DECODED_HELP)
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
) -> None:
    """What would expire, and which groups would go, under other retentions or at other times."""
    from offset_audit import preflight
    from offset_audit.audit import WHATIF_TABLES, run_whatif
    from offset_audit.summary import whatif_summary

    settings = _input_settings(
        inputs, conf_file, input_format, partition, bootstrap_servers, kafka_options, topic, storage_options
    )
    minutes = _minutes_list(retentions)
    points = list(as_of_points) or [settings.as_of]
    inputs, output = _paths(inputs), normalize(output)
    settings = preflight.check_inputs(inputs, settings)
    for point in points:
        preflight.check_as_of(point, settings.input_format)
    preflight.check_output(output, [*WHATIF_TABLES, RUNS, *_decoded_tables()], settings)
    spark = _session(settings, inputs)
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
    click.echo(f"What-if for {terminal(report.input)} (snapshot {terminal(report.snapshot_id)}):")
    click.echo(whatif_summary(rows))


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
@click.option(
    "--end-offsets", default=None, metavar="PATH", help="Parquet or CSV of topic, partition, ..., log_end_offset."
)
@click.option(
    "--broker-config",
    default=None,
    type=click.Path(dir_okay=False),
    help="a broker's server.properties: its group.share.* limits are checked and used.",
)
@click.option(
    "--bootstrap-server",
    default=DEFAULT_BOOTSTRAP,
    show_default=True,
    help="written into the delete commands as given: a shell word of yours.",
)
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
    broker_config,
    bootstrap_server,
) -> None:
    """Share groups (KIP-932): share-partition state, cleanup cut-offs, assignment and limits."""
    import dataclasses

    from offset_audit import preflight
    from offset_audit.constants import OFFSETS_TOPIC
    from offset_audit.share.run import SHARE_TABLES, check_share_input_format, run_share
    from offset_audit.summary import share_summary

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
        tables += _decoded_tables()
    if end_offsets:
        end_offsets = normalize(end_offsets)
        preflight.check_end_offsets(end_offsets, settings)
    if broker_config:
        preflight.check_file(broker_config, "--broker-config")
    preflight.check_output(output, tables, settings)
    spark = _session(settings, inputs + groups_inputs)
    result = run_share(
        spark,
        inputs,
        output,
        settings,
        delivery_count_limit=delivery_count_limit,
        groups_inputs=groups_inputs,
        end_offsets=end_offsets,
        broker_config=broker_config,
        bootstrap=bootstrap_server,
    )
    click.echo(share_summary(result, output))


@main.command("delete-plan")
@click.option("--audit", "audit_dir", required=True, metavar="DIR", help="the --output folder of an audit.")
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
@click.option(
    "--conf",
    "conf_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="TOML file overlaying conf/default.toml (its [storage] is used).",
)
@_user_errors
def delete_plan(audit_dir, snapshot_id, bootstrap_server, script, storage_options, conf_file) -> None:
    """Print ready-to-run kafka-consumer-groups.sh --delete-offsets commands for the deletion candidates.

    Reads the audit's deletion_candidates table directly (no Spark). Every group and topic name in the
    script is quoted and passed as --group=NAME / --topic=NAME, comments are escaped: a name from the
    dump cannot run anything or pass for an option.
    """
    import os

    from offset_audit import preflight
    from offset_audit.audit import check_audit_dir
    from offset_audit.audit import delete_plan as plan
    from offset_audit.storage import for_settings
    from offset_audit.summary import delete_plan_lines

    storage = for_settings(load_settings(conf_file, storage=_pairs(storage_options, "--storage-option")))
    audit_dir = normalize(audit_dir)
    check_audit_dir(audit_dir, storage)
    if script:
        preflight.check_script_path(script)
    snapshot, candidates = plan(audit_dir, snapshot_id, storage)
    if not candidates:
        click.echo(f"no deletion candidates in {terminal(audit_dir)}")
        return
    text = "\n".join(delete_plan_lines(snapshot, candidates, bootstrap_server)) + "\n"
    if script:
        with open(script, "w") as handle:
            handle.write(text)
        os.chmod(script, 0o755)
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
@_user_errors
def generate(
    output, records, seed, corrupt, partitions, output_format, cluster_records, compression, batch_records
) -> None:
    """Write a realistic, deterministic dump of __consumer_offsets (Parquet snapshot or log segments), or of
    __share_group_state for the same cluster's share groups."""
    import tempfile

    from offset_audit.generator import generate_dump, generate_share_state, snapshot_to_segments

    if output_format == "share-state":
        result = generate_share_state(
            output, records, seed=seed, world_records=cluster_records or records, partitions=partitions, corrupt=corrupt
        )
        click.echo(
            f"wrote {result['records']:,} __share_group_state records of {result['share_partitions']:,} "
            f"share-partitions in {result['partitions']} partitions to {terminal(output)}"
        )
        return
    if output_format == "parquet":
        result = generate_dump(output, records, seed=seed, corrupt=corrupt, partitions=partitions)
        where = f"({result['files']} Parquet files)"
    else:
        with tempfile.TemporaryDirectory() as snapshot:
            result = generate_dump(snapshot, records, seed=seed, corrupt=corrupt, partitions=partitions)
            written = snapshot_to_segments(snapshot, output, batch_records, compression)
        where = f"({written['segments']} segment files, {compression} compression)"
    click.echo(
        f"wrote {result['records']:,} records of {result['groups']:,} groups in {result['partitions']} "
        f"__consumer_offsets partitions to {terminal(output)} {where}"
    )


if __name__ == "__main__":
    main()
