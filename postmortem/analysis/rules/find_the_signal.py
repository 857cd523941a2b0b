"""find_the_signal: a kill no OOM killer recorded."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec

NAME = "find_the_signal"


@rule(NAME, severity="medium", requires=("incident", "undated_kills"))
def find_the_signal(f: IncidentFacts, found: Found) -> Finding | None:
    """A SIGKILL with no OOM record: an undated OOM record of the unit (most likely this kill:
    how to date it), or a signal to trace (operator, watchdog, deploy tool)."""
    if f.incident.cause != "signal":
        return None
    if f.undated_kills:
        k = f.undated_kills[0]
        data = {"undated": True, "victim_pid": k["victim_pid"], "victim_comm": k["victim_comm"]}
        return spec(NAME).finding(data, [SourceRef(int(k["source_id"]), int(k["line_no"]))], severity="high")
    return spec(NAME).finding({"undated": False})
