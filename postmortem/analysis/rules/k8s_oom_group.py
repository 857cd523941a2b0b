"""k8s_oom_group: one OOM kill took every process of the container (memory.oom.group)."""

from __future__ import annotations

from ...parsers.kubernetes.names import is_k8s_unit
from ..facts import IncidentFacts
from . import Finding, Found, rule, spec
from .common import ref

NAME = "k8s_oom_group"


@rule(NAME, severity="medium", requires=("incident", "oom"))
def k8s_oom_group(f: IncidentFacts, found: Found) -> Finding | None:
    """On cgroup v2 kubelet (1.28+) sets memory.oom.group: the kernel kills every process of the
    container with the one it chose, so the server cannot log or shut down cleanly. Kubelet's
    singleProcessOOMKill (1.32+) kills only the chosen one."""
    inc = f.incident
    if not is_k8s_unit(inc.unit) or inc.cause != "cgroup_oom" or not inc.killed_with:
        return None
    victim = inc.victim
    data = {"processes": 1 + len(inc.killed_with), "victim": victim.comm if victim else None}
    return spec(NAME).finding(data, ref(f, "oom_kill"))
