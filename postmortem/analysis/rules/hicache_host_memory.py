"""hicache_host_memory: the hierarchical KV cache's host pools before a host-memory kill."""

from __future__ import annotations

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec
from .common import HOST_CAUSES

NAME = "hicache_host_memory"


@rule(NAME, severity="high", requires=("incident", "hicache"))
def hicache_host_memory(f: IncidentFacts, found: Found) -> Finding | None:
    """Host RAM ran out (or the unit's limit was reached) after the run's hierarchical KV cache
    took its host pools: size them."""
    inc = f.incident
    if inc.cause not in HOST_CAUSES or not f.hicache or inc.ts is None:
        return None
    sizes = sorted({float(r["gb"] or 0) for r in f.hicache})
    first = f.hicache[0]
    data = {
        "pools": len(f.hicache),
        "smallest_gb": sizes[0],
        "largest_gb": sizes[-1],
        "total_gb": sum(float(r["gb"] or 0) for r in f.hicache),
        "first_before_s": (inc.ts - first["ts"]).total_seconds(),
        "limit_kb": inc.memcg_limit_kb if inc.cause == "cgroup_oom" else None,
    }
    return spec(NAME).finding(data, [SourceRef(int(first["source_id"]), int(first["line_no"]))])
