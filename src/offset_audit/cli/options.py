"""What the commands share, declared once: how a user error ends a command, the options of the commands
that read a dump (which build the run's settings), and those of the commands that read an audit folder.

A command module imports this one and never another command module.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from offset_audit.errors import UserError, user_error_in
from offset_audit.escaping import terminal
from offset_audit.inputs import formats
from offset_audit.settings import MAX_RETENTION_MINUTES, WRITERS, Settings
from offset_audit.storage import Storage, normalize


def fail(message: str) -> None:
    """The one way a user error ends a command: `error: <one sentence>` on stderr, exit code 2."""
    click.echo(f"error: {terminal(message)}", err=True)
    sys.exit(2)


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """A user error is one sentence on stderr and exit code 2, never a traceback: raised here, or in a
    Spark task (where it reaches the driver wrapped in Spark's exception and its Python traceback)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UserError as err:
            fail(str(err))
        except Exception as err:
            message = user_error_in(err)
            if message is None:
                raise
            fail(message)

    return wrapper


class Commands(click.Group):
    """Usage errors (a missing or malformed option) in the same one-sentence style as every other user
    error, with where to read more, instead of click's usage block."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as err:
            where = err.ctx.command_path if err.ctx is not None else ctx.command_path
            fail(f"{err.format_message()} (see {where} --help)")


def pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    options = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"{option} takes NAME=VALUE, got '{item}'")
        options[name] = value
    return options


def paths(values: tuple[str, ...] | list[str]) -> list[str]:
    """Paths as the tool keeps them, worked out here on the driver: a relative path made absolute (an
    executor would resolve it from its own work folder), file:// dropped, s3a:// read as s3://."""
    return [normalize(v) for v in values]


# Parameter types -----------------------------------------------------------------------------------


class Duration(click.ParamType):
    """A duration as operators write it (30m, 24h, 7d; a bare number is minutes), in minutes."""

    name = "duration"
    expected = "takes a duration like 30m, 24h, 7d (a bare number is minutes)"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from offset_audit.durations import parse_minutes

        try:
            return parse_minutes(value, "it")
        except UserError:
            self.fail(f"{self.expected}, not '{value}'", param, ctx)


class RetentionMinutes(Duration):
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


class SnapshotId(click.ParamType):
    """A snapshot id in its one form (snapshot_ids), refused before Spark starts."""

    name = "snapshot id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from offset_audit.snapshot_ids import FORM, is_snapshot_id

        if not is_snapshot_id(value):
            self.fail(f"takes {FORM}, not {value!r}", param, ctx)
        return value


class Keep(click.ParamType):
    """--keep-snapshots: a count (48) or a duration (30d), refused before Spark starts."""

    name = "count or duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        from offset_audit.settings import KeepSnapshots

        if isinstance(value, KeepSnapshots):
            return value
        try:
            return KeepSnapshots.parse(value, "it")
        except UserError as err:
            self.fail(str(err).removeprefix("it "), param, ctx)


DURATION = Duration()
KEEP = Keep()
KEEP_SNAPSHOTS_OPTION = click.option(
    "--keep-snapshots",
    type=KEEP,
    default=None,
    metavar="N|DURATION",
    help="after the run, keep only the newest N snapshots of each command in this folder (48), or those "
    "judged within DURATION of the newest (30d), and tidy its tables; [output] keep_snapshots. The state "
    "in DIR/state is never removed (docs/upkeep.md).",
)
RETENTION_MINUTES = RetentionMinutes()
SNAPSHOT_ID = SnapshotId()


class ClusterName(click.ParamType):
    """--cluster: a cluster's name or id (runs.clusters), of the one form names take."""

    name = "cluster name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        from offset_audit.settings import check_cluster_name

        try:
            return check_cluster_name(value, "it")
        except UserError as err:
            self.fail(str(err).removeprefix("it "), param, ctx)


CLUSTER = ClusterName()


def cluster_option(help: str) -> Callable:
    """--cluster of the read commands: which cluster of a folder holding a fleet's audits."""
    return click.option("--cluster", type=CLUSTER, metavar="NAME", default=None, help=help)


def snapshot_id_option(help: str) -> Callable:
    """--snapshot-id, of one form wherever it is taken (snapshot_ids)."""
    return click.option("--snapshot-id", type=SNAPSHOT_ID, metavar="ID", default=None, help=help)


class HiddenAliases(click.Option):
    """An option whose first name is the one --help shows; the others still parse (a renamed option's
    earlier name, so scripts that use it keep working)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        names = self.opts
        self.opts = names[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = names


def _apply(command: Callable[..., Any], decorators: list[Callable]) -> Callable[..., Any]:
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


# The commands that read a dump ---------------------------------------------------------------------

STORAGE_OPTION = click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="for s3:// paths, as delta-rs names them (AWS_ENDPOINT_URL, AWS_REGION, ...); over the AWS_* "
    "environment and the config's [storage] (repeatable).",
)


@dataclass(frozen=True)
class Dump:
    """The dump a run command reads: its paths as the tool keeps them (`paths`), and the run's settings:
    conf/default.toml, then --conf, then the flags."""

    inputs: list[str]
    settings: Settings


def dump_options(
    command: Callable[..., Any] | None = None,
    *,
    topic_flag: str = "--topic",
    default_topic: str | None = None,
    settings_from: tuple[str, ...] = (),
) -> Callable[..., Any]:
    """The options every command that reads a dump takes, turned into one `dump: Dump` argument.

    `topic_flag` names the dump's topic option where `--topic` means something else (history: a topic
    of the groups); `default_topic` is the dump's topic when neither flag nor config names one (share:
    __share_group_state); `settings_from` names the command's own options that are settings too (its
    --as-of, --retention-minutes): they overlay the config like the shared ones."""
    if command is None:
        return functools.partial(
            dump_options, topic_flag=topic_flag, default_topic=default_topic, settings_from=settings_from
        )

    @functools.wraps(command)
    def with_dump(
        *,
        inputs: tuple[str, ...],
        input_format: str | None,
        partition: int | None,
        bootstrap_servers: str | None,
        kafka_options: tuple[str, ...],
        topic: str | None,
        cluster: str | None,
        storage_options: tuple[str, ...],
        conf_file: str | None,
        writer: str | None,
        remote: str | None,
        **options: Any,
    ) -> Any:
        from offset_audit.runs.config import load_settings

        overrides = {name: options.pop(name) for name in settings_from}
        settings = load_settings(
            conf_file,
            input_format=input_format,
            partition=partition,
            bootstrap_servers=bootstrap_servers,
            kafka_options=pairs(kafka_options, "--kafka-option"),
            topic=topic or default_topic,
            cluster=cluster,
            storage=pairs(storage_options, "--storage-option"),
            writer=writer,
            remote=remote,
            **overrides,
        )
        if not formats.input_format(settings).live and not inputs and options.get("audit_dir") is None:
            raise UserError("pass --input PATH (or --input-format kafka --bootstrap-server ...)")
        return command(dump=Dump(paths(inputs), settings), **options)

    return _apply(
        user_errors(with_dump),
        [
            click.option(
                "--input",
                "inputs",
                multiple=True,
                metavar="PATH",
                help="the dump: a Kafka-source snapshot (Parquet/Delta), log segment files or folders, or a "
                "text dump; file, folder or glob (repeatable).",
            ),
            click.option(
                "--input-format",
                type=click.Choice(formats.CHOICES),
                default=None,
                help=formats.help_text(),
            ),
            click.option(
                "--partition",
                type=click.IntRange(min=0),
                default=None,
                help="the __consumer_offsets partition of inputs that do not tell it (flat segment files, "
                "console text).",
            ),
            click.option(
                "--bootstrap-server",
                "--bootstrap-servers",  # the earlier name, still read
                "bootstrap_servers",
                cls=HiddenAliases,
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
                "(kafka.security.protocol=SASL_SSL). --end-offsets kafka (librdkafka) takes "
                "kafka.security.protocol, kafka.sasl.mechanism, kafka.sasl.jaas.config (PLAIN, SCRAM), "
                "kafka.ssl.keystore.*, kafka.ssl.key.password, kafka.ssl.endpoint.identification.algorithm, "
                "kafka.client.id, and librdkafka's own names bare (sasl.username, ssl.ca.location, ...), which "
                "Spark ignores (repeatable).",
            ),
            click.option(topic_flag, "topic", default=None, help="topic of the dump (default __consumer_offsets)."),
            click.option(
                "--cluster",
                type=CLUSTER,
                default=None,
                metavar="NAME",
                help="the cluster's name in the output folder's tables and metrics ([input] cluster); default its "
                "id, from the broker folders' meta.properties or the Kafka source. Names that id from then on "
                "(docs/fleet.md).",
            ),
            STORAGE_OPTION,
            click.option(
                "--writer",
                type=click.Choice(WRITERS),
                default=None,
                help="who writes the Delta tables: auto (default: delta-spark where the Spark session has Delta "
                "configured, else delta-rs), delta-rs or delta-spark.",
            ),
            click.option(
                "--remote",
                envvar="SPARK_REMOTE",
                default=None,
                metavar="sc://HOST:PORT",
                help="run on this Spark Connect server (default $SPARK_REMOTE): its session reads, decodes and "
                "writes the tables through Spark (docs/cluster.md).",
            ),
            click.option(
                "--conf",
                "conf_file",
                default=None,
                type=click.Path(dir_okay=False),
                help="TOML file overlaying conf/default.toml.",
            ),
        ],
    )


def output_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--json and --quiet, for the commands that run."""
    return _apply(
        command,
        [
            click.option(
                "--json",
                "as_json",
                is_flag=True,
                help="print one JSON document on stdout (counts, tables written, run and snapshot ids, paths) "
                "instead of the summary.",
            ),
            click.option("--quiet", "-q", is_flag=True, help="nothing on stderr but errors and warnings to act on."),
        ],
    )


def emit(as_json: bool, document: Callable[[], dict], summary: Callable[[], str]) -> None:
    """The command's result on stdout: the JSON document, or the readable summary."""
    if as_json:
        from offset_audit.views.json_documents import dumps

        click.echo(dumps(document()))
    else:
        click.echo(summary())


END_OFFSETS_OPTION = click.option(
    "--end-offsets",
    default=None,
    metavar="PATH|kafka",
    help="log end offsets, for lag: what kafka-get-offsets.sh prints (topic:partition:offset lines, its "
    "default --time -1), or a CSV or Parquet of topic, partition, log_start_offset, log_end_offset (told apart "
    "by content); or the word kafka to ask the --bootstrap-server cluster for both offsets of every "
    "partition, within 10 s, before Spark starts (pip install 'kafka-offset-audit[kafka]'; a file named "
    "kafka is ./kafka).",
)
START_OFFSETS_OPTION = click.option(
    "--start-offsets",
    default=None,
    metavar="PATH",
    help="log start offsets, for offset_out_of_range: kafka-get-offsets.sh --time -2 output, with a "
    "kafka-get-offsets.sh --end-offsets file (without it, log_start_offset is null).",
)


# The commands that read an audit's output folder (describe, delete-plan, report, metrics) ----------


@dataclass(frozen=True)
class AuditFolder:
    """An audit's output folder, as the tool keeps its path, and how to reach it (its object store)."""

    path: str
    storage: Storage
    settings: Settings = field(default_factory=Settings)


def audit_folder_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--audit, --storage-option and --conf (its [storage] is used), turned into one `audit: AuditFolder`
    argument."""

    @functools.wraps(command)
    def with_folder(*, audit_dir: str, storage_options: tuple[str, ...], conf_file: str | None, **options: Any):
        from offset_audit.runs.config import load_settings
        from offset_audit.runs.preflight import check_delta_path
        from offset_audit.storage import for_settings

        settings = load_settings(conf_file, storage=pairs(storage_options, "--storage-option"))
        check_delta_path(normalize(audit_dir), "--audit")
        return command(audit=AuditFolder(normalize(audit_dir), for_settings(settings), settings), **options)

    return _apply(
        user_errors(with_folder),
        [
            click.option("--audit", "audit_dir", required=True, metavar="DIR", help="the --output folder of an audit."),
            STORAGE_OPTION,
            click.option(
                "--conf",
                "conf_file",
                default=None,
                type=click.Path(dir_okay=False),
                help="TOML file overlaying conf/default.toml (its [storage] is used, and metrics' [metrics]).",
            ),
        ],
    )
