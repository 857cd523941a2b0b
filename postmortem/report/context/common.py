"""What every context builder uses: times as the report prints them, and :class:`Sources` for citations."""

from __future__ import annotations

import dataclasses
import os
from datetime import datetime, tzinfo
from typing import Any

from ...query import run_named_dicts
from ...store.db import Store
from ...timeutil import UTC
from ..redact import Redactor


def utc_text(ts: datetime | None) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if ts else "—"


def window_text(since: datetime | None, until: datetime | None) -> str:
    """The report window: ``beginning → 2025-05-26 00:00:00 UTC``."""
    return f"{utc_text(since) if since else 'beginning'} → {utc_text(until) if until else 'now'} UTC"


def local_text(ts: datetime | None, zone: tzinfo, dated: bool = False) -> str:
    """The host's wall-clock time of ``ts``; ``dated``: with its date when that is not the UTC
    date (an evening in New York is the next day in UTC).

    >>> from zoneinfo import ZoneInfo
    >>> t = datetime(2024, 11, 18, 0, 43, 15, tzinfo=UTC)
    >>> local_text(t, ZoneInfo("America/New_York")), local_text(t, ZoneInfo("America/New_York"), dated=True)
    ('19:43:15 EST', '2024-11-17 19:43:15 EST')
    """
    if ts is None:
        return "—"
    loc = ts.astimezone(zone)
    day = f"{loc:%Y-%m-%d} " if dated and loc.date() != ts.astimezone(UTC).date() else ""
    return f"{day}{loc:%H:%M:%S} {loc.tzname()}"


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


def gib_kb(kb: float | None) -> float | None:
    return round(kb / 1024 / 1024, 1) if kb is not None else None


def gib_mib(mib: float | None) -> float | None:
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


def server_file(sources: Sources, source_id: int | None, clean: Redactor) -> str:
    """The file a server wrote whose unit no source names (by its file name: a path can hold a
    secret), else ""."""
    if source_id is None or source_id not in sources.names:
        return ""
    return clean(os.path.basename(sources.names[source_id]))
