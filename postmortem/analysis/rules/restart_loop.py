"""restart_loop: restarts that kept failing, or kills that kept coming."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec

NAME = "restart_loop"


@rule(NAME, severity="high", requires=("incident", "timeline"))
def restart_loop(f: IncidentFacts, found: Found) -> Finding | None:
    """systemd's start limit hit after the kill with no recovery, or another kill of the unit
    within the hour before."""
    inc = f.incident
    limit = [
        ev
        for ev in f.timeline.events
        if ev.unit == inc.unit
        and ev.origin == "systemd"
        and ev.kind == "start_limit_hit"
        and ev.ts >= f.timeline.kill_ts
    ]
    if limit and inc.recovered_ts is None:
        first = limit[0]
        data = {"case": "start_limit", "restart_count": inc.restart_count, "gave_up_ts": first.ts}
        return spec(NAME).finding(data, [SourceRef(first.source_id, first.line_no)])
    if inc.kills_last_hour < 1:
        return None
    return spec(NAME).finding({"case": "kill_loop", "kills": inc.kills_last_hour + 1})
