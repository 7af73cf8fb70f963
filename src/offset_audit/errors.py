"""User errors: things a person can fix. The CLI prints them as one sentence and exits with 2."""

from __future__ import annotations

import re


class UserError(Exception):
    """A problem with the command line, the input or the machine, with what to do about it."""


class JavaMissing(UserError):
    pass


class InputNotFound(UserError):
    pass


class ConnectorMissing(UserError):
    pass


_RAISED = re.compile(r"^offset_audit\.errors\.\w+: (.+)$", re.M)


def user_error_in(err: BaseException) -> str | None:
    """The message of a UserError raised in a Spark task, from the exception Spark gives the driver
    (PythonException or Py4JJavaError, whose text holds the worker's traceback); None for anything else."""
    found = _RAISED.findall(str(err))
    return found[-1].strip() if found else None
