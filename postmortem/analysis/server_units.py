"""Which unit ran a server whose own lines name none.

A server's log file often says nothing of its unit (``server.log``, ``nohup.out``), and a text
journal's stream of a server's stdout is not always claimed by a unit. The other sources say
it, and this module links each such run of a server to the unit they name:

- **pid**: a pid the server's log names (its own, uvicorn's main pid, a subprocess it reports
  dead) is in a unit's cgroup by a memory cgroup OOM record's task table, an OOM kill's victim
  cgroup, or a structured journal's fields;
- **start**: the unit started at most :data:`START_BEFORE` before the run's first line (more
  than :data:`LATE_START` before it, the vote is weak and names no unit alone);
- **end**: the unit died (killed, failed, stopped, OOM-killed) at most :data:`END_AFTER` after
  the run's last line;
- **name**: the file is named after a unit (``llm-a.log`` → ``llm-a.service``) that systemd,
  the kernel or an operator's systemctl command (sudo's journal line) name on the host.

A run's unit is the one with the most evidence (pid counts most), when no other ties with it.
A start named by a Description (text journals before systemd 249) and an end naming a unit on
the same run teach that the Description is that unit's: its other lines take the unit's name.
A log file's runs are weighed together (a file is one server's). A run no evidence ties to a
unit keeps none: the report says that nothing names it — a file's name is never turned into a
unit silently. Each link is kept in ``unit_links`` with its evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from ..query import run_named_dicts
from ..store.db import Store
from ..store.parts import materialize, native
from ..unitname import file_stem, unit_from_name

#: a unit's start this long before a run's first line may be the start of that run
START_BEFORE = timedelta(seconds=120)
#: a unit's death this long after a run's last line may be the end of that run
END_AFTER = timedelta(seconds=120)
#: a start further than this before a run's first line counts less (a server's first line
#: comes seconds after its process starts; a oneshot run minutes before a server started by
#: hand is no start of it), and alone it names no unit (:func:`_choose` wants a score of 2)
LATE_START = timedelta(seconds=90)
#: a stamp this far the other way still counts (whole-second stamps, two clocks)
SLACK = timedelta(seconds=2)
#: a unit started again this many times with no end logged since its previous start is a
#: timer's job or a oneshot (systemd before 240 logs no oneshot's end): it serves nothing. A
#: server's unit logs how each run ended (its exit, a failure, a stop); one silent restart may
#: be a host that went down hard, two are a schedule
SILENT_RESTARTS = 2
#: the longest gap between two files of a split journal over which a server's lines of one
#: name the unit of the same pid's lines in the other
SPLIT_GAP = timedelta(minutes=10)
#: evidence weights: a pid is the unit's own; a start or an end only coincides in time
WEIGHT = {"pid": 4, "name": 3, "start": 2, "end": 2, "server": 2, "start~": 1, "end~": 1}
#: unit kinds that run no server
_NOT_SERVERS = (".scope", ".slice", ".timer", ".socket", ".mount", ".target", ".path", ".device", ".swap")
_SERVER_TABLES = ("server_stats", "server_events", "server_configs", "http_requests")


@dataclass
class Run:
    source_id: int
    path: str
    journal: bool
    stream_pid: int | None
    host: str | None
    first_ts: datetime
    last_ts: datetime
    pids: list[int]
    #: unit → [(kind, evidence text)]
    votes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: how many boots of its host came before its first line (a pid is one process per boot)
    epoch: int = 0

    def vote(self, unit: str, kind: str, why: str) -> None:
        have = self.votes.setdefault(unit, [])
        if all(k != kind for k, _ in have):
            have.append((kind, why))


@dataclass(frozen=True)
class Link:
    source_id: int
    stream_pid: int | None
    host: str | None
    first_ts: datetime
    last_ts: datetime
    unit: str | None
    how: str
    evidence: str


def _same_host(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def _runs(store: Store, host: str | None) -> list[Run]:
    out = []
    for r in run_named_dicts(store, "server_runs", {"linked": False}):
        out.append(
            Run(
                source_id=int(r["source_id"]),
                path=str(r["path"]),
                journal=bool(r["journal"]),
                stream_pid=r["stream_pid"] if r["stream_pid"] not in (None, -1) else None,
                host=r["host"] or host,
                first_ts=r["first_ts"],
                last_ts=r["last_ts"],
                pids=[int(p) for p in r["pids"] or []],
            )
        )
    boots = [(r["host"], r["ts"]) for r in run_named_dicts(store, "boot_times")]
    for run in out:
        run.epoch = sum(1 for h, ts in boots if _same_host(h, run.host) and ts <= run.first_ts)
    _span_split_journals(out)
    return out


def _span_split_journals(runs: list[Run]) -> None:
    """A process's lines in several files of one journal (rotated, split by a capture) are one
    run from its first line to its last: the cut between the files is neither a start nor an end
    (within one boot: the pid a new boot reused is another process)."""
    spans: dict[tuple[str | None, int, int], tuple[datetime, datetime]] = {}
    for run in runs:
        if run.journal and run.stream_pid is not None:
            key = (run.host, run.stream_pid, run.epoch)
            lo, hi = spans.get(key, (run.first_ts, run.last_ts))
            spans[key] = (min(lo, run.first_ts), max(hi, run.last_ts))
    for run in runs:
        if run.journal and run.stream_pid is not None:
            run.first_ts, run.last_ts = spans[(run.host, run.stream_pid, run.epoch)]


def _vote_pids(store: Store, runs: list[Run], timed: bool = True) -> None:
    pids = sorted({p for run in runs for p in run.pids})
    if not pids:
        return
    rows = run_named_dicts(store, "pid_units", {"pids": pids})
    for run in runs:
        for r in rows:
            if (
                r["pid"] not in run.pids
                or not _same_host(r["host"], run.host)
                or r["unit"].endswith(_NOT_SERVERS)
            ):
                continue
            # a pid is reused, in time: the unit's must be seen while the run lives (or its kill);
            # a server's lines in another file up to SPLIT_GAP before this run's first line are
            # the same process's (a journal split in two files), and need the clocks compared
            ts = r["ts"]
            before = SPLIT_GAP if r["how"] == "server lines" else START_BEFORE
            if r["how"] == "server lines" and (not timed or ts is None):
                continue
            if r["booted"] is not None and r["booted"] <= run.last_ts:
                continue  # the host booted after those lines and before this run ended
            if timed and ts is not None and not (run.first_ts - before <= ts <= run.last_ts + END_AFTER):
                continue
            run.vote(str(r["unit"]), "pid", f"pid {r['pid']} is {r['unit']}'s ({r['how']})")


def _latest(m: dict[str, Any]) -> datetime:
    """The latest a mark may really be: an OOM kill dated to its minute only may be anywhere in
    that minute (``span_s``)."""
    ts: datetime = m["ts"]
    return ts + timedelta(seconds=m.get("span_s") or 0)


def _after(e: dict[str, Any], m: dict[str, Any]) -> bool:
    """Whether mark ``e`` came after mark ``m`` (in the same second: after it in its source)."""
    if e["ts"] != m["ts"]:
        return bool(e["ts"] > m["ts"])
    return bool(e["source_id"] == m["source_id"] and e["line_no"] > m["line_no"])


def _job_began(unit: str, start: dict[str, Any], marks: list[dict[str, Any]]) -> dict[str, Any]:
    """The "Starting" line of the job whose "Started" line is ``start`` (a oneshot's "Started"
    comes after it ended, before systemd 246); ``start`` itself otherwise."""
    if start["action"] != "started":
        return start
    began = start
    for x in marks:
        if (
            x["unit"] == unit
            and x["mark"] == "start"
            and _after(start, x)
            and (began is start or _after(x, began))
        ):
            began = x  # the latest start line before it
    return began if began["action"] == "starting" else start


def _ended_before(unit: str, start: dict[str, Any], marks: list[dict[str, Any]], until: datetime) -> bool:
    """Whether ``unit`` ended after its ``start`` (the job's first line) and before ``until``:
    before the run began, or while the server went on writing (a oneshot started a second
    before the server's first line, done a second after it, ran something else)."""
    began = _job_began(unit, start, marks)
    return any(
        e["unit"] == unit and e["mark"] == "end" and _after(e, began) and _latest(e) < until for e in marks
    )


def _began_after(
    unit: str, end: dict[str, Any], began: list[dict[str, Any]], marks: list[dict[str, Any]], after: datetime
) -> bool:
    """Whether the job of ``unit`` that ``end`` ends began after ``after`` (the run's first
    line): one started while the server wrote, or after its last line (a oneshot run at the
    kill, the unit's next run), ended there, not the server's. ``began``: the starts after
    ``after``; a "Started" line after it counts from its job's "Starting" line (a unit that
    reports ready late started with the server). A start after ``end`` is the unit's next run."""
    return any(
        b["unit"] == unit and _after(end, b) and _job_began(unit, b, marks)["ts"] > after for b in began
    )


def _stamped_before(m: dict[str, Any], nearest: dict[str, Any]) -> bool:
    """Whether start ``m`` is surely before the nearest start: the same source stamped it a
    whole second or more earlier (the slack for whole-second stamps is for two sources' clocks;
    within one source, an EL7 oneshot's "Started" at :11 came before a fallback's at :12)."""
    return bool(m["source_id"] == nearest["source_id"] and m["ts"] <= nearest["ts"] - timedelta(seconds=1))


def _vote_marks(marks: list[dict[str, Any]], runs: list[Run], jobs: set[tuple[str | None, str]]) -> None:
    """Starts before a run's first line and ends after its last: the nearest (and those within
    :data:`SLACK` of it) count fully, the others less; a unit that ended while the server went
    on writing (a oneshot, a timer's job), or started after it began, ran something else; a
    unit that runs again and again without ending runs ``jobs`` (:func:`_scheduled`)."""
    for run in runs:
        starts: list[tuple[float, str, dict[str, Any]]] = []
        ends: list[tuple[float, str, str]] = []
        inside: set[str] = set()
        mine = [
            m
            for m in marks
            if not str(m["unit"]).endswith(_NOT_SERVERS)
            and _same_host(m["host"], run.host)
            and (m["host"], m["unit"]) not in jobs
        ]
        began = [m for m in mine if m["mark"] == "start" and m["ts"] > run.first_ts + SLACK]
        for m in mine:
            unit, ts = str(m["unit"]), m["ts"]
            if m["mark"] == "start" and run.first_ts - START_BEFORE <= ts <= run.first_ts + SLACK:
                if not _ended_before(unit, m, mine, max(run.first_ts, run.last_ts - SLACK)):
                    starts.append(((run.first_ts - ts).total_seconds(), unit, m))
            elif m["mark"] == "end" and run.last_ts - SLACK <= _latest(m) and ts <= run.last_ts + END_AFTER:
                # (a kill dated to its minute only ends a run whose last line is in that minute)
                if not _began_after(unit, m, began, mine, run.first_ts + SLACK):
                    gap = max(0.0, (ts - run.last_ts).total_seconds())
                    ends.append((gap, unit, str(m["action"])))
            elif m["mark"] == "end" and run.first_ts + SLACK < ts and _latest(m) < run.last_ts - SLACK:
                inside.add(unit)
        if starts:
            nearest = min(starts, key=lambda x: x[0])
            near = nearest[0] + SLACK.total_seconds()
            for gap, unit, m in sorted(starts, key=lambda x: x[0]):
                if unit not in inside:
                    full = (
                        gap <= near
                        and gap <= LATE_START.total_seconds()
                        and not _stamped_before(m, nearest[2])
                    )
                    kind = "start" if full else "start~"
                    run.vote(unit, kind, f"{unit} started {gap:.0f} s before the server's first line")
        if ends:
            near = min(g for g, _, _ in ends) + SLACK.total_seconds()
            for gap, unit, action in sorted(ends):
                kind = "end" if gap <= near else "end~"
                run.vote(unit, kind, f"{unit} ended ({action}) {gap:.0f} s after the server's last line")


def _scheduled(marks: list[dict[str, Any]]) -> set[tuple[str | None, str]]:
    """(host, unit) of the units whose jobs end without a word: started at least
    :data:`SILENT_RESTARTS` times in one source with nothing ended since the start before
    (sysstat-collect.service every ten minutes; systemd before 240 logs no oneshot's end). A job
    is its "Starting" line (its "Started" comes when a oneshot is done), or its "Started" line
    in a source that logs no "Starting". Where the starts name the unit, an end of that unit
    breaks the silence; where they name its Description (text journals before systemd 249),
    the unit's ends are under its name, which only the learnt Descriptions tell, so any unit's
    end does (an operator starting a failing unit again and again is never silent)."""
    starts: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    ends: dict[tuple[str | None, str], list[datetime]] = {}
    any_end: dict[str | None, list[datetime]] = {}
    for m in marks:
        if m["mark"] == "start":
            starts.setdefault((m["host"], m["unit"], m["source_id"]), []).append(m)
        else:
            ends.setdefault((m["host"], str(m["unit"])), []).append(m["ts"])
            any_end.setdefault(m["host"], []).append(m["ts"])
    out: set[tuple[str | None, str]] = set()
    for (host, unit, _source), ms in starts.items():
        begun = [m for m in ms if m["action"] == "starting"] or ms
        times = sorted(m["ts"] for m in begun)
        described = any(m["description"] and m["unit"] == m["description"] for m in ms)
        done = any_end.get(host, []) if described else ends.get((host, str(unit)), [])
        # (an end stamped in the second of either start counts: whole-second stamps)
        silent = sum(1 for a, b in pairwise(times) if b - a > SLACK and not any(a <= e <= b for e in done))
        if silent >= SILENT_RESTARTS:
            out.add((host, str(unit)))
    return out


def _oneshots_named(store: Store, marks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Marks under a oneshot's Description renamed to its unit, when its own lines bracket the
    unit's end (``oneshot_descriptions.sql``): "Starting Rotate log files..." is
    logrotate.service's start, neither a server's start nor a Description to learn."""
    names = {str(r["description"]): str(r["unit"]) for r in run_named_dicts(store, "oneshot_descriptions")}
    if not names:
        return marks
    return [
        {**m, "unit": names[m["unit"]], "description": None} if m["unit"] in names and m["description"] else m
        for m in marks
    ]


def _vote_names(known: set[tuple[str | None, str]], runs: list[Run]) -> None:
    """A file named after a unit systemd, the kernel or an operator's systemctl command name on
    the host: ``fallback-a.log`` and ``fallback-a.service``, ``llm-k26.log`` and ``llm-k26.service``."""
    for run in runs:
        if run.journal:
            continue
        stem = file_stem(run.path)
        guess = unit_from_name(run.path)
        for host, unit in known:
            if _same_host(host, run.host) and (unit == guess or unit.removesuffix(".service") == stem):
                run.vote(unit, "name", f"the file is named after {unit}, which the host's logs name")


def _vote_servers(store: Store, runs: list[Run], chosen: set[str]) -> None:
    """A unit that runs a server (its own lines say so, or another run was linked to it) is
    likelier the unit of a run whose start it coincides with than a oneshot started nearer:
    a restart of the same server."""
    servers = chosen | {str(r["unit"]) for r in run_named_dicts(store, "server_units")}
    for run in runs:
        for unit in [u for u in run.votes if u in servers]:
            run.vote(unit, "server", f"{unit} runs a server")


def _descriptions(marks: list[dict[str, Any]]) -> set[str]:
    """The names in ``marks`` that are a unit's Description, not its name."""
    return {str(m["unit"]) for m in marks if m["description"] and m["unit"] == m["description"]}


def _learn_descriptions(runs: list[Run], described: set[str]) -> dict[str, str]:
    """Description → unit, from a server (its runs together) whose start names a Description
    and whose pid, end or file name names one unit (and no other unit)."""
    learned: dict[str, set[str]] = {}
    for votes in (_merged(group) for group in _groups(runs).values()):
        descs = [u for u, v in votes.items() if u in described and any(k == "start" for k, _ in v)]
        units = [
            u
            for u, v in votes.items()
            if u not in described and any(k in ("pid", "end", "name") for k, _ in v)
        ]
        if len(descs) == 1 and len(units) == 1:
            learned.setdefault(descs[0], set()).add(units[0])
    return {d: next(iter(us)) for d, us in learned.items() if len(us) == 1}


def _learn_from_linked(
    store: Store,
    host: str | None,
    marks: list[dict[str, Any]],
    jobs: set[tuple[str | None, str]],
    described: set[str],
    learned: dict[str, str],
) -> None:
    """Descriptions taught by servers whose unit is known (their lines name it, or they were
    linked before the clocks were compared): a run whose nearest start is one Description's.
    A Description two units teach, or a unit two Descriptions start, teaches nothing."""
    seen: dict[str, set[str]] = {}
    for r in run_named_dicts(store, "server_runs", {"linked": True}):
        run = Run(
            source_id=int(r["source_id"]),
            path=str(r["path"]),
            journal=bool(r["journal"]),
            stream_pid=None,
            host=r["host"] or host,
            first_ts=r["first_ts"],
            last_ts=r["last_ts"],
            pids=[],
        )
        _vote_marks(marks, [run], jobs)
        descs = [u for u, v in run.votes.items() if u in described and any(k == "start" for k, _ in v)]
        if len(descs) == 1 and descs[0] not in learned:
            seen.setdefault(descs[0], set()).add(str(r["unit"]))
    taught: dict[str, int] = {}
    for us in seen.values():
        for u in us:
            taught[u] = taught.get(u, 0) + 1
    for desc, us in seen.items():
        unit = next(iter(us))
        if len(us) == 1 and taught[unit] == 1:
            learned[desc] = unit


def _learn_from_operators(store: Store, described: set[str], learned: dict[str, str]) -> None:
    """Descriptions taught by an operator's ``sudo systemctl start <unit>`` followed at once by
    "Starting <Description>..." (``operator_descriptions.sql``), where the servers taught none
    and no other Description is that unit's."""
    taken = set(learned.values())
    for r in run_named_dicts(store, "operator_descriptions"):
        desc, unit = str(r["description"]), str(r["unit"])
        if desc in described and desc not in learned and unit not in taken:
            learned[desc] = unit
            taken.add(unit)


def _groups(runs: list[Run]) -> dict[tuple[Any, ...], list[Run]]:
    """The runs of one server: a file's (a file is one server's log), a journal process's (in
    every file of a split journal, within one boot)."""
    groups: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        key = ("pid", run.host, run.stream_pid, run.epoch) if run.journal else ("file", run.source_id)
        groups.setdefault(key, []).append(run)
    return groups


def _merged(group: list[Run]) -> dict[str, list[tuple[str, str]]]:
    votes: dict[str, list[tuple[str, str]]] = {}
    for run in group:
        for name, vs in run.votes.items():
            have = votes.setdefault(name, [])
            have += [v for v in vs if all(k != v[0] for k, _ in have)]
    return votes


def _fold(run: Run, learned: dict[str, str]) -> None:
    for desc, unit in learned.items():
        if desc in run.votes:
            for kind, why in run.votes.pop(desc):
                run.vote(unit, kind, why.replace(desc, f"{unit} ({desc})", 1))


def _score(votes: list[tuple[str, str]]) -> int:
    return sum(WEIGHT[k] for k, _ in votes)


def _choose(votes: dict[str, list[tuple[str, str]]]) -> tuple[str | None, str]:
    """The unit with the most evidence, if none ties with it; else (None, why not)."""
    if not votes:
        return None, "nothing names its unit"
    ranked = sorted(votes.items(), key=lambda kv: -_score(kv[1]))
    top = _score(ranked[0][1])
    if top < 2:
        return None, "only a late start names a unit: " + "; ".join(why for _, why in ranked[0][1])
    tied = [u for u, v in ranked if _score(v) == top]
    if len(tied) > 1:
        return None, "ambiguous: " + " or ".join(sorted(tied))
    return ranked[0][0], "; ".join(why for _, why in ranked[0][1])


def _decide(runs: list[Run], held: list[Stream] | None = None) -> list[Link]:
    """Each server's runs vote together (:func:`_groups`); a unit two journal processes living
    at the same time both choose is the likelier one's, and a unit a process's own lines
    name (``held``) is that process's (:func:`_one_process_each`)."""
    links = []
    groups = list(_groups(runs).values())
    votes = [_merged(group) for group in groups]
    notes = _one_process_each(groups, votes, held or [])
    for k, (group, vs) in enumerate(zip(groups, votes, strict=True)):
        chosen, why = _choose(vs)
        if chosen is None and k in notes:
            why = f"{why}; {notes[k]}"
        how = "evidence" if chosen else "none"
        for run in group:
            links.append(
                Link(run.source_id, run.stream_pid, run.host, run.first_ts, run.last_ts, chosen, how, why)
            )
    return links


@dataclass(frozen=True)
class Stream:
    """A journal process's lines: its host, pid, first and last line, and (when known) its unit."""

    host: str
    pid: int
    first_ts: datetime
    last_ts: datetime
    unit: str | None = None

    def beside(self, other: Stream) -> bool:
        """Another process of the same host writing at the same time (by more than :data:`SLACK`)."""
        overlap = min(self.last_ts, other.last_ts) - max(self.first_ts, other.first_ts)
        return self.host == other.host and self.pid != other.pid and overlap > SLACK


def _stream(group: list[Run]) -> Stream | None:
    run = group[0]
    if not run.journal or run.stream_pid is None or run.host is None:
        return None
    return Stream(run.host, run.stream_pid, min(r.first_ts for r in group), max(r.last_ts for r in group))


def _held(store: Store, host: str | None) -> list[Stream]:
    """The journal processes whose unit is known (their own lines name it, or linked before)."""
    out = []
    for r in run_named_dicts(store, "server_runs", {"linked": True}):
        where = r["host"] or host
        if r["journal"] and r["stream_pid"] not in (None, -1) and where is not None:
            out.append(Stream(where, int(r["stream_pid"]), r["first_ts"], r["last_ts"], str(r["unit"])))
    return out


def _one_process_each(
    groups: list[list[Run]], votes: list[dict[str, list[tuple[str, str]]]], held: list[Stream]
) -> dict[int, str]:
    """A unit's output reaches the journal through one stream, under its main process's pid:
    two journal processes of one host writing at the same time are two units' (a server that
    was already running when the data begins is not the one a unit's start beside its first
    line started, when another process began there too). A unit ``held`` by a process is not
    another's; where two choose one unit, the one with less evidence for it loses that unit's
    votes (with as much, both do), and chooses again. Returns, per group that lost a unit, why."""
    streams = [_stream(g) for g in groups]
    pairs = [
        (i, a.pid, j, b.pid)
        for i, a in enumerate(streams)
        for j, b in enumerate(streams)
        if i < j and a is not None and b is not None and a.beside(b)
    ]
    notes: dict[int, str] = {}

    def lose(k: int, unit: str, pid: int) -> None:
        votes[k].pop(unit, None)
        said = f"{unit} is the unit of pid {pid}, which wrote at the same time"
        notes[k] = f"{notes[k]}; {said}" if k in notes else said

    for k, stream in enumerate(streams):
        for h in held:
            if stream is not None and h.unit in votes[k] and h.beside(stream):
                lose(k, str(h.unit), h.pid)
    while True:
        chosen = [_choose(v)[0] for v in votes]
        losers: dict[tuple[int, str], int] = {}  # (group, unit) → the other process's pid
        for i, pid_i, j, pid_j in pairs:
            unit = chosen[i]
            if unit is None or unit != chosen[j]:
                continue
            a, b = _score(votes[i][unit]), _score(votes[j][unit])
            for k, other, lost in ((i, pid_j, a <= b), (j, pid_i, b <= a)):
                if lost:
                    losers[(k, unit)] = other
        if not losers:
            return notes
        for (k, unit), other in losers.items():
            lose(k, unit, other)


def _apply(store: Store, links: Iterable[Link]) -> None:
    for link in links:
        if link.unit is None:
            continue
        if link.stream_pid is not None:
            where, params = "source_id = ? AND unit IS NULL AND pid = ?", [link.source_id, link.stream_pid]
        else:
            where, params = "source_id = ? AND unit IS NULL", [link.source_id]
        materialize(store, [link.source_id], tables=("server_stats", "http_requests"))
        for table in _SERVER_TABLES:
            # (the native table: a view of the same name also shows other sources' parts)
            store.execute(f"UPDATE {native(store, table)} SET unit = ? WHERE {where}", [link.unit, *params])  # noqa: S608


def link_server_units(store: Store, host: str | None = None, *, timed: bool = True) -> list[Link]:
    """Link every server run without a unit to the unit the evidence names; update its rows
    and record each link (also a run left without one) in ``unit_links``. ``host``: the
    store's only host, for rows that name none. ``timed=False``: only the evidence that needs no
    clock (a file's name, a pid), before the sources' clocks are compared — a log read in the
    wrong zone is put right by comparing it with its unit's journal lines, so it needs its unit
    first."""
    store.execute("DELETE FROM unit_links WHERE unit IS NULL")  # (runs still unlinked are listed again)
    # (before the clocks are compared only files: a journal's streams are on its own clock)
    runs = [r for r in _runs(store, host) if timed or not r.journal]
    if not runs and not timed:
        return []
    marks = _oneshots_named(store, run_named_dicts(store, "unit_marks"))
    jobs = _scheduled(marks)  # (once: _learn_from_linked votes run by run)
    known = {(r["host"], str(r["unit"])) for r in run_named_dicts(store, "unit_known")}
    _vote_pids(store, runs, timed)
    if timed:
        _vote_marks(marks, runs, jobs)
    _vote_names(known, runs)
    described = _descriptions(marks)
    learned = _learn_descriptions(runs, described)
    _learn_from_operators(store, described, learned)
    if timed:
        _learn_from_linked(store, host, marks, jobs, described, learned)
    for run in runs:
        _fold(run, learned)
    held = _held(store, host) if timed else []
    _vote_servers(store, runs, {x.unit for x in _decide(runs, held) if x.unit})
    links = [x for x in _decide(runs, held) if timed or x.unit is not None]
    _apply(store, links)
    for desc, unit in learned.items():
        store.execute(
            "UPDATE unit_events SET unit = ? WHERE unit = ? AND description = ?", [unit, desc, desc]
        )
    if not links:
        return links
    store.insert_rows(
        "unit_links",
        ("source_id", "stream_pid", "host", "first_ts", "last_ts", "unit", "how", "evidence"),
        [
            [x.source_id, x.stream_pid, x.host, x.first_ts, x.last_ts, x.unit, x.how, x.evidence]
            for x in links
        ],
    )
    return links
