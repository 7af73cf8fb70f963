"""What every offset-audit command shares: how a user error ends a command, and the options the
read commands and the run commands both take. Its own module so that command modules (cli.py,
cli_report.py, cli_metrics.py) import it without importing each other."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from offset_audit.errors import UserError, user_error_in
from offset_audit.escaping import terminal


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


STORAGE_OPTION = click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="for s3:// paths, as delta-rs names them (AWS_ENDPOINT_URL, AWS_REGION, ...); over the AWS_* "
    "environment and the config's [storage] (repeatable).",
)
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


# The options of the commands that read an audit's output folder (describe, delete-plan, report, metrics).
AUDIT_DIR_OPTION = click.option(
    "--audit", "audit_dir", required=True, metavar="DIR", help="the --output folder of an audit."
)
READ_CONF_OPTION = click.option(
    "--conf",
    "conf_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="TOML file overlaying conf/default.toml (its [storage] is used).",
)


def read_storage(conf_file: str | None, storage_options: tuple[str, ...]):
    """The object-store access of a read command: the config's [storage], then --storage-option."""
    from offset_audit.runs.config import load_settings
    from offset_audit.storage import for_settings

    return for_settings(load_settings(conf_file, storage=_pairs(storage_options, "--storage-option")))
