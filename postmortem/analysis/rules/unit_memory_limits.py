"""unit_memory_limits: the memory limit that fired, or the limit a host-wide OOM lacked."""

from __future__ import annotations

from typing import Any

from ...parsers.kubernetes.names import is_k8s_unit
from ..facts import IncidentFacts
from ..incidents import limit_setting
from ..model import is_container
from . import Finding, Found, rule, spec
from .common import limit_kind, refs, while_loading

NAME = "unit_memory_limits"


@rule(
    NAME,
    severity="medium",
    requires=("incident", "oom", "host_avail_end_mib", "earlier_peaks"),
    after=("bound_queue",),
)
def unit_memory_limits(f: IncidentFacts, found: Found) -> Finding | None:
    """A cgroup kill: how the limit worked, whether it can be raised (host RAM left, growth
    rate, the previous run's peak against it). A host-wide kill of a unit or container: give it
    a limit."""
    inc = f.incident
    if is_k8s_unit(inc.unit):
        return None  # a pod's container: k8s_memory_limit
    common = {"container": is_container(inc.unit), "limit_kind": limit_kind(f)}
    if inc.cause == "host_oom" and inc.unit:
        return spec(NAME).finding({"case": "host_oom", **common}, severity="high")
    if inc.cause != "cgroup_oom":
        return None
    rate = f.host_rate_mib_min
    data = {
        "case": "cgroup_oom",
        **common,
        "limit_kb": inc.memcg_limit_kb,
        "setting": limit_setting((f.oom or {}).get("oom_memcg")),
        "group": 1 + len(inc.killed_with),
        "host_avail_end_mib": f.host_avail_end_mib,
        "host_avail_before_s": f.host_avail_before_s,
        "host_avail_limit_pct": f.host_avail_limit_pct,
        "queue_bounded": found["bound_queue"] is not None,
        "loading": while_loading(f),
        "growth_mib_min": rate if rate is not None and rate > 256 else None,
        "earlier_peak": earlier_peak(f),
    }
    return spec(NAME).finding(data, refs(f.earlier_peaks))


def earlier_peak(f: IncidentFacts) -> dict[str, Any] | None:
    """How close the unit's previous run came to the limit, from systemd's "memory peak"."""
    limit_kb = f.incident.memcg_limit_kb
    if not f.earlier_peaks or not limit_kb:
        return None
    p = f.earlier_peaks[0]
    peak = int(p["memory_peak_bytes"])
    return {"ended": p["ts"], "peak_kb": peak / 1024, "share": peak / (limit_kb * 1024)}
