"""gpu_fault: an NVIDIA Xid error before the death."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..incidents import GPU_FAULT_XIDS
from . import Finding, Found, rule, spec

NAME = "gpu_fault"


@rule(NAME, severity="high", requires=("incident", "gpu_release", "fault_gpu_gone"))
def gpu_fault(f: IncidentFacts, found: Found) -> Finding | None:
    """A GPU failed before the death (cause ``gpu_fault``): drain, reset, check — no restart."""
    inc = f.incident
    if inc.cause != "gpu_fault":
        return None
    xid = next((e for e in inc.evidence if e.kind == "xid"), None)
    if xid is None:
        return None
    code = int(xid.raw.get("xid") or 0)
    gone = f.fault_gpu_gone
    data = {
        "xid": code,
        "meaning": GPU_FAULT_XIDS.get(code, "a GPU fault"),
        "bus_id": xid.raw.get("bus_id"),
        "ts": xid.ts,
        "stuck_gpus": [g.gpu for g in f.gpu_release if g.freed is False][:4],
        "gone_last_ts": gone[0] if gone else None,
        "others_until_ts": gone[1] if gone else None,
    }
    return spec(NAME).finding(data, [xid.ref])
