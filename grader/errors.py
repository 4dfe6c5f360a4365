"""Errors the CLI turns into a message and an exit code (never a traceback)."""


class GraderError(Exception):
    """A problem with the input or the environment: exit code 2, message shown as is."""

    exit_code = 2
