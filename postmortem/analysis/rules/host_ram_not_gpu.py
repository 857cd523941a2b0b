"""host_ram_not_gpu: what ran out — the host's RAM, the unit's cgroup, or the GPU's memory."""

from __future__ import annotations

from typing import Any

from ..facts import IncidentFacts
from ..model import is_container, limit_owner
from . import Finding, Found, rule, spec
from .common import HOST_CAUSES, bigger_consumer, gpu_workload, ref, while_loading

NAME = "host_ram_not_gpu"


@rule(
    NAME,
    severity="high",
    requires=("incident", "host_avail_end_mib", "gpu_used_end_mib", "consumers", "oomd_candidates"),
    after=("gpu_headroom",),
)
def host_ram_not_gpu(f: IncidentFacts, found: Found) -> Finding | None:
    """Says what ran out — host RAM, the unit's memory limit or the GPU — with the numbers that
    show it, and why the GPU settings do (or do not) matter."""
    inc = f.incident
    if inc.cause not in HOST_CAUSES and inc.cause != "gpu_oom":
        return None
    if inc.cause == "gpu_oom":
        data: dict[str, Any] = {
            "cause": "gpu_oom",
            "other": None,
            "gpu_holders": bool(f.gpu_holders),
            "gpu_headroom": bool(found["gpu_headroom"]),
        }
        return spec(NAME).finding(data, ref(f, "cuda_oom", "server_cuda_oom"))
    other = bigger_consumer(f)
    gpu_full = (
        f.gpu_used_end_mib is not None
        and bool(f.gpu_total_mib)
        and f.gpu_used_end_mib >= 0.8 * (f.gpu_total_mib or 0)
    )
    data = {
        "cause": inc.cause,
        "noun": limit_owner(inc.unit, (f.oom or {}).get("oom_memcg"))
        if inc.cause == "cgroup_oom"
        else ("container" if is_container(inc.unit) else "unit"),
        "killer": inc.killer,
        "memcg_usage_kb": inc.memcg_usage_kb,
        "memcg_limit_kb": inc.memcg_limit_kb,
        "host_avail_end_mib": f.host_avail_end_mib,
        "host_avail_before_s": f.host_avail_before_s,
        "host_avail_limit_pct": f.host_avail_limit_pct,
        "host_total_mib": f.host_total_mib,
        "host_growth_mib": f.host_growth_mib,
        "gpu_used_end_mib": f.gpu_used_end_mib,
        "gpu_total_mib": f.gpu_total_mib,
        "gpu_flat": f.gpu_flat,
        "gpu_full": gpu_full,
        "consumers": [
            {"name": c.name, "processes": c.processes, "rss_kb": c.rss_kb, "share": c.share}
            for c in f.consumers[:2]
        ],
        "victim_comm": inc.victim.comm if inc.victim else None,
        "other": {"name": other.name, "processes": other.processes, "rss_kb": other.rss_kb}
        if other
        else None,
        "gpu": gpu_workload(f),
        "loading": while_loading(f),
        "oomd_candidates": [list(c) for c in f.oomd_candidates[:3]],
    }
    return spec(NAME).finding(data, ref(f, "oom_kill"))
