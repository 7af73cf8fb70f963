"""`offset-audit`: the command group, and every command registered in it."""

from __future__ import annotations

import click

from offset_audit import __version__
from offset_audit.cli.generate import generate
from offset_audit.cli.options import Commands
from offset_audit.cli.read_commands import delete_plan, describe, metrics, report
from offset_audit.cli.run_commands import audit, decode, history, share, whatif
from offset_audit.cli.tidy_command import tidy
from offset_audit.cli.warm_commands import warm


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
# The package's own version, not its installed metadata: the zip for spark-submit --py-files has none.
@click.version_option(__version__, prog_name="offset-audit")
def main() -> None:
    """Decode dumps of Kafka's __consumer_offsets and audit offset expiry as the broker would."""


for command in (decode, audit, whatif, share, history, describe, delete_plan, generate, metrics, report, tidy, warm):
    main.add_command(command)


if __name__ == "__main__":
    main()
