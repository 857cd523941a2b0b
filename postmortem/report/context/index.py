"""The index page's rows: undated kills, GPU faults, slow loads."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime

from ...analysis.load_stats import REGRESSION_MIN_S, REGRESSION_RATIO, LoadStats
from ...query import run_named_dicts
from ...store.db import Store
from ...text.formats import human, size_kb
from ..redact import Redactor
from .common import Sources, utc_text
from .types import SlowLoadRow, UndatedKillRow, XidRow


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
