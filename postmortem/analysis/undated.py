"""Lines with no time, placed around a kill by their order in their file.

``journalctl -o cat`` prints messages only: its entries are stored without a time, and no query
bounded by times finds them. A journal is written in order, though: systemd's lines about a
unit's death (``A process of this unit has been killed by the OOM killer``, ``Main process
exited, code=killed``, ``Failed with result 'oom-kill'``) are the kill's own lines, and a line
after them in the same file came after the kill. A file that holds as many deaths of the unit
as the dated sources do holds the dated i-th of them as its own i-th (:func:`kill_ranks`): its
lines after that death's, up to the next one, are placed after the kill (:class:`Placed`). A
file that holds none of them, or another number, cannot be ordered against the kill
(:class:`Unplaced`): what it shows is not said to come after it.

>>> rows = [
...     {"source_id": 1, "line_no": 26, "origin": "systemd", "kind": "oom_killed", "message": "u: A process …"},
...     {"source_id": 1, "line_no": 29, "origin": "systemd", "kind": "failed", "message": "u: Failed …"},
...     {"source_id": 1, "line_no": 37, "origin": "operator", "kind": "command",
...      "message": "/usr/bin/systemctl restart u.service"},
... ]
>>> u = place(rows, (0, 1))
>>> u.placed[0].kill_lines, [ln.line_no for ln in u.commands_after()]
((26, 29), [37])
>>> u.operator_started("u.service"), u.ended_failed("u.service")
(True, False)
>>> place(rows, (0, 2)).unplaced[0].commands  # the dated sources hold two deaths, the file one
1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import Incident

#: a unit's lines that belong to its death, and those of them that begin one
DEATH_KINDS = frozenset(
    {
        "oom_killed",
        "oomd_killed",
        "oom_kill",
        "main_exited",
        "killing",
        "timeout",
        "watchdog",
        "failed",
        "consumed",
        "left_running",
    }
)
OPENING_KINDS = frozenset(
    {"oom_killed", "oomd_killed", "oom_kill", "main_exited", "killing", "timeout", "watchdog"}
)
#: what makes such lines a death (a clean exit's "Main process exited, code=exited, status=0"
#: and "Consumed …" are none)
FATAL_KINDS = frozenset({"oom_killed", "oomd_killed", "oom_kill", "failed"})
#: systemd's lines of a unit started again (by a restart job, or by anything else)
STARTED_KINDS = frozenset({"starting", "started", "restart_scheduled"})
#: … and of a unit no longer in the failed state
UNFAILED_KINDS = STARTED_KINDS | {"deactivated"}


@dataclass(frozen=True)
class UndatedLine:
    """A line of ``undated_lines.sql``: systemd's about the unit, the kernel's kill in its
    cgroup, or an operator's command."""

    source_id: int
    line_no: int
    origin: str  # systemd, kernel or operator
    kind: str  # unit_events.action; oom_kill; command
    message: str
    code: str | None = None
    restart_count: int | None = None

    def starts(self, unit: str) -> bool:
        """An operator's ``systemctl start|restart`` (``docker start|restart|run``, ``compose
        up``) naming ``unit`` (or a container's name)."""
        words = set(self.message.split())
        return self.origin == "operator" and unit in words and bool({"start", "restart", "run", "up"} & words)


@dataclass(frozen=True)
class Placed:
    """A file with no times that holds the kill's own lines (``kill_lines``: the first and the
    last of them), with its lines after them up to the unit's next death there."""

    source_id: int
    kill_lines: tuple[int, int]
    own: tuple[UndatedLine, ...]
    after: tuple[UndatedLine, ...]


@dataclass(frozen=True)
class Unplaced:
    """A file with no times whose lines cannot be ordered against the kill: it holds
    ``deaths`` deaths of the unit where the dated sources hold ``dated``."""

    source_id: int
    deaths: int
    dated: int
    #: operators' commands in it (none of them can be said to come after the kill)
    commands: int


@dataclass
class Undated:
    """The lines with no time of an incident's unit (and operators' commands), by file."""

    placed: list[Placed] = field(default_factory=list)
    unplaced: list[Unplaced] = field(default_factory=list)

    def commands_after(self) -> list[UndatedLine]:
        """Operators' commands after the kill's own lines, each file's in line order."""
        return [ln for p in self.placed for ln in p.after if ln.origin == "operator"]

    def restarts_after(self) -> list[UndatedLine]:
        """systemd's restart jobs of the unit after its kill."""
        return [ln for p in self.placed for ln in p.after if ln.kind == "restart_scheduled"]

    def start_limit_after_restarts(self) -> bool:
        """systemd gave up (its start limit) after the last restart job a file shows: that
        restart never happened."""
        for p in self.placed:
            kinds = [ln.kind for ln in p.after if ln.origin == "systemd"]
            if "restart_scheduled" in kinds:
                last = len(kinds) - 1 - kinds[::-1].index("restart_scheduled")
                if "start_limit_hit" in kinds[last:]:
                    return True
        return False

    def says(self, kind: str) -> bool:
        """systemd says ``kind`` of the unit (``on_failure``: it started its OnFailure= units)
        in the kill's own lines of a file or after them."""
        return any(
            ln.origin == "systemd" and ln.kind == kind for p in self.placed for ln in (*p.own, *p.after)
        )

    def death_told(self) -> bool:
        """systemd's account of the unit's death is among the kill's own lines of a file."""
        return any(ln.origin == "systemd" for p in self.placed for ln in p.own)

    def operator_started(self, unit: str) -> bool:
        """An operator's command started ``unit`` after the kill, before anything else started
        the killed unit (systemd's start or restart job of it)."""
        for p in self.placed:
            for ln in p.after:
                if ln.origin == "systemd" and ln.kind in STARTED_KINDS:
                    break
                if ln.starts(unit):
                    return True
        return False

    def ended_failed(self, unit: str) -> bool | None:
        """Whether the files leave the unit failed after its kill (True), started again since
        (False), or say nothing of it (None, no file placed)."""
        states = [_last_state(p, unit) for p in self.placed]
        known = [s for s in states if s is not None]
        if not known:
            return None
        return all(known)


def _last_state(p: Placed, unit: str) -> bool | None:
    state = None
    for ln in (*p.own, *p.after):
        if ln.origin == "systemd" and ln.kind in ("failed", "start_limit_hit"):
            state = True
        elif (ln.origin == "systemd" and ln.kind in UNFAILED_KINDS) or ln.starts(unit):
            state = False
    return state


def _line(r: dict[str, Any]) -> UndatedLine:
    return UndatedLine(
        int(r["source_id"]),
        int(r["line_no"]),
        str(r["origin"]),
        str(r["kind"]),
        str(r["message"] or ""),
        r.get("code"),
        r.get("restart_count"),
    )


def deaths(lines: Iterable[UndatedLine]) -> list[list[UndatedLine]]:
    """The unit's deaths a file shows, each its own lines in order: a run of the unit's death
    lines that another of its lines (a start, a stop) ends, or a new death's first line after
    a ``Failed with result``; one with nothing fatal in it (a clean exit) is none."""
    out: list[list[UndatedLine]] = []
    cur: list[UndatedLine] = []
    for ln in lines:
        if ln.origin == "operator":
            continue
        opens_another = ln.kind in OPENING_KINDS and any(x.kind == "failed" for x in cur)
        if ln.kind not in DEATH_KINDS or opens_another:
            out.append(cur)
            cur = []
        if ln.kind in DEATH_KINDS:
            cur.append(ln)
    out.append(cur)
    return [d for d in out if any(_fatal(x) for x in d)]


def _fatal(ln: UndatedLine) -> bool:
    return ln.kind in FATAL_KINDS or (ln.kind == "main_exited" and ln.code in ("killed", "dumped"))


def place(rows: Sequence[dict[str, Any]], rank: tuple[int, int] | None) -> Undated:
    """``undated_lines.sql``'s rows placed around the kill that is the ``rank[0]``-th of the
    ``rank[1]`` dated kills of its unit on its host (:func:`kill_ranks`; None: not dated)."""
    by_file: dict[int, list[UndatedLine]] = {}
    for r in rows:
        by_file.setdefault(int(r["source_id"]), []).append(_line(r))
    out = Undated()
    for sid, lines in by_file.items():
        ds = deaths(lines)
        commands = sum(1 for ln in lines if ln.origin == "operator")
        if rank is not None and ds and len(ds) == rank[1]:
            own = ds[rank[0]]
            last = own[-1].line_no
            until = ds[rank[0] + 1][0].line_no if rank[0] + 1 < len(ds) else None
            after = [ln for ln in lines if ln.line_no > last and (until is None or ln.line_no < until)]
            out.placed.append(Placed(sid, (own[0].line_no, last), tuple(own), tuple(after)))
        elif ds or commands:
            out.unplaced.append(Unplaced(sid, len(ds), rank[1] if rank else 0, commands))
    return out


def kill_ranks(incidents: Iterable[Incident]) -> dict[int, tuple[int, int]]:
    """incident_id → (its place among its unit's dated kills on its host, in time order; how
    many there are).

    >>> from datetime import UTC, datetime
    >>> at = lambda h: datetime(2025, 1, 1, h, tzinfo=UTC)
    >>> incs = [Incident(1, "h", at(3), "a.service", "host_oom", 0.9), Incident(2, "h", at(1), "a.service", "host_oom", 0.9),
    ...         Incident(3, "h", at(2), "b.service", "host_oom", 0.9)]
    >>> kill_ranks(incs)
    {2: (0, 2), 1: (1, 2), 3: (0, 1)}
    """
    groups: dict[tuple[str | None, str], list[Incident]] = {}
    for inc in incidents:
        if inc.ts is not None and inc.unit is not None:
            groups.setdefault((inc.host, inc.unit), []).append(inc)
    out: dict[int, tuple[int, int]] = {}
    for group in groups.values():
        group.sort(key=lambda i: (i.ts, i.incident_id))
        out |= {inc.incident_id: (n, len(group)) for n, inc in enumerate(group)}
    return out
