"""``postmortem trends``: incidents (OOM kills and service deaths) per host and unit per day and
week, load-time trend per host, unit and model, downtime (time to recovery) per incident — across
every incident in the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from statistics import median

from .. import __version__
from ..analysis.summary import CAUSE_LABELS, downtime_text
from ..query import run_named_dicts
from ..store.db import Store
from ..text.formats import human
from ..timeutil import UTC
from .context import utc_text, window_text
from .render import render, write_whole


@dataclass
class KillCount:
    period: str
    host: str
    unit: str
    cause: str
    incidents: int


@dataclass
class LoadTrend:
    host: str
    unit: str
    model: str
    speculative: str
    loads: int
    first_s: float | None
    last_s: float | None
    median_s: float | None
    change_pct: float | None


@dataclass
class DowntimeRow:
    incident_id: int
    kill_utc: str
    host: str
    unit: str
    cause: str
    downtime_s: float | None
    downtime: str
    recovery: str
    #: the incident whose outage this kill came in (an earlier kill the same ready ended)
    outage_of: int | None = None


@dataclass
class TrendsReport:
    generated_at: str
    tool_version: str
    window: str
    kills_per_day: list[KillCount] = field(default_factory=list)
    kills_per_week: list[KillCount] = field(default_factory=list)
    load_trends: list[LoadTrend] = field(default_factory=list)
    downtimes: list[DowntimeRow] = field(default_factory=list)
    mttr_s: float | None = None
    #: restored outages the mean is over (kills within one outage count once)
    outages: int = 0
    mttr: str = "—"
    kills_figure: str | None = None
    loads_figure: str | None = None
    downtime_figure: str | None = None


def trends(
    store: Store,
    out: Path,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    templates: list[str] | None = None,
    now: datetime | None = None,
) -> Path:
    p = {"since": since, "until": until}
    rep = TrendsReport(
        generated_at=utc_text(now or datetime.now(UTC)) + " UTC",
        tool_version=__version__,
        window=window_text(since, until),
    )
    kills = run_named_dicts(store, "trends_kills", p)
    daily: dict[tuple[str, str, str, str], int] = {}
    weekly: dict[tuple[str, str, str, str], int] = {}
    for r in kills:
        cause = CAUSE_LABELS.get(r["cause"], r["cause"])
        key = (str(r["day"]), r["host"], r["unit"], cause)
        daily[key] = daily.get(key, 0) + int(r["incidents"])
        wk = r["week"].isocalendar()
        key = (f"{wk[0]}-W{wk[1]:02d}", r["host"], r["unit"], cause)
        weekly[key] = weekly.get(key, 0) + int(r["incidents"])
    rep.kills_per_day = [KillCount(*k, v) for k, v in sorted(daily.items())]
    rep.kills_per_week = [KillCount(*k, v) for k, v in sorted(weekly.items())]
    hosts = {str(r["host"]) for r in kills}

    loads = run_named_dicts(store, "trends_loads", p)
    groups: dict[tuple[str, str, str], list[dict[str, object]]] = {}
    for r in loads:
        if r["outcome"] != "ready" or r["load_s"] is None:
            continue
        groups.setdefault((str(r["host"]), str(r["unit"]), str(r["model_path"])), []).append(r)
    hosts |= {g[0] for g in groups}
    series: dict[str, list[tuple[datetime, float]]] = {}
    for (host, unit, model), rows in sorted(groups.items()):
        values = [float(r["load_s"]) for r in rows]  # type: ignore[arg-type]
        spec = next((str(r["speculative_algorithm"]) for r in rows if r["speculative_algorithm"]), "—")
        first, last = values[0], values[-1]
        rep.load_trends.append(
            LoadTrend(
                host,
                unit,
                model,
                spec,
                len(values),
                first,
                last,
                median(values),
                round(100 * (last - first) / first, 1) if first else None,
            )
        )
        name = _series_name(host, unit, hosts)
        series[name] = series.get(name, []) + [(r["start_ts"], float(r["load_s"])) for r in rows]  # type: ignore[misc,arg-type]

    downs = run_named_dicts(store, "trends_downtime", p)
    # kills during an outage already under way (a restart loop, a failed fallback) end with
    # the same ready: one outage, timed from its first kill
    first_of: dict[tuple[object, object], int] = {}
    for r in downs:
        outage = (r["host"], r["recovered_ts"])
        outage_of = first_of.setdefault(outage, int(r["incident_id"])) if r["recovered_ts"] else None
        rep.downtimes.append(
            DowntimeRow(
                int(r["incident_id"]),
                utc_text(r["ts"]),
                str(r["host"] or "—"),
                str(r["unit"]),
                CAUSE_LABELS.get(r["cause"], str(r["cause"])),
                r["downtime_s"],
                downtime_text(r["downtime_s"], r["unit"]),
                str(r["fallback_unit"] or r["recovery_unit"] or "—"),
                outage_of if outage_of != int(r["incident_id"]) else None,
            )
        )
    restored = [d.downtime_s for d in rep.downtimes if d.downtime_s is not None and d.outage_of is None]
    rep.outages = len(restored)
    if restored:
        rep.mttr_s = sum(restored) / len(restored)
        rep.mttr = human(rep.mttr_s)
    out.mkdir(parents=True, exist_ok=True)
    kseries = _per_day(kills, hosts)
    from ..plots import trend_figure  # matplotlib: only when figures are drawn

    f1 = trend_figure(
        kseries,
        out / "trends-kills.png",
        "incidents per day",
        "Incidents (OOM kills and service deaths) per day",
    )
    f2 = trend_figure(series, out / "trends-loads.png", "load time (s)", "Load time per unit")
    dseries: dict[str, list[tuple[datetime, float]]] = {}
    for r in downs:
        if r["downtime_s"] is not None:
            name = str(r["host"] or "—") if len(hosts) > 1 else "downtime"
            dseries.setdefault(name, []).append((r["ts"], float(r["downtime_s"])))
    missing = len(downs) - sum(len(v) for v in dseries.values())
    title = "Downtime per incident" + (f" ({missing} not restored: not drawn)" if missing else "")
    f3 = trend_figure(dseries, out / "trends-downtime.png", "seconds", title)
    rep.kills_figure = f1.name if f1 else None
    rep.loads_figure = f2.name if f2 else None
    rep.downtime_figure = f3.name if f3 else None
    path = out / "trends.md"
    write_whole(path, render("trends.md.j2", rep, templates or []))
    return path


def _series_name(host: str, unit: str, hosts: set[str]) -> str:
    """A figure's series: the unit, with its host when the store holds several."""
    return f"{host} · {unit}" if len(hosts) > 1 else unit


def _per_day(kills: list[dict[str, object]], hosts: set[str]) -> dict[str, list[tuple[datetime, float]]]:
    """Incidents per day of each series, with the days between its first and last that had none
    drawn as 0 (a line from 2 to 1 would say 1.5 on the day between)."""
    counts: dict[str, dict[date, float]] = {}
    for r in kills:
        day = r["day"]
        assert isinstance(day, date)
        per = counts.setdefault(_series_name(str(r["host"]), str(r["unit"]), hosts), {})
        per[day] = per.get(day, 0.0) + float(r["incidents"])  # type: ignore[arg-type]
    out: dict[str, list[tuple[datetime, float]]] = {}
    for name, per in counts.items():
        day, last = min(per), max(per)
        points = []
        while day <= last:
            points.append((datetime(day.year, day.month, day.day, tzinfo=UTC), per.get(day, 0.0)))
            day += timedelta(days=1)
        out[name] = points
    return out
