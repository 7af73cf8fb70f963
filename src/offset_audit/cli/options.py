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
from offset_audit.setting_definitions import ANY_NAMES, FLAG, OPTIONS, TEXTS, WHOLE, Setting
from offset_audit.settings import BY_DEST, Settings
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


class SnapshotId(click.ParamType):
    """A snapshot id in its one form (snapshot_ids), refused before Spark starts."""

    name = "snapshot id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from offset_audit.snapshot_ids import FORM, is_snapshot_id

        if not is_snapshot_id(value):
            self.fail(f"takes {FORM}, not {value!r}", param, ctx)
        return value


DURATION = Duration()
SNAPSHOT_ID = SnapshotId()


class ClusterName(click.ParamType):
    """--cluster of the read commands: a cluster's name or id (runs.clusters), of the one form names take."""

    name = "cluster name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
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


# Flags made from the settings' definitions ---------------------------------------------------------


class SettingOption(HiddenAliases):
    """A flag that sets a setting (settings.py): its type, metavar and help come from the definition, and
    its value reaches `runtime.config.load_settings` under the setting's `dest`, which checks it."""

    def __init__(self, *args: Any, setting: Setting, **kwargs: Any) -> None:
        self.setting = setting
        super().__init__(*args, **kwargs)

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        value = super().process_value(ctx, value)
        ctx.meta.setdefault(GIVEN, set()).add(self.name)
        return value


# Where a command's context keeps the names of its setting flags (`settings_given`).
GIVEN = "offset_audit.setting_flags"


class SettingValue(click.ParamType):
    """A flag's text read as its setting's kind reads the config's value (a whole number, minutes or a
    duration, a count of snapshots or a duration), and checked by its definition (`Setting.validated`, which
    `load_settings` asks too), so that a mistake names the flag as click names it."""

    def __init__(self, setting: Setting) -> None:
        self.setting = setting
        self.name = setting.kind.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            flag = param.opts[0] if param is not None else self.setting.flag
            if self.setting.kind is WHOLE:
                if not value.strip().lstrip("-").isdigit():
                    raise UserError(f"{flag} takes a whole number, not '{value}'")
                return self.setting.validated(int(value), flag)
            return self.setting.validated(self.setting.kind.read(value, flag), flag)
        except UserError as err:
            self.fail(str(err).removeprefix(f"{flag} "), param, ctx)


def _given(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...] | None:
    """A repeatable flag's values; None when it is not given (the config's value stands)."""
    return tuple(values) or None


def setting_option(
    dest: str,
    *,
    flag: str | None = None,
    aliases: tuple[str, ...] = (),
    help: str | None = None,
    choices: tuple[str, ...] | None = None,
) -> Callable[..., Any]:
    """The flag of the setting named `dest`, as its definition says; a command may give it another flag
    name (history's --dump-topic), or help that says what the setting means to it."""
    setting = BY_DEST[dest]
    name = flag or setting.flag
    where = f"[{setting.section}] {setting.key}" if setting.key else f"[{setting.section}]"
    default = f"; default {setting.default_text}" if setting.shows_default else ""
    text = f"{help or setting.help} ({where}{default})"
    options: dict[str, Any] = {"cls": SettingOption, "setting": setting, "default": None, "help": text}
    metavar = setting.metavar or setting.kind.metavar
    if metavar:
        options["metavar"] = metavar
    if setting.kind is FLAG:
        options.update(is_flag=True, flag_value=not name.startswith("--no-"))
    elif setting.kind in (TEXTS, OPTIONS, ANY_NAMES):
        options.update(multiple=True, default=(), callback=_given)
    elif choices or setting.choices:
        options["type"] = click.Choice(choices or setting.choices)
    else:
        options["type"] = SettingValue(setting)
    return click.option(name, *aliases, dest, **options)


def settings_given(options: dict[str, Any]) -> dict[str, Any]:
    """The setting flags' values among a command's arguments, taken out of them (by their `dest`): those of
    its SettingOptions, not another option of the same name (the read commands' --cluster)."""
    names = click.get_current_context().meta.get(GIVEN, set())
    given = {name: options.pop(name) for name in list(options) if name in names}
    for name, value in given.items():
        setting = BY_DEST[name]
        if value is not None and setting.kind in (OPTIONS, ANY_NAMES):
            given[name] = pairs(value, setting.flag)
    return given


def _apply(command: Callable[..., Any], decorators: list[Callable]) -> Callable[..., Any]:
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


# The commands that read a dump ---------------------------------------------------------------------

CONF_OPTION = click.option(
    "--conf",
    "conf_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="TOML file of settings (conf/default.toml lists each, at its default).",
)


@dataclass(frozen=True)
class Dump:
    """The dump a run command reads: its paths as the tool keeps them (`paths`), and the run's settings:
    the defaults, then --conf, then the flags."""

    inputs: list[str]
    settings: Settings


def dump_options(
    command: Callable[..., Any] | None = None,
    *,
    topic_flag: str = "--topic",
    default_topic: str | None = None,
) -> Callable[..., Any]:
    """The options every command that reads a dump takes, turned into one `dump: Dump` argument.

    `topic_flag` names the dump's topic option where `--topic` means something else (history: a topic
    of the groups); `default_topic` is the dump's topic when neither flag nor config names one (share:
    __share_group_state). The command's own setting flags (`setting_option`: its --as-of,
    --retention-minutes) overlay the config like the shared ones."""
    if command is None:
        return functools.partial(dump_options, topic_flag=topic_flag, default_topic=default_topic)

    @functools.wraps(command)
    def with_dump(*, inputs: tuple[str, ...], conf_file: str | None, remote: str | None, **options: Any) -> Any:
        from offset_audit.runtime.config import load_settings

        given = settings_given(options)
        if given.get("topic") is None:
            given["topic"] = default_topic
        settings = load_settings(conf_file, remote=remote, **given)
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
            setting_option("input_format", help=formats.help_text(), choices=formats.CHOICES),
            setting_option("partition"),
            setting_option("bootstrap_servers", aliases=("--bootstrap-servers",)),  # the earlier name, still read
            setting_option("kafka_options", help=f"{BY_DEST['kafka_options'].help[:-1]} (repeatable)."),
            setting_option("topic", flag=topic_flag, help="topic of the dump."),
            setting_option("cluster"),
            setting_option("storage", help=f"{BY_DEST['storage'].help[:-1]} (repeatable)."),
            setting_option("writer"),
            click.option(
                "--remote",
                envvar="SPARK_REMOTE",
                default=None,
                metavar="sc://HOST:PORT",
                help="run on this Spark Connect server (default $SPARK_REMOTE): its session reads, decodes and "
                "writes the tables through Spark (docs/cluster.md).",
            ),
            CONF_OPTION,
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
    """--audit, --storage-option and --conf (its [storage] is used, and the command's own settings),
    turned into one `audit: AuditFolder` argument; the command's setting flags overlay the config."""

    @functools.wraps(command)
    def with_folder(*, audit_dir: str, conf_file: str | None, **options: Any) -> Any:
        from offset_audit.runtime.config import load_settings
        from offset_audit.runtime.preflight import check_delta_path
        from offset_audit.storage import for_settings

        settings = load_settings(conf_file, **settings_given(options))
        check_delta_path(normalize(audit_dir), "--audit")
        return command(audit=AuditFolder(normalize(audit_dir), for_settings(settings), settings), **options)

    return _apply(
        user_errors(with_folder),
        [
            click.option("--audit", "audit_dir", required=True, metavar="DIR", help="the --output folder of an audit."),
            setting_option("storage", help=f"{BY_DEST['storage'].help[:-1]} (repeatable)."),
            CONF_OPTION,
        ],
    )
