"""reset_failed: the unit was left in systemd's failed state."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import is_container
from . import Finding, Found, rule, spec

NAME = "reset_failed"


@rule(NAME, severity="low", requires=("incident", "timeline", "undated"))
def reset_failed(f: IncidentFacts, found: Found) -> Finding | None:
    """The unit's last state after the kill is failed (or its start limit hit): reset it before
    starting it again. A unit that started, deactivated or was scheduled to restart since has
    nothing to reset. A journal with no times says it in its line order after the kill's own
    lines (an operator's start of the unit there counts as a start): the unit is left failed
    when every source that says anything leaves it failed."""
    inc = f.incident
    if inc.unit is None or is_container(inc.unit):
        return None  # a container's runtime starts it whatever systemd thinks of its scope
    dated: bool | None = None
    for ev in f.timeline.events:
        if ev.unit != inc.unit or ev.ts < f.timeline.kill_ts:
            continue
        if ev.kind in ("failed", "start_limit_hit"):
            dated = True
        elif ev.kind in ("started", "starting", "deactivated", "restart_scheduled"):
            dated = False
    undated = f.undated.ended_failed(inc.unit)
    if undated is not None and inc.recovery_unit == inc.unit and inc.recovered_ts is not None:
        undated = False  # (started again: its Description's lines alone may say so)
    said = [s for s in (dated, undated) if s is not None]
    return spec(NAME).finding({"state": "failed"}) if said and all(said) else None
