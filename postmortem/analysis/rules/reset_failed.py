"""reset_failed: the unit was left in systemd's failed state."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import is_container
from . import Finding, Found, rule, spec

NAME = "reset_failed"


@rule(NAME, severity="low", requires=("incident", "timeline"))
def reset_failed(f: IncidentFacts, found: Found) -> Finding | None:
    """The unit's last state after the kill is failed (or its start limit hit): reset it before
    starting it again. A unit that started, deactivated or was scheduled to restart since has
    nothing to reset."""
    inc = f.incident
    if inc.unit is None or is_container(inc.unit):
        return None  # a container's runtime starts it whatever systemd thinks of its scope
    ended_failed = False
    for ev in f.timeline.events:
        if ev.unit != inc.unit or ev.ts < f.timeline.kill_ts:
            continue
        if ev.kind in ("failed", "start_limit_hit"):
            ended_failed = True
        elif ev.kind in ("started", "starting", "deactivated", "restart_scheduled"):
            ended_failed = False
    return spec(NAME).finding({"state": "failed"}) if ended_failed else None
