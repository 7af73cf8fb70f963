"""The `offset-audit` program: a warm session runs the command if one can (offset_audit.warm.client),
else this process does. Imports nothing heavy before it knows which."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] != ["warm"]:
        from offset_audit.warm import client

        code = client.run(argv)
        if code is not None:
            sys.exit(code)
    from offset_audit.cli.main import main as commands

    commands()
