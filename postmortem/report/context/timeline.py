"""The incident report's timeline: the events around the kill, as rows."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from ...analysis.facts import IncidentFacts, held_before
from ...analysis.model import Incident, Victim, ended_word, incident_end, killed_process
from ...analysis.rules.common import gpu_names, idle_gpus
from ...analysis.timeline import FAILURE_KINDS, TimelineEvent, after_kill, kill_times
from ...engines import get_engine, is_engine
from ...lazyre import lazy_re
from ...parsers.journal.systemd import left_process
from ...parsers.kubernetes.node import readable
from ...text.formats import article, human, retraction_words
from ..redact import Redactor
from .common import Sources, local_text, utc_text
from .types import TimelineRow

#: systemd events of a unit that end or retry it: shown past the kill when it did not come back
_UNIT_ENDINGS = frozenset(
    {"main_exited", "failed", "start_failed", "start_limit_hit", "restart_scheduled", "starting", "stopped"}
)


def _event_text(origin: str, kind: str, message: str, unit: str | None, clean: Redactor) -> str:
    msg = clean(message)
    if origin == "operator":
        return f"operator ran `{msg}`" if msg else "operator command"
    if origin == "kubernetes":
        text = readable(msg)
        text = text if len(text) <= 200 else text[:197] + "…"
        return f"{unit.removeprefix('k8s:')}: {text}" if unit else text
    if is_engine(origin):
        engine = get_engine(origin)
        label = engine.event_labels.get(kind)
        if kind == "server_args":
            msg = _args_digest(msg)
        short = msg if len(msg) <= 160 else msg[:157] + "…"
        return (
            f"{unit or engine.label}: {short}" if not label else f"{unit or engine.label}: {label} — {short}"
        )
    return msg


_ARG_KEYS = ("model_path", "tp_size", "speculative_algorithm", "mem_fraction_static", "port")


def _args_digest(message: str) -> str:
    """The few server_args fields a timeline reader needs, instead of the whole repr."""

    out = []
    for key in _ARG_KEYS:
        m = re.search(rf"[(,{{ ]'?{key}'?[=:] ?('[^']*'|None|[\w.]+)", message)
        if m and m.group(1) != "None":
            out.append(f"{key}={m.group(1)}")
    return ", ".join(out) if out else message[:160]


#: the task (``comm:pid``) a hung-task warning names
_HUNG_TASK = lazy_re(r"task (\S+:\d+) blocked for more than")


#: systemd's one-line-per-process reports, shown one row per stop or start
_PROCESS_LISTS = {
    "left_running": "remain running after the unit stopped",
    "left_over": "left over in its control group when it started",
}


def _add_process_list(
    add: Callable[[datetime, str, str, str], None], batch: list[TimelineEvent], sources: Sources
) -> None:
    """One row for the processes of one stop (or start), each named once; a line of the batch
    that names no process (``Processes still around after final SIGKILL``) keeps a row of its own."""
    named = [(ev, p) for ev in batch if (p := left_process(ev.message.partition(": ")[2]))]
    for ev in batch:
        if not any(ev is e for e, _ in named):
            add(ev.ts, "systemd", ev.message, sources.cite(ev.source_id, ev.line_no))
    if not named:
        return
    if len(named) == 1:
        ev = named[0][0]
        add(ev.ts, "systemd", ev.message, sources.cite(ev.source_id, ev.line_no))
        return
    procs = list(dict.fromkeys(f"{p[0]} ({p[1]})" for _, p in named))
    first, last = named[0][0], named[-1][0]
    cite = sources.cite(first.source_id, first.line_no)
    if last.source_id == first.source_id and last.line_no != first.line_no:
        cite += f"–{last.line_no}"
    add(
        first.ts,
        "systemd",
        f"{first.unit}: {len(procs)} processes {_PROCESS_LISTS[first.kind]}: " + ", ".join(procs),
        cite,
    )


def server_origin(facts: IncidentFacts) -> str:
    """The engine of the killed server (the timeline's origin for its lines): its load's, else
    its configuration's; ``server`` when no engine's line is in the data."""
    killed = facts.incident.killed_load
    if killed is not None and killed.engine:
        return killed.engine
    return str((facts.config or {}).get("engine") or "server")


def timeline_rows(facts: IncidentFacts, sources: Sources, zone: tzinfo, clean: Redactor) -> list[TimelineRow]:
    """The timeline of ``facts``: the events of the window in time order, then the rows the
    facts add (the killed run's start, grouped kills, retractions, the last batch, GPU release,
    a reboot, the queue, the recovery); a row equal to the one before it at the same second is
    dropped."""
    b = _Timeline(facts, sources, zone, clean)
    b.killed_run_start()
    b.events()
    for extra in (
        b.hung_tasks,
        b.grouped_kill,
        b.retractions,
        b.last_batch,
        b.gpu_released,
        b.reboot,
        b.gpu_freed_late,
        b.queue_start,
        b.recovery,
    ):
        extra()
    return b.result()


@dataclass(frozen=True)
class _Meta:
    """What a row is, beside its words: for the key moments and the short timeline."""

    ts: datetime
    origin: str
    kind: str
    unit: str | None
    text: str


#: kinds of rows the short timeline shows, by origin (any other origin: every row)
_KEY_KINDS = {
    "systemd": frozenset(
        {
            "oom_killed",
            "oomd_killed",
            "main_exited",
            "failed",
            "start_failed",
            "start_limit_hit",
            "restart_scheduled",
            "starting",
            "stopping",
            "left_running",
            "left_over",
        }
    ),
    "kernel": frozenset({"oom_kill", "hung_task", "xid"}),
    "kubernetes": frozenset(
        {
            "k8s_probe_failed",
            "k8s_probe_kill",
            "k8s_evicted",
            "k8s_eviction_pressure",
            "k8s_system_oom",
            "k8s_terminated",
            "k8s_backoff",
            "k8s_container_started",
            "k8s_ready",
        }
    ),
}
#: Kubernetes rows shown once per unit in a timeline (their repeats are counted in the first)
_K8S_ONCE = frozenset({"k8s_probe_failed", "k8s_backoff", "k8s_eviction_pressure", "k8s_container_started"})
#: a server's lines the short timeline shows besides its failures (FAILURE_KINDS)
_KEY_SERVER_KINDS = frozenset({"retract", "last_batch", "queue_start", "restored"})


def _is_key(meta: _Meta, inc: Incident) -> bool:
    """Whether a row belongs in the short timeline: the kill and what led to it, failures,
    operator actions, restarts, GPU release, reboots, the recovery — not the bookkeeping of a
    shutdown or a load, nor the killed run's start long before."""
    if meta.kind == "before":
        return False
    if meta.origin in _KEY_KINDS:
        return meta.kind in _KEY_KINDS[meta.origin]
    if is_engine(meta.origin) or meta.origin == "server":
        return meta.kind in _KEY_SERVER_KINDS or meta.kind in FAILURE_KINDS
    return True  # operator, gpu, host


#: a neighbour's rows the short timeline leaves out when they recur (a timer's runs)
_ROUTINE_KINDS = frozenset({"starting", "stopping"})
#: starts in the window that make a neighbour's starts routine (a timer: sysstat's every 10 min)
ROUTINE_STARTS = 3


def _routine_units(inc: Incident, metas: Sequence[_Meta]) -> set[str]:
    """Units other than the incident's own (killed, recovery, fallback) that systemd started
    :data:`ROUTINE_STARTS` times or more in the window: their starts and stops are routine (a
    timer's job), not a moment of the incident; a neighbour started once stays in the short
    timeline (a batch job that started before a host OOM), and so does any failure."""
    own = {inc.unit, inc.recovery_unit, inc.fallback_unit}
    starts: dict[str, int] = {}
    for m in metas:
        if m.origin == "systemd" and m.kind == "starting" and m.unit and m.unit not in own:
            starts[m.unit] = starts.get(m.unit, 0) + 1
    return {u for u, n in starts.items() if n >= ROUTINE_STARTS}


#: rows that can mark the start of the impact: the kill, or the server's own failure
_IMPACT_KINDS = (
    frozenset(
        {"oom_kill", "main_exited", "oom_killed", "oomd_killed", "failed", "k8s_probe_kill", "k8s_evicted"}
    )
    | FAILURE_KINDS
)


#: a restart loop's kills the short timeline shows before it counts the rest (and the last)
LOOP_SHOWN = 3
#: the rows of one kill in a restart loop: the kernel's, and systemd's about the unit
_LOOP_KINDS = frozenset({"oom_kill", "oom_killed", "main_exited", "failed", "restart_scheduled", "starting"})


def _fold_loop(rows: list[TimelineRow], metas: list[_Meta], unit: str | None, day: str) -> list[TimelineRow]:
    """A unit killed again and again (a restart loop) fills the short timeline with the same
    rows: after the first :data:`LOOP_SHOWN` kills, the kills up to the last one and systemd's
    rows about them are left to the full timeline, and one row counts them. Only the rows of
    the incident's *unit* are folded and counted: another unit's kills in between stay shown.
    *day* is the kill's date, which the time of the last folded kill leaves out."""
    kills: list[int] = []  # the first row of each kill (a group kill's rows share a second)
    for i, (r, m) in enumerate(zip(rows, metas, strict=True)):
        if r.key and m.kind == "oom_kill" and m.unit == unit and (not kills or rows[kills[-1]].utc != r.utc):
            kills.append(i)
    if len(kills) <= LOOP_SHOWN + 2:
        return rows
    start, end = kills[LOOP_SHOWN], kills[-1]
    told = False  # systemd told of the folded kills (a container's or a pod's kills: no systemd)
    for i in range(start, end):
        if rows[i].key and not rows[i].mark and metas[i].kind in _LOOP_KINDS and metas[i].unit == unit:
            rows[i] = dataclasses.replace(rows[i], key=False)
            told = told or metas[i].origin == "systemd"
    folded = len(kills) - LOOP_SHOWN - 1
    last = rows[kills[-2]].utc
    with_systemd = ", each with systemd's lines about it"
    count = TimelineRow(
        rows[start].utc,
        rows[start].local,
        "kernel",
        f"{folded} more OOM kills of {unit}{with_systemd if told else ''}, the last at "
        f"{last[11:] if last[:10] == day else last} (every one in the full timeline)",
        "",
        full=False,
    )
    return [*rows[:start], count, *rows[start:]]


def _first(metas: list[_Meta], pred: Callable[[_Meta], bool]) -> int | None:
    return next((i for i, m in enumerate(metas) if pred(m)), None)


def _marks(inc: Incident, rows: list[tuple[TimelineRow, _Meta]]) -> dict[int, str]:
    """Row index → the moment it marks: the kill (impact start), the first operator action
    after it (detected), the start of what brought service back (mitigated), service ready
    again (recovered)."""
    kill = inc.ts
    if kill is None:
        return {}
    metas = [m for _, m in rows]
    found = {
        "impact start": _first(
            metas, lambda m: m.ts >= kill - timedelta(seconds=1) and m.kind in _IMPACT_KINDS
        ),
        "detected": _first(metas, lambda m: m.origin == "operator" and m.ts > kill),
        "mitigated": _mitigated(inc, metas, kill),
        "recovered": _first(metas, lambda m: m.kind == "restored"),
    }
    out: dict[int, str] = {}
    for mark, i in found.items():
        if i is not None and i not in out:
            out[i] = mark
    return out


def _mitigated(inc: Incident, metas: list[_Meta], kill: datetime) -> int | None:
    """The start of another unit that brought service back (a fallback), or the operator's
    command that started it; a restart of the killed unit itself mitigates nothing new."""
    rec, unit = inc.recovery_load, inc.recovery_unit
    if rec is None or rec.start_ts is None or rec.start_ts <= kill or not unit or unit == inc.unit:
        return None
    until = rec.start_ts + timedelta(seconds=1)
    return _first(
        metas,
        lambda m: (
            kill <= m.ts <= until
            and (m.origin == "operator" or m.kind in ("starting", "started"))
            and (m.unit == unit or unit in m.text)
        ),
    )


class _Timeline:
    """Builds the rows of :func:`timeline_rows`; one method per kind of row."""

    def __init__(self, facts: IncidentFacts, sources: Sources, zone: tzinfo, clean: Redactor) -> None:
        self.facts, self.sources, self.zone, self.clean = facts, sources, zone, clean
        self.tl, self.inc = facts.timeline, facts.incident
        self.end = incident_end(facts.incident)  # kill, crash or failure
        # in time order; a whole-second death report after the kill of its second (after_kill)
        self.rows: list[tuple[tuple[datetime, bool], TimelineRow, _Meta]] = []
        self.kills = kill_times(self.tl.events)
        self.srv = server_origin(facts)
        # whose rows the server's are: its unit, else its engine (as the engine's own lines say)
        self.who = self.inc.unit or (get_engine(self.srv).label if is_engine(self.srv) else "the server")
        self.hung: list[TimelineEvent] = []
        self.listed: dict[tuple[str | None, str], list[TimelineEvent]] = {}
        self.seen_kinds: set[tuple[str | None, str, str]] = set()
        self.failures_shown: dict[tuple[str | None, str, str], datetime] = {}
        self.kills_shown: set[tuple[int | None, int]] = set()
        self.grouped_pids = {v.pid for v in self.inc.killed_with}
        # each unit's server starts (a failed start's attempts among them)
        self.starts: dict[str | None, list[datetime]] = {}
        for st in (facts.unit_loads, facts.recovery_loads):
            for ld in st.loads if st is not None else []:
                if ld.start_ts is not None:
                    self.starts.setdefault(ld.unit, []).append(ld.start_ts)

    def add(
        self,
        ts: datetime,
        origin: str,
        text: str,
        cite: str,
        after: datetime | None = None,
        *,
        kind: str = "",
        unit: str | None = None,
    ) -> None:
        key = (after or ts, after is not None)
        row = TimelineRow(utc_text(ts), local_text(ts, self.zone), origin, text, cite)
        self.rows.append((key, row, _Meta(ts, origin, kind, unit, text)))

    def cite(self, at: tuple[int, int] | None) -> str:
        return self.sources.cite(*at) if at else ""

    def result(self) -> list[TimelineRow]:
        self.rows.sort(key=lambda p: p[0])
        out: list[tuple[TimelineRow, _Meta]] = []
        for _, r, meta in self.rows:
            if out and out[-1][0].event == r.event and out[-1][0].utc == r.utc:
                continue
            out.append((r, meta))
        marks = _marks(self.inc, out)
        routine = _routine_units(self.inc, [meta for _, meta in out])
        rows = [
            dataclasses.replace(
                r,
                mark=marks.get(i, ""),
                key=i in marks
                or (_is_key(meta, self.inc) and not (meta.kind in _ROUTINE_KINDS and meta.unit in routine)),
            )
            for i, (r, meta) in enumerate(out)
        ]
        return _fold_loop(rows, [meta for _, meta in out], self.inc.unit, utc_text(self.inc.ts)[:10])

    # ------------------------------------------------------------------ the window's events

    def killed_run_start(self) -> None:
        """The killed run's start (and ready) when it came before the window, with the operator's
        commands that started it."""
        killed = self.inc.killed_load
        if killed is None or killed.start_ts is None or killed.start_ts >= self.tl.start:
            return
        for c in self.facts.start_commands:
            text = _event_text("operator", "command", str(c["command"] or ""), None, self.clean)
            self.add(
                c["ts"], "operator", text, self.sources.cite(c["source_id"], c["line_no"]), kind="before"
            )
        how = "starting" if killed.start_source == "systemd_starting" else "started"
        self.add(
            killed.start_ts,
            "systemd" if (killed.start_source or "").startswith("systemd") else self.srv,
            f"{self._who(killed)} {how} (this instance)",
            self.sources.cite(killed.start_source_id or killed.source_id, killed.start_line_no),
            kind="before",
        )
        if killed.ready_ts is not None and killed.ready_ts < self.tl.start:
            self.add(
                killed.ready_ts,
                self.srv,
                f"{self._who(killed)} ready after {human(killed.load_s)}",
                self.sources.cite(killed.ready_source_id or killed.source_id, killed.ready_line_no),
                kind="before",
            )

    def _end(self) -> datetime:
        """Events shown up to a minute past the recovery; when it did not come back, the unit's
        later attempts and how they ended (a restart loop, the start limit) and its later kills,
        up to half an hour."""
        tl, inc = self.tl, self.inc
        end = (inc.recovered_ts or tl.kill_ts) + timedelta(seconds=60)
        if inc.recovered_ts is not None:
            return end
        later = [
            ev.ts
            for ev in tl.events
            if ev.unit == inc.unit
            and ev.origin == "systemd"
            and ev.kind in _UNIT_ENDINGS
            and tl.kill_ts < ev.ts <= tl.kill_ts + timedelta(minutes=30)
        ]
        # the incident's later kills (a container's or a pod's restart loop: no systemd lines)
        later += [
            v.ts
            for v in inc.later_kills
            if v.ts is not None and tl.kill_ts < v.ts <= tl.kill_ts + timedelta(minutes=30)
        ]
        return max([end, *(t + timedelta(seconds=1) for t in later)])

    def events(self) -> None:
        end = self._end()
        for ev in self.tl.events:
            if ev.ts > end or self._skipped(ev) or self._held_back(ev):
                continue
            self.add(
                ev.ts,
                ev.origin,
                _event_text(ev.origin, ev.kind, ev.message, ev.unit, self.clean),
                self.sources.cite(ev.source_id, ev.line_no),
                after_kill(ev, self.kills),
                kind=ev.kind,
                unit=ev.unit,
            )
        for batch in self.listed.values():
            _add_process_list(self.add, batch, self.sources)

    def _skipped(self, ev: TimelineEvent) -> bool:
        """An event shown by another row: an engine's bookkeeping, a milestone every rank logs, a
        failure repeated on several ranks, a kill of the grouped record or printed twice."""
        if is_engine(ev.origin):
            return self._server_repeat(ev)
        if ev.origin == "kubernetes":
            # once per unit for repeated kinds; once a second for the rest (kubelet's line and
            # the Event of one kill are one row)
            key = (ev.unit, ev.kind, "" if ev.kind in _K8S_ONCE else str(int(ev.ts.timestamp())))
            if key in self.seen_kinds:
                return True
            self.seen_kinds.add(key)
        if ev.origin == "kernel" and ev.kind == "oom_kill":
            proc = killed_process(ev.message)
            pid = proc[0] if proc else None
            if pid is not None and pid in self.grouped_pids:
                return True
            kill = (pid, int(ev.ts.timestamp()) // 5)
            if pid is not None and kill in self.kills_shown:
                return True
            self.kills_shown.add(kill)
        return False

    def _server_repeat(self, ev: TimelineEvent) -> bool:
        if ev.kind in get_engine(ev.origin).quiet_kinds:
            return True
        key = (ev.unit, ev.kind, ev.message[:40])
        if ev.kind in ("load_weight_begin", "load_weight_end", "kv_cache_allocated"):
            if key in self.seen_kinds:
                return True
            self.seen_kinds.add(key)
        elif ev.kind in FAILURE_KINDS:
            # the same failure on several ranks at once: its first line stands for them (the
            # same failure of the next attempt, a server started in between, is shown again)
            shown = self.failures_shown.get(key)
            if (
                shown is not None
                and (ev.ts - shown).total_seconds() < 10
                and not any(shown < t <= ev.ts for t in self.starts.get(ev.unit, ()))
            ):
                return True
            self.failures_shown[key] = ev.ts
        return ev.kind == "retract"  # told by one row of their own (retractions)

    def _held_back(self, ev: TimelineEvent) -> bool:
        """Events gathered into one row later: hung-task warnings, systemd's per-process lines."""
        if ev.origin == "kernel" and ev.kind == "hung_task":
            self.hung.append(ev)
            return True
        if ev.origin == "systemd" and ev.kind in _PROCESS_LISTS:
            # one line per process: the processes of one stop (or one start) are one row
            batch = self.listed.get((ev.unit, ev.kind))
            if batch and (ev.ts - batch[-1].ts).total_seconds() <= 2:
                batch.append(ev)
                return True
            if batch:
                _add_process_list(self.add, batch, self.sources)
            self.listed[(ev.unit, ev.kind)] = [ev]
            return True
        return False

    # ------------------------------------------------------------------ rows from the facts

    def hung_tasks(self) -> None:
        if not self.hung:
            return
        hung = self.hung
        first = hung[0]
        text = _event_text(first.origin, first.kind, first.message, None, self.clean)
        tasks = {m.group(1) for ev in hung if (m := _HUNG_TASK.search(ev.message))}
        more = len(tasks) - 1 if tasks else 0
        if more > 0:
            text += f" ({more} more task{'s' if more > 1 else ''} reported blocked by {utc_text(hung[-1].ts)[11:]} UTC)"
        elif len(hung) > 1:
            text += f" (reported again by {utc_text(hung[-1].ts)[11:]} UTC)"
        self.add(
            first.ts, "kernel", text, self.sources.cite(first.source_id, first.line_no), kind="hung_task"
        )

    def grouped_kill(self) -> None:
        """The processes killed with the chosen one in its record (memory.oom.group): one row."""
        inc, chosen = self.inc, self.inc.victim
        grouped = inc.killed_with
        if not grouped or chosen is None or chosen.ts is None:
            return
        n = len(grouped)
        self.add(
            chosen.ts + timedelta(microseconds=1),
            "kernel",
            f"… and {n} more process{'es' if n > 1 else ''} of {inc.unit} killed in the same record",
            _cite_others(grouped, self.sources),
            kind="oom_kill",
        )

    def retractions(self) -> None:
        f = self.facts
        if not f.retractions or f.first_retraction is None:
            return
        first_ts, first_sid, first_line = f.first_retraction
        self.add(
            first_ts,
            self.srv,
            f"{self.who}: KV cache pool full, requests retracted — the first of "
            f"{retraction_words(f.retractions, f.retracted_reqs)} before the {self.end}",
            self.sources.cite(first_sid, first_line),
            kind="retract",
        )

    def last_batch(self) -> None:
        lb = self.facts.last_batch
        if lb is None:
            return
        parts = [f"running {lb['running_req']}", f"queued {lb['queue_req']}"]
        if lb.get("token_usage") is not None:
            parts.append(f"KV usage {lb['token_usage']:.2f}")
        self.add(
            lb["ts"],
            self.srv,
            f"{self.who}: last batch line before the {self.end} ({', '.join(parts)})",
            self.sources.cite(lb["source_id"], lb["line_no"]),
            kind="last_batch",
        )

    def gpu_released(self) -> None:
        """The GPUs that held memory, released: an idle GPU (one the server was not given)
        released nothing."""
        f, inc = self.facts, self.inc
        busy = [g for g in f.gpu_release if held_before(g)]
        freed = [g for g in busy if g.freed and g.freed_after_s is not None]
        if not freed or inc.ts is None or len(freed) != len(busy):
            return
        last = max(freed, key=lambda g: g.freed_after_s or 0)
        idle = idle_gpus(f)
        if f.unit_gpus:
            text = f"GPU memory released on {self.who}'s {f.unit_gpus.text} (nvidia-smi)"
        elif idle:
            text = f"GPU memory released on {gpu_names(freed)} (nvidia-smi); {gpu_names(idle)} held none before the {self.end}"
        else:
            text = f"GPU memory released on all {len(freed)} GPUs (nvidia-smi)"
        stop = f.gpu_freed_by_stop
        if stop is not None:
            # (held until the unit's stop before the death: the stop's release, not the death's)
            text += f": freed by the stop at {utc_text(stop.ts)[11:]} UTC, not by the {self.end}"
        self.add(
            inc.ts + timedelta(seconds=last.freed_after_s or 0),
            "gpu",
            text,
            self.cite(last.freed_at),
            kind="released",
        )

    def reboot(self) -> None:
        rb, inc = self.facts.reboot, self.inc
        if rb is None or inc.ts is None:
            return
        text = (
            f"host rebooted: {rb.boot_words} began"
            if rb.exact
            else f"host rebooted: first line of {rb.boot_words}"
        )
        text += f", {human((rb.up_ts - inc.ts).total_seconds())} after the {self.end}"
        if rb.last_old_ts:
            text += f" (the previous boot's last line at {utc_text(rb.last_old_ts)[11:]} UTC)"
        self.add(rb.up_ts, "host", text, self.sources.cite(*rb.at), kind="reboot")

    def gpu_freed_late(self) -> None:
        """GPU memory the ended run held, released long after it (a stuck child)."""
        late, inc, f = self.facts.gpu_freed_late, self.inc, self.facts
        if late is None or inc.ts is None:
            return
        self.add(
            late.ts,
            "gpu",
            f"GPU memory left behind by the {ended_word(self.end)} run released on "
            + (f"{self.who}'s {f.unit_gpus.text}" if f.unit_gpus else late.text)
            + f" (nvidia-smi), {human((late.ts - inc.ts).total_seconds())} after the {self.end}",
            self.cite(late.at),
            kind="released",
        )

    def queue_start(self) -> None:
        f = self.facts
        if f.queue_start_ts is None or not f.queue_max:
            return
        self.add(
            f.queue_start_ts,
            self.srv,
            f"{self.who}: requests begin to wait in the queue (up to {f.queue_max} before the {self.end})",
            self.cite(f.queue_start_at),
            kind="queue_start",
        )

    def _who(self, load: Any) -> str:
        """A load's unit, or — a server's log nothing ties to a unit — the server writing its file."""
        if load.unit:
            return str(load.unit)
        name = self.sources.names.get(load.source_id) if load.source_id is not None else None
        return f"the server writing {os.path.basename(name)}" if name else "a server of no known unit"

    def recovery(self) -> None:
        rec = self.inc.recovery_load
        if rec is None or rec.ready_ts is None:
            return
        self.add(
            rec.ready_ts,
            rec.engine or self.srv,
            f"{self._who(rec)} ready after {article(human(rec.load_s))} load — service restored",
            self.sources.cite(rec.ready_source_id or rec.source_id, rec.ready_line_no),
            kind="restored",
            unit=rec.unit,
        )


def _cite_others(victims: Sequence[Victim], sources: Sources) -> str:
    """The lines of the victims the kernel did not choose, as ``file:first–last`` per file."""
    spans: dict[int, list[int]] = {}
    for v in victims:
        if not v.chosen:
            spans.setdefault(v.source_id, []).append(v.line_no)
    out = []
    for sid, lines in spans.items():
        lo, hi = min(lines), max(lines)
        out.append(sources.cite(sid, lo) + (f"–{hi}" if hi != lo else ""))
    return ", ".join(out)
