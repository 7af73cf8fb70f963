"""The `offset-audit` command line. Commands parse flags, build settings and call the pipeline."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from offset_audit.config import INPUT_FORMATS, load_settings
from offset_audit.errors import UserError


def _user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """A user error is one sentence on stderr and exit code 2, never a traceback."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UserError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(2)

    return wrapper


def _kafka_options(values: tuple[str, ...]) -> dict[str, str]:
    options = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--kafka-option takes NAME=VALUE, got '{item}'")
        options[name] = value
    return options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-offset-audit")
def main() -> None:
    """Decode dumps of Kafka's __consumer_offsets and audit offset expiry as the broker would."""


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
    decorators = [
        click.option(
            "--input",
            "inputs",
            multiple=True,
            metavar="PATH",
            help="Kafka-source snapshot: Parquet/Delta file, folder or glob (repeatable).",
        ),
        click.option(
            "--input-format",
            type=click.Choice(INPUT_FORMATS),
            default=None,
            help="parquet (default), delta, or kafka for a live cluster.",
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
def decode(inputs, input_format, bootstrap_servers, kafka_options, topic, conf_file, output, no_fast_path) -> None:
    """Decode a dump into typed Delta tables (offset_commits, group_metadata, ...)."""
    from offset_audit.pipeline import run_decode
    from offset_audit.session import get_spark
    from offset_audit.summary import decode_summary

    settings = load_settings(
        conf_file,
        input_format=input_format,
        bootstrap_servers=bootstrap_servers,
        kafka_options=_kafka_options(kafka_options),
        topic=topic,
        fast_path=False if no_fast_path else None,
    )
    if settings.input_format != "kafka" and not inputs:
        raise UserError("pass --input PATH (or --input-format kafka --bootstrap-servers ...)")
    spark = get_spark(settings.spark)
    report = run_decode(spark, list(inputs), output, settings)
    click.echo(decode_summary(report, output))


@main.command()
@click.option("--output", required=True, metavar="PATH", help="folder for the Parquet files.")
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
@_user_errors
def generate(output, records, seed, corrupt, partitions) -> None:
    """Write a realistic, deterministic Kafka-source dump of __consumer_offsets."""
    from offset_audit.generator import generate_dump

    result = generate_dump(output, records, seed=seed, corrupt=corrupt, partitions=partitions)
    click.echo(
        f"wrote {result['records']:,} records of {result['groups']:,} groups in {result['partitions']} "
        f"__consumer_offsets partitions to {output} ({result['files']} Parquet files)"
    )


if __name__ == "__main__":
    main()
