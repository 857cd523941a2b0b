"""One error hierarchy and the named exit codes.

Library code raises a subclass of :class:`PostmortemError`; the CLI turns it into a single
``Error: …`` line on stderr and the exit code named by the class. Anything else that escapes
is a bug: the CLI prints a one-line summary and exits with :data:`ExitCode.BUG` (the traceback
is shown only with ``--debug``).
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    BUG = 70


class PostmortemError(Exception):
    """Base class: a problem the user can act on. ``str(err)`` is the one-line message."""

    exit_code: ExitCode = ExitCode.ERROR


class UsageError(PostmortemError):
    """Bad option values (time zone, time range, format names)."""

    exit_code = ExitCode.USAGE


class InputError(PostmortemError):
    """An input path that cannot be read or is not a log postmortem understands."""


class ArchiveError(InputError):
    """A compressed input that is truncated, corrupt or over the size limits."""


class StoreError(PostmortemError):
    """The database cannot be opened, is locked, or has an unknown schema version."""


class StoreBusyError(StoreError):
    """Another process holds the database lock."""


class QueryError(PostmortemError):
    """A user query failed or tried to write."""


class ToolMissingError(PostmortemError):
    """An external tool (journalctl) is needed and not installed."""
