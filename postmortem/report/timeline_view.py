"""What ``postmortem timeline`` prints: an incident's memory signals in time buckets and its
merged events, read from the store like the report reads them — the event list begins where
the report's does (queue growth, the first retraction, the last batch line before the kill or crash),
values are rounded, times are whole UTC seconds, and the host's own clock is labelled with the
zone its sources were read in (never this machine's)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from ..analysis.model import death_noun
from ..analysis.summary import CAUSE_LABELS
from ..analysis.timeline import Timeline, TimelineEvent, event_order, memory_timeline, seconds_after
from ..errors import PostmortemError
from ..query import QueryResult, format_json, format_table, run_named_dicts
from ..store.db import Store
from ..text.formats import human
from ..timeutil import zone_name


@dataclass
class TimelineView:
    incident_id: int
    kill_ts: datetime
    unit: str | None
    host: str | None
    cause: str
    #: the zone the host's sources were read in (``None``: UTC, no second column)
    zone: tzinfo | None
    tl: Timeline
    events: list[TimelineEvent] = field(default_factory=list)


def load_view(
    store: Store, incident_id: int, *, window_s: float, after_s: float | None, redact: bool = True
) -> TimelineView:
    """The timeline of incident ``incident_id`` (``after_s`` ``None``: until the service was
    ready again plus 90 s, at least ten minutes); ``redact``: secrets in the events' messages
    masked, as in the reports."""
    from dataclasses import replace

    from ..analysis import host_zones
    from ..analysis.facts import unit_gpu_keys
    from ..analysis.model import Incident
    from .redact import Redactor

    rows = run_named_dicts(store, "incident_by_id", {"incident_id": incident_id})
    if not rows:
        raise PostmortemError(f"no incident {incident_id} (see 'postmortem incidents')")
    inc = rows[0]
    killed = Incident(incident_id, inc["host"], inc["ts"], inc["unit"], inc["cause"], 0.0)
    tl = memory_timeline(
        store,
        kill_ts=inc["ts"],
        unit=inc["unit"],
        host=inc["host"],
        window_s=window_s,
        after_s=after_s if after_s is not None else seconds_after(inc["ts"], inc["recovered_ts"]),
        gpus=unit_gpu_keys(store, killed),  # the killed server's GPUs, as its report reads them
        ended=death_noun(inc["cause"]),
    )
    zone = host_zones(store).get(inc["host"]) if inc["host"] else None
    if zone is not None and zone_name(zone) in ("UTC", "Etc/UTC"):
        zone = None  # the host's time is UTC: no second column
    events = [*pressure_events(store, tl, inc["unit"], inc["host"]), *tl.events]
    events.sort(key=event_order(events))
    if redact:
        clean = Redactor()
        events = [replace(e, message=clean(e.message)) for e in events]
    return TimelineView(incident_id, inc["ts"], inc["unit"], inc["host"], inc["cause"], zone, tl, events)


def pressure_events(store: Store, tl: Timeline, unit: str | None, host: str | None) -> list[TimelineEvent]:
    """The moments of the build-up the report's timeline opens with: requests begin to queue,
    the first retraction, the last statistics line before the end (``tl.ended``)."""
    if unit is None:
        return []
    p = {"unit": unit, "source": None, "since": tl.start, "before": tl.kill_ts, "host": host}
    out: list[TimelineEvent] = []
    before = tl.before_kill()
    queues = [b.queue_req for b in before if b.queue_req]
    for r in run_named_dicts(store, "queue_start_before", p) if queues else []:
        text = f"requests begin to wait in the queue (up to {max(queues)} before the {tl.ended})"
        out.append(
            TimelineEvent(r["ts"], r["engine"], unit, "queue_start", text, r["source_id"], r["line_no"])
        )
    first = next((b.first_retraction for b in before if b.first_retraction), None)
    if first is not None:
        n = sum(b.retractions for b in before)
        text = f"KV cache pool full, requests retracted — the first of {n} retractions before the {tl.ended}"
        origin = out[0].origin if out else "server"
        out.append(TimelineEvent(first[0], origin, unit, "retract", text, first[1], first[2]))
    for r in run_named_dicts(store, "last_batch_before", p):
        text = f"last statistics line before the {tl.ended} (running {r['running_req']}, queued {r['queue_req']})"
        out.append(
            TimelineEvent(r["ts"], r["engine"], unit, "last_batch", text, r["source_id"], r["line_no"])
        )
    return out


def _utc(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def _from_kill(ts: datetime, kill: datetime) -> str:
    s = round((ts - kill).total_seconds())
    sign = "-" if s < 0 else "+"
    m, sec = divmod(abs(s), 60)
    return f"{sign}{m}:{sec:02d}"


def _round(value: float | None, digits: int = 0) -> float | int | None:
    if value is None:
        return None
    return round(value) if digits == 0 else round(value, digits)


BUCKET_COLUMNS = (
    "host_avail_mib",
    "gpu_used_mib_max",
    "gpu_used_mib_sum",
    "token_usage",
    "running_req",
    "queue_req",
    "gen_throughput",
    "retractions",
)


def bucket_rows(view: TimelineView, *, exact: bool = False) -> QueryResult:
    """The buckets, values rounded (MiB whole, KV usage to 2 places, throughput to 1);
    ``exact``: the bucket's start as an ISO time (JSON), else whole UTC seconds and the offset
    from the kill."""
    cols = ["bucket", "from_kill", *BUCKET_COLUMNS]
    rows = []
    for b in view.tl.buckets:
        rows.append(
            (
                b.ts.isoformat() if exact else _utc(b.ts),
                _from_kill(b.ts, view.kill_ts),
                _round(b.host_avail_mib),
                _round(b.gpu_used_mib_max),
                _round(b.gpu_used_mib_sum),
                _round(b.token_usage, 2),
                b.running_req,
                b.queue_req,
                _round(b.gen_throughput, 1),
                b.retractions,
            )
        )
    return QueryResult(cols, rows)


def event_rows(view: TimelineView, *, exact: bool = False) -> QueryResult:
    cols = ["ts", "origin", "unit", "kind", "message", "source_id", "line_no"]
    rows: list[tuple[Any, ...]] = [
        (
            e.ts.isoformat() if exact else _utc(e.ts),
            e.origin,
            e.unit,
            e.kind,
            e.message,
            e.source_id,
            e.line_no,
        )
        for e in view.events
    ]
    if view.zone is not None and not exact:
        # beside each event, the host's wall clock in its sources' zone, as the report shows it
        zone = view.zone
        cols = ["ts", "host_local", *cols[1:]]
        rows = [
            (r[0], e.ts.astimezone(zone).strftime("%H:%M:%S %Z"), *r[1:])
            for r, e in zip(rows, view.events, strict=True)
        ]
    return QueryResult(cols, rows)


def as_json(view: TimelineView) -> str:
    payload = {
        "incident_id": view.incident_id,
        "kill_ts": view.kill_ts.isoformat(),
        "cause": view.cause,
        "cause_label": CAUSE_LABELS.get(view.cause, view.cause),
        "host_zone": zone_name(view.zone) if view.zone is not None else "UTC",
        "bucket_s": view.tl.bucket_s,
        "buckets": json.loads(format_json(bucket_rows(view, exact=True))),
        "events": json.loads(format_json(event_rows(view, exact=True))),
        "gaps": [{"series": g.series, "detail": g.detail} for g in view.tl.gaps],
    }
    return json.dumps(payload, ensure_ascii=False) + "\n"


def as_text(view: TimelineView) -> str:
    kill = view.kill_ts
    local = ""
    if view.zone is not None:
        local = f" ({kill.astimezone(view.zone):%Y-%m-%d %H:%M:%S %Z} host time, {zone_name(view.zone)})"
    cause = CAUSE_LABELS.get(view.cause, view.cause)
    out = [
        f"Incident {view.incident_id}: {view.unit or 'a process'} at {_utc(kill)} UTC{local}: {cause}\n",
        f"\nMemory signals, {human(view.tl.bucket_s)} buckets (times UTC, from_kill in min:s):\n",
        format_table(bucket_rows(view)),
        "\nEvents:\n",
        format_table(event_rows(view), max_width=100),
    ]
    out += [f"gap: {g.series}: {g.detail}\n" for g in view.tl.gaps]
    return "".join(out)
