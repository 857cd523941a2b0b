"""The incident report's timeline: the events around the kill, as rows."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, tzinfo

from ...analysis.facts import IncidentFacts
from ...analysis.model import Victim, killed_process
from ...analysis.rules.common import gpu_names, held_before, idle_gpus
from ...analysis.timeline import FAILURE_KINDS, TimelineEvent, after_kill, kill_times
from ...engines import get_engine, is_engine
from ...parsers.journal.systemd import left_process
from ...text.formats import human, retraction_words
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
_HUNG_TASK = re.compile(r"task (\S+:\d+) blocked for more than")


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
    tl = facts.timeline
    inc = facts.incident
    # in time order; a whole-second death report after the kill of its second (after_kill)
    rows: list[tuple[tuple[datetime, bool], TimelineRow]] = []
    kills = kill_times(tl.events)

    def add(ts: datetime, origin: str, text: str, cite: str, after: datetime | None = None) -> None:
        key = (after or ts, after is not None)
        rows.append((key, TimelineRow(utc_text(ts), local_text(ts, zone), origin, text, cite)))

    killed = inc.killed_load
    srv = server_origin(facts)
    if killed is not None and killed.start_ts is not None and killed.start_ts < tl.start:
        for c in facts.start_commands:
            add(
                c["ts"],
                "operator",
                _event_text("operator", "command", str(c["command"] or ""), None, clean),
                sources.cite(c["source_id"], c["line_no"]),
            )
        add(
            killed.start_ts,
            "systemd" if (killed.start_source or "").startswith("systemd") else srv,
            f"{killed.unit} "
            + ("starting" if killed.start_source == "systemd_starting" else "started")
            + " (this instance)",
            sources.cite(killed.start_source_id or killed.source_id, killed.start_line_no),
        )
        if killed.ready_ts is not None and killed.ready_ts < tl.start:
            add(
                killed.ready_ts,
                srv,
                f"{killed.unit} ready after {human(killed.load_s)}",
                sources.cite(killed.source_id, killed.ready_line_no),
            )
    # the kernel's kill lines: the processes killed with the chosen one in its record are one row
    # (memory.oom.group); another record, or another process's kill, is a row of its own; the
    # same kill printed by two sources (dmesg and the journal) is shown once
    chosen = inc.victim
    grouped = inc.killed_with
    grouped_pids = {v.pid for v in grouped}
    kills_shown: set[tuple[int | None, int]] = set()
    retract_first = None
    retract_n = 0
    end = (inc.recovered_ts or tl.kill_ts) + timedelta(seconds=60)
    if inc.recovered_ts is None:
        # not back: the unit's later attempts and how they ended (a restart loop, the start
        # limit) belong to the story, up to half an hour on
        later = [
            ev.ts
            for ev in tl.events
            if ev.unit == inc.unit
            and ev.origin == "systemd"
            and ev.kind in _UNIT_ENDINGS
            and tl.kill_ts < ev.ts <= tl.kill_ts + timedelta(minutes=30)
        ]
        end = max([end, *(t + timedelta(seconds=1) for t in later)])
    seen_kinds: set[tuple[str | None, str, str]] = set()
    failures_shown: dict[tuple[str | None, str, str], datetime] = {}
    hung: list[TimelineEvent] = []
    listed: dict[tuple[str | None, str], list[TimelineEvent]] = {}
    for ev in tl.events:
        if ev.ts > end:
            continue
        server = is_engine(ev.origin)
        if server and ev.kind in get_engine(ev.origin).quiet_kinds:
            continue
        if server and ev.kind in (
            "load_weight_begin",
            "load_weight_end",
            "kv_cache_allocated",
        ):
            key = (ev.unit, ev.kind, ev.message[:40])
            if key in seen_kinds:
                continue
            seen_kinds.add(key)
        elif server and ev.kind in FAILURE_KINDS:
            # the same failure on several ranks at once: its first line stands for them
            key = (ev.unit, ev.kind, ev.message[:40])
            shown = failures_shown.get(key)
            if shown is not None and (ev.ts - shown).total_seconds() < 10:
                continue
            failures_shown[key] = ev.ts
        if ev.origin == "kernel" and ev.kind == "oom_kill":
            proc = killed_process(ev.message)
            pid = proc[0] if proc else None
            if pid is not None and pid in grouped_pids:
                continue
            kill = (pid, int(ev.ts.timestamp()) // 5)
            if pid is not None and kill in kills_shown:
                continue
            kills_shown.add(kill)
        if server and ev.kind == "retract":
            retract_n += 1
            retract_first = retract_first or ev
            continue
        if ev.origin == "kernel" and ev.kind == "hung_task":
            hung.append(ev)
            continue
        if ev.origin == "systemd" and ev.kind in _PROCESS_LISTS:
            # one line per process: the processes of one stop (or one start) are one row
            batch = listed.get((ev.unit, ev.kind))
            if batch and (ev.ts - batch[-1].ts).total_seconds() <= 2:
                batch.append(ev)
                continue
            if batch:
                _add_process_list(add, batch, sources)
            listed[(ev.unit, ev.kind)] = [ev]
            continue
        add(
            ev.ts,
            ev.origin,
            _event_text(ev.origin, ev.kind, ev.message, ev.unit, clean),
            sources.cite(ev.source_id, ev.line_no),
            after_kill(ev, kills),
        )
    for batch in listed.values():
        _add_process_list(add, batch, sources)
    if hung:
        first = hung[0]
        text = _event_text(first.origin, first.kind, first.message, None, clean)
        tasks = {m.group(1) for ev in hung if (m := _HUNG_TASK.search(ev.message))}
        more = len(tasks) - 1 if tasks else 0
        if more > 0:
            text += f" ({more} more task{'s' if more > 1 else ''} reported blocked by {utc_text(hung[-1].ts)[11:]} UTC)"
        elif len(hung) > 1:
            text += f" (reported again by {utc_text(hung[-1].ts)[11:]} UTC)"
        add(first.ts, "kernel", text, sources.cite(first.source_id, first.line_no))
    if grouped and chosen is not None and chosen.ts is not None:
        n = len(grouped)
        add(
            chosen.ts + timedelta(microseconds=1),
            "kernel",
            f"… and {n} more process{'es' if n > 1 else ''} of {inc.unit} killed in the same record",
            _cite_others(grouped, sources),
        )
    if facts.retractions and facts.first_retraction is not None:
        first_ts, first_sid, first_line = facts.first_retraction
        add(
            first_ts,
            srv,
            f"{inc.unit}: KV cache pool full, requests retracted — the first of "
            f"{retraction_words(facts.retractions, facts.retracted_reqs)} before the kill",
            sources.cite(first_sid, first_line),
        )
    lb = facts.last_batch
    if lb is not None:
        parts = [f"running {lb['running_req']}", f"queued {lb['queue_req']}"]
        if lb.get("token_usage") is not None:
            parts.append(f"KV usage {lb['token_usage']:.2f}")
        add(
            lb["ts"],
            srv,
            f"{inc.unit}: last batch line before the kill ({', '.join(parts)})",
            sources.cite(lb["source_id"], lb["line_no"]),
        )
    # the GPUs that held memory: an idle GPU (one the server was not given) released nothing
    busy = [g for g in facts.gpu_release if held_before(g)]
    freed = [g for g in busy if g.freed and g.freed_after_s is not None]
    if freed and inc.ts is not None and len(freed) == len(busy):
        last = max(freed, key=lambda g: g.freed_after_s or 0)
        idle = idle_gpus(facts)
        add(
            inc.ts + timedelta(seconds=last.freed_after_s or 0),
            "gpu",
            (
                f"GPU memory released on {inc.unit}'s {facts.unit_gpus.text} (nvidia-smi)"
                if facts.unit_gpus
                else f"GPU memory released on {gpu_names(freed)} (nvidia-smi); {gpu_names(idle)} held none before the kill"
                if idle
                else f"GPU memory released on all {len(freed)} GPUs (nvidia-smi)"
            ),
            sources.cite(*last.freed_at) if last.freed_at else "",
        )
    rb = facts.reboot
    if rb is not None and inc.ts is not None:
        add(
            rb.up_ts,
            "host",
            (
                f"host rebooted: {rb.boot_words} began"
                if rb.exact
                else f"host rebooted: first line of {rb.boot_words}"
            )
            + f", {human((rb.up_ts - inc.ts).total_seconds())} after the kill"
            + (
                f" (the previous boot's last line at {utc_text(rb.last_old_ts)[11:]} UTC)"
                if rb.last_old_ts
                else ""
            ),
            sources.cite(*rb.at),
        )
    late = facts.gpu_freed_late
    if late is not None and inc.ts is not None:
        add(
            late.ts,
            "gpu",
            "GPU memory left behind by the killed run released on "
            + (f"{inc.unit}'s {facts.unit_gpus.text}" if facts.unit_gpus else late.text)
            + f" (nvidia-smi), {human((late.ts - inc.ts).total_seconds())} after the kill",
            sources.cite(*late.at) if late.at else "",
        )
    if facts.queue_start_ts is not None and facts.queue_max:
        add(
            facts.queue_start_ts,
            srv,
            f"{inc.unit}: requests begin to wait in the queue (up to {facts.queue_max} before the kill)",
            sources.cite(*facts.queue_start_at) if facts.queue_start_at else "",
        )
    rec = inc.recovery_load
    if rec is not None and rec.ready_ts is not None:
        add(
            rec.ready_ts,
            rec.engine or srv,
            f"{rec.unit} ready after a {human(rec.load_s)} load — service restored",
            sources.cite(rec.source_id, rec.ready_line_no),
        )
    rows.sort(key=lambda p: p[0])
    out: list[TimelineRow] = []
    for _, r in rows:
        if out and out[-1].event == r.event and out[-1].utc == r.utc:
            continue
        out.append(r)
    return out


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
