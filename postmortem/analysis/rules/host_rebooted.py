"""host_rebooted: the host booted again after the kill."""

from __future__ import annotations

from ..facts import IncidentFacts, killed_in_vain
from ..model import SourceRef
from . import Finding, Found, rule, spec

NAME = "host_rebooted"


@rule(NAME, severity="medium", requires=("incident", "reboot", "timeline"))
def host_rebooted(f: IncidentFacts, found: Found) -> Finding | None:
    """The host booted again after the kill: hung in the kernel (hung-task warnings, processes
    that outlived systemd's final SIGKILL), or for a reason the data does not give."""
    inc, rb = f.incident, f.reboot
    if rb is None or inc.ts is None:
        return None
    hung = [ev for ev in f.timeline.events if ev.kind == "hung_task" and inc.ts <= ev.ts < rb.up_ts]
    stuck = killed_in_vain(f)
    data = {
        "up_ts": rb.up_ts,
        "up_after_s": (rb.up_ts - inc.ts).total_seconds(),
        "last_old_ts": rb.last_old_ts,
        "hung_from": hung[0].ts if hung else None,
        "stuck": stuck,
    }
    evidence = [SourceRef(*rb.at)] + [SourceRef(ev.source_id, ev.line_no) for ev in hung[:1]]
    return spec(NAME).finding(data, evidence, severity="high" if hung or stuck else "medium")
