"""stop_timeout: systemd's start or stop timeout ended the service."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec

NAME = "stop_timeout"


@rule(NAME, severity="high", requires=("incident", "stop_ts", "last_batch"))
def stop_timeout(f: IncidentFacts, found: Found) -> Finding | None:
    """A kill by systemd's timeout: how long the drain ran after SIGTERM, and the settings."""
    inc = f.incident
    if inc.cause != "timeout" or inc.ts is None:
        return None
    lb = f.last_batch
    if f.stop_ts is not None and f.stop_at is not None:
        data = {
            "stop_ts": f.stop_ts,
            "waited_s": (inc.ts - f.stop_ts).total_seconds(),
            "running": lb.get("running_req") if lb else None,
        }
        return spec(NAME).finding(data, [SourceRef(*f.stop_at)])
    return spec(NAME).finding({"stop_ts": None})
