"""A failed start's attempts: how many there were, and the errors their server wrote.

Pure functions over an incident's evidence (:func:`.incidents.start_failures` names its
kinds): an attempt ends with an exit of the unit's main process (``unit_start_exit``); the
server's error lines (``server_start_error``, a crash's ``server_*``) belong to the attempt
that ends next.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from .model import Evidence


def start_limit(e: Evidence) -> bool:
    """A line of systemd's start limit (``Start request repeated too quickly``, its result)."""
    return e.raw.get("result") == "start-limit-hit" or e.raw.get("action") == "start_limit_hit"


def _firsts(lines: Sequence[Evidence]) -> list[datetime]:
    """The times of ``lines``, one a second (the same line in two copies of the journal), the
    earliest of each, in time order."""
    firsts: dict[datetime, datetime] = {}
    for e in lines:
        if e.ts is not None:
            second = e.ts.replace(microsecond=0)
            firsts[second] = min(firsts.get(second, e.ts), e.ts)
    return sorted(firsts.values())


def attempt_ends(items: Sequence[Evidence]) -> list[datetime]:
    """When each start of a failed start's incident ended: its main process's error exits;
    without them, systemd's failure lines before its start limit, one a second (systemd before
    232 says "failed" twice, and after the limit once more, in the next second maybe: no attempt
    of its own)."""
    exits = [e for e in items if e.kind == "unit_start_exit"]
    if exits:
        return _firsts(exits)
    failed = [e for e in items if e.kind == "unit_start_failed" and e.ts is not None]
    limits = [(e.ts, e.line_no) for e in failed if start_limit(e)]
    gave_up = min(limits) if limits else None
    return _firsts(
        [e for e in failed if not start_limit(e) and (gave_up is None or (e.ts, e.line_no) < gave_up)]
    )


def start_attempts(items: Sequence[Evidence]) -> int:
    """How many starts of a failed start's incident ended (:func:`attempt_ends`)."""
    return len(attempt_ends(items))


@dataclass(frozen=True)
class AttemptError:
    """One distinct error of a failed start's server: its lines (the first one quoted) and how
    many attempts it ended."""

    lines: tuple[Evidence, ...]
    attempts: int

    @property
    def first(self) -> Evidence:
        return self.lines[0]


def attempt_errors(items: Sequence[Evidence], errors: Sequence[Evidence]) -> list[AttemptError]:
    """``errors`` (the server's error lines among the evidence ``items``, in time order) once
    each by their words, with the attempts each ended: those whose end (:func:`attempt_ends`)
    is the next after one of its lines (a line stamped after the last end, by a clock a little
    ahead, is the last attempt's).

    >>> from datetime import UTC, timedelta
    >>> t = datetime(2026, 4, 26, 22, 45, 28, tzinfo=UTC)
    >>> def ev(kind, s, line, text=""):
    ...     return Evidence(kind, t + timedelta(seconds=s), 1, line, text)
    >>> exits = [ev("unit_start_exit", 3.5 * i + 1.7, 10 * i + 9) for i in range(3)]
    >>> oserr = [ev("server_start_error", 3.5 * i, 10 * i + 8, "OSError: x") for i in range(3)]
    >>> [(e.first.line_no, e.attempts) for e in attempt_errors(exits + oserr, oserr)]
    [(8, 3)]
    """
    ends = attempt_ends(items)
    last = max(len(ends) - 1, 0)
    ended: dict[str, tuple[list[Evidence], set[int]]] = {}
    for e in errors:
        lines, attempts = ended.setdefault(e.detail.strip(), ([], set()))
        lines.append(e)
        if e.ts is not None:
            attempts.add(min(bisect_left(ends, e.ts), last))
    return [AttemptError(tuple(lines), len(attempts)) for lines, attempts in ended.values()]
