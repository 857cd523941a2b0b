"""server_error: the server stopped on its own error (or hung until a watchdog ended it)."""

from __future__ import annotations

from ..facts import IncidentFacts
from . import Finding, Found, rule, spec

NAME = "server_error"


@rule(NAME, severity="high", requires=("incident",))
def server_error(f: IncidentFacts, found: Found) -> Finding | None:
    """The server stopped on its own error (cause ``crash``): the traceback is the lead, not
    memory settings; a hang ended by NCCL's or the server's watchdog is told apart. ``quoted``:
    the server's error lines are in the data (the report quotes them); a failed start known
    from systemd's lines alone has none."""
    inc = f.incident
    if inc.cause != "crash":
        return None
    lines = [e for e in inc.evidence if e.kind.startswith("server_") and e.kind != "server_sigquit"]
    watchdog = any(e.kind == "server_watchdog" for e in lines)
    if watchdog or any("collective operation timeout" in e.detail for e in lines):
        case = "server_watchdog" if watchdog else "nccl_watchdog"
    else:
        case = "error"
    return spec(NAME).finding({"case": case, "quoted": bool(lines)}, [e.ref for e in lines[:2]])
