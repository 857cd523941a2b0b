"""The memory-pressure timeline before a kill: every memory signal in time buckets, the merged
event list, and the gaps of each source near the kill."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..engines import is_engine
from ..query import run_named_dicts
from ..store.db import Store
from ..text.formats import human


@dataclass
class Bucket:
    ts: datetime
    host_avail_mib: float | None = None
    host_total_mib: float | None = None
    gpu_used_mib_max: float | None = None
    gpu_used_mib_sum: float | None = None
    gpu_total_mib_sum: float | None = None
    gpus: int = 0
    token_usage: float | None = None
    running_req: int | None = None
    queue_req: int | None = None
    gen_throughput: float | None = None
    retractions: int = 0
    retracted_reqs: int = 0  # requests those retractions sent back (0 when the lines do not say)
    first_retraction: tuple[datetime, int, int] | None = None  # its time, source_id, line_no


@dataclass
class TimelineEvent:
    ts: datetime
    origin: str  # systemd, kernel, gpu, operator, or the engine of a server's line (e.g. sglang)
    unit: str | None
    kind: str
    message: str
    source_id: int
    line_no: int


@dataclass
class Gap:
    series: str
    detail: str
    last_ts: datetime | None


@dataclass
class Timeline:
    kill_ts: datetime
    start: datetime
    end: datetime
    bucket_s: float
    buckets: list[Bucket] = field(default_factory=list)
    per_gpu: dict[str, list[tuple[datetime, float, float]]] = field(default_factory=dict)
    #: per GPU, the lowest sample of each bucket (per_gpu has the highest): a short drop, as
    #: memory freed at a death and taken again by the next load, hides in a bucket's maximum
    per_gpu_low: dict[str, list[tuple[datetime, float]]] = field(default_factory=dict)
    host_points: list[tuple[datetime, float, float]] = field(default_factory=list)
    #: the host points that are earlyoom's limit at a kill (``low memory! at or below SIGTERM
    #: limits: mem 9.87%``), not a reading: their time → that limit (% of RAM available). RAM
    #: available was at or below it; the buckets (the memory table) keep readings alone
    host_limits: dict[datetime, float] = field(default_factory=dict)
    events: list[TimelineEvent] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    coverage: list[dict[str, Any]] = field(default_factory=list)
    #: the report's word for the moment it ends at (``kill_ts``): kill, crash or failure
    #: (:func:`~postmortem.analysis.summary.death_noun`)
    ended: str = "kill"

    def before_kill(self) -> list[Bucket]:
        """The buckets that end at the kill or before (buckets start at the kill)."""
        return [b for b in self.buckets if b.ts < self.kill_ts]


#: server lines that say something failed: in the timeline from any rank (every rank logs the
#: same milestones, TP0's stand for them; an OOM on TP3 is often the only one), once per burst
FAILURE_KINDS = frozenset(
    {
        "exception",
        "cuda_oom",
        "not_enough_memory",
        "kv_oom",
        "kv_leak",
        "memory_unbalanced",
        "scheduler_killed",
        "scheduler_dead",
        "subprocess_crashed",
        "initialization_failed",
        "watchdog",
        "health_check_failed",
        "cuda_graph_failed",
    }
)


#: a server's words of a process that died: written after the death they report, never before
DEATH_REPORTS = frozenset({"scheduler_killed", "scheduler_dead", "subprocess_crashed", "sigquit"})


def kill_times(events: Sequence[TimelineEvent]) -> list[datetime]:
    """The precisely stamped kills (the kernel's, systemd-oomd's, earlyoom's) among ``events``."""
    return [ev.ts for ev in events if ev.kind == "oom_kill" and ev.ts.microsecond]


def after_kill(ev: TimelineEvent, kills: Sequence[datetime]) -> datetime | None:
    """The kill a death report stamped to the whole second comes after: a server's ``Rank 0
    scheduler is dead`` of 18:04:19 was written at some instant of that second, after the
    kernel's kill at 18:04:19.604 that it reports — not at 18:04:19.000, where its stamp would
    put it. The latest precise kill of its second; None for another line, a precise stamp or a
    second without a kill (then its stamp orders it).

    >>> from datetime import UTC
    >>> t = datetime(2025, 6, 3, 18, 4, 19, tzinfo=UTC)
    >>> dead = TimelineEvent(t, "sglang", "u.service", "scheduler_killed", "Rank 0 scheduler is dead.", 2, 9)
    >>> after_kill(dead, [t.replace(microsecond=604211)]).microsecond
    604211
    >>> after_kill(dead, [t + timedelta(seconds=1, microseconds=5)]) is None  # the next second's
    True
    """
    if not is_engine(ev.origin) or ev.kind not in DEATH_REPORTS or ev.ts.microsecond:
        return None
    within = [k for k in kills if ev.ts <= k < ev.ts + timedelta(seconds=1)]
    return max(within) if within else None


def event_order(
    events: Sequence[TimelineEvent],
) -> Callable[[TimelineEvent], tuple[datetime, bool, int, int]]:
    """A sort key for ``events``: time order, a whole-second death report after the kill of its
    second (:func:`after_kill`), then source and line."""
    kills = kill_times(events)

    def key(ev: TimelineEvent) -> tuple[datetime, bool, int, int]:
        after = after_kill(ev, kills)
        return (after or ev.ts, after is not None, ev.source_id, ev.line_no)

    return key


def _bucket_seconds(window_s: float) -> float:
    for step in (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if window_s / step <= 90:
            return float(step)
    return 3600.0


def seconds_after(kill_ts: datetime, recovered_ts: datetime | None) -> float:
    """How far past a kill its timeline runs: ten minutes, or until the service was ready again
    plus 90 s (so the recovery is on it)."""
    after = 600.0
    if recovered_ts is not None:
        after = max(after, (recovered_ts - kill_ts).total_seconds() + 90)
    return after


def memory_timeline(
    store: Store,
    *,
    kill_ts: datetime,
    unit: str | None,
    host: str | None,
    window_s: float = 1800.0,
    after_s: float = 0.0,
    gpus: list[str] | None = None,
    ended: str = "kill",
    source: int | None = None,
) -> Timeline:
    """Signals from ``window_s`` before the kill to ``after_s`` after it; GPU memory of ``gpus``
    (bus ids, UUIDs or indexes as text: the unit's GPUs) or, when None, of every GPU of the host.
    ``ended``: what ended the run at ``kill_ts`` (:attr:`Timeline.ended`). ``source``: with
    no ``unit``, the server log whose statistics and retractions are the server's (a log
    nothing ties to a unit: :attr:`.model.Incident.server_source`)."""
    start = kill_ts - timedelta(seconds=window_s)
    end = kill_ts + timedelta(seconds=after_s)
    bucket_s = _bucket_seconds(window_s + after_s)
    tl = Timeline(kill_ts=kill_ts, start=start, end=end, bucket_s=bucket_s, ended=ended)
    # buckets start at the kill (and every bucket_s before and after it): no bucket mixes what
    # was measured before the kill with what came after
    p = {"host": host, "from": start, "to": end, "bucket_s": bucket_s, "origin": kill_ts}
    buckets: dict[datetime, Bucket] = {}

    def at(ts: datetime) -> Bucket:
        b = buckets.get(ts)
        if b is None:
            b = buckets[ts] = Bucket(ts)
        return b

    gpu_rows = run_named_dicts(store, "timeline_gpu", {**p, "gpus": gpus})
    for r in gpu_rows:
        b = at(r["bucket"])
        used, total = r["used_mib"], r["total_mib"]
        if used is not None:
            b.gpu_used_mib_max = max(b.gpu_used_mib_max or 0, used)
            b.gpu_used_mib_sum = (b.gpu_used_mib_sum or 0) + used
            b.gpus += 1
        if total is not None:
            b.gpu_total_mib_sum = (b.gpu_total_mib_sum or 0) + total
        label = f"GPU {r['gpu_index']}" if r["gpu_index"] is not None else str(r["gpu"])
        tl.per_gpu.setdefault(label, []).append((r["bucket"], float(used or 0), float(total or 0)))
        low = r["low_mib"] if r["low_mib"] is not None else used
        tl.per_gpu_low.setdefault(label, []).append((r["bucket"], float(low or 0)))
    if unit is not None or source is not None:
        pu = {**p, "unit": unit, "source": source}
        for r in run_named_dicts(store, "timeline_batches", pu):
            b = at(r["bucket"])
            b.token_usage = r["token_usage_max"]
            b.running_req = r["running_req"]
            b.queue_req = r["queue_req"]
            b.gen_throughput = r["gen_throughput"]
        for r in run_named_dicts(
            store,
            "timeline_retractions",
            {**pu, "from": start, "to": end, "bucket_s": bucket_s, "host": host, "origin": kill_ts},
        ):
            b = at(r["bucket"])
            b.retractions = int(r["retractions"])
            b.retracted_reqs = int(r["retracted_reqs"] or 0)
            b.first_retraction = (r["first_ts"], int(r["first_source_id"]), int(r["first_line_no"]))
    for r in run_named_dicts(store, "timeline_host_memory", {"host": host, "from": start, "to": end}):
        if r["avail_mib"] is None:
            continue
        tl.host_points.append((r["ts"], float(r["avail_mib"]), float(r["total_mib"] or 0)))
        if r["limit_pct"] is not None:
            tl.host_limits[r["ts"]] = float(r["limit_pct"])
            continue
        b = at(_floor(r["ts"], bucket_s, kill_ts))
        b.host_avail_mib = float(r["avail_mib"])
        b.host_total_mib = float(r["total_mib"]) if r["total_mib"] else None
    tl.buckets = [buckets[k] for k in sorted(buckets)]

    events = {"host": host, "from": start, "to": end, "failure_kinds": sorted(FAILURE_KINDS)}
    for r in run_named_dicts(store, "timeline_events", events):
        tl.events.append(
            TimelineEvent(
                r["ts"],
                r["origin"],
                r["unit"],
                r["kind"],
                str(r["message"] or ""),
                int(r["source_id"]),
                int(r["line_no"]),
            )
        )
    tl.events = dedupe_events(tl.events)
    coverage = run_named_dicts(
        store,
        "series_coverage",
        {"unit": unit, "source": source, "host": host, "from": start, "to": kill_ts},
    )
    tl.coverage = coverage
    tl.gaps = find_gaps(coverage, kill_ts, window_s, ended)
    return tl


def _floor(ts: datetime, bucket_s: float, origin: datetime) -> datetime:
    """The bucket a time falls in, aligned like DuckDB's ``time_bucket`` with ``origin``."""
    step = timedelta(seconds=bucket_s)
    return origin + ((ts - origin) // step) * step


def dedupe_events(events: list[TimelineEvent]) -> list[TimelineEvent]:
    """One event per (origin, unit, kind, message) within a second — every rank prints the same
    startup line, and the journal and dmesg both carry the kernel's."""
    out: list[TimelineEvent] = []
    seen: dict[tuple[str, str, str], datetime] = {}
    # the copy that names its unit wins (journal -o cat and bare logs do not)
    for ev in sorted(
        events, key=lambda e: (e.ts.replace(microsecond=0), e.unit is None, e.ts, e.source_id, e.line_no)
    ):
        key = (ev.origin, ev.kind, _norm(ev.message))
        last = seen.get(key)
        if last is not None and abs((ev.ts - last).total_seconds()) <= 2:
            continue
        seen[key] = ev.ts
        out.append(ev)
    out.sort(key=event_order(out))
    return out


def _norm(message: str) -> str:
    # a server's own stamp differs between a journald copy and a log file; compare what follows
    text = message.strip()
    if text.startswith("[") and "] " in text[:60]:
        text = text.split("] ", 1)[1]
    return text[:120]


def find_gaps(
    coverage: list[dict[str, Any]], kill_ts: datetime, window_s: float, ended: str = "kill"
) -> list[Gap]:
    """A source that is silent in the window, or stops well before the kill (``ended``: the
    report's word for it); one the store holds none of (for the host, or the unit) has no gap."""
    gaps = []
    for row in coverage:
        series, last, n = row["series"], row["last_ts"], int(row["samples"] or 0)
        if not row.get("held", True):
            continue
        if n == 0 or last is None:
            gaps.append(Gap(series, f"no data in the window before the {ended}", None))
            continue
        first = row["first_ts"]
        span = max((last - first).total_seconds(), 0.0) if first else 0.0
        interval = span / max(n - 1, 1) if n > 1 else window_s
        silent = (kill_ts - last).total_seconds()
        if silent > max(3 * interval, 60.0):
            gaps.append(
                Gap(
                    series,
                    f"last sample {human(silent)} before the {ended} (usual interval "
                    f"{human(interval) if interval >= 1 else 'under a second'})",
                    last,
                )
            )
    return gaps
