"""User errors: things a person can fix. The CLI prints them as one sentence and exits with 2."""

from __future__ import annotations


class UserError(Exception):
    """A problem with the command line, the input or the machine, with what to do about it."""


class JavaMissing(UserError):
    pass


class InputNotFound(UserError):
    pass


class ConnectorMissing(UserError):
    pass
