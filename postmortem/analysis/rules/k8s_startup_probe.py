"""k8s_startup_probe: a probe budget shorter than the server's load (the false "OOM" of pods)."""

from __future__ import annotations

import math

from ...parsers.kubernetes.names import is_k8s_unit
from ..facts import IncidentFacts
from . import Finding, Found, rule, spec
from .common import ref

NAME = "k8s_startup_probe"
#: margin over the longest measured load a startup probe's budget keeps
MARGIN = 1.5


@rule(NAME, severity="high", requires=("incident", "k8s", "unit_loads"))
def k8s_startup_probe(f: IncidentFacts, found: Found) -> Finding | None:
    """Kubelet killed the container because a probe failed while the server was loading, or the
    startup probe's budget (delay + failureThreshold × periodSeconds) is shorter than the loads
    measured: the budget from the measured loads (p90 and max) with a margin."""
    inc = f.incident
    if not is_k8s_unit(inc.unit) or f.k8s is None:
        return None
    startup = f.k8s.probe("startup")
    budget = startup["delay"] + startup["failure"] * startup["period"] if startup else None
    stats = f.unit_loads
    loads = [ld.load_s for ld in stats.ready] if stats else []
    longest = max((x for x in loads if x is not None), default=None)
    p90 = stats.phases["load_s"].p90 if stats and "load_s" in stats.phases and stats.count > 2 else None
    killed = inc.cause == "probe_kill"
    short = budget is not None and longest is not None and budget < longest * 1.1
    if not killed and not short:
        return None
    period = startup["period"] if startup else 10
    killed_load = inc.killed_load
    loading_s = (
        (inc.ts - killed_load.start_ts).total_seconds()
        if killed
        and inc.ts
        and killed_load is not None
        and killed_load.start_ts
        and killed_load.ready_ts is None
        else None
    )
    need_s = max(longest or 0.0, loading_s or 0.0)
    data = {
        "killed": killed,
        "probe": next((e["probe"] for e in f.k8s.events if e["kind"] == "probe_kill" and e["probe"]), None),
        "failures": f.k8s.count("probe_failed"),
        "startup": startup,
        "budget_s": budget,
        "longest_s": longest,
        "loading_s": loading_s,
        "p90_s": p90,
        "loads": len(loads),
        "period": period,
        "threshold": math.ceil(need_s * MARGIN / period) if need_s else None,
        "liveness": f.k8s.probe("liveness"),
    }
    return spec(NAME).finding(data, ref(f, "k8s_probe_kill", "k8s_terminated"))
