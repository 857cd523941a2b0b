"""Typed report contexts: what the templates see.

Every field is documented in ``docs/report-context.md`` (a test checks that the two agree);
``--format json`` writes the same objects as JSON. All text that came from logs has passed
through the :class:`~postmortem.report.redact.Redactor` before it lands here; escaping for
Markdown happens in the templates (``| cell``, ``| code``, ``| inline``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from .. import __version__
from ..analysis import Analysis
from ..analysis.facts import IncidentFacts
from ..analysis.load_stats import REGRESSION_MIN_S, REGRESSION_RATIO, LoadStats, is_regression
from ..analysis.model import Incident, Load, Victim, is_container, killed_process
from ..analysis.rules.common import gpu_names, held_before, idle_gpus
from ..analysis.rules.words import engine_of
from ..analysis.summary import CAUSE_WORDS, downtime_text
from ..analysis.timeline import FAILURE_KINDS, TimelineEvent, after_kill, kill_times
from ..engines import get_engine, is_engine
from ..parsers.journal.systemd import left_process
from ..query import run_named_dicts
from ..store.db import Store
from ..text.formats import human, retraction_words, size_kb
from ..timeutil import UTC, ZONE_ASSUMED, zone_name
from .redact import Redactor

CAUSE_LABELS = {
    "cgroup_oom": "cgroup memory limit (kernel memcg OOM killer)",
    "host_oom": "host RAM exhausted (kernel OOM killer)",
    "gpu_oom": "GPU memory exhausted (CUDA OOM)",
    "oomd": "systemd-oomd kill (memory pressure or swap)",
    "earlyoom": "earlyoom kill (low host RAM)",
    "signal": "killed by a signal (no OOM record)",
    "timeout": "systemd stop/start timeout (SIGKILL after TimeoutStopSec=/TimeoutStartSec=)",
    "gpu_fault": "GPU fault (NVIDIA Xid before the death)",
    "crash": "server crash (an error, not a kill)",
    "unknown": "unknown",
}


@dataclass
class TimelineRow:
    utc: str
    local: str
    origin: str
    event: str
    cite: str


@dataclass
class Quote:
    title: str
    cite: str
    text: str


@dataclass
class VictimRow:
    pid: int | None
    comm: str
    anon_rss_gib: float | None
    chosen: bool
    cite: str


@dataclass
class ConsumerRow:
    name: str
    processes: int
    rss_gib: float
    share_pct: float


@dataclass
class MemoryRow:
    utc: str
    host_avail_gib: float | None
    gpu_used_gib: float | None
    gpu_total_gib: float | None
    token_usage: float | None
    running: int | None
    queued: int | None
    retractions: int


@dataclass
class LoadRow:
    unit: str
    start_utc: str
    ready_utc: str
    load_s: float | None
    weights_s: float | None
    draft_weights_s: float | None
    kv_s: float | None
    graphs_s: float | None
    draft_graphs_s: float | None
    outcome: str
    polls: int | None
    speculative: str
    role: str
    regression: bool
    cite: str


@dataclass
class LoadSummary:
    unit: str
    model: str
    speculative: str
    count: int
    min_s: float | None
    median_s: float | None
    p90_s: float | None
    max_s: float | None
    weights_median_s: float | None
    graphs_median_s: float | None


@dataclass
class RecommendationRow:
    severity: str
    title: str
    detail: str
    evidence: list[str]
    action: str | None


@dataclass
class SourceRow:
    file: str
    format: str
    lines: int
    parsed: int
    ignored: int
    parse_issues: int
    first_utc: str
    last_utc: str
    covers_kill: bool
    notes: str


@dataclass
class GapRow:
    series: str
    detail: str


@dataclass
class OffsetRow:
    file: str
    reference: str
    offset_s: float
    method: str
    pairs: int
    note: str


@dataclass
class IssueReasonRow:
    file: str
    reason: str
    count: int


@dataclass
class ContainerRow:
    """The container the killed unit is (a ``docker:<name>`` unit)."""

    runtime: str
    name: str
    image: str
    container_id: str
    short_id: str
    cgroup: str


@dataclass
class Impact:
    downtime_s: float | None
    downtime: str
    kill_utc: str
    recovered_utc: str
    recovery_unit: str
    fallback_unit: str
    running_at_kill: int | None
    queued_at_kill: int | None
    last_activity_utc: str
    silent_before_kill_s: float | None
    silent_before_kill: str
    gen_throughput_before: float | None
    tokens_not_served: float | None
    restart_count: int | None
    kills_last_hour: int
    #: the downtime in two parts: kill → the start that brought service back, then its load
    until_start_s: float | None = None
    until_start: str = "—"
    recovery_load_s: float | None = None
    recovery_load: str = "—"
    #: out of service from a stop to ready again: a stop timeout's SIGTERM (the drain), or the
    #: stop of a serving run to start the one killed while loading
    out_of_service_s: float | None = None
    out_of_service: str = "—"
    stop_utc: str = "—"
    #: that stop was of the serving run, to start the one that was killed (not its own drain)
    stop_restarted: bool = False
    #: who brought a container back, when its runtime's restart policy did
    recovered_by: str = ""
    #: the host booted again after the kill: when (UTC) and what is known of it, else empty
    rebooted_utc: str = ""
    rebooted: str = ""
    #: the same unit's earlier kills on this host in the week before: their number, then each
    #: one's time (UTC) and cause, latest first; empty with none
    earlier_week: str = ""


@dataclass
class IncidentReport:
    generated_at: str
    tool_version: str
    title: str
    file_stem: str
    incident_id: int
    host: str
    unit: str
    zone: str
    kill_utc: str
    kill_local: str
    cause: str
    cause_label: str
    cause_words: str
    confidence: float
    summary: str
    cause_explanation: str
    impact: Impact
    timeline: list[TimelineRow]
    victims: list[VictimRow]
    consumers: list[ConsumerRow]
    memory_facts: list[str]
    quotes: list[Quote]
    memory_figure: str | None
    memory_rows: list[MemoryRow]
    memory_rows_note: str
    window_s: float
    loads: list[LoadRow]
    load_summaries: list[LoadSummary]
    loads_figure: str | None
    config: dict[str, str]
    recommendations: list[RecommendationRow]
    action_items: list[str]
    sources: list[SourceRow]
    gaps: list[GapRow]
    offsets: list[OffsetRow]
    parse_issue_reasons: list[IssueReasonRow]
    #: the run that brought service back, when its settings differ from the killed run's: the
    #: value of each setting ``config`` shows (``—``: not set), and its unit
    recovery_config: dict[str, str] = dataclasses.field(default_factory=dict)
    recovery_config_unit: str = ""
    #: where ``config`` comes from: the engine and what it calls its printed configuration
    config_source: str = ""
    #: the container the unit is, when it is one
    container: ContainerRow | None = None
    #: the zones the host's zone-less stamps were read in when nobody named one (no --tz, no
    #: configured zone): every such time is off by the host's own offset from it
    zone_assumed: list[str] = dataclasses.field(default_factory=list)


@dataclass
class IndexRow:
    report: str
    kill_utc: str
    host: str
    unit: str
    cause: str
    downtime: str
    recovery: str


@dataclass
class UndatedKillRow:
    """An OOM kill whose time could not be told: in no report."""

    cite: str
    host: str
    killer: str
    victim: str
    cgroup: str
    anon_rss: str  # the victim's anonymous RSS in words (`195 MiB`, `1.5 GiB`), or `—`
    uptime_s: float | None  # seconds since boot, when the line printed them


@dataclass
class XidRow:
    """An NVIDIA Xid event in the window (or with no time)."""

    utc: str
    host: str
    bus_id: str
    xid: int
    process: str
    message: str
    cite: str


@dataclass
class IndexReport:
    generated_at: str
    tool_version: str
    window: str
    incidents: list[IndexRow]
    sources: list[SourceRow]
    no_incident_reason: str
    undated_kills: list[UndatedKillRow] = dataclasses.field(default_factory=list)
    xids: list[XidRow] = dataclasses.field(default_factory=list)
    slow_loads: list[SlowLoadRow] = dataclasses.field(default_factory=list)


@dataclass
class SlowLoadRow:
    """A load in the window far slower than its unit's loads before it, incident or not."""

    started_utc: str
    host: str
    unit: str
    load: str  # its load time in words
    load_s: float
    median_before: str  # the median of the unit's loads before it, in words
    loads_before: int
    cite: str


# ----------------------------------------------------------------------------- helpers


def undated_kill_rows(store: Store, sources: Sources, clean: Redactor) -> list[UndatedKillRow]:
    """The OOM kills no report shows because their time is unknown (listed, never dropped)."""
    out = []
    for r in run_named_dicts(store, "undated_kills"):
        pid = f" (pid {r['victim_pid']})" if r["victim_pid"] is not None else ""
        out.append(
            UndatedKillRow(
                cite=sources.cite(r["source_id"], r["line_no"]),
                host=clean.host(r["host"]) or "—",
                killer=str(r["killer"] or "—") + (f", {r['scope']}" if r["scope"] else ""),
                victim=clean(f"{r['victim_comm'] or '?'}{pid}"),
                cgroup=clean(str(r["unit"] or r["oom_memcg"] or "—")),
                anon_rss=size_kb(r["anon_rss_kb"]) if r["anon_rss_kb"] is not None else "—",
                uptime_s=r["monotonic_s"],
            )
        )
    return out


def xid_rows(
    store: Store, since: datetime | None, until: datetime | None, sources: Sources, clean: Redactor
) -> list[XidRow]:
    """NVIDIA Xid events in the window, and those with no time."""
    return [
        XidRow(
            utc=utc_text(r["ts"]),
            host=clean.host(r["host"]) or "—",
            bus_id=str(r["bus_id"] or "—"),
            xid=int(r["xid"]),
            process=clean(
                f"{r['process_name'] or '?'} (pid {r['pid']})"
                if r["pid"] is not None
                else str(r["process_name"] or "—")
            ),
            message=clean(str(r["message"] or ""))[:160],
            cite=sources.cite(r["source_id"], r["line_no"]),
        )
        for r in run_named_dicts(store, "xids_in_window", {"since": since, "until": until})
    ]


def utc_text(ts: datetime | None) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if ts else "—"


def slow_load_rows(
    stats: Sequence[LoadStats],
    since: datetime | None,
    until: datetime | None,
    sources: Sources,
    clean: Redactor,
) -> list[SlowLoadRow]:
    """The window's loads 1.5× the median of their unit's (and model's) ready loads before them,
    and a minute more — a planned restart that took long is tomorrow's long outage — judged
    against the loads before each, so a row reads the same after later loads are ingested."""
    rows = []
    for st in stats:
        ready = sorted(
            (ld for ld in st.ready if ld.start_ts is not None),
            key=lambda ld: ld.start_ts.timestamp() if ld.start_ts is not None else 0.0,
        )
        for i, ld in enumerate(ready):
            assert ld.start_ts is not None and ld.load_s is not None
            if (since is not None and ld.start_ts < since) or (until is not None and ld.start_ts > until):
                continue
            before = [x.load_s for x in ready[:i] if x.load_s is not None]
            if len(before) < 2:
                continue
            med = statistics.median(before)
            if ld.load_s > med * REGRESSION_RATIO and ld.load_s - med >= REGRESSION_MIN_S:
                rows.append(
                    SlowLoadRow(
                        started_utc=utc_text(ld.start_ts),
                        host=clean.host(ld.host) or "—",
                        unit=clean(ld.unit or "—"),
                        load=human(ld.load_s),
                        load_s=round(ld.load_s, 1),
                        median_before=human(med),
                        loads_before=len(before),
                        cite=sources.cite(ld.start_source_id or ld.source_id, ld.start_line_no),
                    )
                )
    return sorted(rows, key=lambda r: r.started_utc)


def window_text(since: datetime | None, until: datetime | None) -> str:
    """The report window: ``beginning → 2025-05-26 00:00:00 UTC``."""
    return f"{utc_text(since) if since else 'beginning'} → {utc_text(until) if until else 'now'} UTC"


def local_text(ts: datetime | None, zone: tzinfo) -> str:
    if ts is None:
        return "—"
    loc = ts.astimezone(zone)
    return f"{loc:%H:%M:%S} {loc.tzname()}"


def as_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: as_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [as_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): as_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, datetime):
        return obj.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return obj


def _gib(kb: float | None) -> float | None:
    return round(kb / 1024 / 1024, 1) if kb is not None else None


def _gib_mib(mib: float | None) -> float | None:
    return round(mib / 1024, 1) if mib is not None else None


class Sources:
    """source_id → a short file name for citations (relative to the working directory), and
    the most frequent parse-issue reasons per source; read once per build."""

    def __init__(self, store: Store) -> None:
        self.rows = run_named_dicts(store, "sources_overview")
        self.issue_reasons = run_named_dicts(store, "parse_issue_reasons")
        self.by_id = {int(r["source_id"]): r for r in self.rows}
        cwd = os.getcwd()
        self.names: dict[int, str] = {}
        for sid, r in self.by_id.items():
            p = str(r["path"])
            try:
                rel = os.path.relpath(p, cwd)
                p = rel if not rel.startswith("..") else p
            except ValueError:
                pass
            self.names[sid] = p
        # in a store of several hosts (a fleet store), the hosts each file's lines name: an
        # incident's report lists its own host's files (a store of one host needs no look)
        self.several_hosts = len(run_named_dicts(store, "store_hosts")) > 1
        self.hosts_of: dict[int, set[str]] = {}
        if self.several_hosts:
            for r in run_named_dicts(store, "source_hosts"):
                self.hosts_of.setdefault(int(r["source_id"]), set()).add(str(r["host"]))

    def of_host(self, host: str | None) -> list[int]:
        """The sources of ``host``'s incident: every source in a store of one host (or for an
        incident whose host is not known); else those whose lines name the host, and those
        naming none (they may be any host's: :meth:`host_unknown`)."""
        if not self.several_hosts or host is None:
            return sorted(self.by_id)
        return sorted(sid for sid in self.by_id if host in self.hosts_of.get(sid, {host}))

    def host_unknown(self, source_id: int) -> bool:
        """A source whose lines name no host, in a store of several hosts."""
        return self.several_hosts and source_id not in self.hosts_of

    def cite(self, source_id: int | None, line_no: int | None) -> str:
        """``file:line``; for a binary journal, whose lines are those of the export stream
        journalctl writes for it, ``file (export line N)``."""
        if source_id is None:
            return ""
        name = self.names.get(int(source_id), f"source {source_id}")
        if not line_no:
            return name
        row = self.by_id.get(int(source_id))
        if row is not None and row.get("compression") == "journalctl":
            return f"{name} (export line {line_no})"
        return f"{name}:{line_no}"


# ----------------------------------------------------------------------------- builders

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


def _gpu_start_words(facts: IncidentFacts, span: str) -> str:
    """Where the first GPU figure of the window comes from: its start, or — nvidia-smi began
    later — its first sample."""
    tl, at = facts.timeline, facts.gpu_used_start_ts
    if at is None or (at - tl.start).total_seconds() <= 2 * tl.bucket_s:
        return f"at the start of {span}"
    return f"in the {human(tl.bucket_s)} from {utc_text(at)[11:]} UTC (nvidia-smi's first samples in {span})"


def _flat_words(facts: IncidentFacts) -> str:
    """What flat GPU memory before the kill means for the cause."""
    if facts.incident.cause == "gpu_oom":
        # the server takes its KV pool at start: used memory is flat by design, and a CUDA OOM
        # is an allocation outside the pool (activations, graphs) that the rest did not fit
        engine = engine_of(facts)
        fraction = engine.setting("gpu_memory_fraction").flag or "its memory fraction"
        return (
            f" — flat, as {engine.label} takes its memory pool at start: the CUDA OOM was an allocation "
            f"outside that pool, in the headroom {fraction} leaves."
        )
    return " — flat: the GPUs did not run out."


_ASSUMED = re.compile(re.escape(ZONE_ASSUMED) + r" (\S+), this machine's zone")


def _zones_assumed(sources: Sources, own: list[int]) -> list[str]:
    """The zones the incident's own zone-less sources were read in by default (their notes)."""
    found = {m.group(1) for sid in own if (m := _ASSUMED.search(str(sources.by_id[sid].get("notes") or "")))}
    return sorted(found)


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


def _quote_lines(store: Store, facts: IncidentFacts, sources: Sources, clean: Redactor) -> list[Quote]:
    inc = facts.incident
    quotes: list[Quote] = []
    oom = facts.oom
    if oom is not None:
        sid = int(oom["source_id"])
        first = int(oom["header_line_no"] or oom["line_no"])
        last = int(oom["line_no"])
        lines = run_named_dicts(store, "record_lines", {"source_id": sid, "first": first, "last": last + 1})
        picked = [
            r
            for r in lines
            if any(
                k in str(r["message"])
                for k in (
                    "invoked oom-killer",
                    "memory: usage",
                    "oom-kill:",
                    "Killed process",
                    "Mem-Info",
                    "Free swap",
                    "are going to be killed",
                    "Task in ",
                )
            )
        ]
        text = "\n".join(f"{r['line_no']:>6}  {clean(str(r['message']))}" for r in picked[:12])
        if text:
            quotes.append(Quote("The kernel's OOM record", sources.cite(sid, first), text))
    for e in inc.evidence:
        if e.kind == "xid":  # the GPU fault that made this a gpu_fault incident
            rows = run_named_dicts(
                store, "record_lines", {"source_id": e.source_id, "first": e.line_no, "last": e.line_no}
            )
            if rows:
                text = f"{e.line_no:>6}  {clean(str(rows[0]['message']))}"
                quotes.append(Quote("The NVIDIA driver", sources.cite(e.source_id, e.line_no), text))
    # systemd's lines from one source (the line numbers are that file's): the source with the
    # most of them; the same journal in a second file or rendering adds nothing
    units = [e for e in inc.evidence if e.kind.startswith("unit_")]
    if units:
        best = max(
            {e.source_id for e in units}, key=lambda sid: (sum(e.source_id == sid for e in units), -sid)
        )
        sysd = [e for e in units if e.source_id == best]
        text = "\n".join(f"{e.line_no:>6}  {clean(e.detail)}" for e in sysd[:8])
        quotes.append(Quote("systemd", sources.cite(sysd[0].source_id, sysd[0].line_no), text))
    sg = []
    seen_lines: set[tuple[int, int]] = set()
    for e in inc.evidence:
        # one line can be several kinds of evidence (an exception that is a CUDA OOM)
        if e.kind.startswith(("server_", "cuda_oom")) and (e.source_id, e.line_no) not in seen_lines:
            seen_lines.add((e.source_id, e.line_no))
            sg.append(e)
    if sg:
        text = "\n".join(f"{e.line_no:>6}  {clean(e.detail)}" for e in sg[:6])
        quotes.append(Quote(engine_of(facts).label, sources.cite(sg[0].source_id, sg[0].line_no), text))
    elif facts.last_batch is not None:
        lb = facts.last_batch
        rows = run_named_dicts(
            store,
            "record_lines",
            {"source_id": lb["source_id"], "first": lb["line_no"], "last": lb["line_no"]},
        )
        if rows:
            quotes.append(
                Quote(
                    f"{engine_of(facts).label}'s last words",
                    sources.cite(lb["source_id"], lb["line_no"]),
                    clean(str(rows[0]["message"])),
                )
            )
    return quotes


#: systemd's binary units (``7.8G`` is 7.8 GiB)
_SWAP_PEAK = re.compile(r"([\d.]+)([KMGT]) memory swap peak")


def _silent_text(seconds: float) -> str:
    """A gap between two printed times: under a minute to a tenth of a second, since both ends
    are shown to the second and a rounded ``5 s`` between 20:17:15 and 20:17:19 reads as wrong.

    >>> _silent_text(4.604), _silent_text(75.2)
    ('4.6 s', '1 min 15 s')
    """
    return f"{seconds:.1f} s" if seconds < 60 else human(seconds)


def _memory_rows_note(facts: IncidentFacts, max_rows: int = 14) -> str:
    """How to read the memory table: what a row covers and what its retractions count."""
    before = facts.timeline.before_kill()
    if not before:
        return ""
    step = max(1, len(before) // (max_rows - 1))
    b = facts.timeline.bucket_s
    every = f", a row every {human(step * b)} and the last before the kill" if step > 1 else ""
    return (
        f"each row is the {human(b)} from its time — the highest value in it, host RAM as of its last "
        f"sample{every}; retractions are those since the previous row, up to the end of this row's {human(b)}"
    )


def _memory_rows(facts: IncidentFacts, max_rows: int = 14) -> list[MemoryRow]:
    before = facts.timeline.before_kill()
    if not before:
        return []
    step = max(1, len(before) // (max_rows - 1))
    chosen = before[::step]
    if chosen[-1] is not before[-1]:
        chosen.append(before[-1])
    out = []
    host_last: float | None = None
    pending_retractions = 0
    for b in facts.timeline.buckets:
        if b.host_avail_mib is not None:
            host_last = b.host_avail_mib
        pending_retractions += b.retractions
        if b in chosen:
            gpus = b.gpus or 1
            out.append(
                MemoryRow(
                    utc=utc_text(b.ts),
                    host_avail_gib=_gib_mib(b.host_avail_mib if b.host_avail_mib is not None else host_last),
                    gpu_used_gib=_gib_mib(b.gpu_used_mib_max),
                    gpu_total_gib=_gib_mib(b.gpu_total_mib_sum / gpus) if b.gpu_total_mib_sum else None,
                    token_usage=round(b.token_usage, 2) if b.token_usage is not None else None,
                    running=b.running_req,
                    queued=b.queue_req,
                    retractions=pending_retractions,
                )
            )
            pending_retractions = 0
    return out


def _growth_words(facts: IncidentFacts) -> str | None:
    """What grew before the kill, in one sentence: host RAM in use from the first sample to the
    last, its rate at the end, and the running requests meanwhile."""
    pts = facts.host_used
    if len(pts) < 2:
        return None
    (t0, u0), (t1, u1) = pts[0], pts[-1]
    text = (
        f"Host RAM in use {'grew' if u1 >= u0 else 'fell'} from {_gib_mib(u0)} GiB ({utc_text(t0)[11:]} UTC) "
        f"to {_gib_mib(u1)} GiB ({utc_text(t1)[11:]} UTC), {(u1 - u0) / 1024:+,.1f} GiB"
    )
    if facts.host_rate_mib_min is not None:
        text += f"; {facts.host_rate_mib_min / 1024:,.1f} GiB a minute over its last 10 minutes"
    if facts.running_first is not None and facts.running_last is not None:
        text += f"; running requests went from {facts.running_first} to {facts.running_last} meanwhile"
    return text + "."


def _memory_facts(facts: IncidentFacts) -> list[str]:
    inc = facts.incident
    out = []
    if inc.cause == "cgroup_oom" and inc.memcg_limit_kb:
        owner = "Container" if is_container(inc.unit) else "Unit"
        out.append(
            f"{owner} cgroup memory at the kill: {_gib(inc.memcg_usage_kb)} GiB of a {_gib(inc.memcg_limit_kb)} GiB "
            "limit (the kernel's `memory: usage … limit …` line)."
        )
    if facts.consumed is not None:
        swap = _SWAP_PEAK.search(str(facts.consumed["message"] or ""))
        out.append(
            f"The unit's memory peak over the run that was killed (systemd's `Consumed` line at its end): "
            f"{facts.consumed['memory_peak_bytes'] / 2**30:,.1f} GiB"
            + (f", and {swap.group(1)} {swap.group(2)}iB of swap" if swap else "")
            + "."
        )
    oom = facts.oom or {}
    if oom.get("free_kb") is not None:
        out.append(f"Free host RAM in the kernel's Mem-Info at the kill: {_gib(oom['free_kb'])} GiB.")
    tl = facts.timeline
    span = f"the {round((tl.kill_ts - tl.start).total_seconds() / 60)} minutes before the kill"
    if facts.host_avail_start_mib is not None and facts.host_avail_end_mib is not None:
        first = facts.timeline.host_points[0][0]
        out.append(
            f"Host RAM available (earlyoom): {_gib_mib(facts.host_avail_start_mib)} GiB at "
            f"{utc_text(first)[11:]} UTC (its first sample in {span}), "
            f"{_gib_mib(facts.host_avail_end_mib)}"
            + (f" of {_gib_mib(facts.host_total_mib)} GiB" if facts.host_total_mib else " GiB")
            + " just before the kill."
        )
    growth = _growth_words(facts)
    if growth:
        out.append(growth)
    if facts.gpu_used_start_mib is not None and facts.gpu_used_end_mib is not None:
        out.append(
            "GPU memory ("
            + (f"busiest of its {facts.unit_gpus.text}" if facts.unit_gpus else "busiest GPU")
            + f"): {_gib_mib(facts.gpu_used_start_mib)} GiB {_gpu_start_words(facts, span)}, "
            f"{_gib_mib(facts.gpu_used_end_mib)}"
            + (f" of {_gib_mib(facts.gpu_total_mib)} GiB" if facts.gpu_total_mib else " GiB")
            + " just before the kill"
            + (_flat_words(facts) if facts.gpu_flat else ".")
        )
        if facts.unit_gpus:
            out.append(
                f"{inc.unit} ran on {facts.unit_gpus.text} of the host's {facts.unit_gpus.of} "
                f"({facts.unit_gpus.how}): the GPU figures here are of those alone."
            )
    if facts.token_usage_max is not None:
        out.append(
            f"KV-cache token usage peaked at {facts.token_usage_max:.2f}"
            + (f"; {retraction_words(facts.retractions, facts.retracted_reqs)}" if facts.retractions else "")
            + (f"; up to {facts.queue_max} requests queued." if facts.queue_max else ".")
        )
    v = inc.victim
    if v is not None and v.anon_rss_kb:
        out.append(
            f"The chosen victim {v.comm} (pid {v.pid}) held {_gib(v.anon_rss_kb)} GiB of anonymous memory."
        )
    return out


def _load_row(ld: Load, role: str, stats: LoadStats | None, sources: Sources) -> LoadRow:
    return LoadRow(
        unit=ld.unit or "?",
        start_utc=utc_text(ld.start_ts),
        ready_utc=utc_text(ld.ready_ts),
        load_s=ld.load_s,
        weights_s=ld.weight_load_s,
        draft_weights_s=ld.draft_weight_load_s,
        kv_s=ld.kv_alloc_s,
        graphs_s=ld.cuda_graph_s,
        draft_graphs_s=ld.draft_cuda_graph_s,
        outcome=ld.outcome,
        polls=ld.health_polls,
        speculative=ld.speculative_algorithm or "—",
        role=role,
        regression=bool(stats and is_regression(ld, stats)),
        cite=sources.cite(ld.start_source_id or ld.source_id, ld.start_line_no),
    )


def _load_summary(st: LoadStats) -> LoadSummary:
    p = st.phases
    return LoadSummary(
        unit=st.unit or "?",
        model=st.model_path or "?",
        speculative=st.speculative_algorithm or "—",
        count=st.count,
        min_s=p["load_s"].min if "load_s" in p else None,
        median_s=p["load_s"].median if "load_s" in p else None,
        p90_s=p["load_s"].p90 if "load_s" in p else None,
        max_s=p["load_s"].max if "load_s" in p else None,
        weights_median_s=p["weight_load_s"].median if "weight_load_s" in p else None,
        graphs_median_s=p["cuda_graph_s"].median if "cuda_graph_s" in p else None,
    )


_CONFIG_KEYS = (
    "model_path",
    "tp_size",
    "mem_fraction_static",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "cuda_graph_max_bs",
    "max_running_requests",
    "context_length",
    "chunked_prefill_size",
    "port",
)


def _config_rows(cfg: dict[str, Any] | None, clean: Redactor) -> dict[str, str]:
    """The settings a report shows of a run's ``server_configs`` row."""
    cfg = cfg or {}
    rows = {k: clean(str(cfg[k])) for k in _CONFIG_KEYS if cfg.get(k) is not None}
    rows.update({k: clean(v) for k, v in _hicache_args(cfg.get("raw"), cfg.get("engine")).items()})
    return rows


def _hicache_args(raw: str | None, engine: str | None) -> dict[str, str]:
    """The hierarchical KV cache's settings, when the run had it on (its host pools are host
    memory the other settings do not show)."""
    parsed = get_engine(engine).parse_args(raw) if raw else None
    args = parsed[0] if parsed else {}
    if str(args.get("enable_hierarchical_cache", "")).strip("'") != "True":
        return {}
    keys = ("enable_hierarchical_cache", "hicache_ratio", "hicache_size", "hicache_storage_backend")
    return {k: str(args[k]).strip("'") for k in keys if args.get(k) not in (None, "None", "0")}


#: a file covers a kill it has a line near (within the report's window before it, up to this
#: after it: the same instant stamped by another clock, a microsecond apart) and that its span
#: reaches (its last line at most COVER_TAIL before the kill)
COVER_AFTER = timedelta(seconds=1)
COVER_TAIL = timedelta(minutes=10)


def source_rows(
    sources: Sources,
    kill: datetime | None,
    clean: Redactor,
    *,
    ids: Sequence[int] | None = None,
    near: set[int] | None = None,
    window_s: float = 0.0,
) -> list[SourceRow]:
    """Rows for the sources ``ids`` (default: every source). ``near``: the sources with a line
    from ``window_s`` before the ``kill`` to just after it (:func:`sources_near`); a file whose
    span includes the kill across a gap (its service not running then) does not cover it."""
    out = []
    for sid in sorted(sources.by_id) if ids is None else ids:
        r = sources.by_id[sid]
        first, last = r["first_ts"], r["last_ts"]
        spans = bool(kill and first and last and first <= kill <= last + COVER_TAIL)
        said: list[str] = []
        if sources.host_unknown(sid):
            said.append("no host named: its lines may be another host's (ingest it with --host)")
        if spans and near is not None and sid not in near:
            said.append(f"no line in the {human(window_s)} before the kill")
        if r["notes"]:
            said.append(clean(str(r["notes"])))
        out.append(
            SourceRow(
                file=clean(sources.names[sid]),
                format=str(r["format"]),
                lines=int(r["lines"]),
                parsed=int(r["parsed_lines"]),
                ignored=int(r["ignored_lines"]),
                parse_issues=int(r["parse_issues"]),
                first_utc=utc_text(first),
                last_utc=utc_text(last),
                covers_kill=spans and (near is None or sid in near),
                notes="; ".join(said),
            )
        )
    return out


def sources_near(store: Store, kill: datetime | None, window_s: float) -> set[int]:
    """The sources with a line from ``window_s`` before the kill to just after it."""
    if kill is None:
        return set()
    rows = run_named_dicts(
        store,
        "source_records_between",
        {"from": kill - timedelta(seconds=window_s), "to": kill + COVER_AFTER},
    )
    return {int(r["source_id"]) for r in rows}


def action_items(inc: Incident, recs: list[RecommendationRow]) -> list[str]:
    items = [r.action for r in recs if r.action]
    items.append("Confirm the timeline with the operator on duty and attach this report to the ticket")
    if inc.fallback_unit:
        items.append(f"Decide when to move traffic back from {inc.fallback_unit} to {inc.unit}")
    return items


def incident_report(
    store: Store,
    analysis: Analysis,
    inc: Incident,
    *,
    sources: Sources,
    zone: tzinfo,
    clean: Redactor,
    window_s: float,
    generated_at: datetime,
    figure: str | None,
    loads_figure: str | None,
    file_stem: str,
) -> IncidentReport:
    facts = analysis.facts[inc.incident_id]
    recs = [
        RecommendationRow(
            r.severity,
            clean(r.title),
            clean(r.detail),
            [clean(sources.cite(e.source_id, e.line_no)) for e in r.evidence],
            clean(r.action) if r.action else None,
        )
        for r in analysis.recommendations.get(inc.incident_id, [])
    ]
    last = inc.last_activity_ts
    tput = None
    # the killed run's own throughput (a run that died loading served nothing; the run before
    # it is another outage's)
    run = inc.killed_load.start_ts if inc.killed_load is not None else None
    before = [
        b.gen_throughput
        for b in facts.timeline.before_kill()[-10:]
        if b.gen_throughput and (run is None or b.ts >= run)
    ]
    if before:
        tput = sum(before) / len(before)
    impact = Impact(
        downtime_s=inc.downtime_s,
        downtime=downtime_text(inc.downtime_s, inc.unit, "not restored in the data"),
        kill_utc=utc_text(inc.ts),
        recovered_utc=utc_text(inc.recovered_ts),
        recovery_unit=inc.recovery_unit or "—",
        fallback_unit=inc.fallback_unit or "—",
        running_at_kill=inc.running_at_kill,
        queued_at_kill=inc.queued_at_kill,
        last_activity_utc=utc_text(last),
        silent_before_kill_s=(inc.ts - last).total_seconds() if inc.ts and last else None,
        silent_before_kill=_silent_text((inc.ts - last).total_seconds()) if inc.ts and last else "—",
        gen_throughput_before=round(tput, 1) if tput else None,
        # two significant figures: an estimate, not a count
        tokens_not_served=float(f"{tput * inc.downtime_s:.2g}") if tput and inc.downtime_s else None,
        restart_count=inc.restart_count,
        kills_last_hour=inc.kills_last_hour,
    )
    rl = inc.recovery_load
    if rl is not None and rl.start_ts is not None and inc.ts is not None and rl.start_ts >= inc.ts:
        impact.until_start_s = (rl.start_ts - inc.ts).total_seconds()
        impact.until_start = human(impact.until_start_s)
        earlier = [r["ts"] for r in facts.restarts if r["ts"] < rl.start_ts - timedelta(seconds=5)]
        if rl.unit == inc.unit and earlier:
            # the start that came back was not the first: the ones before it failed
            n = len(earlier)
            impact.until_start += (
                f" (the start that came back; {n} restart{'s' if n > 1 else ''} failed before it, the first "
                f"scheduled {human((min(earlier) - inc.ts).total_seconds())} after the kill)"
            )
        if rl.load_s is not None:
            impact.recovery_load_s = rl.load_s
            impact.recovery_load = human(rl.load_s)
    box = inc.container
    if box is not None and inc.recovery_unit == inc.unit and inc.restart_count:
        impact.recovered_by = f"{box.runtime_name}'s restart policy"
    if inc.earlier_week:
        impact.earlier_week = (
            f"{len(inc.earlier_week)} — "
            + "; ".join(
                f"{utc_text(ts)[:16]} UTC ({CAUSE_LABELS.get(cause, cause)})"
                for ts, cause in inc.earlier_week[:5]
            )
            + ("; …" if len(inc.earlier_week) > 5 else "")
        )
    rb = facts.reboot
    if rb is not None and inc.ts is not None:
        impact.rebooted_utc = utc_text(rb.up_ts)
        impact.rebooted = (
            f"{'began' if rb.exact else 'its first line'} {human((rb.up_ts - inc.ts).total_seconds())} after the kill"
            + (f"; the previous boot's last line at {utc_text(rb.last_old_ts)} UTC" if rb.last_old_ts else "")
        )
        if rl is not None and rl.start_ts is not None and rl.start_ts >= rb.up_ts and not impact.recovered_by:
            impact.recovered_by = "started after the reboot"
    if facts.stop_ts is not None and inc.recovered_ts is not None:
        impact.out_of_service_s = (inc.recovered_ts - facts.stop_ts).total_seconds()
        impact.out_of_service = human(impact.out_of_service_s)
        impact.stop_utc = utc_text(facts.stop_ts)
        impact.stop_restarted = facts.stop_restarted
    loads: list[LoadRow] = []
    sums: list[LoadSummary] = []
    for st, role in ((facts.unit_loads, "killed unit"), (facts.recovery_loads, "recovery")):
        if st is None or (role == "recovery" and inc.recovery_unit == inc.unit):
            continue
        sums.append(_load_summary(st))
        for ld in st.loads:
            tag = "history"
            if inc.killed_load is not None and ld.load_id == inc.killed_load.load_id:
                tag = "killed instance"
            elif inc.recovery_load is not None and ld.load_id == inc.recovery_load.load_id:
                tag = "fallback load" if inc.fallback_unit else "recovery load"
                if facts.reboot is not None and ld.start_ts is not None and ld.start_ts >= facts.reboot.up_ts:
                    tag += " (after the reboot: a cold start)"
            elif inc.ts is not None and ld.start_ts is not None and ld.start_ts > inc.ts:
                # a start between the kill and the recovery (or within the hour, when it never
                # came back) is an attempt at this incident; a later one is a later run
                back = inc.recovered_ts or inc.ts + timedelta(hours=1)
                if ld.start_ts > back:
                    tag = "later"
                else:
                    tag = "restart attempt" if ld.unit == inc.unit else "after the kill"
            loads.append(_load_row(ld, tag, st, sources))
    config = _config_rows(facts.config, clean)
    then = _config_rows(facts.recovery_config, clean)
    recovery_config: dict[str, str] = {}
    if facts.recovery_config is not None and then != config:
        recovery_config = {k: then.get(k, "—") for k in [*config, *(k for k in then if k not in config)]}
        config = {k: config.get(k, "—") for k in recovery_config}
    host = clean.host(inc.host) or "unknown-host"
    # the incident's host's files (in a store of several hosts), and what they say of the kill
    own = sources.of_host(inc.host)
    assumed = _zones_assumed(sources, own)
    if inc.ts is not None:
        # a file that began after the incident was over is none of its evidence (and a report
        # written today reads the same after later nights are ingested)
        over = inc.recovered_ts or inc.ts + timedelta(hours=1)
        # a file read in the wrong zone may seem to begin up to 14 hours later (the widest
        # offset): its zone warning stays, though its lines are not the incident's
        assumed = _zones_assumed(
            sources,
            [sid for sid in own if (sources.by_id[sid]["first_ts"] or over) <= over + timedelta(hours=14)],
        )
        own = [sid for sid in own if (sources.by_id[sid]["first_ts"] or over) <= over]
    mine = set(own)
    return IncidentReport(
        generated_at=utc_text(generated_at) + " UTC",
        tool_version=__version__,
        title=f"{clean(inc.unit or 'process')} {'crashed' if inc.cause == 'crash' else 'killed'} on {host} at {utc_text(inc.ts)} UTC",
        file_stem=file_stem,
        incident_id=inc.incident_id,
        host=host,
        unit=clean(inc.unit or "unknown"),
        zone=zone_name(zone),
        kill_utc=utc_text(inc.ts),
        kill_local=local_text(inc.ts, zone),
        cause=inc.cause,
        cause_label=CAUSE_LABELS.get(inc.cause, inc.cause),
        cause_words=CAUSE_WORDS.get(inc.cause, inc.cause),
        confidence=round(inc.confidence, 2),
        summary=clean(inc.summary),
        cause_explanation=clean(inc.cause_explanation),
        impact=impact,
        timeline=timeline_rows(facts, sources, zone, clean),
        victims=[
            VictimRow(
                v.pid,
                clean(v.comm or "?"),
                _gib(v.anon_rss_kb),
                v.chosen,
                sources.cite(v.source_id, v.line_no),
            )
            for v in inc.victims
        ],
        consumers=[
            ConsumerRow(clean(c.name), c.processes, round(c.rss_kb / 1024 / 1024, 1), round(100 * c.share, 1))
            for c in facts.consumers
        ],
        memory_facts=[clean(x) for x in _memory_facts(facts)],
        quotes=_quote_lines(store, facts, sources, clean),
        memory_figure=figure,
        memory_rows=_memory_rows(facts),
        memory_rows_note=_memory_rows_note(facts),
        window_s=window_s,
        loads=loads,
        load_summaries=sums,
        loads_figure=loads_figure,
        config=config,
        config_source=f"{engine_of(facts).label} {engine_of(facts).config_name}",
        recovery_config=recovery_config,
        recovery_config_unit=clean(inc.recovery_unit or "") if recovery_config else "",
        container=ContainerRow(
            box.runtime_name,
            clean(box.name),
            clean(box.image or "—"),
            box.container_id,
            box.short_id,
            box.cgroup or "",
        )
        if box is not None
        else None,
        zone_assumed=assumed,
        recommendations=recs,
        action_items=[clean(x) for x in action_items(inc, recs)],
        sources=source_rows(
            sources, inc.ts, clean, ids=own, near=sources_near(store, inc.ts, window_s), window_s=window_s
        ),
        gaps=[GapRow(g.series, g.detail) for g in facts.timeline.gaps],
        offsets=[
            OffsetRow(
                clean(sources.names.get(o.source_id, str(o.source_id))),
                clean(sources.names.get(o.reference_source_id or -1, "—")),
                round(o.offset_s, 6),
                o.method,
                o.pairs,
                o.note or "",
            )
            for o in facts.offsets
            if o.source_id in mine
        ],
        parse_issue_reasons=[
            IssueReasonRow(
                clean(sources.names.get(int(r["source_id"]), "?")), clean(str(r["reason"])), int(r["n"])
            )
            for r in sources.issue_reasons
            if int(r["source_id"]) in mine
        ],
    )
