"""gpu_held_by_another_process: a CUDA OOM whose message names other processes on the GPU."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec
from .common import ref

NAME = "gpu_held_by_another_process"


@rule(NAME, severity="high", requires=("incident", "gpu_holders"))
def gpu_held_by_another_process(f: IncidentFacts, found: Found) -> Finding | None:
    """A CUDA OOM whose message names another process holding the GPU: free the GPU first."""
    if not f.gpu_holders:
        return None
    load = f.incident.killed_load
    start = load.start_ts if load is not None else None
    holders = [
        {
            "pid": h.pid,
            "name": h.name,
            "gib": h.gib,
            "gpus": h.gpus,
            "first_ts": h.first_ts,
            "before_start": h.first_ts is not None and start is not None and h.first_ts < start,
        }
        for h in f.gpu_holders[:4]
    ]
    refs = [SourceRef(*h.at) for h in f.gpu_holders if h.at is not None][:2]
    return spec(NAME).finding({"holders": holders}, ref(f, "cuda_oom", "server_cuda_oom") + refs)
