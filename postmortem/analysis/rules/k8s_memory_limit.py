"""k8s_memory_limit: a pod's container killed for memory — its limit, its pod's, or the node's."""

from __future__ import annotations

import math

from ...parsers.kubernetes.names import is_k8s_unit, pod_cgroup, qos_from_adj
from ..facts import IncidentFacts, unit_task_pids
from . import Finding, Found, rule, spec
from .common import ref

NAME = "k8s_memory_limit"
#: headroom over the observed peak a suggested limit keeps
HEADROOM = 1.2


@rule(NAME, severity="high", requires=("incident", "oom", "k8s"))
def k8s_memory_limit(f: IncidentFacts, found: Found) -> Finding | None:
    """A pod's container killed by a memory limit (the container's or the pod's), by the node
    running out (a node OOM or an eviction): which limit, the observed peak, a limit and request
    from it, and what else counts against the limit (a memory-backed /dev/shm)."""
    inc = f.incident
    if not is_k8s_unit(inc.unit) or inc.cause not in ("cgroup_oom", "host_oom", "eviction"):
        return None
    box = (f.k8s.container if f.k8s else None) or {}
    memcg = (f.oom or {}).get("oom_memcg")
    pod = pod_cgroup(memcg)
    level = "node" if inc.cause != "cgroup_oom" else (pod.level if pod is not None else "container")
    if level in ("node", "qos") and inc.cause == "cgroup_oom":
        level = "allocatable"  # the cgroup of every pod (or of a QoS class): kubelet's allocatable
    peak_kb = inc.memcg_usage_kb or sum_rss_kb(f)
    limit = box.get("limit_memory_bytes")
    data = {
        "case": inc.cause,
        "level": level,
        "limit_bytes": limit,
        "request_bytes": box.get("request_memory_bytes"),
        "qos": box.get("qos_class") or qos_from_adj((f.oom or {}).get("oom_score_adj")),
        "peak_kb": peak_kb,
        "suggest_gib": math.ceil(peak_kb * HEADROOM / 1024 / 1024) if peak_kb else None,
        "shm": bool(box.get("shm_medium_memory")),
        "shm_bytes": box.get("shm_size_bytes"),
        "shmem_kb": (f.oom or {}).get("shmem_rss_kb"),
        "eviction": (f.k8s.first("evicted") or {}).get("message") if f.k8s else None,
    }
    return spec(NAME).finding(data, ref(f, "oom_kill", "k8s_evicted", "k8s_terminated"))


def sum_rss_kb(f: IncidentFacts) -> float | None:
    """The container's processes' resident memory (kB): the kernel's task table when it lists
    the container's cgroup alone; else — a node-wide OOM's table lists every pod's processes —
    what the processes the kernel killed in it held."""
    if f.consumers and unit_task_pids(f):
        return sum(c.rss_kb for c in f.consumers) or None
    return sum(v.anon_rss_kb or 0 for v in f.incident.victims) or None
